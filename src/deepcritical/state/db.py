"""Engine and migrations of the run database.

The URL comes from ``Settings.database_url`` (env ``DEEPCRITICAL_DATABASE_URL``, e.g.
``postgresql+psycopg://user:password@host:5432/deepcritical``); without one, the SQLite file
``<Settings.data_dir>/deepcritical.db`` is used (created on first use). SQLite connections use
WAL journaling, a 30 s busy timeout and ``BEGIN IMMEDIATE`` transactions, so several processes
and threads can write one file without "database is locked" failures on upgrade of a read lock.

The schema is created and upgraded by the Alembic migrations shipped in
``deepcritical/state/migrations`` (:func:`migrate`), applied when a store opens; concurrent
openers are serialised (a file lock next to a SQLite file, an advisory lock on PostgreSQL).
"""

from __future__ import annotations

import fcntl
import threading
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.pool import NullPool, StaticPool

from deepcritical.config import Settings

__all__ = [
    "SQLITE_BUSY_TIMEOUT_SECONDS",
    "create_db_engine",
    "create_memory_engine",
    "database_url",
    "migrate",
]

SQLITE_BUSY_TIMEOUT_SECONDS = 30.0
"""Seconds a SQLite writer waits for another writer's lock before failing."""

_MIGRATION_LOCK = threading.Lock()
_PG_LOCK_ID = 0x5DEE9C
"""PostgreSQL advisory lock id that serialises migrations of one database."""


def database_url(settings: Settings) -> str:
    """The run database URL: ``settings.database_url`` or ``sqlite:///<data_dir>/deepcritical.db``.

    A bare ``postgresql://`` URL is given the psycopg 3 driver (``postgresql+psycopg://``).
    """
    if settings.database_url is not None:
        url = settings.database_url.get_secret_value().strip()
        if url.startswith(("postgresql://", "postgres://")):
            url = "postgresql+psycopg://" + url.split("://", 1)[1]
        return url
    path = Path(settings.data_dir).expanduser().resolve() / "deepcritical.db"
    return f"sqlite:///{path}"


def create_db_engine(url: str) -> Engine:
    """An engine for ``url`` (SQLite file or PostgreSQL); a SQLite file's directory is made.

    Raises:
        sqlalchemy.exc.ArgumentError: a malformed URL.
        OSError: the SQLite directory cannot be created.
    """
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=20)
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(
        url,
        poolclass=NullPool,
        connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (below)
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={int(SQLITE_BUSY_TIMEOUT_SECONDS * 1000)}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def create_memory_engine() -> Engine:
    """An engine on a private in-memory SQLite database with the newest schema (created from
    the table definitions of :mod:`deepcritical.state.schema`, not by migration: the database
    lives as long as the engine). One connection shared by every thread (``StaticPool``), so
    callers serialise their transactions (a :class:`~deepcritical.state.sources.
    SourceCollector` does, with its lock); foreign keys on, ``BEGIN`` issued explicitly.
    """
    from deepcritical.state.schema import Base

    engine = create_engine(
        "sqlite://", poolclass=StaticPool, connect_args={"check_same_thread": False}
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN")

    Base.metadata.create_all(engine)
    return engine


def migrate(engine: Engine) -> None:
    """Bring the database schema to the newest Alembic revision (no-op when it is there).

    Raises:
        sqlalchemy.exc.OperationalError: the database cannot be reached or written.
    """
    from alembic import command
    from alembic.config import Config
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", "deepcritical.state:migrations")
    head = ScriptDirectory.from_config(config).get_current_head()
    with engine.connect() as conn:
        if MigrationContext.configure(conn).get_current_revision() == head:
            return
    with _MIGRATION_LOCK, _cross_process_lock(engine), engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": _PG_LOCK_ID})
        config.attributes["connection"] = conn
        command.upgrade(config, "head")


class _cross_process_lock:
    """An exclusive ``flock`` on ``<db file>.lock`` for SQLite files; nothing otherwise."""

    def __init__(self, engine: Engine) -> None:
        db = engine.url.database if engine.dialect.name == "sqlite" else None
        self.path = Path(f"{db}.lock") if db and db != ":memory:" else None
        self._file: Any = None

    def __enter__(self) -> None:
        if self.path is not None:
            self._file = self.path.open("a")
            fcntl.flock(self._file, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        if self._file is not None:
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
