"""``deepcritical.revise`` (issue 32 item 5) on SQLite and PostgreSQL, over a finished offline
run: "shorter" gives a shorter version whose citations still check; "only randomised trials"
cites the randomised trials only and says so in the methodology; a focus gets its section and
an audience its note; every version is kept and the original stays version 1; bad input (an
unknown or another owner's run, a failed run, an empty, too long or not understood
instruction, a filter that leaves nothing) raises a clear error and stores nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from deepcritical import revise
from deepcritical.config import Settings
from deepcritical.models import RunResult, on_topic_items
from deepcritical.report.validation import citation_problems
from deepcritical.state import RunNotFoundError, RunStore, RunWithoutReportError
from deepcritical.testing.embedders import HashingEmbedder
from deepcritical.writing.extractive import AUDIENCE_NOTES
from deepcritical.writing.revision_instructions import PATIENTS, RevisionError
from tests.state.revision_run import RCT_PMIDS, finished_run
from tests.state.test_ask_api import store_run


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    return finished_run(tmp_path_factory.mktemp("revision-run"))


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, database_url=database_url)


def words(result: RunResult) -> int:
    return len(result.report.to_markdown().split())


def checked(result: RunResult, version_report: RunResult) -> list[str]:
    by_id = {e.id: e for e in on_topic_items(result.evidence)}
    return citation_problems(version_report.report, by_id)


async def test_shorter_then_only_rcts_are_new_checked_versions_over_the_same_evidence(
    runs: RunStore, settings: Settings, result: RunResult
) -> None:
    run_id = store_run(runs, result)
    shorter = await revise(run_id[:8], "shorter", settings, embedder=HashingEmbedder())
    assert (shorter.version, shorter.instruction, shorter.preferences.length) == (
        2,
        "shorter",
        "brief",
    )
    short = result.model_copy(update={"report": shorter.report})
    assert words(short) < words(result)
    assert sum(len(s.content.split()) for s in shorter.report.findings) < sum(
        len(s.content.split()) for s in result.report.findings
    )
    assert checked(result, short) == []
    assert shorter.report.metadata.citation_validation.valid
    assert shorter.report.metadata.grounding_check is not None  # grounded, as configured
    assert 'version 2 of the report, revised at the user\'s instruction "shorter"' in (
        shorter.report.methodology
    )
    meta, original = shorter.report.metadata, result.report.metadata
    assert (meta.queries, meta.iterations, meta.sources_searched, meta.environment) == (
        original.queries,
        original.iterations,
        original.sources_searched,
        original.environment,
    )
    assert meta.papers_reviewed == original.papers_reviewed

    rcts = await revise(run_id, "only randomised trials", settings, embedder=HashingEmbedder())
    assert rcts.version == 3
    assert rcts.preferences.length == "brief"  # built on the latest version
    cited = {r.citation.pmid for r in rcts.report.references}
    assert cited
    assert cited <= RCT_PMIDS
    assert checked(result, result.model_copy(update={"report": rcts.report})) == []
    assert "Only randomised controlled trials were kept: 2 of the run's 6" in (
        rcts.report.methodology
    )
    assert [v.version for v in runs.report_versions(run_id)] == [1, 2, 3]
    assert runs.report_version(run_id, 1) is not None
    assert runs.result(run_id) == result  # the run's own report is untouched


async def test_a_focus_gets_its_section_and_an_audience_its_note(
    runs: RunStore, settings: Settings, result: RunResult
) -> None:
    run_id = store_run(runs, result)
    version = await revise(
        run_id, "add a section on harms, for patients", settings, embedder=HashingEmbedder()
    )
    assert (version.preferences.focus, version.preferences.audience) == ("harms", PATIENTS)
    focus = version.report.findings[0]
    assert focus.heading == "Focus: harms"
    assert re.search(r"harms .*\[E\d+\]", focus.content)
    assert AUDIENCE_NOTES[PATIENTS] in version.report.conclusion
    assert checked(result, result.model_copy(update={"report": version.report})) == []


async def test_bad_input_raises_a_clear_error_and_stores_nothing(
    runs: RunStore, settings: Settings, result: RunResult
) -> None:
    run_id = store_run(runs, result, owner="user:alice")
    embedder = HashingEmbedder()
    with pytest.raises(RunNotFoundError, match=r"no run with id 'f{32}'"):
        await revise("f" * 32, "shorter", settings, embedder=embedder)
    with pytest.raises(RunNotFoundError):  # another owner's run is not found
        await revise(run_id, "shorter", settings, embedder=embedder)
    for instruction, says in [
        (" \x00 ", "the instruction is empty"),
        ("shorter " * 60, "the limit is 300"),
        ("translate it into French", "'translate into french' are not understood"),
    ]:
        with pytest.raises(RevisionError, match=says):
            await revise(run_id, instruction, settings, owner="user:alice", embedder=embedder)
    no_reviews = result.model_copy(deep=True)
    no_reviews.evidence = [e for e in no_reviews.evidence if e.citation.pmid != "9000003"]
    other = store_run(runs, no_reviews, owner="user:alice")
    with pytest.raises(RevisionError, match="none of the run's 5 on-topic sources"):
        await revise(
            other, "only systematic reviews", settings, owner="user:alice", embedder=embedder
        )
    failed = store_run(runs, None, "failed", "the model server refused", owner="user:alice")
    with pytest.raises(
        RunWithoutReportError, match="failed: the model server refused; it has no report to revise"
    ):
        await revise(failed, "shorter", settings, owner="user:alice", embedder=embedder)
    for stored in (run_id, other):
        assert [v.version for v in runs.report_versions(stored, owner="user:alice")] == [1]
