"""The full-text step of a search round: the open-access full texts of the most relevant
on-topic records read (:mod:`~deepcritical.orchestrators.full_texts`, within
``Settings.max_full_texts`` per run), stored as their passages, and screened again on them."""

from __future__ import annotations

import asyncio

from deepcritical.events import ResearchEvent, WarningData
from deepcritical.evidence.screening import screen_items
from deepcritical.orchestrators.full_texts import full_text_candidates, read_full_texts
from deepcritical.orchestrators.run_context import RunContext

__all__ = ["read_round_full_texts"]


async def read_round_full_texts(run: RunContext, round_no: int) -> int:
    """Read the full texts of the most relevant on-topic items with a PMCID, store them as the
    items' passages, screen them again on their passages (calibrated screening: a partial
    item whose body answers the question becomes relevant), and emit a ``warning`` for each
    one that could not be read (the item keeps its abstract). Returns the number read this
    round (0 without a full-text reader)."""
    reader = run.deps.full_text
    log = run.state.full_texts
    if reader is None:
        return 0
    chosen = full_text_candidates(run.on_topic(), log, run.settings.max_full_texts)
    if not chosen:
        return 0
    with run.accounting.stage("full texts"):
        outcome = await read_full_texts(chosen, reader, log)
    for item in outcome.read:
        run.store.update(item)
    read = [item.id for item in outcome.read]
    calibration = run.deps.screening
    if read and calibration is not None and run.deps.agents.screener is None:
        # screened on the abstract before: now also on the passages that answer the question
        await asyncio.to_thread(
            screen_items, run.store, run.plan.refined_question, read, calibration
        )
    for evidence_id, pmcid, reason in outcome.failed:
        run.emit(
            ResearchEvent(
                type="warning",
                round=round_no,
                message=f"full text of {pmcid} not read ({reason}); its abstract is used",
                data=WarningData(full_text=pmcid, evidence_id=evidence_id, reason=reason),
            )
        )
    return len(outcome.read)
