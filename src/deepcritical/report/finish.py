"""The report stage as a function of data: :func:`finish_report` turns the writer's draft and
the facts of the run (:class:`RunFacts`) into the report the user gets, or says why it cannot.

In order: the methodology and metadata are filled in from the facts (never by a model), the
"Conflicting findings" section is added (:func:`~deepcritical.report.sections.
add_run_findings`), every reference and inline citation is checked against the evidence
(:func:`~deepcritical.report.validation.validate_report`), the verdict of a yes/no question is
stated, every cited sentence is grounded in its sources when grounding is on
(:func:`~deepcritical.report.grounding.ground_report`, with the rewrite function when one is
given), the study designs and run limitations are added, and
:func:`~deepcritical.report.validation.citation_problems` is run again: a report in which it
still finds anything is refused (:attr:`FinishedReport.report` is ``None``). Last, the
records with integrity flags are listed (:func:`~deepcritical.report.sections.
add_integrity_section`): the retracted ones (``RunFacts.retracted``, never in
``RunFacts.evidence``, so never cited) and the cited ones with other flags.

Abstention: a run with no on-topic evidence gets the report that says so
(:func:`~deepcritical.report.drafts.abstention_report`), or, when its time budget ran out
before any source was searched, the report that says that
(:func:`~deepcritical.report.drafts.unsearched_report`); a run whose on-topic records were all
screened ``partial`` (each bears on part of the question only) gets the report that says no
record addresses the question directly and quotes the closest one
(:func:`~deepcritical.report.drafts.closest_record_report`). Neither states a verdict or keeps a
hypothesis, and a search that ran its course then stops as ``insufficient_evidence``. Records
that were not screened (no calibration for the embedder) count as addressing the question.

A step that fails (the conflicting-findings section, grounding) degrades the report instead of
losing it: the report goes out without that step, with a note in its metadata, and the note is
returned in :attr:`FinishedReport.degraded` for the caller to show.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field

from deepcritical.evidence.embeddings import Embedder
from deepcritical.evidence.keysentences import rank_sentences
from deepcritical.llm.llm_errors import describe_error
from deepcritical.models import (
    Evidence,
    Hypothesis,
    ReportMetadata,
    ResearchPlan,
    ResearchReport,
    Screening,
    SoftwareEnvironment,
    StopReason,
)
from deepcritical.report.appraisal import add_appraisal
from deepcritical.report.drafts import (
    abstention_report,
    closest_record_report,
    unsearched_report,
)
from deepcritical.report.grounding import RewriteFunction, ground_report
from deepcritical.report.sections import (
    add_integrity_section,
    add_run_context,
    add_run_findings,
    add_verdict,
)
from deepcritical.report.validation import citation_problems, validate_report

__all__ = ["FinishedReport", "GroundingOptions", "RunFacts", "finish_report"]

SEARCHED_TO_THE_END: frozenset[StopReason] = frozenset(
    {
        "sufficient",
        "all_satisfied",
        "max_rounds",
        "max_sources",
        "no_new_evidence",
        "manager_finished",
    }
)
"""Stop reasons of a search that ran its course: with nothing on-topic, such a run ends as
``insufficient_evidence`` (a run stopped by failing sources, an error, the time budget or a
stalled manager keeps that reason)."""

StageTimer = Callable[[str], AbstractContextManager[None]]
"""Times a block as (part of) a named stage (``"validation"``, ``"grounding"``)."""


@dataclass(frozen=True)
class RunFacts:
    """What happened in the run, as the report's methodology and metadata state it.

    Attributes:
        question: the checked research question.
        plan: the run's plan (checklist with statuses and assigned evidence).
        hypotheses: the run's current hypotheses (tested by the report when the draft names
            none).
        evidence: the items of the run's evidence store that screening did not find
            off-topic (the only ones a report may cite).
        embedder: the store's embedder (conflicting findings, grounding).
        methodology: the methodology text, written from what happened.
        source_names: the sources searched.
        source_failures: source -> reason, for sources that never answered.
        rounds: search rounds run.
        queries: every query run, in order.
        stop_reason: why gathering stopped.
        orchestrator: ``"iterative"`` or ``"magentic"``.
        llm: the model spec (never a key).
        duration_seconds: seconds from the run's start to the report stage.
        confidence: 0..1, from checklist coverage and the hypotheses.
        notes: the run's notes so far (warnings, fallbacks).
        screened_out: items of the store screened off-topic (counted, never cited).
        searched: whether any search came back (a source answered or failed).
        time_budget_seconds: the run's time budget for gathering (seconds).
        environment: the software the run ran on (:mod:`deepcritical.environment`);
            ``None`` leaves it out of the report.
        retracted: on-topic items a source marks as retracted (``Citation.retracted``): not
            in ``evidence``, never cited; listed in the report's "Retracted or flagged
            records found" section.
    """

    question: str
    plan: ResearchPlan
    hypotheses: Sequence[Hypothesis]
    evidence: Sequence[Evidence]
    embedder: Embedder
    methodology: str
    source_names: Sequence[str]
    source_failures: Mapping[str, str]
    rounds: int
    queries: Sequence[str]
    stop_reason: StopReason
    orchestrator: str
    llm: str
    duration_seconds: float
    confidence: float
    notes: Sequence[str] = ()
    screened_out: int = 0
    searched: bool = True
    time_budget_seconds: float = 0.0
    environment: SoftwareEnvironment | None = None
    retracted: Sequence[Evidence] = ()


@dataclass(frozen=True)
class GroundingOptions:
    """The grounding check's settings (``Settings.grounding``, ``grounding_threshold``,
    ``grounding_rewrites``) and the rewriter of unsupported sentences, if any."""

    enabled: bool = True
    threshold: float = 0.65
    max_rewrites: int = 0
    rewrite: RewriteFunction | None = None


@dataclass
class FinishedReport:
    """The outcome of :func:`finish_report`: ``report`` (``None`` when citation validation
    left ``problems``) and the notes of the steps that were skipped (``degraded``)."""

    report: ResearchReport | None
    problems: list[str] = field(default_factory=list)
    degraded: list[str] = field(default_factory=list)


def _no_timer(_stage: str) -> AbstractContextManager[None]:
    return nullcontext()


def _closest_record_draft(
    draft: ResearchReport, facts: RunFacts, closest: Evidence
) -> ResearchReport:
    """The report of a run with partly relevant records only: ``closest`` quoted by its
    sentence most similar to the question (:func:`closest_record_report`)."""
    ranked = rank_sentences([closest], facts.question, facts.embedder)
    sentence = ranked[0].text if ranked else closest.snippet(300)
    return closest_record_report(
        draft,
        facts.question,
        facts.source_names,
        facts.screened_out,
        closest,
        sentence,
        partial=len(facts.evidence),
    )


def _run_metadata(
    draft: ResearchReport, facts: RunFacts, stop_reason: StopReason
) -> ReportMetadata:
    """The draft's metadata with what the run knows: sources searched and failed, records
    reviewed and excluded, rounds, confidence, stop reason, model, timing, coverage, queries,
    notes and the software record."""
    return draft.metadata.model_copy(
        update={
            "sources_searched": list(facts.source_names) if facts.searched else [],
            "source_failures": dict(facts.source_failures),
            "papers_reviewed": len(facts.evidence) + facts.screened_out + len(facts.retracted),
            "off_topic_excluded": facts.screened_out,
            "iterations": facts.rounds,
            "confidence": facts.confidence,
            "stop_reason": stop_reason,
            "orchestrator": facts.orchestrator,
            "llm": facts.llm,
            "duration_seconds": round(facts.duration_seconds, 3),
            "checklist_coverage": facts.plan.coverage(),
            "queries": list(facts.queries),
            "notes": [*facts.notes, *draft.metadata.notes],
            "environment": facts.environment,
        }
    )


async def finish_report(
    draft: ResearchReport,
    facts: RunFacts,
    grounding: GroundingOptions,
    *,
    stage: StageTimer = _no_timer,
) -> FinishedReport:
    """The validated, grounded report built from ``draft`` (see the module docstring).

    Grounding runs in a worker thread (embeddings); ``grounding.rewrite`` is called from that
    thread. ``stage`` times the ``"validation"`` and ``"grounding"`` steps.
    """
    degraded: list[str] = []

    def degrade(report: ResearchReport, what: str) -> None:
        note = f"Report stage: {what}."
        degraded.append(note)
        report.metadata.notes.append(note)

    evidence_by_id = {e.id: e for e in facts.evidence}
    direct = [e for e in facts.evidence if e.screening != Screening.PARTIAL]
    abstain = not direct
    stop_reason = facts.stop_reason
    if abstain and stop_reason in SEARCHED_TO_THE_END:
        stop_reason = "insufficient_evidence"
    if abstain and facts.evidence:  # partly relevant records only: quote the closest one
        closest = max(facts.evidence, key=lambda e: e.relevance)
        evidence_by_id = {closest.id: closest}
        draft = await asyncio.to_thread(_closest_record_draft, draft, facts, closest)
    elif abstain and stop_reason == "time_budget" and not facts.searched:
        draft = unsearched_report(draft, facts.question, facts.time_budget_seconds)
    elif abstain:  # nothing on-topic: say so, cite nothing, state no verdict
        draft = abstention_report(draft, facts.question, facts.source_names, facts.screened_out)
    with stage("validation"):
        if not draft.hypotheses_tested and not abstain:
            draft.hypotheses_tested = list(facts.hypotheses)
        draft.methodology = facts.methodology
        draft.metadata = _run_metadata(draft, facts, stop_reason)
        try:
            hypotheses = [] if abstain else facts.hypotheses  # an abstention tests none
            draft = add_run_findings(draft, hypotheses, evidence_by_id, facts.embedder)
        except Exception as exc:  # noqa: BLE001 - the report goes out without that section
            degrade(draft, f"the conflicting-findings section could not be built ({exc})")
        report = validate_report(draft, evidence_by_id)
        if not abstain:
            report = add_verdict(report, facts.question, evidence_by_id)
        problems = citation_problems(report, evidence_by_id)
    if not problems and grounding.enabled:
        with stage("grounding"):
            try:
                report = await asyncio.to_thread(
                    ground_report,
                    report,
                    evidence_by_id,
                    facts.embedder,
                    threshold=grounding.threshold,
                    rewrite=grounding.rewrite,
                    max_rewrites=grounding.max_rewrites,
                )
            except Exception as exc:  # noqa: BLE001 - keep the validated report, and say so
                degrade(
                    report,
                    f"the grounding check failed ({describe_error(exc)}); citations were "
                    "validated, but sentences were not checked against their sources",
                )
            problems = citation_problems(report, evidence_by_id)
    if not problems:
        report = add_run_context(report, evidence_by_id, facts.source_failures)
        report = add_appraisal(report, evidence_by_id)
        problems = citation_problems(report, evidence_by_id)
    if problems:  # validation must leave nothing behind; refuse to ship otherwise
        return FinishedReport(None, problems, degraded)
    return FinishedReport(add_integrity_section(report, facts.retracted), [], degraded)
