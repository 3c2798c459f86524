"""The report step of a run: the draft turned into the validated, grounded report
(:func:`~deepcritical.report.finish.finish_report`) from what the run did, with the
``report_section`` and ``done`` events (``error`` when it cannot be)."""

from __future__ import annotations

import asyncio

from deepcritical.environment import software_environment
from deepcritical.events import DoneData, ReportSectionData, ResearchEvent, WorkflowSummary
from deepcritical.evidence.embeddings import embedder_name
from deepcritical.logs import get_logger
from deepcritical.models import (
    GroundedClaim,
    ResearchReport,
    RunResult,
    plural,
    stop_reason_text,
)
from deepcritical.orchestrators.citation_step import citation_counts
from deepcritical.orchestrators.run_context import RunContext
from deepcritical.report.finish import GroundingOptions, RunFacts, finish_report
from deepcritical.report.grounding import RewriteFunction
from deepcritical.report.methodology import (
    FullTextCounts,
    MethodologyRecord,
    ScreeningCounts,
    methodology_text,
)
from deepcritical.telemetry.tracing import current_trace

__all__ = ["finish_run"]

log = get_logger(__name__)


async def finish_run(
    run: RunContext, draft: ResearchReport | None, workflow: WorkflowSummary | None
) -> RunResult | None:
    """Turn ``draft`` into the run's report; emit a ``warning`` for every report step that
    was skipped, ``report_section`` events and ``done`` (with ``workflow``, the ``magentic``
    orchestrator's). Emits ``error`` and returns ``None`` when there is no draft or citation
    validation left problems."""
    state = run.state
    if draft is None:
        message = "report writing failed: " + "; ".join(state.notes)
        run.emit(ResearchEvent(type="error", message=message))
        return None
    finished = await finish_report(
        draft,
        _facts(run),
        GroundingOptions(
            enabled=run.settings.grounding,
            threshold=run.settings.grounding_threshold,
            max_rewrites=run.settings.grounding_rewrites,
            rewrite=_rewrite_function(run),
        ),
        stage=run.accounting.stage,
    )
    for note in finished.degraded:
        state.notes.append(note)
        run.emit(ResearchEvent(type="warning", round=state.rounds, message=note))
    report = finished.report
    if report is None:
        message = "citation validation left problems: " + "; ".join(finished.problems)
        run.emit(ResearchEvent(type="error", message=message))
        return None
    report.metadata.usage = run.usage_report()
    traced = current_trace()
    report.metadata.trace_id = traced["trace_id"] if traced else None
    report.metadata.flow = run.flow_log.flow(run.store.all(), report)
    if report.metadata.flow.problems():  # a counting bug: the report still goes out
        log.warning("the flow of records does not add up", **report.metadata.flow.model_dump())
    for section in report.findings:
        data = ReportSectionData(heading=section.heading)
        run.emit(ResearchEvent(type="report_section", message=section.heading, data=data))
    cv = report.metadata.citation_validation
    result = RunResult(
        report=report, plan=run.plan, evidence=run.store.all(), assessments=state.assessments
    )
    run.emit(
        ResearchEvent(
            type="done",
            round=state.rounds,
            message=(
                f"Report ready: {plural(len(report.references), 'reference')}, "
                f"{stop_reason_text(report.metadata.stop_reason)}; the citation check "
                f"removed {plural(cv.references_removed, 'reference')} and "
                f"{plural(cv.markers_removed, 'citation')}"
            ),
            data=DoneData(
                stop_reason=report.metadata.stop_reason,
                usage=report.metadata.usage.model_copy(deep=True),
                workflow=workflow,
            ),
            result=result,
        )
    )
    return result


def _failed_sources(run: RunContext) -> dict[str, str]:
    """Source -> reason, for the sources that failed and never answered."""
    state = run.state
    return {k: v for k, v in state.source_failures.items() if k not in state.sources_answered}


def _confidence(run: RunContext) -> float:
    """Half checklist coverage, half the best hypothesis confidence (coverage if none)."""
    coverage = run.plan.coverage()
    best = max((h.confidence for h in run.state.hypotheses), default=coverage)
    return round(0.5 * coverage + 0.5 * best, 2)


def _facts(run: RunContext) -> RunFacts:
    """What happened in the run so far, for the report stage."""
    state = run.state
    on_topic, retracted = run.on_topic(), run.retracted()
    return RunFacts(
        question=run.question,
        plan=run.plan,
        hypotheses=list(state.hypotheses),
        evidence=on_topic,
        screened_out=len(run.store) - len(on_topic) - len(retracted),
        embedder=run.store.embedder,
        methodology=_methodology(run),
        source_names=run.source_names,
        source_failures=_failed_sources(run),
        rounds=state.rounds,
        queries=list(state.queries),
        stop_reason=state.stop_reason or "max_rounds",
        orchestrator=run.orchestrator,
        llm=run.llm_label,
        duration_seconds=run.elapsed(),
        confidence=_confidence(run),
        notes=list(state.notes),
        searched=bool(state.sources_answered or state.source_failures),
        time_budget_seconds=run.settings.time_budget_seconds,
        environment=software_environment(embedder_name(run.store.embedder)),
        retracted=retracted,
    )


def _rewrite_function(run: RunContext) -> RewriteFunction | None:
    """The grounding check's rewriter: a synchronous bridge (called from the grounding
    worker thread) to the LLM rewriter on this event loop; ``None`` without one or with
    ``grounding_rewrites = 0``. Each call waits at most twice the LLM timeout (seconds)."""
    rewriter = run.agents.rewriter
    if rewriter is None or run.settings.grounding_rewrites <= 0:
        return None
    loop = asyncio.get_running_loop()
    timeout = 2 * run.settings.llm_timeout_seconds

    def rewrite(claim: GroundedClaim) -> str | None:
        passages = [(q.evidence_id, q.quote) for q in claim.quotes if q.quote]
        future = asyncio.run_coroutine_threadsafe(rewriter.rewrite(claim.sentence, passages), loop)
        try:
            return future.result(timeout=timeout)
        except TimeoutError:
            future.cancel()
            raise

    return rewrite


def _methodology(run: RunContext) -> str:
    """Factual account of the run (built from what happened, never by a model):
    :func:`~deepcritical.report.methodology.methodology_text` of its record."""
    state, store, s = run.state, run.store, run.settings
    records = store.all()
    screener = run.agents.screener
    calibration = run.deps.screening
    retracted = len(run.retracted())
    return methodology_text(
        MethodologyRecord(
            sources=list(run.source_names),
            searched=bool(state.sources_answered or state.source_failures),
            rounds=state.rounds,
            queries=list(state.queries),
            records=len(store),
            plan=run.plan,
            mmr_lambda=s.mmr_lambda,
            screening=ScreeningCounts(
                by_model=state.model_screened,
                model_tools=screener is None or screener.uses_tools,
                by_relevance=state.calibrated_screened,
                off_topic_below=calibration.partial_at if calibration is not None else None,
                off_topic=len(store) - len(run.on_topic()) - retracted,
            ),
            retracted=retracted,
            full_text=FullTextCounts(
                full=sum(e.full_text for e in records),
                records=len(records),
                fetching=run.deps.full_text is not None,
                fetched=len(state.full_texts.read),
                per_run=s.max_full_texts,
                failed=[
                    (store.require(eid).citation.pmcid, reason)
                    for eid, reason in state.full_texts.failed.items()
                ],
            ),
            citations=citation_counts(run),
            extra=list(state.methodology),
            unavailable=_failed_sources(run),
            filtered_out=dict(run.flow_log.excluded_by_filters),
        )
    )
