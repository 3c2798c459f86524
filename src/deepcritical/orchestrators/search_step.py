"""The search step of a round: the round's queries sent to every source, the results stored,
then the round's screening, full texts, citation tracking and appraisal, ending in the
``evidence_added`` event."""

from __future__ import annotations

from collections.abc import Sequence

from deepcritical.agents.search import SearchRound
from deepcritical.events import (
    CitationTrackingData,
    EvidenceAddedData,
    ResearchEvent,
    WarningData,
)
from deepcritical.evidence.study_extraction import appraise_items
from deepcritical.models import SOURCE_LABELS
from deepcritical.orchestrators.appraisal_step import appraise_by_model
from deepcritical.orchestrators.citation_step import track_citations
from deepcritical.orchestrators.full_text_step import read_round_full_texts
from deepcritical.orchestrators.run_context import RunContext
from deepcritical.orchestrators.screening_step import screen_round
from deepcritical.sources.filter_syntax import unapplied_filters

__all__ = ["search_round"]


async def search_round(run: RunContext, round_no: int, queries: Sequence[str]) -> SearchRound:
    """Search ``queries`` on every source into the store (the round's results re-ranked by
    relevance to the question and checklist; at most the room left under ``max_sources``
    kept, the most relevant), then screen the new items, read full texts, track citations
    and appraise the studies; emit source warnings and ``evidence_added``.

    Every round searches within the plan's ``filters``; round 1 sends the plan's
    ``source_queries`` verbatim to the sources they name (the others get ``queries``)."""
    plan = run.plan
    if round_no == 1:
        _unapplied_filters(run)
    with run.accounting.stage("searching"):
        targets = [plan.refined_question, *(c.description for c in plan.checklist)]
        room = max(run.settings.max_sources - len(run.store), 0)
        result = await run.search.run(
            queries,
            relevance_to=targets,
            keep=room,
            filters=plan.filters,
            source_queries=plan.source_queries if round_no == 1 else None,
        )
    run.accounting.record_search(result, run.source_names)
    run.flow_log.record(result)
    _source_failures(run, round_no, result)
    off_topic = await screen_round(run, round_no, result.added_ids)
    full_texts = await read_round_full_texts(run, round_no)
    tracked = await track_citations(run, round_no)
    appraise_items(run.on_topic())  # study records (rules; fast), before the checkpoint
    await appraise_by_model(run, result.added_ids)
    run.emit(_evidence_added(run, round_no, result, off_topic, full_texts, tracked))
    return result


def _unapplied_filters(run: RunContext) -> None:
    """A ``warning`` (and a note of the report) for each source that cannot apply some of
    the plan's filters (:func:`~deepcritical.sources.filter_syntax.unapplied_filters`: the
    web search none of them); what comes back is still screened by its own date and
    design."""
    for source in run.source_names:
        fields = unapplied_filters(source, run.plan.filters)
        if not fields:
            continue
        label = SOURCE_LABELS.get(source, source)
        reason = f"ignores the plan's search filters {', '.join(fields)}"
        run.warn(
            f"{label} {reason}; its records are screened by their own date and design only",
            data=WarningData(source=source, reason=reason),
        )


def _source_failures(run: RunContext, round_no: int, result: SearchRound) -> None:
    """Record the sources that failed (wholly or in part) and emit a ``warning`` for each;
    the others answered."""
    state = run.state
    for source, reason in result.failures.items():
        state.source_failures[source] = reason
        run.emit(
            ResearchEvent(
                type="warning",
                round=round_no,
                message=f"{SOURCE_LABELS.get(source, source)} unavailable: {reason}",
                data=WarningData(source=source, reason=reason),
            )
        )
    for source, reason in result.partial_failures.items():
        label = SOURCE_LABELS.get(source, source)
        state.notes.append(f"round {round_no}: {label} partly failed: {reason}")
        run.emit(
            ResearchEvent(
                type="warning",
                round=round_no,
                message=f"{label} partly failed: {reason}",
                data=WarningData(source=source, reason=reason, partial=True),
            )
        )
    state.sources_answered.update(src for src in run.source_names if src not in result.failures)


def _evidence_added(
    run: RunContext,
    round_no: int,
    result: SearchRound,
    off_topic: int,
    full_texts: int,
    tracked: CitationTrackingData | None,
) -> ResearchEvent:
    """The round's ``evidence_added`` event."""
    plan, store = run.plan, run.store
    from_tracking = f"and {tracked.added} from citation tracking " if tracked is not None else ""
    return ResearchEvent(
        type="evidence_added",
        round=round_no,
        message=(
            f"{len(result.added_ids)} new evidence items {from_tracking}"
            f"({len(store)} in store, coverage {plan.coverage():.0%})"
        ),
        data=EvidenceAddedData(
            added=len(result.added_ids),
            added_ids=list(result.added_ids),
            merged=len(result.merged),
            near_duplicates=len(result.near_duplicates),
            per_source=dict(result.hits_per_source),
            off_topic=off_topic,
            full_texts=full_texts,
            full_texts_total=len(run.state.full_texts.read),
            citation_tracking=tracked,
            on_topic_total=len(run.on_topic_ids()),
            total=len(store),
            coverage=plan.coverage(),
            checklist={c.key: c.status.value for c in plan.checklist},
        ),
    )
