"""Follow-up questions kept with their run (migration 0005, ``run_follow_ups``), on SQLite and
PostgreSQL: added and listed in the order asked, owner-checked like every read, deleted with
their run; the migration upgrades a database holding runs and downgrades again."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from deepcritical.models import FollowUp
from deepcritical.state import RunNotFoundError, RunStore
from deepcritical.state.db import create_db_engine
from deepcritical.state.schema import RunRow
from tests.state.test_run_owners import _migrate

ALICE = "user:alice"


def follow_up(question: str, answered: bool = True) -> FollowUp:
    return FollowUp(
        question=question,
        answer="Metformin lowered risk [E1]." if answered else "No.",
        answered=answered,
    )


def test_follow_ups_are_kept_in_order_and_read_back_whole(runs: RunStore) -> None:
    run_id = runs.create_run("Does metformin help?", {})
    first, second = follow_up("Which cohort?"), follow_up("In children?", answered=False)
    assert runs.follow_ups(run_id) == []
    assert runs.add_follow_up(run_id, first) == 1
    assert runs.add_follow_up(run_id[:8], second) == 2  # a unique prefix names the run too
    assert runs.follow_ups(run_id) == [first, second]
    other = runs.create_run("Another run", {})
    assert runs.follow_ups(other) == []


def test_another_owners_run_is_not_found_and_gets_nothing(runs: RunStore) -> None:
    run_id = runs.create_run("Does metformin help?", {}, owner=ALICE)
    with pytest.raises(RunNotFoundError):
        runs.add_follow_up(run_id, follow_up("Which cohort?"))
    with pytest.raises(RunNotFoundError):
        runs.follow_ups(run_id)
    with pytest.raises(RunNotFoundError):
        runs.add_follow_up("f" * 32, follow_up("Which cohort?"), owner=ALICE)
    assert runs.follow_ups(run_id, owner=ALICE) == []
    runs.add_follow_up(run_id, follow_up("Which cohort?"), owner=ALICE)
    assert [f.question for f in runs.follow_ups(run_id, owner=ALICE)] == ["Which cohort?"]


def test_follow_ups_are_deleted_with_their_run(runs: RunStore) -> None:
    run_id = runs.create_run("Does metformin help?", {})
    runs.add_follow_up(run_id, follow_up("Which cohort?"))

    def delete(session: sa.orm.Session) -> None:
        session.delete(runs.require_row(session, run_id))

    runs.transact(delete)
    with runs.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM run_follow_ups")).scalar_one() == 0


def test_migration_0005_adds_the_table_to_a_database_with_runs_and_back(
    database_url: str,
) -> None:
    _migrate(database_url, "0004")
    store = RunStore.open_url(database_url)  # migrates to the newest revision
    try:
        run_id = store.create_run("Does metformin help?", {})
        store.add_follow_up(run_id, follow_up("Which cohort?"))
        columns = {c["name"] for c in sa.inspect(store.engine).get_columns("run_follow_ups")}
        assert columns == {"run_id", "seq", "question", "payload", "created_at"}
    finally:
        store.close()
    _migrate(database_url, "0004", down=True)
    engine = create_db_engine(database_url)
    try:
        assert "run_follow_ups" not in sa.inspect(engine).get_table_names()
        with engine.connect() as conn:
            assert conn.execute(sa.select(sa.func.count()).select_from(RunRow)).scalar_one() == 1
    finally:
        engine.dispose()
