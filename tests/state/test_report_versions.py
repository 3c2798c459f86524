"""Versions of a run's report kept with the run (migration 0006, ``run_report_versions``), on
SQLite and PostgreSQL: version 1 is the run's own report, read from the run and never copied;
revisions are added as 2, 3, ... and read back whole; a number out of turn is refused;
owner-checked like every read, deleted with their run; the migration upgrades a database
holding runs and downgrades again."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from deepcritical.models import Reference, ReportVersion, ResearchReport
from deepcritical.state import ReportVersionNotFoundError, RunNotFoundError, RunStore, StateError
from deepcritical.state.db import create_db_engine
from deepcritical.state.schema import RunRow
from tests.state.test_ask_api import store_run
from tests.state.test_run_owners import _migrate
from tests.unit.test_follow_up_answer import RUN

ALICE = "user:alice"


def revision(number: int, instruction: str = "shorter") -> ReportVersion:
    report = ResearchReport(
        title="Report",
        research_question="Does metformin help?",
        executive_summary="Yes [E1].",
        references=[Reference(evidence_id="E1", citation=RUN.evidence[0].citation)],
    )
    return ReportVersion(version=number, instruction=instruction, report=report)


def test_version_one_is_the_runs_report_and_revisions_follow_it(runs: RunStore) -> None:
    run_id = store_run(runs, RUN)
    assert [v.version for v in runs.report_versions(run_id)] == [1]
    original = runs.report_version(run_id)
    assert original is not None
    assert (original.version, original.instruction, original.report) == (1, "", RUN.report)
    second, third = revision(2), revision(3, "for patients")
    assert runs.add_report_version(run_id, second) == 2
    assert runs.add_report_version(run_id[:8], third) == 3
    listed = runs.report_versions(run_id)
    assert [(v.version, v.instruction) for v in listed] == [
        (1, ""),
        (2, "shorter"),
        (3, "for patients"),
    ]
    assert listed[1].first_line == "Yes [1]."
    assert runs.report_version(run_id) == third  # the latest by default
    assert runs.report_version(run_id, 2) == second
    assert runs.report_version(run_id, 1) == original
    with pytest.raises(ReportVersionNotFoundError, match=r"no version 4 .*versions 1 to 3"):
        runs.report_version(run_id, 4)
    with pytest.raises(StateError, match="the next version is 4"):
        runs.add_report_version(run_id, revision(3))
    assert len(runs.report_versions(run_id)) == 3
    with runs.engine.connect() as conn:  # version 1 is not copied
        assert conn.execute(sa.text("SELECT count(*) FROM run_report_versions")).scalar_one() == 2


def test_a_run_without_a_report_has_no_versions(runs: RunStore) -> None:
    run_id = store_run(runs, None, "failed", "boom")
    assert runs.report_versions(run_id) == []
    assert runs.report_version(run_id) is None


def test_another_owners_run_is_not_found_and_gets_nothing(runs: RunStore) -> None:
    run_id = store_run(runs, RUN, owner=ALICE)
    for call in (
        lambda: runs.add_report_version(run_id, revision(2)),
        lambda: runs.report_versions(run_id),
        lambda: runs.report_version(run_id),
    ):
        with pytest.raises(RunNotFoundError):
            call()
    assert [v.version for v in runs.report_versions(run_id, owner=ALICE)] == [1]
    runs.add_report_version(run_id, revision(2), owner=ALICE)
    assert [v.version for v in runs.report_versions(run_id, owner=ALICE)] == [1, 2]


def test_versions_are_deleted_with_their_run(runs: RunStore) -> None:
    run_id = store_run(runs, RUN)
    runs.add_report_version(run_id, revision(2))

    def delete(session: sa.orm.Session) -> None:
        session.delete(runs.require_row(session, run_id))

    runs.transact(delete)
    with runs.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM run_report_versions")).scalar_one() == 0


def test_migration_0006_adds_the_table_to_a_database_with_runs_and_back(
    database_url: str,
) -> None:
    _migrate(database_url, "0005")
    store = RunStore.open_url(database_url)  # migrates to the newest revision
    try:
        run_id = store_run(store, RUN)
        store.add_report_version(run_id, revision(2))
        columns = {c["name"] for c in sa.inspect(store.engine).get_columns("run_report_versions")}
        assert columns == {"run_id", "version", "instruction", "payload", "created_at"}
    finally:
        store.close()
    _migrate(database_url, "0005", down=True)
    engine = create_db_engine(database_url)
    try:
        assert "run_report_versions" not in sa.inspect(engine).get_table_names()
        with engine.connect() as conn:
            assert conn.execute(sa.select(sa.func.count()).select_from(RunRow)).scalar_one() == 1
    finally:
        engine.dispose()
