"""A finished run's report revised at a user's instruction: a new version written from the
same evidence (no new search) and put through the same checks as the run's own report.

:func:`revise_report` applies a :class:`~deepcritical.writing.revision_instructions.
RevisionRequest` to the previous version's report preferences and study-design filter, writes
a draft with the extractive writer following those preferences
(:class:`~deepcritical.writing.extractive.ExtractiveReportWriter`, ``follow_preferences``),
and hands it to :func:`~deepcritical.report.finish.finish_report` with the run's facts rebuilt
from its stored result (:func:`stored_facts`): the original methodology, sources, rounds,
queries, stop reason, model, timing, notes and software, plus a methodology note that says
which version this is and by which instruction it was revised. Usage, records reviewed and
the flow of records stay the original run's (only the count of cited records follows the
new version).
"""

from __future__ import annotations

from collections.abc import Sequence

from deepcritical.evidence.design import DesignGroup, classify_design
from deepcritical.evidence.embeddings import Embedder
from deepcritical.models import (
    Evidence,
    ReportLength,
    ReportPreferences,
    ReportVersion,
    ResearchPlan,
    ResearchReport,
    RunResult,
    on_topic_items,
    retracted_items,
    utc_now,
)
from deepcritical.report.finish import GroundingOptions, RunFacts, finish_report
from deepcritical.report.sections import design_summary
from deepcritical.writing.extractive import ExtractiveReportWriter
from deepcritical.writing.revision_instructions import RevisionError, RevisionRequest

__all__ = ["revise_report", "revision_note", "run_methodology", "stored_facts"]

REPORT_STAGE_NOTE = "Report stage:"
"""How a note of the original report's own checks starts (not carried into a revision)."""


def stored_facts(
    result: RunResult,
    plan: ResearchPlan,
    evidence: Sequence[Evidence],
    methodology: str,
    embedder: Embedder,
) -> RunFacts:
    """The facts of the finished run ``result`` for the report stage, read from its stored
    report's metadata (sources searched and failed, rounds, queries, stop reason, model,
    duration, confidence, notes, software), with ``evidence`` (the on-topic items a version
    may cite), the run's retracted items and ``methodology``.

    The original report's own "Report stage:" notes are left out: they were about its checks.
    """
    meta = result.report.metadata
    on_topic = on_topic_items(result.evidence)
    retracted = retracted_items(result.evidence)
    return RunFacts(
        question=result.report.research_question,
        plan=plan,
        hypotheses=list(result.report.hypotheses_tested),
        evidence=list(evidence),
        embedder=embedder,
        methodology=methodology,
        source_names=list(meta.sources_searched),
        source_failures=dict(meta.source_failures),
        rounds=meta.iterations,
        queries=list(meta.queries),
        stop_reason=meta.stop_reason or "max_rounds",
        orchestrator=meta.orchestrator,
        llm=meta.llm,
        duration_seconds=meta.duration_seconds,
        confidence=meta.confidence,
        notes=[n for n in meta.notes if not n.startswith(REPORT_STAGE_NOTE)],
        screened_out=len(result.evidence) - len(on_topic) - len(retracted),
        searched=bool(meta.sources_searched or meta.source_failures),
        environment=meta.environment,
        retracted=retracted,
    )


def revision_note(
    version: int,
    instruction: str,
    preferences: ReportPreferences,
    designs: Sequence[DesignGroup],
    kept: int,
    on_topic: int,
) -> str:
    """The methodology's note on a revision: its number, the user's instruction, the
    preferences and design filter it was written with, and that no new search was run."""
    parts = [f"length {preferences.length}"]
    if preferences.audience.strip():
        parts.append(f"audience {preferences.audience.strip()}")
    if preferences.focus.strip():
        parts.append(f"a section on {preferences.focus.strip()}")
    note = (
        f"This is version {version} of the report, revised at the user's instruction "
        f'"{instruction}" from the evidence of the same run (no new search), by the extractive '
        f"writer ({', '.join(parts)})."
    )
    if designs:
        labels = " and ".join(d.value.lower() for d in designs)
        note += (
            f" Only {labels} were kept: {kept} of the run's {on_topic} on-topic sources; the "
            "others are not cited in this version."
        )
    return note


