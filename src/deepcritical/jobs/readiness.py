"""What the operations endpoints answer, the same on the web app and on a worker:
``/healthz`` (the process answers), ``/readyz`` (the run database, the job engine's database
when jobs are on, and the corpus server when one is configured answer) and ``/metrics``
(Prometheus; with the jobs by state read from the run database, and the local corpus's
size from its document store, at each scrape).

:class:`Readiness` holds one engine per database for the process's life (a probe every few
seconds opens no new pool) and says why a dependency is not ready by its error type only:
an error's text may hold a URL and its password.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass

import httpx
from sqlalchemy import func, select, text
from sqlalchemy.engine import Engine

from deepcritical.config import Settings
from deepcritical.corpus.documents import DB_NAME, count_documents
from deepcritical.jobs.engine import system_database_url
from deepcritical.state.db import create_db_engine, database_url
from deepcritical.state.schema import RunRow
from deepcritical.telemetry.run_metrics import STATE_GAUGES, metrics_payload

__all__ = ["OPS_PATHS", "OpsAnswer", "Readiness", "answer_ops"]

OPS_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
CORPUS_TIMEOUT_SECONDS = 3.0
JOB_STATES = {"queued": "queued", "in_progress": "running", "awaiting_review": "waiting_review"}
"""Run statuses counted as jobs, and the state they are shown as."""


@dataclass(frozen=True)
class OpsAnswer:
    """An HTTP answer: status code, content type, body."""

    status: int
    content_type: str
    body: bytes


class Readiness:
    """The dependencies of this process (see the module docstring).

    Args:
        settings: where the run database is, whether jobs are on (``settings.jobs``) and the
            corpus server (``settings.corpus_url``).
        jobs: check the job engine's database (default: ``settings.jobs``; a worker: True).
    """

    def __init__(self, settings: Settings, *, jobs: bool | None = None) -> None:
        self.settings = settings
        self.jobs = settings.jobs if jobs is None else jobs
        self._engines: dict[str, Engine] = {}
        self._lock = threading.Lock()

    def _engine(self, url: str) -> Engine:
        with self._lock:
            if url not in self._engines:
                self._engines[url] = create_db_engine(url)
            return self._engines[url]

    def _database(self, url: str) -> Callable[[], None]:
        def ping() -> None:
            with self._engine(url).connect() as conn:
                conn.execute(text("SELECT 1"))

        return ping

    def _corpus(self, url: str) -> None:
        base = httpx.URL(url.strip())
        auth = base.password or base.username
        headers = {"Authorization": f"Bearer {auth}"} if auth else {}
        root = base.copy_with(username=None, password=None, path="/api/v2/heartbeat")
        httpx.get(root, headers=headers, timeout=CORPUS_TIMEOUT_SECONDS).raise_for_status()

    def check(self) -> dict[str, str]:
        """Each dependency and ``"ok"``, or the type of the error that stopped it."""
        checks: dict[str, Callable[[], None]] = {
            "run database": self._database(database_url(self.settings))
        }
        if self.jobs:
            checks["job engine"] = self._database(system_database_url(self.settings))
        corpus = self.settings.corpus_server_url
        if corpus:
            checks["corpus server"] = lambda: self._corpus(corpus)
        out: dict[str, str] = {}
        for name, probe in checks.items():
            try:
                probe()
                out[name] = "ok"
            except Exception as exc:  # noqa: BLE001 - any failure is "not ready", by its type
                out[name] = f"error: {type(exc).__name__}"
        return out

    def job_counts(self) -> dict[str, int]:
        """Runs by job state (``queued``, ``running``, ``waiting_review``: stopped for the
        researcher's review of the plan or the evidence) in the run database."""
        query = (
            select(RunRow.status, func.count())
            .where(RunRow.status.in_(list(JOB_STATES)))
            .group_by(RunRow.status)
        )
        counts = dict.fromkeys(JOB_STATES.values(), 0)
        with self._engine(database_url(self.settings)).connect() as conn:
            for status, count in conn.execute(query):
                counts[JOB_STATES[status]] = int(count)
        return counts

    def corpus_documents(self) -> int | None:
        """Documents in the local corpus of the settings (``corpus_dir`` or
        ``<data_dir>/corpus``), read-only; ``None`` when there is none there."""
        return count_documents(self.settings.resolved_corpus_dir / DB_NAME)

    def register_metrics(self) -> None:
        """Show this process's jobs by state and its local corpus's size on ``/metrics``
        (the last call wins)."""
        STATE_GAUGES.jobs = self.job_counts
        STATE_GAUGES.corpus_documents = self.corpus_documents

    def close(self) -> None:
        """Dispose of the engines."""
        with self._lock:
            for engine in self._engines.values():
                engine.dispose()
            self._engines.clear()


def answer_ops(path: str, readiness: Readiness) -> OpsAnswer | None:
    """The answer to ``GET path`` when it is one of :data:`OPS_PATHS`, else ``None``.
    ``/readyz`` is 503 when any dependency is not ready; its body names each one."""
    if path == "/healthz":
        return OpsAnswer(200, "application/json", b'{"status": "ok"}')
    if path == "/readyz":
        checks = readiness.check()
        ready = all(v == "ok" for v in checks.values())
        body = json.dumps({"status": "ok" if ready else "unavailable", "checks": checks})
        return OpsAnswer(200 if ready else 503, "application/json", body.encode())
    if path == "/metrics":
        payload, content_type = metrics_payload()
        return OpsAnswer(200, content_type, payload)
    return None
