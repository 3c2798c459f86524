"""The job engine's configuration: DBOS (``dbos``) over the run database.

- The DBOS system database: on PostgreSQL the run database itself (DBOS keeps its tables in
  the schema ``dbos``, apart from ours); on SQLite the sibling file
  ``<name>-jobs.db`` next to the run database (DBOS's SQLite tables have no schema to keep
  them apart, so they get a file of their own; WAL lets every process of this machine share
  it).
- One queue, :data:`QUEUE`, with a per-worker concurrency limit; one workflow,
  :data:`WORKFLOW`, whose id is the run id.
- A fixed application version (:data:`APP_VERSION`): DBOS recovers only workflows of its
  own version, and every worker of one deployment must recover every other's.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.engine import make_url

from deepcritical.config import Settings
from deepcritical.state.db import database_url

if TYPE_CHECKING:
    from dbos import DBOSClient, DBOSConfig

__all__ = [
    "APP_NAME",
    "APP_VERSION",
    "QUEUE",
    "WORKFLOW",
    "dbos_config",
    "open_client",
    "system_database_url",
]

APP_NAME = "deepcritical"
APP_VERSION = "deepcritical-jobs-1"
"""DBOS application version of every worker (bump when the workflow's contract changes)."""
QUEUE = "deepcritical-runs"
WORKFLOW = "deepcritical.run_job"
QUEUE_POLL_SECONDS = 0.5
"""How often a worker polls the queue for a new job."""


def system_database_url(settings: Settings) -> str:
    """The DBOS system database for ``settings``' run database (see the module docstring)."""
    url = database_url(settings)
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return url
    db = Path(parsed.database or "deepcritical.db")
    return f"sqlite:///{db.with_name(db.stem + '-jobs.db')}"


def dbos_config(settings: Settings, worker_id: str) -> DBOSConfig:
    """DBOS's configuration for a worker named ``worker_id`` (its DBOS executor id)."""
    from dbos import DBOSConfig

    return DBOSConfig(
        name=APP_NAME,
        system_database_url=system_database_url(settings),
        executor_id=worker_id,
        application_version=APP_VERSION,
        log_level="WARNING",
        enable_otlp=False,
    )


def open_client(settings: Settings) -> DBOSClient:
    """A DBOS client (enqueue, cancel) on ``settings``' job database (its tables created when
    missing); ``destroy()`` it.

    Raises:
        Exception: the system database cannot be reached.
    """
    from dbos import DBOS, DBOSClient

    url = system_database_url(settings)
    DBOS.migrate(url)  # a client never creates DBOS's tables; a no-op once they exist
    return DBOSClient(system_database_url=url, application_name=APP_NAME)
