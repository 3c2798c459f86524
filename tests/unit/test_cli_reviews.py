"""The researcher's reviews on the command line, in-process (typer's ``CliRunner``), over
offline runs: ``llm none``, the hashing embedder and a fixed source of metformin records
given to the API in place of what the settings build.

- ``research --review-plan`` (no terminal: the plain prompt) shows the plan and goes on with
  the edited plan file typed at the prompt; ``--review-evidence`` reads ``exclude E1 ...``;
- ``runs show`` names a waiting run's review and the command that decides it; ``runs
  approve-plan ID --plan FILE`` and ``runs approve-evidence ID --exclude "E1: ..."``
  continue an in-process run here and write its report;
- bad input (an unknown run, a run that does not wait for that review, a plan file with no
  checklist, an unknown record, an exclusion without a reason) exits 2 with the reason and
  changes nothing.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from deepcritical import api
from deepcritical.cli.main import app
from deepcritical.config import Settings
from deepcritical.events import EvidenceReadyData, PlanReadyData, ResearchEvent
from deepcritical.models import RunResult, marker_ids
from deepcritical.state import RunStore
from deepcritical.state.reviews import run_reviews
from deepcritical.testing.embedders import HashingEmbedder
from tests.state.revision_run import QUESTION, MetforminSource


def invoke(*args: str | Path, stdin: str | None = None) -> Result:
    """``deepcritical ARGS`` in this process; never raises (the exit code is in the result)."""
    return CliRunner().invoke(app, [str(a) for a in args], input=stdin, catch_exceptions=True)


def flat(result: Result) -> str:
    """Everything the command printed, white space collapsed (rich wraps lines)."""
    return " ".join(result.output.split())


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No ``.env`` or DEEPCRITICAL_ settings of the caller, no editor; the API's research and
    resume search the metformin records with the hashing embedder."""
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("DEEPCRITICAL_")]:
        monkeypatch.delenv(name)
    monkeypatch.delenv("EDITOR", raising=False)
    given: dict[str, Any] = {"sources": [MetforminSource()], "embedder": HashingEmbedder()}
    monkeypatch.setattr(api, "research", functools.partial(api.research, **given))
    monkeypatch.setattr(api, "resume", functools.partial(api.resume, **given))


def settings(data: Path) -> Settings:
    return Settings(data_dir=data, llm="none", sources=["pubmed"], max_rounds=1, max_full_texts=0)


def waiting_run(data: Path, *, plan: bool = False, evidence: bool = False) -> ResearchEvent:
    """A run stopped at its review (the last event: ``plan_ready`` or ``evidence_ready``)."""

    async def run() -> ResearchEvent:
        events: AsyncIterator[ResearchEvent] = api.research(
            QUESTION, settings(data), review_plan=plan, review_evidence=evidence
        )
        return [e async for e in events][-1]

    return asyncio.run(run())


def run_id_of(data: Path) -> str:
    store = RunStore.open(settings(data))
    try:
        return store.list_runs(1)[0].id
    finally:
        store.close()


def statuses(data: Path, run_id: str) -> list[str]:
    store = RunStore.open(settings(data))
    try:
        return [r.status for r in run_reviews(store, run_id)]
    finally:
        store.close()


def edited_plan(ready: PlanReadyData, path: Path, **change: Any) -> Path:
    plan = ready.plan.model_dump(mode="json")
    plan.update(change)
    path.write_text(yaml.safe_dump(plan), encoding="utf-8")
    return path


def test_approve_plan_with_an_edited_file_continues_the_run(tmp_path: Path) -> None:
    data = tmp_path / "data"
    ready = waiting_run(data, plan=True).data_as(PlanReadyData)
    run_id = run_id_of(data)
    shown = invoke("--data-dir", data, "runs", "show", run_id)
    assert shown.exit_code == 0, shown.output
    assert "Review 1 (plan): waiting" in flat(shown)
    assert f"deepcritical runs approve-plan {run_id}" in flat(shown)

    kept = ready.plan.checklist[:-1]
    edit = edited_plan(
        ready,
        tmp_path / "plan.yaml",
        checklist=[c.model_dump(mode="json") for c in kept],
        queries=["metformin adenoma randomised", *ready.plan.queries],
    )
    approved = invoke("--data-dir", data, "runs", "approve-plan", run_id[:8], "--plan", edit)
    assert approved.exit_code == 0, approved.output
    assert f"removed checklist item '{ready.plan.checklist[-1].key}'" in flat(approved)
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "reviewed and edited by the user" in " ".join(report.split())
    result = RunResult.model_validate_json((tmp_path / "report.json").read_text("utf-8"))
    assert result.plan is not None
    assert [c.key for c in result.plan.checklist] == [c.key for c in kept]

    again = invoke("--data-dir", data, "runs", "approve-plan", run_id)
    assert again.exit_code == 2
    assert "is not waiting for a plan review" in flat(again)


