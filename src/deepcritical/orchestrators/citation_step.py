"""The citation-tracking step, once per run (:mod:`~deepcritical.orchestrators.
citation_tracking`): after the first round that leaves on-topic records with a PMID or DOI,
the references and citing papers of the most relevant are followed, and the most relevant new
records are added to the store, screened as a round's new items and counted in the flow of
records."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from deepcritical.agents.search import screen_by_filters
from deepcritical.events import CitationTrackingData, WarningData
from deepcritical.evidence.store import AddResult
from deepcritical.models import Evidence
from deepcritical.orchestrators.citation_tracking import (
    choose_candidates,
    citation_seeds,
    follow_citations,
    per_seed_limit,
)
from deepcritical.orchestrators.run_context import RunContext
from deepcritical.orchestrators.screening_step import screen_round
from deepcritical.report.methodology import CitationCounts
from deepcritical.sources.bounded import bound_evidence

__all__ = ["citation_counts", "track_citations"]


async def track_citations(run: RunContext, round_no: int) -> CitationTrackingData | None:
    """Follow the references and citing papers of the ``citation_seeds`` most relevant
    on-topic records, add at most ``citation_candidates`` new records (within
    ``max_sources``) and screen them. Returns what it did (for the round's
    ``evidence_added`` event), ``None`` when it did not run now (no citation linker, done
    already, neither PubMed nor OpenAlex answered, or nothing on-topic to start from yet)."""
    linker, log, s = run.deps.citations, run.state.citations, run.settings
    if linker is None or log.done:
        return None
    if not run.state.sources_answered & {"pubmed", "openalex"}:
        # offline, or both down: every lookup would fail after its retries
        log.skipped = "neither PubMed nor OpenAlex answered the searches"
        return None
    log.skipped = ""
    seeds = citation_seeds(run.on_topic(), run.state.full_texts.references, s.citation_seeds)
    if not seeds:
        return None  # nothing on-topic to start from yet: a later round may have some
    log.done = True
    log.seeds = [seed.label for seed in seeds]
    room = min(s.citation_candidates, max(s.max_sources - len(run.store), 0))
    if room <= 0:
        log.skipped = f"the run already holds max_sources ({s.max_sources}) records"
        return CitationTrackingData(seeds=list(log.seeds), skipped=log.skipped)
    with run.accounting.stage("citation tracking"):
        limit = per_seed_limit(s.citation_candidates, len(seeds))
        lists, log.failures = await follow_citations(linker, seeds, limit)
        added = await asyncio.to_thread(_add_candidates, run, lists, room)
    log.added = added.added_ids
    log.off_topic = await screen_round(run, round_no, log.added)
    if log.failures:
        run.warn(
            "citation tracking partly failed: " + "; ".join(log.failures[:3]),
            data=WarningData(citation_tracking=True),
        )
    return CitationTrackingData(
        seeds=list(log.seeds),
        identified=log.identified,
        already_found=log.already_found,
        added=len(log.added),
        off_topic=log.off_topic,
    )


def _add_candidates(run: RunContext, lists: Sequence[Sequence[Evidence]], room: int) -> AddResult:
    """Bound, screen by the plan's search filters, choose and store citation-tracking
    records (at most ``room`` new ones, the most relevant to the question and checklist);
    count them in the run's flow (those outside the filters as removed by them)."""
    plan, log, store = run.plan, run.state.citations, run.store
    bound = [[bound_evidence(e, run.settings.max_evidence_chars) for e in x] for x in lists]
    screened = [screen_by_filters(x, plan.filters) for x in bound]
    for _, excluded in screened:
        run.flow_log.record_filtered(excluded)
    inside = [kept for kept, _ in screened]
    targets = [plan.refined_question, *(c.description for c in plan.checklist)]
    known, chosen, beyond = choose_candidates(inside, store, targets, store.embedder, room)
    added = store.add([*known, *chosen])
    log.identified = sum(len(x) for x in bound)
    log.already_found = len(known)
    log.duplicates = added.identifier_copies + added.near_duplicate_copies - len(known)
    log.beyond_limit = beyond
    run.flow_log.record_citations(
        log.identified, added.identifier_copies, added.near_duplicate_copies, beyond
    )
    return added


def citation_counts(run: RunContext) -> CitationCounts | None:
    """What citation tracking did in the run, for its methodology; ``None`` when the run
    had no citation linker (the step never runs)."""
    if run.deps.citations is None:
        return None
    log = run.state.citations
    return CitationCounts(
        done=log.done,
        skipped=log.skipped,
        seeds=list(log.seeds),
        identified=log.identified,
        already_found=log.already_found,
        duplicates=log.duplicates,
        beyond_limit=log.beyond_limit,
        cap=run.settings.citation_candidates,
        added=len(log.added),
        off_topic=log.off_topic,
        failures=list(log.failures),
    )
