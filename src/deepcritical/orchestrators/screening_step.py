"""The screening step of a search round: the round's new records screened, the on-topic ones
assigned to the checklist.

By the search agent's model through the source tools when the run's agents have a screener
(:class:`~deepcritical.agents.screener.LLMSourceScreener`), falling back to calibrated
screening with a warning when it fails; calibrated
(:func:`~deepcritical.evidence.screening.screen_items`) otherwise.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from deepcritical.agents.checklist import assign_keys, assign_to_checklist
from deepcritical.agents.screener import LLMSourceScreener
from deepcritical.evidence.screening import screen_items
from deepcritical.models import Screening
from deepcritical.orchestrators.agent_set import AgentSet
from deepcritical.orchestrators.run_context import RunContext

__all__ = ["screen_round"]


async def screen_round(run: RunContext, round_no: int, ids: Sequence[str]) -> int:
    """Screen round ``round_no``'s new items ``ids`` and assign the on-topic ones to the
    checklist. Returns the number of items found off-topic (0 when every screener failed:
    the run's warning says so)."""
    run.state.collection_note = None
    if not ids:
        return 0

    async def screen(a: AgentSet) -> int:
        if a.screener is None:
            return await _screen_calibrated(run, ids)
        return await _screen_by_model(run, a.screener, round_no, ids)

    return await run.guarded("search agent's screening", screen, "screening") or 0


async def _screen_calibrated(run: RunContext, ids: Sequence[str]) -> int:
    """Calibrated screening (none without a calibration), then checklist assignment by
    similarity; items off-topic."""
    plan, kept = run.plan, list(ids)
    calibration = run.deps.screening
    if calibration is not None:
        screened = await asyncio.to_thread(
            screen_items, run.store, plan.refined_question, kept, calibration
        )
        kept = [r.evidence_id for r in screened if r.status != Screening.OFF_TOPIC]
    if kept:
        await asyncio.to_thread(
            assign_to_checklist, plan, run.store, kept, run.settings.checklist_assign_threshold
        )
    run.state.calibrated_screened += len(ids)
    return len(ids) - len(kept)


async def _screen_by_model(
    run: RunContext, screener: LLMSourceScreener, round_no: int, ids: Sequence[str]
) -> int:
    """The search agent's screening: statuses, reasons and checklist questions from what
    its model saved (the calibrated relevance, when there is a calibration, is kept as the
    items' relevance score); its next queries join the follow-ups; items off-topic."""
    collector = await asyncio.to_thread(run.source_collector)
    calibration = run.deps.screening
    if calibration is not None:
        await asyncio.to_thread(
            screen_items, run.store, run.plan.refined_question, ids, calibration
        )
    items = [run.store.require(i) for i in ids]
    outcome = await screener.screen(run.plan, items, collector, round_no)
    assignments: dict[str, list[str]] = {}
    for record in outcome.records:
        item = run.store.require(record.evidence_id)
        item.screening = record.status
        item.screening_reason = record.reason
        if record.checklist_keys:
            assignments[record.evidence_id] = list(record.checklist_keys)
    assign_keys(run.plan, run.store, assignments)
    state = run.state
    state.follow_ups = list(dict.fromkeys([*state.follow_ups, *outcome.next_queries]))
    state.collection_note = outcome.progress or None
    state.model_screened += len(outcome.records)
    return sum(r.status == Screening.OFF_TOPIC for r in outcome.records)
