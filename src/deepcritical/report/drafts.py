"""Pieces shared by both report writers and the report stage: the no-evidence, abstention,
closest-record and unsearched (time budget) reports, and the gap limitations."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from deepcritical.evidence.grading import grade_evidence
from deepcritical.models import (
    SOURCE_LABELS,
    ChecklistStatus,
    Evidence,
    Hypothesis,
    ReportSection,
    ResearchPlan,
    ResearchReport,
    StudyDesign,
)

__all__ = [
    "FEW_SOURCES",
    "abstention_report",
    "closest_record_report",
    "design_counts",
    "gap_limitations",
    "no_evidence_report",
    "unsearched_report",
]

FEW_SOURCES = 5
"""Fewer evidence items than this in a report is stated as a limitation."""


def _plural(n: int, label: str) -> str:
    if n == 1:
        return f"1 {label}"
    if label.endswith("study"):
        return f"{n} {label[:-5]}studies"
    if label.endswith("series"):
        return f"{n} {label}"
    return f"{n} {label}s"


def design_counts(evidence: Sequence[Evidence], sep: str = ", ") -> str:
    """The study designs of ``evidence``, strongest first, joined by ``sep``: "1 randomised
    controlled trial, 2 cohort studies" (designs read by
    :func:`~deepcritical.evidence.grading.grade_evidence`); ``""`` for no evidence."""
    counts = Counter(grade_evidence(e) for e in evidence)
    return sep.join(_plural(counts[d], d.value) for d in StudyDesign if counts[d])


def no_evidence_report(plan: ResearchPlan, hypotheses: Sequence[Hypothesis]) -> ResearchReport:
    """The report when no evidence was collected: says so, cites nothing, invents nothing."""
    return ResearchReport(
        title=f"No evidence found: {plan.refined_question}",
        research_question=plan.question,
        executive_summary=(
            "No evidence could be collected for this question from the sources searched, so no "
            "answer can be given."
        ),
        hypotheses_tested=list(hypotheses),
        findings=[],
        limitations=[
            "No source returned relevant records; the question may need other terms or "
            "other sources."
        ],
        conclusion="The question remains unanswered by the literature searched in this run.",
        references=[],
    )


def abstention_report(
    draft: ResearchReport,
    question: str,
    source_names: Sequence[str],
    screened_out: int,
) -> ResearchReport:
    """``draft`` turned into the report of a run that found nothing on-topic: it opens with
    "The sources searched (...) hold no evidence that addresses ...", says what was searched
    and screened, cites nothing, states no verdict and keeps no finding or hypothesis."""
    labels = ", ".join(SOURCE_LABELS.get(s, s) for s in source_names) or "none"
    screened = (
        f" The {screened_out} records retrieved were screened and none addresses the question."
        if screened_out
        else " No record was retrieved."
    )
    return draft.model_copy(
        update={
            "title": f"No evidence found: {question}",
            "executive_summary": (
                f"The sources searched ({labels}) hold no evidence that addresses this "
                f"question: {question}{screened} No answer can be given from them."
            ),
            "hypotheses_tested": [],
            "findings": [],
            "limitations": [
                "No on-topic evidence was found; the question may need other terms or other "
                "sources."
            ],
            "conclusion": (
                "The sources searched hold no evidence that addresses this question, so it "
                "remains unanswered here."
            ),
            "references": [],
        }
    )


def unsearched_report(
    draft: ResearchReport, question: str, budget_seconds: float
) -> ResearchReport:
    """``draft`` turned into the report of a run whose time budget (``budget_seconds``,
    seconds) ran out before any source was searched: it says so plainly ("The time budget
    (X s) ran out before any source was searched."), cites nothing, states no verdict and
    keeps no finding or hypothesis."""
    ran_out = f"The time budget ({budget_seconds:g} s) ran out before any source was searched."
    return draft.model_copy(
        update={
            "title": f"Not researched (time budget): {question}",
            "executive_summary": (
                f"{ran_out} The question was not researched, so no answer can be given: run "
                "it again, or resume the run, with a larger time budget."
            ),
            "hypotheses_tested": [],
            "findings": [],
            "limitations": [ran_out],
            "conclusion": (
                "The question remains unanswered here: no source was searched in this run."
            ),
            "references": [],
        }
    )


def closest_record_report(
    draft: ResearchReport,
    question: str,
    source_names: Sequence[str],
    screened_out: int,
    closest: Evidence,
    sentence: str,
    partial: int,
) -> ResearchReport:
    """``draft`` turned into the report of a run whose on-topic records all bear on part of
    the question only (screened ``partial``): it opens with "The sources searched (...) hold
    no evidence that addresses this question directly", quotes ``sentence`` (verbatim, from
    ``closest``, the partial record most relevant to the question) as the closest record
    found, cites nothing else, states no verdict and keeps no hypothesis. ``partial``: the
    number of partially relevant records."""
    labels = ", ".join(SOURCE_LABELS.get(s, s) for s in source_names) or "none"
    others = (
        f" {screened_out} other record{'s' if screened_out != 1 else ''} retrieved "
        f"{'were' if screened_out != 1 else 'was'} off-topic."
        if screened_out
        else ""
    )
    quoted = f"{sentence.rstrip().rstrip('.')} [{closest.id}]."
    title = closest.citation.display_title()
    return draft.model_copy(
        update={
            "title": f"No direct evidence found: {question}",
            "executive_summary": (
                f"The sources searched ({labels}) hold no evidence that addresses this "
                f"question directly: {question} Screening found {partial} record"
                f"{'s' if partial != 1 else ''} that bear{'s' if partial == 1 else ''} on part "
                f"of it only.{others} No answer can be given from them."
            ),
            "hypotheses_tested": [],
            "findings": [
                ReportSection(
                    heading="Closest record found",
                    content=(
                        f"The record closest to the question ({title}) addresses part of it "
                        f"only: {quoted}"
                    ),
                )
            ],
            "limitations": [
                "No record found addresses the question as asked; the closest one bears on "
                "part of it only (another population, exposure or outcome), so it cannot "
                "answer it. The question may need other terms or other sources."
            ],
            "conclusion": (
                "The sources searched hold no evidence that addresses this question directly, "
                "so it remains unanswered here."
            ),
            "references": [],
        }
    )


def gap_limitations(plan: ResearchPlan, evidence: Sequence[Evidence]) -> list[str]:
    """Limitations that follow from the run's real gaps, in plain sentences (no citations):
    unsatisfied or partial checklist items, few sources, preprints, a single source, and
    how much of the evidence was read in full text (:attr:`Evidence.full_text`) rather than
    from abstracts or summaries."""
    out: list[str] = []
    for item in plan.checklist:
        if item.status == ChecklistStatus.UNSATISFIED:
            out.append(f"No evidence was found for the checklist item: {item.description}.")
        elif item.status == ChecklistStatus.PARTIAL and len(item.evidence_ids) < item.min_evidence:
            out.append(
                f"Evidence is thin for the checklist item ({len(item.evidence_ids)} of "
                f"{item.min_evidence} sources needed): {item.description}."
            )
        elif item.status == ChecklistStatus.PARTIAL:  # enough sources, judged not to settle it
            out.append(
                f"The {len(item.evidence_ids)} sources found for the checklist item address it "
                f"only in part (reflection's judgement): {item.description}."
            )
    n = len(evidence)
    if 0 < n < FEW_SOURCES:
        out.append(
            f"Only {n} source{'s' if n != 1 else ''} could be used for this report "
            f"({design_counts(evidence)}): the evidence is thin."
        )
    preprints = sum(e.is_preprint for e in evidence)
    if preprints:
        out.append(
            f"{preprints} of the {n} sources are preprints that have not been peer reviewed."
        )
    origins = {s for e in evidence for s in e.sources}
    if n and len(origins) == 1:
        origin = next(iter(origins))
        out.append(f"All evidence comes from one source ({SOURCE_LABELS.get(origin, origin)}).")
    full = sum(e.full_text for e in evidence)
    if n and not full:
        out.append(
            "The evidence consists of abstracts or summaries returned by the search sources; "
            "full texts were not read."
        )
    elif full < n:
        out.append(
            f"The full text of {full} of the {n} sources was read (the passages that best "
            f"answer the question and each cited sentence); the other {n - full} were read "
            "from their abstracts or summaries only."
        )
    elif n:
        out.append(
            f"The full texts of all {n} sources were read, but only the passages that best "
            "answer the question and each cited sentence: findings stated elsewhere in a paper "
            "may have been missed."
        )
    return out
