"""The researcher's reviews through the API (``research(..., review_plan=True,
evidence=True)``, ``approve_plan``, ``approve_evidence``, ``cancel_review``): offline
runs (``llm none``, the hashing embedder, a fixed source of metformin records) recorded in a
SQLite run database.

- a run asked to review its plan stops after planning with ``plan_ready``, searches nothing,
  and is left ``awaiting_review``; the edited plan (a checklist item removed, a query added)
  is what the continued run (the same run id) searches, and the methodology says so;
- a run asked to review its evidence stops with ``evidence_ready`` and the screened table;
  a record excluded with a reason is counted in the flow and is absent from the references;
- bad input (an unknown run, a finished one, a run waiting for the other review, an edited
  plan with no checklist or an unknown source, an unknown record, an exclusion without a
  reason) gets a clear error and changes nothing.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from deepcritical.api import (
    approve_evidence,
    approve_plan,
    cancel_review,
    record_plan_review,
    research,
    resume,
    run_reviews,
)
from deepcritical.config import Settings
from deepcritical.events import EvidenceReadyData, PlanReadyData, ResearchEvent
from deepcritical.jobs.readiness import Readiness
from deepcritical.models import Evidence, ResearchPlan, SearchFilters, marker_ids
from deepcritical.state import RunStore
from deepcritical.state.errors import (
    InvalidPlanError,
    InvalidReviewError,
    RunNotAwaitingReviewError,
    RunNotFoundError,
    UnknownRecordError,
)
from deepcritical.testing.embedders import HashingEmbedder
from tests.state.revision_run import QUESTION, MetforminSource


class CountingSource(MetforminSource):
    """:class:`MetforminSource`, keeping every query it was asked."""

    def __init__(self) -> None:
        self.queries: list[str] = []

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        self.queries.append(query)
        return await super().search(query, limit, filters)


def _settings(tmp_path: Path, **extra: Any) -> Settings:
    return Settings(
        llm="none",
        sources=["pubmed"],
        data_dir=tmp_path,
        max_rounds=1,
        max_full_texts=0,
        **extra,
    )


async def _collect(stream: Any) -> list[ResearchEvent]:
    return [event async for event in stream]


async def _waiting_run(
    tmp_path: Path, source: CountingSource, *, plan: bool = False, evidence: bool = False
) -> tuple[str, list[ResearchEvent]]:
    events = await _collect(
        research(
            QUESTION,
            _settings(tmp_path),
            sources=[source],
            embedder=HashingEmbedder(),
            review_plan=plan,
            review_evidence=evidence,
        )
    )
    run_id = events[0].run_id
    assert run_id is not None
    return run_id, events


def _record(tmp_path: Path, run_id: str) -> Any:
    store = RunStore.open(_settings(tmp_path))
    try:
        return store.require_run(run_id)
    finally:
        store.close()


async def test_plan_review_stops_before_the_search_and_the_edit_is_searched(
    tmp_path: Path,
) -> None:
    source = CountingSource()
    run_id, events = await _waiting_run(tmp_path, source, plan=True)
    assert events[-1].type == "plan_ready"
    assert source.queries == []  # nothing searched before the plan is approved
    ready = events[-1].data_as(PlanReadyData)
    assert ready.sources == ["pubmed"]
    record = _record(tmp_path, run_id)
    assert (record.status, record.stage) == ("awaiting_review", "review_plan")
    readiness = Readiness(_settings(tmp_path))  # /metrics counts it as waiting for review
    try:
        assert readiness.job_counts()["waiting_review"] == 1
    finally:
        readiness.close()

    plan = ready.plan.model_copy(deep=True)
    removed = plan.checklist.pop()
    plan.queries = ["metformin colorectal adenoma trial", *plan.queries]
    continued = await _collect(
        approve_plan(
            run_id, plan, _settings(tmp_path), sources=[source], embedder=HashingEmbedder()
        )
    )
    done = continued[-1]
    assert done.type == "done"
    assert done.result is not None
    assert continued[0].run_id == run_id  # the same run goes on
    assert "metformin colorectal adenoma trial" in source.queries
    reviewed = [e for e in continued if e.type == "planning" and e.data.reviewed]  # type: ignore[union-attr]
    assert len(reviewed) == 1
    assert f"removed checklist item {removed.key!r}" in reviewed[0].data.changes  # type: ignore[union-attr]
    assert done.result.plan is not None
    assert removed.key not in {c.key for c in done.result.plan.checklist}
    markdown = done.result.report.to_markdown()
    assert "reviewed and edited by the user" in markdown
    assert "added query 'metformin colorectal adenoma trial'" in markdown
    assert _record(tmp_path, run_id).status in {"completed", "max_iterations"}
    reviews = await run_reviews(run_id, _settings(tmp_path))
    assert [(r.stage, r.status) for r in reviews] == [("plan", "approved")]


async def test_evidence_review_excludes_a_record_from_the_references(tmp_path: Path) -> None:
    source = CountingSource()
    run_id, events = await _waiting_run(tmp_path, source, evidence=True)
    assert events[-1].type == "evidence_ready"
    table = events[-1].data_as(EvidenceReadyData).records
    assert len(table) == 6
    assert all(r.included for r in table)
    assert _record(tmp_path, run_id).stage == "review_evidence"
    dropped = table[0].id
    continued = await _collect(
        approve_evidence(
            run_id,
            [{"evidence_id": dropped, "action": "exclude", "reason": "animal study"}],
            _settings(tmp_path),
            sources=[source],
            embedder=HashingEmbedder(),
        )
    )
    result = continued[-1].result
    assert result is not None
    report = result.report
    assert dropped not in {r.evidence_id for r in report.references}
    cited = {i for text in report.texts() for i in marker_ids(text)}
    assert cited  # the report cites records, never the excluded one
    assert dropped not in cited
    assert dropped not in {i for h in report.hypotheses_tested for i in h.supporting_evidence_ids}
    flow = report.metadata.flow
    assert flow is not None
    assert flow.excluded_by_reviewer == 1
    assert flow.exclusion_reasons.get("excluded by the reviewer") == 1
    assert not flow.problems()
    markdown = report.to_markdown()
    assert "Excluded by the reviewer: 1" in markdown
    assert f"excluded {dropped} (animal study)" in markdown


async def test_bad_review_input_gets_a_clear_error_and_changes_nothing(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    source = CountingSource()
    run_id, events = await _waiting_run(tmp_path, source, plan=True)
    plan = events[-1].data_as(PlanReadyData).plan

    with pytest.raises(RunNotFoundError, match="no run with id"):
        await record_plan_review("f" * 32, None, settings)
    empty = plan.model_dump(mode="json") | {"checklist": []}
    with pytest.raises(InvalidPlanError, match="at least one checklist item"):
        await _collect(approve_plan(run_id, empty, settings, sources=[source]))
    unknown = plan.model_dump(mode="json") | {"sources": ["pubmed", "scopus"]}
    with pytest.raises(InvalidPlanError, match="unknown source"):
        await record_plan_review(run_id, unknown, settings)
    blank = plan.model_copy(update={"queries": ["  "]})
    with pytest.raises(InvalidPlanError, match="query 1 is empty"):
        await record_plan_review(run_id, blank, settings)
    with pytest.raises(RunNotAwaitingReviewError, match="waits for its plan review"):
        await _collect(approve_evidence(run_id, [], settings, sources=[source]))
    # nothing stored: the run still waits for its plan review, searched nothing
    assert source.queries == []
    assert [r.status for r in await run_reviews(run_id, settings)] == ["waiting"]
    assert _record(tmp_path, run_id).status == "awaiting_review"

    # decided once; a second approval is refused and the run finished is refused too
    await _collect(
        approve_plan(run_id, None, settings, sources=[source], embedder=HashingEmbedder())
    )
    with pytest.raises(RunNotAwaitingReviewError, match="not waiting for a plan review"):
        await record_plan_review(run_id, ResearchPlan.model_validate(plan), settings)
    with pytest.raises(RunNotAwaitingReviewError):
        await cancel_review(run_id, settings)


async def test_bad_evidence_decisions_are_refused_and_cancel_ends_the_run(
    tmp_path: Path,
) -> None:
    settings = _settings(tmp_path)
    run_id, events = await _waiting_run(tmp_path, CountingSource(), evidence=True)
    first = events[-1].data_as(EvidenceReadyData).records[0].id
    with pytest.raises(UnknownRecordError, match="unknown record 'E99'"):
        await _collect(
            approve_evidence(
                run_id, [{"evidence_id": "E99", "action": "exclude", "reason": "x"}], settings
            )
        )
    with pytest.raises(InvalidReviewError, match=f"excluding {first} needs a reason"):
        await _collect(
            approve_evidence(run_id, [{"evidence_id": first, "action": "exclude"}], settings)
        )
    with pytest.raises(InvalidReviewError, match="already included"):
        await _collect(
            approve_evidence(run_id, [{"evidence_id": first, "action": "include"}], settings)
        )
    assert [r.status for r in await run_reviews(run_id, settings)] == ["waiting"]

    cancelled = await cancel_review(run_id, settings)
    assert cancelled.status == "cancelled"
    record = _record(tmp_path, run_id)
    assert record.status == "cancelled"
    store = RunStore.open(settings)
    try:
        last = store.events(record.id)[-1].event
    finally:
        store.close()
    assert last.type == "error"
    assert "cancelled at its evidence review" in last.message


async def test_one_more_search_round_then_the_evidence_is_reviewed_again(tmp_path: Path) -> None:
    settings = _settings(tmp_path, max_queries_per_round=1)  # queries are left for round 2
    source = CountingSource()
    events = await _collect(
        research(
            QUESTION, settings, sources=[source], embedder=HashingEmbedder(), review_evidence=True
        )
    )
    run_id = events[0].run_id
    assert run_id is not None
    assert len(set(source.queries)) == 1
    again = await _collect(
        approve_evidence(
            run_id, [], settings, more_search=True, sources=[source], embedder=HashingEmbedder()
        )
    )
    assert again[-1].type == "evidence_ready"
    assert again[-1].data_as(EvidenceReadyData).review == 2
    rounds = [e.round for e in again if e.type == "searching"]
    assert rounds == [1, 2]  # round 1 replayed, then the round the reviewer asked for
    assert len(set(source.queries)) == 2  # one new query searched in round 2
    done = await _collect(
        approve_evidence(run_id, [], settings, sources=[source], embedder=HashingEmbedder())
    )
    result = done[-1].result
    assert result is not None
    markdown = " ".join(result.report.to_markdown().split())
    assert "One more search round was asked for." in markdown
    reviews = await run_reviews(run_id, settings)
    assert [(r.stage, r.ordinal, r.more_search) for r in reviews] == [
        ("evidence", 1, True),
        ("evidence", 2, False),
    ]


@pytest.mark.parametrize("action", ["continue", "cancel"])
async def test_in_process_a_review_times_out_when_the_run_is_next_resumed(
    tmp_path: Path, action: str
) -> None:
    settings = _settings(tmp_path, review_timeout_seconds=0.5, review_timeout_action=action)
    source = CountingSource()
    events = await _collect(
        research(
            QUESTION,
            settings,
            sources=[source],
            embedder=HashingEmbedder(),
            review_plan=True,
        )
    )
    run_id = events[0].run_id
    assert run_id is not None
    assert events[-1].type == "plan_ready"
    await asyncio.sleep(0.6)
    resumed = await _collect(
        resume(run_id, _settings(tmp_path), sources=[source], embedder=HashingEmbedder())
    )
    reviews = await run_reviews(run_id, settings)
    if action == "continue":
        assert resumed[-1].type == "done"
        assert reviews[0].status == "timed_out"
        assert resumed[-1].result is not None
        assert "the review timed out" in resumed[-1].result.report.to_markdown()
        assert source.queries  # it searched with the plan as it stood
    else:
        assert resumed[-1].type == "error"
        assert "timed out; the run was cancelled" in resumed[-1].message
        assert reviews[0].status == "cancelled"
        assert _record(tmp_path, run_id).status == "cancelled"
        assert source.queries == []
        store = RunStore.open(settings)
        try:
            logged = [e.event for e in store.events(run_id)]
        finally:
            store.close()
        assert [e.type for e in logged].count("error") == 1  # said once, by the run
