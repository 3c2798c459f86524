"""The researcher's review points of a run: the plan before the search
(:func:`review_plan`) and the screened evidence before the writing (:func:`review_evidence`).

With ``Settings.review_plan`` (``review_evidence``) a recorded run opens a review in the run
database (:class:`~deepcritical.state.reviews.ReviewBook`) and, while no decision is stored,
emits ``plan_ready`` (``evidence_ready``) and stops: its stream ends there, the recorder
leaves it ``awaiting_review`` and no process holds it. The user's decision
(:func:`deepcritical.api.approve_plan`, :func:`deepcritical.api.approve_evidence`) is stored,
then the run is resumed: it replays its finished steps from the call cache (no search or
model call repeated), reaches the same review point, finds the decision and applies it:

- a reviewed plan replaces the planner's (its sources, when it keeps a subset, restrict the
  search), announced by a second ``planning`` event with ``reviewed`` and the changes;
- an excluded record becomes off-topic with the reason "excluded by the reviewer: ..." (so it
  reaches no checklist item, hypothesis, writer or reference, and the flow counts it apart);
  an included one becomes relevant, "included by the reviewer";
- a cancelled review (by the user, or by the timeout with ``review_timeout_action =
  "cancel"``) ends the run with an ``error`` event marked ``cancelled``.

A review that waited longer than ``Settings.review_timeout_seconds`` when the run reaches it
is decided by its timeout (:meth:`~deepcritical.state.reviews.ReviewBook.open`). Every
decided review adds its sentence to the report's methodology.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Literal

from deepcritical.events import (
    ErrorData,
    EvidenceReadyData,
    PlanningData,
    PlanReadyData,
    ResearchEvent,
)
from deepcritical.evidence.grading import grade_evidence
from deepcritical.evidence.identifiers import identifier_keys
from deepcritical.models import (
    Evidence,
    EvidenceDecision,
    ResearchPlan,
    RunReview,
    ScreenedRecord,
    Screening,
    plural,
)
from deepcritical.orchestrators.run_context import RunContext

__all__ = ["apply_decisions", "review_evidence", "review_plan", "screened_table"]

EvidenceVerdict = Literal["write", "search", "stop"]
"""After an evidence review: write the report, search one more round, or stop (the run waits
or was cancelled)."""


def screened_table(items: Sequence[Evidence]) -> list[ScreenedRecord]:
    """The evidence table of a review: every record of ``items`` (the run's store, in store
    order) with its title, source, year, study design, whether it is included (screening
    did not find it off-topic) and the screening reason."""
    return [
        ScreenedRecord(
            id=e.id,
            title=e.citation.display_title()[:300],
            source=e.citation.source,
            year=e.citation.year,
            design=grade_evidence(e).value,
            included=e.screening != Screening.OFF_TOPIC,
            reason=e.screening_reason[:300],
            relevance=e.relevance,
            keys=identifier_keys(e.citation),
        )
        for e in items
    ]


def _decided_item(items: Sequence[Evidence], decision: EvidenceDecision) -> Evidence | None:
    """The record ``decision`` is about: the one of its evidence id when that record has one
    of the identifier keys the review showed (or the decision holds none), else the record
    with one of those keys (a replay that numbered the records otherwise), else ``None``."""
    wanted = set(decision.keys)
    by_id = next((e for e in items if e.id == decision.evidence_id), None)
    if by_id is not None and (not wanted or wanted & set(identifier_keys(by_id.citation))):
        return by_id
    if not wanted:
        return None
    return next((e for e in items if wanted & set(identifier_keys(e.citation))), None)


def apply_decisions(run: RunContext, review: RunReview) -> list[str]:
    """Apply ``review``'s decisions to the run's store: excluded records off-topic, included
    ones relevant, each with the reviewer's reason. The evidence ids of the decisions that
    found no record (the replay did not find that paper again), for a warning."""
    items = run.store.all()
    missing = []
    for decision in review.decisions:
        item = _decided_item(items, decision)
        if item is None:
            missing.append(decision.evidence_id)
            continue
        item.screening = Screening.OFF_TOPIC if decision.action == "exclude" else Screening.RELEVANT
        item.screening_reason = decision.screening_reason()
    return missing


def _planning(plan: ResearchPlan, review: RunReview) -> ResearchEvent:
    """The second ``planning`` event: the reviewed plan and what the user changed."""
    edits = plural(len(review.changes), "change")
    return ResearchEvent(
        type="planning",
        message=f"Plan reviewed ({edits}): {len(plan.checklist)} checklist items",
        data=PlanningData.of_plan(plan, reviewed=True, changes=review.changes),
    )


def _cancelled(run: RunContext, review: RunReview) -> None:
    note = (
        review.changes[0]
        if review.changes
        else f"the run was cancelled at its {review.stage} review"
    )
    run.emit(ResearchEvent(type="error", message=note, data=ErrorData(cancelled=True)))


async def _open(run: RunContext, proposed: RunReview) -> RunReview | None:
    """The stored review for ``proposed`` (opened when new); ``None`` when the run is not
    recorded (no review book)."""
    book, s = run.deps.reviews, run.settings
    if book is None:
        return None
    return await asyncio.to_thread(
        book.open, proposed, s.review_timeout_seconds, s.review_timeout_action
    )


def _use_plan(run: RunContext, review: RunReview) -> None:
    """The reviewed plan replaces the planner's; its sources restrict the search."""
    plan = (review.reviewed_plan or run.plan).model_copy(deep=True)
    plan.preferences = run.plan.preferences.model_copy()
    run.state.plan = plan
    if plan.sources:
        run.source_names[:] = [s for s in run.source_names if s in plan.sources]
        run.search.sources = [s for s in run.search.sources if s.name in plan.sources]
    run.state.methodology.append(review.methodology_line())
    run.emit(_planning(plan, review))


