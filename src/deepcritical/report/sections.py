"""Parts of the final report built by the orchestrator from what the run found, never by a
model: the "Conflicting findings" section, the explicit verdict on a yes/no question, the
study-design summary and the limitations that follow from real gaps.

All of it is deterministic and built from the evidence store and the hypotheses:

- :func:`conflicting_findings_section`: when a hypothesis has contradicting evidence, one
  section quoting (verbatim, cited) the most relevant sentence of each contradicting item and
  of up to two supporting items; ``None`` when no hypothesis has contradicting evidence.
- :func:`decide_verdict` / :func:`verdict_of`: ``"yes"`` / ``"no"`` only when the relevant
  sources' stances on the first hypothesis (the one that states the question as a claim) are
  decisive, else ``"uncertain"`` with the reason; ``None`` for other questions.
- :func:`design_summary`: "Study designs of the cited sources: 2 randomised controlled
  trials, 1 cohort study." from :func:`~deepcritical.evidence.grading.grade_evidence`.
- :func:`extra_limitations`: unavailable sources and the absence of high-level designs
  (the writers already state unsatisfied checklist items, preprints and abstract-only
  evidence: :func:`~deepcritical.report.drafts.gap_limitations`).
- :func:`add_integrity_section`: the records listed in "Retracted or flagged records found"
  (retracted records the run found, never cited; cited records with other integrity flags).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from deepcritical.evidence.embeddings import Embedder
from deepcritical.evidence.grading import HIGH_LEVEL_DESIGNS, grade_evidence
from deepcritical.evidence.keysentences import rank_sentences
from deepcritical.models import (
    SOURCE_LABELS,
    Evidence,
    FlaggedRecord,
    Hypothesis,
    ReportSection,
    ResearchReport,
    Screening,
    Stance,
)
from deepcritical.report.citation_markers import add_marker
from deepcritical.report.drafts import design_counts
from deepcritical.report.verdict_method import verdict_method

__all__ = [
    "CONFLICT_HEADING",
    "MAJORITY",
    "Verdict",
    "VerdictDecision",
    "add_integrity_section",
    "add_run_context",
    "add_run_findings",
    "add_verdict",
    "conflicting_findings_section",
    "decide_verdict",
    "design_summary",
    "extra_limitations",
    "is_yes_no_question",
    "verdict_of",
    "verdict_sentence",
]

CONFLICT_HEADING = "Conflicting findings"
MAX_CONTRADICTING = 4
MAX_SUPPORTING = 2

Verdict = Literal["yes", "no", "uncertain"]

_YES_NO = re.compile(
    r"^\s*(?:is|are|was|were|does|do|did|can|could|should|shall|must|has|have|had|will"
    r"|would|may|might)\b",
    re.IGNORECASE,
)
_WH = re.compile(r"^\s*(?:what|how|why|which|when|where|who|whom|whose)\b", re.IGNORECASE)
_CLAUSE = re.compile(r"[:;]|\.\s")


def is_yes_no_question(question: str) -> bool:
    """True for a yes/no question: a clause opens with an auxiliary verb ("Does metformin
    ...?", "Biliary atresia: should all patients ...?"), or the question ends with "?" and no
    clause opens with a wh-word ("Inhibin: a new marker of hydatidiform mole?"). "How does
    metformin act?" and a statement without "?" are not."""
    clauses = [c for c in _CLAUSE.split(question) if c.strip()]
    if any(_YES_NO.match(c) for c in clauses):
        return True
    return question.strip().endswith("?") and not any(_WH.match(c) for c in clauses)


MAJORITY = 3
"""Decisive relevant sources on one side must outnumber the other side this many times over
for a yes/no verdict when they disagree (3 supporting, 1 contradicting -> yes; 2 and 1 ->
uncertain)."""


@dataclass(frozen=True)
class VerdictDecision:
    """A verdict and why: the reason names the counts or the state of the evidence that
    decided it ("2 relevant sources support it, none contradicts it", "sources disagree: 1
    supporting, 1 contradicting", "only partially relevant sources take a stance")."""

    verdict: Verdict
    reason: str


@dataclass(frozen=True)
class _Tally:
    """Relevant (or unscreened) and partially relevant sources on each side, the relevant
    neutral ones, and how many on-topic sources are partially relevant."""

    supporting: int
    contradicting: int
    partial_supporting: int
    partial_contradicting: int
    neutral: list[Evidence]
    partial_sources: int = 0


def _is_relevant(item: Evidence | None) -> bool:
    """Screened relevant, or not screened at all (a run without screening, or no evidence
    given): only ``partial`` and ``off_topic`` items are not."""
    return item is None or item.screening in (None, Screening.RELEVANT)


def _tally(
    supporting: Sequence[str],
    contradicting: Sequence[str],
    evidence: Mapping[str, Evidence] | None,
) -> _Tally:
    def split(ids: Sequence[str]) -> tuple[int, int]:
        known = [evidence.get(i) if evidence is not None else None for i in ids]
        if evidence is not None:
            known = [e for e in known if e is not None and e.screening != Screening.OFF_TOPIC]
        relevant = sum(_is_relevant(e) for e in known)
        return relevant, len(known) - relevant

    s, sp = split(supporting)
    c, cp = split(contradicting)
    cited = {*supporting, *contradicting}
    items = list((evidence or {}).values())
    neutral = [
        e for e in items if e.id not in cited and e.stance is Stance.NEUTRAL and _is_relevant(e)
    ]
    partial = sum(e.screening == Screening.PARTIAL for e in items)
    return _Tally(s, c, sp, cp, neutral, partial)


def _sources_verb(n: int, verb: str) -> str:
    """``"1 relevant source supports"``, ``"2 relevant sources support"``."""
    return f"{n} relevant source{'s' if n != 1 else ''} {verb}{'s' if n == 1 else ''}"


def _undecided_reason(t: _Tally) -> str:
    """Why no side wins when no relevant source takes a stance."""
    if t.partial_supporting or t.partial_contradicting:
        return (
            "only partially relevant sources take a stance "
            f"({t.partial_supporting} supporting, {t.partial_contradicting} contradicting)"
        )
    if len(t.neutral) == 1:
        why = t.neutral[0].stance_reason
        return "the one relevant source's conclusion is not decisive" + (f" ({why})" if why else "")
    if t.neutral:
        return f"none of the {len(t.neutral)} relevant sources' conclusions is decisive"
    if t.partial_sources:
        n = t.partial_sources
        return f"only partially relevant sources were found ({n}), none taking a stance on it"
    return "no relevant source takes a stance on it"


def decide_verdict(
    question: str,
    hypotheses: Sequence[Hypothesis],
    evidence: Mapping[str, Evidence] | None = None,
) -> VerdictDecision | None:
    """The answer to a yes/no ``question`` from the sources' stances on the first hypothesis
    (the one that states the question as a claim); ``None`` when the question is not a
    yes/no question.

    Only relevant sources decide (screened ``relevant``, or not screened; ``partial`` ones
    and ids not in ``evidence`` do not; with ``evidence=None`` every id counts as relevant):
    ``"yes"`` when at least one supports the hypothesis and none contradicts it, or
    supporting ones outnumber contradicting ones :data:`MAJORITY` times over; ``"no"``
    likewise the other way; ``"uncertain"`` otherwise, with the reason: the sources
    disagree, only partially relevant sources take a stance, the relevant sources'
    conclusions are hedged or mixed (their ``stance`` is neutral), or there is no hypothesis.
    """
    if not is_yes_no_question(question):
        return None
    if not hypotheses and not evidence:
        return VerdictDecision("uncertain", "no hypothesis could be tested on the evidence")
    h = hypotheses[0] if hypotheses else None
    t = _tally(
        h.supporting_evidence_ids if h else [],
        h.contradicting_evidence_ids if h else [],
        evidence,
    )
    s, c = t.supporting, t.contradicting
    if s and s >= MAJORITY * c:
        against = "none contradicts it" if not c else f"{c} contradict{'s' if c == 1 else ''} it"
        return VerdictDecision("yes", f"{_sources_verb(s, 'support')} it, {against}")
    if c and c >= MAJORITY * s:
        against = "none supports it" if not s else f"{s} support{'s' if s == 1 else ''} it"
        return VerdictDecision("no", f"{_sources_verb(c, 'contradict')} it, {against}")
    if s or c:
        return VerdictDecision(
            "uncertain", f"relevant sources disagree: {s} supporting, {c} contradicting"
        )
    return VerdictDecision("uncertain", _undecided_reason(t))


def verdict_of(
    question: str,
    hypotheses: Sequence[Hypothesis],
    evidence: Mapping[str, Evidence] | None = None,
) -> Verdict | None:
    """The verdict of :func:`decide_verdict`, without its reason."""
    decision = decide_verdict(question, hypotheses, evidence)
    return decision.verdict if decision is not None else None


def verdict_sentence(decision: VerdictDecision, hypothesis: Hypothesis | None) -> str:
    """One uncited sentence stating the verdict, its reason and what it was derived from:
    "Verdict: uncertain — relevant sources disagree: 1 supporting, 1 contradicting; derived
    from each relevant source's stated conclusion on hypothesis H1, not from a reading of
    effect sizes." """
    if hypothesis is None:
        return f"Verdict: {decision.verdict} ({decision.reason})."
    return (
        f"Verdict: {decision.verdict} — {decision.reason}; derived from each relevant source's "
        f"stated conclusion on hypothesis {hypothesis.id or 'H1'}, not from a reading of effect "
        "sizes."
    )


def _best_quotes(items: Sequence[Evidence], statement: str, embedder: Embedder) -> dict[str, str]:
    """Evidence id -> its sentence most relevant to ``statement`` (verbatim)."""
    ranked = rank_sentences(items, statement, embedder)
    best: dict[str, str] = {}
    for sentence in ranked:
        best.setdefault(sentence.evidence_id, sentence.text)
    return best


def conflicting_findings_section(
    hypotheses: Sequence[Hypothesis], evidence: Mapping[str, Evidence], embedder: Embedder
) -> ReportSection | None:
    """The "Conflicting findings" section, or ``None`` when no hypothesis has a contradicting
    item in ``evidence`` (the run's store by id). Every cited sentence is a verbatim quote of
    the item it cites; the lines naming the hypotheses cite nothing."""
    paragraphs: list[str] = []
    for h in hypotheses:
        against = [evidence[i] for i in h.contradicting_evidence_ids if i in evidence]
        against = against[:MAX_CONTRADICTING]
        if not against:
            continue
        support = [evidence[i] for i in h.supporting_evidence_ids if i in evidence]
        support = support[:MAX_SUPPORTING]
        quotes = _best_quotes([*against, *support], h.statement, embedder)
        lines = [f"Hypothesis {h.id or ''}: {' '.join(h.statement.split())}".replace("  ", " ")]
        con = [add_marker(quotes[e.id], e.id) for e in against if e.id in quotes]
        pro = [add_marker(quotes[e.id], e.id) for e in support if e.id in quotes]
        if not con:
            continue
        lines += ["", "Evidence against it:", "", *(f"- {q}" for q in con)]
        if pro:
            lines += ["", "Evidence for it:", "", *(f"- {q}" for q in pro)]
        paragraphs.append("\n".join(lines))
    if not paragraphs:
        return None
    return ReportSection(heading=CONFLICT_HEADING, content="\n\n".join(paragraphs))


def design_summary(cited: Sequence[Evidence]) -> str:
    """ "Study designs of the N cited sources: ..." strongest designs first ("" if none)."""
    if not cited:
        return ""
    return (
        f"Study designs of the {len(cited)} cited source{'' if len(cited) == 1 else 's'} "
        f"(read from publication types, trial phase, MeSH terms and abstract text): "
        + design_counts(cited, "; ")
        + "."
    )


def extra_limitations(cited: Sequence[Evidence], source_failures: Mapping[str, str]) -> list[str]:
    """Limitations from gaps the writers do not see: sources that were unavailable, and no
    meta-analysis, systematic review or randomised trial among the cited sources."""
    out = [
        f"{SOURCE_LABELS.get(src, src)} was unavailable during this run ({reason}); records "
        "only it holds are missing."
        for src, reason in source_failures.items()
    ]
    if cited and not any(grade_evidence(e) in HIGH_LEVEL_DESIGNS for e in cited):
        out.append(
            "No meta-analysis, systematic review or randomised controlled trial is among the "
            "cited sources; the evidence is observational, preclinical or of unrecognised "
            "design."
        )
    return out


def add_run_findings(
    draft: ResearchReport,
    hypotheses: Sequence[Hypothesis],
    evidence: Mapping[str, Evidence],
    embedder: Embedder,
) -> ResearchReport:
    """``draft`` (modified in place and returned) with the "Conflicting findings" section
    (replacing a writer's section of that heading) when a hypothesis has contradicting
    evidence in ``evidence``. Run before citation validation and grounding."""
    section = conflicting_findings_section(hypotheses, evidence, embedder)
    if section is not None:
        draft.findings = [
            s for s in draft.findings if s.heading.strip().lower() != CONFLICT_HEADING.lower()
        ]
        draft.findings.append(section)
    return draft


def add_verdict(
    report: ResearchReport, question: str, evidence: Mapping[str, Evidence] | None = None
) -> ResearchReport:
    """``report`` (modified in place and returned) with the verdict of a yes/no ``question``
    in ``metadata.verdict`` (its reason in ``metadata.verdict_reason``) and as the last
    sentence of the conclusion, from the report's own (validated) hypotheses and the on-topic
    ``evidence`` (their screening and stance; see :func:`decide_verdict`). Run after citation
    validation (the counts are of real ids)."""
    hypotheses = report.hypotheses_tested
    decision = decide_verdict(question, hypotheses, evidence)
    if decision is not None:
        sentence = verdict_sentence(decision, hypotheses[0] if hypotheses else None)
        report.conclusion = f"{report.conclusion.rstrip()}\n\n{sentence}".strip()
        method = verdict_method(decision.verdict, report.metadata.llm)
        report.metadata = report.metadata.model_copy(
            update={
                "verdict": decision.verdict,
                "verdict_reason": decision.reason,
                "verdict_method": method,
            }
        )
    return report


def add_run_context(
    report: ResearchReport,
    evidence: Mapping[str, Evidence],
    source_failures: Mapping[str, str],
) -> ResearchReport:
    """``report`` (modified in place and returned) with the study design of every reference
    set (when grounding did not set it), the design summary of its references appended to
    the methodology and :func:`extra_limitations` added to its limitations.
    Adds no citation; run after grounding (it describes the references that remain)."""
    cited = [evidence[r.evidence_id] for r in report.references if r.evidence_id in evidence]
    for ref in report.references:
        if ref.study_design is None and ref.evidence_id in evidence:
            ref.study_design = grade_evidence(evidence[ref.evidence_id])
    summary = design_summary(cited)
    if summary:
        report.methodology = f"{report.methodology.rstrip()}\n\n{summary}".strip()
    known = {lim.lower() for lim in report.limitations}
    report.limitations += [
        lim for lim in extra_limitations(cited, source_failures) if lim.lower() not in known
    ]
    return report


def add_integrity_section(report: ResearchReport, retracted: Sequence[Evidence]) -> ResearchReport:
    """``report`` (modified in place and returned) with ``flagged_records``: every item of
    ``retracted`` (records a source marks as retracted, kept out of the run's synthesis; not
    cited), then every reference whose citation carries an integrity flag (an expression of
    concern, erratum or correction: cited, its flag shown). Adds no citation; run last."""
    flagged = [
        FlaggedRecord(evidence_id=e.id, citation=e.citation.model_copy(deep=True), cited=False)
        for e in retracted
    ]
    flagged += [
        FlaggedRecord(
            evidence_id=r.evidence_id, citation=r.citation.model_copy(deep=True), cited=True
        )
        for r in report.references
        if r.citation.integrity_flags
    ]
    report.flagged_records = flagged
    return report