def run_methodology(result: RunResult) -> str:
    """The methodology the run wrote, without the design summary of its references that its
    report stage appended (a version states the designs of its own references)."""
    text = result.report.methodology.strip()
    by_id = {e.id: e for e in result.evidence}
    cited = [by_id[r.evidence_id] for r in result.report.references if r.evidence_id in by_id]
    summary = design_summary(cited)
    if summary and text.endswith(summary):
        text = text[: -len(summary)].rstrip()
    return text


def _pool(
    result: RunResult, evidence: Sequence[Evidence], length: ReportLength, max_evidence: int
) -> list[Evidence]:
    """The items the writer draws from: those the original report cited, in its order, then
    the others by relevance; at most ``max_evidence`` (twice that for a ``detailed``
    report)."""
    cited = {r.evidence_id: i for i, r in enumerate(result.report.references)}
    ordered = sorted(evidence, key=lambda e: (e.id not in cited, cited.get(e.id, 0), -e.relevance))
    return ordered[: max_evidence * (2 if length == "detailed" else 1)]


def _designs(request: RevisionRequest, previous: ReportVersion) -> tuple[DesignGroup, ...]:
    """The request's design filter, else the previous version's."""
    return request.designs or tuple(DesignGroup(d) for d in previous.designs)


def _keep_run_counts(report: ResearchReport, result: RunResult) -> None:
    """Usage, records reviewed and excluded and the flow of records as the original run
    counted them; only the flow's count of cited records follows ``report``."""
    meta, original = report.metadata, result.report.metadata
    meta.usage = original.usage.model_copy(deep=True)
    meta.papers_reviewed = original.papers_reviewed
    meta.off_topic_excluded = original.off_topic_excluded
    if original.flow is not None:
        cited = len({r.evidence_id for r in report.references})
        meta.flow = original.flow.model_copy(update={"cited": cited})


async def revise_report(
    result: RunResult,
    previous: ReportVersion,
    request: RevisionRequest,
    instruction: str,
    embedder: Embedder,
    grounding: GroundingOptions,
    *,
    max_evidence: int = 12,
) -> ReportVersion:
    """Version ``previous.version + 1`` of the report of the finished run ``result`` (see the
    module docstring).

    Args:
        result: the run's stored result (report, plan, evidence).
        previous: the newest version so far (version 1: the run's own report); its
            preferences and design filter are the starting point of ``request``.
        request: what the instruction asks for
            (:func:`~deepcritical.writing.revision_instructions.parse_instruction`).
        instruction: the instruction as checked, for the methodology note.
        embedder: the run's embedder (sentence ranking, grounding).
        grounding: the grounding check's settings.
        max_evidence: the most items the writer draws from (``Settings.report_max_evidence``).

    Raises:
        RevisionError: the stored run has no plan; no on-topic source of the designs asked for
            remains; or citation validation left problems (the message lists them).
    """
    plan = result.plan
    if plan is None:
        raise RevisionError("the stored run has no plan, so its report cannot be revised")
    preferences = request.apply(previous.preferences)
    designs = _designs(request, previous)
    on_topic = on_topic_items(result.evidence)
    kept = [e for e in on_topic if not designs or classify_design(e) in designs]
    if not kept:
        labels = " or ".join(d.value.lower() for d in designs)
        raise RevisionError(
            f"none of the run's {len(on_topic)} on-topic sources is among {labels}; no new "
            "version was made"
        )
    version = previous.version + 1
    note = revision_note(version, instruction, preferences, designs, len(kept), len(on_topic))
    methodology = "\n\n".join(p for p in (run_methodology(result), note) if p)
    revised_plan = plan.model_copy(update={"preferences": preferences})
    writer = ExtractiveReportWriter(embedder, follow_preferences=True)
    pool = _pool(result, kept, preferences.length, max_evidence)
    assessment = result.assessments[-1] if result.assessments else None
    draft = await writer.write(revised_plan, pool, result.report.hypotheses_tested, assessment)
    facts = stored_facts(result, revised_plan, kept, methodology, embedder)
    finished = await finish_report(draft, facts, grounding)
    if finished.report is None:
        raise RevisionError(
            "citation validation left problems in the revised report: "
            + "; ".join(finished.problems)
        )
    report = finished.report
    _keep_run_counts(report, result)
    return ReportVersion(
        version=version,
        instruction=instruction,
        created_at=utc_now(),
        report=report,
        preferences=preferences,
        designs=[d.value for d in designs],
    )
