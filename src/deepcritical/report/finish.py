"""The report stage of a run: from the writer's draft to the report the user gets.

:func:`finish_run` fills in the methodology (:func:`methodology`, written from what happened,
never by a model) and the metadata, adds the "Conflicting findings" section, validates every
citation, states the verdict of a yes/no question, grounds every cited sentence in its
sources (with the LLM rewriter when there is one: :func:`rewrite_function`), adds the study
designs and run limitations, and refuses to emit a report in which
:func:`~deepcritical.report.validation.citation_problems` still finds anything.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from deepcritical.events import ResearchEvent
from deepcritical.models import (
    SOURCE_LABELS,
    GroundedClaim,
    ResearchReport,
    RunResult,
)
from deepcritical.report.grounding import RewriteFunction, ground_report
from deepcritical.report.sections import (
    add_run_context,
    add_run_findings,
    add_verdict,
)
from deepcritical.report.validation import citation_problems, validate_report

if TYPE_CHECKING:
    from deepcritical.orchestrators.run import ResearchRun

__all__ = ["finish_run", "methodology", "rewrite_function"]


async def finish_run(
    run: ResearchRun, draft: ResearchReport | None, done_data: dict[str, Any] | None = None
) -> RunResult | None:
    """Turn ``draft`` into the run's validated report; emit ``report_section`` events and
    ``done`` (or ``error`` when there is no draft or validation left problems).

    The methodology is written here from what happened (never by a model), the metadata
    is filled in (stop reason, notes, usage...), the "Conflicting findings" section and
    the verdict of a yes/no question are added
    (:func:`~deepcritical.report.sections.add_run_findings`), then every
    reference and inline citation is checked against the store (:func:`validate_report`),
    every cited sentence is grounded in its sources when ``settings.grounding`` is on
    (:func:`~deepcritical.report.grounding.ground_report`: unsupported sentences removed,
    supporting quotes and the grounding score recorded), the design summary and run
    limitations are added, and :func:`citation_problems` is run again: a report in which
    it still finds anything is refused.
    """
    state, plan = run.state, run.plan
    if draft is None:
        run.emit(
            ResearchEvent(type="error", message="report writing failed: " + "; ".join(state.notes))
        )
        return None
    with run.accounting.stage("validation"):
        evidence_by_id = {e.id: e for e in run.store.all()}
        if not draft.hypotheses_tested:
            draft.hypotheses_tested = list(state.hypotheses)
        draft.methodology = methodology(run)
        draft.metadata = draft.metadata.model_copy(
            update={
                "sources_searched": run.source_names,
                "source_failures": {
                    k: v
                    for k, v in state.source_failures.items()
                    if k not in state.sources_answered
                },
                "papers_reviewed": len(run.store),
                "iterations": state.rounds,
                "confidence": run.confidence(),
                "stop_reason": state.stop_reason or "max_rounds",
                "orchestrator": run.orchestrator,
                "llm": run.llm_label,
                "duration_seconds": round(run.elapsed(), 3),
                "checklist_coverage": plan.coverage(),
                "queries": list(state.queries),
                "notes": [*state.notes, *draft.metadata.notes],
            }
        )
        failures = draft.metadata.source_failures
        try:
            draft = add_run_findings(draft, state.hypotheses, evidence_by_id, run.store.embedder)
        except Exception as exc:  # the report goes out without that section, never lost
            _degrade(run, draft, f"the conflicting-findings section could not be built ({exc})")
        report = add_verdict(validate_report(draft, evidence_by_id), run.question)
        problems = citation_problems(report, evidence_by_id)
    if not problems and run.settings.grounding:
        with run.accounting.stage("grounding"):
            try:
                report = await asyncio.to_thread(
                    ground_report,
                    report,
                    evidence_by_id,
                    run.store.embedder,
                    threshold=run.settings.grounding_threshold,
                    rewrite=rewrite_function(run),
                    max_rewrites=run.settings.grounding_rewrites,
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # keep the validated report, and say it is not grounded
                _degrade(
                    run,
                    report,
                    f"the grounding check failed ({type(exc).__name__}: {exc}); citations were "
                    "validated, but sentences were not checked against their sources",
                )
            problems = citation_problems(report, evidence_by_id)
    if not problems:
        report = add_run_context(report, evidence_by_id, failures)
        problems = citation_problems(report, evidence_by_id)
    if problems:  # validation must leave nothing behind; refuse to ship otherwise
        run.emit(
            ResearchEvent(
                type="error",
                message="citation validation left problems: " + "; ".join(problems),
            )
        )
        return None
    report.metadata.usage = run.usage_report()
    for section in report.findings:
        run.emit(
            ResearchEvent(
                type="report_section",
                message=section.heading,
                data={"heading": section.heading},
            )
        )
    cv = report.metadata.citation_validation
    result = RunResult(
        report=report, plan=plan, evidence=run.store.all(), assessments=state.assessments
    )
    run.emit(
        ResearchEvent(
            type="done",
            round=state.rounds,
            message=(
                f"Report ready: {len(report.references)} references, stopped: "
                f"{report.metadata.stop_reason}; citation check removed "
                f"{cv.references_removed} references, {cv.markers_removed} citations"
            ),
            data={
                "stop_reason": report.metadata.stop_reason,
                "usage": report.metadata.usage.model_dump(mode="json"),
                **(done_data or {}),
            },
            result=result,
        )
    )
    return result


def rewrite_function(run: ResearchRun) -> RewriteFunction | None:
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


def _degrade(run: ResearchRun, report: ResearchReport, what: str) -> None:
    """Warn (event and run notes) and note in ``report`` that a report step was skipped."""
    note = f"Report stage: {what}."
    run.warn(note)
    report.metadata.notes.append(note)


def methodology(run: ResearchRun) -> str:
    """Factual account of the run (built from what happened, never by a model)."""
    plan, state = run.plan, run.state
    labels = [SOURCE_LABELS.get(s, s) for s in run.source_names]
    lines = [
        f"Sources searched: {', '.join(labels)}. "
        f"{state.rounds} search round(s), {len(state.queries)} queries, "
        f"{len(run.store)} distinct records kept after de-duplication by identifier "
        "(PMID, DOI, PMCID, NCT ID, URL) and by near-duplicate text.",
        f"Checklist ({len(plan.checklist)} items, coverage {plan.coverage():.0%}): "
        + "; ".join(f"{c.description} — {c.status.value}" for c in plan.checklist)
        + ".",
        f"Evidence for the report was chosen by maximal marginal relevance "
        f"(λ = {run.settings.mmr_lambda:g}) among all records; every citation was checked "
        "against the evidence collected in this run.",
    ]
    lines.extend(state.methodology)
    if state.queries:
        lines.append("Queries: " + "; ".join(f"“{q}”" for q in state.queries) + ".")
    failed = {k: v for k, v in state.source_failures.items() if k not in state.sources_answered}
    for src, reason in failed.items():
        lines.append(f"{SOURCE_LABELS.get(src, src)} unavailable: {reason}.")
    return "\n\n".join(lines)
