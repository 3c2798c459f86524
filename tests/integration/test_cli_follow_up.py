"""``deepcritical runs ask`` end to end, in subprocesses as a user would: a dev question of the
PubMedQA subset is researched offline (``--llm none --corpus DIR``, the fixtures of
:mod:`tests.integration.test_cli_research`), then asked again as a follow-up of that run: the
answer cites the run's evidence only, its citations check, and ``runs show`` lists it; a
question the run's evidence cannot answer gets the "does not answer" message."""

from __future__ import annotations

import re

import pytest

from deepcritical.config import Settings
from deepcritical.models import FollowUp, RunResult
from deepcritical.report.validation import citation_problems
from deepcritical.state import RunStore
from deepcritical.writing.follow_up import NOT_ANSWERED, on_topic
from tests.integration.test_cli_research import (
    CorpusSetup,
    corpus_setup,
    research_run,
    run_cli,
)

__all__ = ["corpus_setup"]  # the module-scoped fixture, used here

pytestmark = pytest.mark.slow


def test_a_finished_run_answers_its_question_again_as_a_follow_up(
    corpus_setup: CorpusSetup,
) -> None:
    research = research_run(corpus_setup, "ask", "--corpus", corpus_setup.data_dir / "corpus")
    assert research.run.returncode == 0, research.run.describe()
    found = re.search(r"run id\s+([0-9a-f]{32})", research.run.stderr)
    assert found, research.run.describe()
    run_id = found.group(1)
    result = RunResult.model_validate_json(research.json_path.read_text(encoding="utf-8"))

    asked = run_cli(
        "--data-dir", corpus_setup.data_dir, "runs", "ask", run_id, corpus_setup.question,
        cwd=corpus_setup.root,
    )  # fmt: skip
    assert asked.returncode == 0, asked.describe()
    assert "## References" in asked.stdout
    assert "[1]" in asked.stdout
    unanswerable = run_cli(
        "--data-dir", corpus_setup.data_dir, "runs", "ask", run_id,
        "Which quantum gravity theory best explains black hole entropy?",
        cwd=corpus_setup.root,
    )  # fmt: skip
    assert unanswerable.returncode == 0, unanswerable.describe()
    assert NOT_ANSWERED in unanswerable.output
    assert "deepcritical research" in unanswerable.output
    shown = run_cli(
        "--data-dir", corpus_setup.data_dir, "runs", "show", run_id, cwd=corpus_setup.root
    )
    assert "Follow-up questions (2):" in shown.stdout

    store = RunStore.open(Settings(data_dir=corpus_setup.data_dir))
    try:
        kept: list[FollowUp] = store.follow_ups(run_id)
    finally:
        store.close()
    assert [f.answered for f in kept] == [True, False]
    by_id = {e.id: e for e in on_topic(result)}
    assert citation_problems(kept[0].as_report(), by_id) == []
    cited = {r.citation.pmid for r in kept[0].references}
    if corpus_setup.gold_pmid in {r.citation.pmid for r in result.report.references}:
        assert corpus_setup.gold_pmid in cited
