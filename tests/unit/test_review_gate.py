"""The review points of both orchestrators over a run store in memory
(:mod:`deepcritical.orchestrators.review_step`): the ``magentic`` orchestrator stops after
planning with ``plan_ready`` (nothing searched, the manager never asked) and, once the plan
is approved with an edit, searches the reviewed plan; at the evidence review point it stops
with the table, and a reviewer's exclusion keeps the record out of its report."""

from __future__ import annotations

import dataclasses
from typing import Any

from sqlalchemy.orm import Session

from deepcritical.events import EvidenceReadyData, PlanningData, PlanReadyData
from deepcritical.orchestrators.magentic import MagenticOrchestrator
from deepcritical.state import RunStore
from deepcritical.state.reviews import ReviewBook, decide_evidence, decide_plan
from deepcritical.state.run_store import AWAITING_REVIEW
from tests.unit.test_magentic_orchestrator import collect, make, result_of, settings


def _awaiting(runs: RunStore, run_id: str) -> None:
    """What the recorder does at a review event (no recorder runs here)."""

    def work(session: Session) -> None:
        runs.require_row(session, run_id).status = AWAITING_REVIEW

    runs.transact(work)


def _orchestrator(runs: RunStore, run_id: str, **review: Any) -> MagenticOrchestrator:
    orch, *_ = make(run_settings=settings(**review))
    orch.deps = dataclasses.replace(orch.deps, reviews=ReviewBook(runs, run_id))
    return orch


async def test_magentic_stops_for_the_plan_review_and_searches_the_reviewed_plan() -> None:
    runs = RunStore.in_memory()
    try:
        run_id = runs.create_run("q", {})
        first = await collect(_orchestrator(runs, run_id, review_plan=True))
        assert first[-1].type == "plan_ready"
        assert "searching" not in {e.type for e in first}
        assert "manager" not in {e.type for e in first}  # the workflow never started
        plan = first[-1].data_as(PlanReadyData).plan
        _awaiting(runs, run_id)
        edited = plan.model_copy(update={"checklist": plan.checklist[:1]})
        review = decide_plan(runs, run_id, edited)
        assert review.changes
        events = await collect(_orchestrator(runs, run_id, review_plan=True))
        result = result_of(events)
        reviewed = [e.data for e in events if isinstance(e.data, PlanningData) and e.data.reviewed]
        assert len(reviewed) == 1
        assert result.plan is not None
        assert [c.key for c in result.plan.checklist] == [plan.checklist[0].key]
        assert "reviewed and edited by the user" in result.report.methodology
    finally:
        runs.close()


async def test_magentic_stops_for_the_evidence_review_and_drops_an_excluded_record() -> None:
    runs = RunStore.in_memory()
    try:
        run_id = runs.create_run("q", {})
        first = await collect(_orchestrator(runs, run_id, review_evidence=True))
        assert first[-1].type == "evidence_ready"
        assert "done" not in {e.type for e in first}
        table = first[-1].data_as(EvidenceReadyData).records
        assert table
        dropped = table[0].id
        _awaiting(runs, run_id)
        decide_evidence(
            runs, run_id, [{"evidence_id": dropped, "action": "exclude", "reason": "in vitro"}]
        )
        result = result_of(await collect(_orchestrator(runs, run_id, review_evidence=True)))
        assert dropped not in {r.evidence_id for r in result.report.references}
        assert result.report.metadata.flow is not None
        assert result.report.metadata.flow.excluded_by_reviewer == 1
    finally:
        runs.close()
