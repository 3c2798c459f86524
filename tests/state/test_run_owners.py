"""Runs belong to a user (issue 13, item 2), on SQLite and on a real PostgreSQL server: every
read of the run store is scoped to the caller's owner (another owner's run is "not found",
also by id prefix), a run is recorded and resumed for its owner, and migration 0003 upgrades a
database that already holds runs (they become the local user's, owner NULL)."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from sqlalchemy.orm import Session

from deepcritical.api import research, resume
from deepcritical.config import Settings
from deepcritical.state import RunNotFoundError, RunStore
from deepcritical.state.db import create_db_engine
from deepcritical.state.schema import RunRow
from deepcritical.testing.embedders import HashingEmbedder
from tests.state.test_state_store import RunSource

ALICE = "user:alice"
BOB = "hf:bob"


def test_every_read_sees_only_the_callers_runs(runs: RunStore) -> None:
    local = runs.create_run("local question", {"llm": "none"})
    alice = runs.create_run("alice question", {"llm": "none"}, owner=ALICE)
    bob = runs.create_run("bob question", {"llm": "none"}, owner=BOB)

    assert [r.id for r in runs.list_runs()] == [local]
    assert [r.id for r in runs.list_runs(owner=ALICE)] == [alice]
    assert [r.id for r in runs.list_runs(owner=BOB)] == [bob]
    assert runs.list_runs(owner="user:bob") == []  # kinds keep the same name apart

    record = runs.get_run(alice, owner=ALICE)
    assert record is not None
    assert record.owner == ALICE
    assert runs.export_run(alice, owner=ALICE)["run"]["owner"] == ALICE
    for run_id in (alice, alice[:8]):  # by id or by prefix: not found, never revealed
        assert runs.get_run(run_id, owner=BOB) is None
        assert runs.get_run(run_id) is None
        with pytest.raises(RunNotFoundError):
            runs.export_run(run_id, owner=BOB)
    local_record = runs.get_run(local[:8])
    assert local_record is not None
    assert local_record.owner is None


def test_a_prefix_is_matched_among_the_callers_runs_only(runs: RunStore) -> None:
    """Two owners' runs sharing a prefix: the prefix is unique among each owner's own runs,
    so each finds theirs, and nobody learns that another run starts the same way."""
    shared = "abcdef"
    for owner, digit in ((ALICE, "1"), (BOB, "2")):
        made = runs.create_run(f"{owner} question", {}, owner=owner)
        renamed = sa.update(RunRow).where(RunRow.id == made).values(id=shared + digit * 26)
        runs.transact(partial(Session.execute, statement=renamed))
    alice = runs.get_run(shared, owner=ALICE)
    bob = runs.get_run(shared, owner=BOB)
    assert alice is not None
    assert bob is not None
    assert (alice.id, bob.id) == (shared + "1" * 26, shared + "2" * 26)
    assert runs.get_run(shared) is None
    assert runs.get_run(shared, owner="user:carol") is None


async def test_a_run_is_recorded_and_resumed_for_its_owner(
    database_url: str, runs: RunStore, tmp_path: Path
) -> None:
    settings = Settings(
        llm="none", sources=["pubmed"], data_dir=tmp_path, database_url=database_url, max_rounds=1
    )
    run_id = ""
    events = research(
        "Does aspirin prevent stroke?",
        settings,
        sources=[RunSource("owner")],
        embedder=HashingEmbedder(),
        owner=ALICE,
    )
    async for event in events:  # stop the run as soon as it is recorded
        if event.type == "started":
            run_id = str(event.run_id)
            break
    await events.aclose()  # type: ignore[attr-defined]
    assert [r.id for r in runs.list_runs(owner=ALICE)] == [run_id]
    assert runs.list_runs() == []
    for stranger in (None, BOB):  # the local user and another user cannot resume it
        with pytest.raises(RunNotFoundError):
            async for _ in resume(run_id, settings, owner=stranger, sources=[RunSource("x")]):
                pass
    resumed = [
        e
        async for e in resume(
            run_id[:10], settings, owner=ALICE, sources=[RunSource("owner")],
            embedder=HashingEmbedder(),
        )
    ]  # fmt: skip
    assert resumed[-1].type == "done"
    assert resumed[0].run_id == run_id
    record = runs.get_run(run_id, owner=ALICE)
    assert record is not None
    assert record.status in {"completed", "max_iterations"}
    assert record.attempts == 2


def _migrate(url: str, revision: str, *, down: bool = False) -> None:
    config = Config()
    config.set_main_option("script_location", "deepcritical.state:migrations")
    engine = create_db_engine(url)
    try:
        with engine.begin() as conn:
            config.attributes["connection"] = conn
            (command.downgrade if down else command.upgrade)(config, revision)
    finally:
        engine.dispose()


OLD_RUNS = sa.table(
    "runs",
    *(sa.column(name) for name in ("id", "question", "status", "stage", "attempts")),
    *(sa.column(name, sa.JSON) for name in ("settings", "checklist", "iterations", "metrics")),
    sa.column("syllabus_fixed", sa.Boolean),
    sa.column("progress", sa.Float),
    sa.column("created_at", sa.DateTime(timezone=True)),
    sa.column("updated_at", sa.DateTime(timezone=True)),
)
"""The ``runs`` table as revision 0002 has it (no owner)."""


def test_migration_0003_keeps_existing_runs_as_the_local_users(database_url: str) -> None:
    _migrate(database_url, "0002")
    engine = create_db_engine(database_url)
    then = datetime(2026, 11, 1, tzinfo=UTC)
    try:
        with engine.begin() as conn:
            conn.execute(
                OLD_RUNS.insert(),
                [
                    {
                        "id": f"{n:032x}",
                        "question": f"old question {n}",
                        "status": "completed",
                        "stage": "done",
                        "attempts": 1,
                        "settings": {"llm": "none"},
                        "checklist": [],
                        "iterations": [],
                        "metrics": {},
                        "syllabus_fixed": False,
                        "progress": 1.0,
                        "created_at": then,
                        "updated_at": then,
                    }
                    for n in (1, 2)
                ],
            )
    finally:
        engine.dispose()

    store = RunStore.open_url(database_url)  # migrates to the newest revision
    try:
        old = store.list_runs()
        assert sorted(r.question for r in old) == ["old question 1", "old question 2"]
        assert {r.owner for r in old} == {None}
        assert store.list_runs(owner=ALICE) == []
        new = store.create_run("new question", {}, owner=ALICE)
        assert [r.id for r in store.list_runs(owner=ALICE)] == [new]
        columns = {c["name"]: c for c in sa.inspect(store.engine).get_columns("runs")}
        assert columns["owner"]["nullable"]
        indexes = {i["name"] for i in sa.inspect(store.engine).get_indexes("runs")}
        assert "ix_runs_owner" in indexes
    finally:
        store.close()

    _migrate(database_url, "0002", down=True)  # and back: the downgrade works too
    engine = create_db_engine(database_url)
    try:
        assert "owner" not in {c["name"] for c in sa.inspect(engine).get_columns("runs")}
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM runs")).scalar_one() == 3
    finally:
        engine.dispose()
