"""Fixtures of the state tests: a database URL for SQLite and for a real PostgreSQL server, and
the run store open on it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from deepcritical.state import RunStore
from tests.state.postgres_server import postgres_bin, postgres_server


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server for the session (``.ci/run`` installs Debian's postgresql)."""
    if postgres_bin() is None:
        pytest.skip("PostgreSQL binaries absent (apt-get install postgresql; .ci/run does it)")
    with postgres_server() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh empty database: a SQLite file, or a new database on the PostgreSQL server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}"
    server: str = request.getfixturevalue("postgres_url")
    name = f"t_{uuid.uuid4().hex[:12]}"
    engine = create_engine(server, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return server.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture
def runs(database_url: str) -> Iterator[RunStore]:
    """The run store on :func:`database_url` (migrated), closed after the test."""
    store = RunStore.open_url(database_url)
    yield store
    store.close()