def test_bad_plan_approvals_exit_2_and_change_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    ready = waiting_run(data, plan=True).data_as(PlanReadyData)
    run_id = run_id_of(data)
    unknown = invoke("--data-dir", data, "runs", "approve-plan", "0" * 32)
    assert unknown.exit_code == 2
    assert "no run with id" in flat(unknown)
    empty = edited_plan(ready, tmp_path / "empty.yaml", checklist=[])
    refused = invoke("--data-dir", data, "runs", "approve-plan", run_id, "--plan", empty)
    assert refused.exit_code == 2
    assert "the plan needs at least one checklist item" in flat(refused)
    scopus = edited_plan(ready, tmp_path / "scopus.yaml", sources=["scopus"])
    refused = invoke("--data-dir", data, "runs", "approve-plan", run_id, "--plan", scopus)
    assert refused.exit_code == 2
    assert "unknown source(s) scopus" in flat(refused)
    other = invoke("--data-dir", data, "runs", "approve-evidence", run_id, "--include", "E1")
    assert other.exit_code == 2
    assert "it waits for its plan review" in flat(other)
    assert statuses(data, run_id) == ["waiting"]
    assert not (tmp_path / "report.md").exists()


def test_approve_evidence_excludes_a_record_and_bad_decisions_exit_2(tmp_path: Path) -> None:
    data = tmp_path / "data"
    records = waiting_run(data, evidence=True).data_as(EvidenceReadyData).records
    run_id = run_id_of(data)
    dropped = records[0].id
    for args, why in (
        (["--exclude", "E99: not a record"], "unknown record 'E99'"),
        (["--exclude", dropped], f"excluding {dropped} needs a reason"),
    ):
        bad = invoke("--data-dir", data, "runs", "approve-evidence", run_id, *args)
        assert bad.exit_code == 2, bad.output
        assert why in flat(bad)
    assert statuses(data, run_id) == ["waiting"]

    done = invoke(
        "--data-dir", data, "runs", "approve-evidence", run_id, "--exclude", f"{dropped}: in mice"
    )
    assert done.exit_code == 0, done.output
    result = RunResult.model_validate_json((tmp_path / "report.json").read_text("utf-8"))
    assert dropped not in {r.evidence_id for r in result.report.references}
    assert result.report.metadata.flow is not None
    assert result.report.metadata.flow.excluded_by_reviewer == 1


def test_research_review_prompts_take_an_edited_plan_and_decisions(tmp_path: Path) -> None:
    data = tmp_path / "data"
    # the plain prompt (no terminal): the path of an edited plan file, then one exclusion
    first = waiting_run(tmp_path / "probe", plan=True).data_as(PlanReadyData)
    edit = edited_plan(
        first, tmp_path / "plan.yaml", queries=["metformin colorectal prevention trial"]
    )
    answers = f"{edit}\nexclude E2 a duplicate report\n\n"
    done = invoke(
        "--data-dir", data, "research", QUESTION, "--llm", "none", "--sources", "pubmed",
        "--max-rounds", "1", "--review-plan", "--review-evidence", stdin=answers,
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "refined_question:" in done.output  # the plan was shown
    assert "Screened evidence" in flat(done)
    result = RunResult.model_validate_json((tmp_path / "report.json").read_text("utf-8"))
    assert "metformin colorectal prevention trial" in result.report.metadata.queries
    assert "E2" not in {r.evidence_id for r in result.report.references}
    assert "E2" not in {i for text in result.report.texts() for i in marker_ids(text)}
    markdown = " ".join(result.report.to_markdown().split())
    assert "added query 'metformin colorectal prevention trial'" in markdown
    assert "excluded E2 (a duplicate report)" in markdown


def test_a_prompt_left_unanswered_leaves_the_run_waiting(tmp_path: Path) -> None:
    data = tmp_path / "data"
    aborted = invoke(
        "--data-dir", data, "research", QUESTION, "--llm", "none", "--sources", "pubmed",
        "--max-rounds", "1", "--review-plan", stdin="",
    )  # fmt: skip
    assert aborted.exit_code != 0
    run_id = run_id_of(data)
    assert statuses(data, run_id) == ["waiting"]  # nothing lost: approve it later
    later = invoke("--data-dir", data, "runs", "approve-plan", run_id)
    assert later.exit_code == 0, later.output
    assert (tmp_path / "report.md").is_file()
