"""``deepcritical.ask`` (issue 32 item 4) on SQLite and PostgreSQL: a follow-up question on a
finished run gets a cited answer whose citations check and is kept with the run; a question
the evidence cannot answer gets the "does not answer" message, kept too; bad input (a failed
run, a run without its report yet, an unknown run, another owner's run, an empty or too long
question) raises a clear error and stores nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from deepcritical import ask
from deepcritical.config import Settings
from deepcritical.models import RunResult, marker_ids
from deepcritical.orchestrators.deps import QuestionError
from deepcritical.report.validation import citation_problems
from deepcritical.state import RunNotFoundError, RunStore, RunWithoutReportError
from deepcritical.testing.embedders import HashingEmbedder
from deepcritical.writing.follow_up import NOT_ANSWERED, on_topic
from tests.unit.test_follow_up_answer import RUN

QUESTION = "Does metformin lower colorectal cancer risk in diabetes?"


def store_run(
    runs: RunStore,
    result: RunResult | None,
    status: str = "completed",
    error: str | None = None,
    owner: str | None = None,
) -> str:
    run_id = runs.create_run(RUN.report.research_question, {}, owner=owner)

    def finish(session: Session) -> None:
        row = runs.require_row(session, run_id)
        row.status, row.error = status, error
        row.result = None if result is None else result.model_dump(mode="json")

    runs.transact(finish)
    return run_id


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, database_url=database_url)


async def test_a_follow_up_gets_a_cited_answer_kept_with_the_run(
    runs: RunStore, settings: Settings
) -> None:
    run_id = store_run(runs, RUN)
    follow_up = await ask(run_id[:8], QUESTION, settings, embedder=HashingEmbedder())
    assert follow_up.answered
    assert "E1" in marker_ids(follow_up.answer)
    assert citation_problems(follow_up.as_report(), {e.id: e for e in on_topic(RUN)}) == []
    unanswered = await ask(
        run_id,
        "  What is the boiling point of nitrogen?\x00 ",
        settings,
        embedder=HashingEmbedder(),
    )
    assert not unanswered.answered
    assert unanswered.answer == NOT_ANSWERED
    assert unanswered.question == "What is the boiling point of nitrogen?"
    assert runs.follow_ups(run_id) == [follow_up, unanswered]


@pytest.mark.parametrize(
    ("status", "error", "says"),
    [
        ("failed", "the model server refused", "failed: the model server refused"),
        ("cancelled", None, "cancelled; it has no report"),
        ("in_progress", None, "has no report yet (in_progress)"),
    ],
)
async def test_a_run_without_a_report_is_refused_and_nothing_is_stored(
    runs: RunStore, settings: Settings, status: str, error: str | None, says: str
) -> None:
    run_id = store_run(runs, None, status, error)
    with pytest.raises(RunWithoutReportError, match=re.escape(says)) as caught:
        await ask(run_id, QUESTION, settings, embedder=HashingEmbedder())
    assert f"runs resume {run_id}" in caught.value.cli_hint
    assert runs.follow_ups(run_id) == []


async def test_bad_input_raises_a_clear_error_and_stores_nothing(
    runs: RunStore, settings: Settings
) -> None:
    run_id = store_run(runs, RUN, owner="user:alice")
    embedder = HashingEmbedder()
    with pytest.raises(RunNotFoundError, match=r"no run with id 'f{32}'"):
        await ask("f" * 32, QUESTION, settings, embedder=embedder)
    with pytest.raises(RunNotFoundError):  # another owner's run is not found
        await ask(run_id, QUESTION, settings, embedder=embedder)
    with pytest.raises(QuestionError, match="empty"):
        await ask(run_id, " \x00 \n", settings, owner="user:alice", embedder=embedder)
    with pytest.raises(QuestionError, match="limit is 2000"):
        await ask(run_id, "why " * 600, settings, owner="user:alice", embedder=embedder)
    assert runs.follow_ups(run_id, owner="user:alice") == []