async def review_plan(run: RunContext) -> bool:
    """The plan review point, after planning (see the module docstring): True when the run
    goes on (no review asked for, or the review was approved or timed out), False when it
    stops here (waiting, or cancelled). Publishes its events."""
    s = run.settings
    go = True
    if s.review_plan:
        proposed = RunReview(
            number=1,
            stage="plan",
            plan=run.plan.model_copy(deep=True),
            sources=list(run.source_names),
        )
        review = await _open(run, proposed)
        if review is None:
            run.warn("the plan was not reviewed: reviews need a recorded run (persist_runs)")
        elif review.status == "waiting":
            run.emit(
                ResearchEvent(
                    type="plan_ready",
                    message="The plan is ready for review; the run waits for its approval",
                    data=PlanReadyData(
                        plan=(review.plan or run.plan).model_copy(deep=True),
                        sources=list(review.sources),
                        review=review.number,
                        timeout_seconds=s.review_timeout_seconds,
                    ),
                )
            )
            go = False
        elif review.status == "cancelled":
            _cancelled(run, review)
            go = False
        else:
            _use_plan(run, review)
    await run.events.publish()
    return go


async def review_evidence(run: RunContext, ordinal: int) -> EvidenceVerdict:
    """The ``ordinal``-th evidence review point, after gathering (see the module
    docstring): ``write`` (no review asked for, an empty store, or a review approved or
    timed out), ``search`` (approved with one more search round asked for) or ``stop``
    (waiting, or cancelled). Publishes its events."""
    s = run.settings
    verdict: EvidenceVerdict = "write"
    if s.review_evidence and len(run.store):
        table = screened_table(run.store.all())
        proposed = RunReview(number=1, stage="evidence", ordinal=ordinal, records=table)
        review = await _open(run, proposed)
        if review is None:
            run.warn("the evidence was not reviewed: reviews need a recorded run (persist_runs)")
        elif review.status == "waiting":
            included = sum(r.included for r in review.records)
            run.emit(
                ResearchEvent(
                    type="evidence_ready",
                    round=run.state.rounds,
                    message=(
                        f"The evidence is ready for review ({included} of "
                        f"{plural(len(review.records), 'record')} included); the run waits"
                    ),
                    data=EvidenceReadyData(
                        records=list(review.records),
                        review=review.number,
                        timeout_seconds=s.review_timeout_seconds,
                    ),
                )
            )
            verdict = "stop"
        elif review.status == "cancelled":
            _cancelled(run, review)
            verdict = "stop"
        else:
            missing = apply_decisions(run, review)
            if missing:
                run.warn(
                    f"the reviewer's decisions on {', '.join(missing)} found no record: the "
                    "search did not return those papers again"
                )
            run.state.methodology.append(review.methodology_line())
            verdict = "search" if review.more_search else "write"
    await run.events.publish()
    return verdict
