"""The report's appraisal, built from data, never by a model: the "Study characteristics"
table of the references, each reference's study record, and the automated GRADE-style
certainty of every hypothesis, finding and of the verdict.

:func:`add_appraisal` runs last in :func:`deepcritical.report.finish.finish_report` (after
grounding and the run context: it describes the references that remain and adds no sentence
a check would have to read). The certainty line of the verdict follows the verdict sentence
in the conclusion; its value is in ``metadata.certainty`` too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from deepcritical.evidence.certainty import rate_certainty, study_of
from deepcritical.evidence.grading import grade_evidence
from deepcritical.models import (
    CERTAINTY_LABEL,
    CITATION_MARKER,
    Certainty,
    Evidence,
    ExtractedValue,
    Hypothesis,
    ReportSection,
    ResearchReport,
    marker_ids,
)

__all__ = [
    "STUDY_TABLE_HEADING",
    "add_appraisal",
    "certainty_sentence",
    "hypothesis_certainty",
    "study_table",
]

STUDY_TABLE_HEADING = "Study characteristics"
CELL_CHARS = 90
"""Longest text shown in a table cell (a longer value is cut, with "…"; the JSON keeps it
whole)."""


def _cell(value: ExtractedValue | str | None) -> str:
    """A value for a table cell: white space collapsed, ``|`` and marker-like brackets made
    inert, cut to :data:`CELL_CHARS`; "–" when empty."""
    text = value.value if isinstance(value, ExtractedValue) else (value or "")
    text = " ".join(text.split()).replace("|", "/")
    # source text that looks like a citation marker ("[E5]") must not become one
    text = CITATION_MARKER.sub(lambda m: f"({m.group(1)})", text)
    if len(text) > CELL_CHARS:
        text = text[: CELL_CHARS - 1].rstrip() + "…"
    return text or "–"


def study_table(cited: Sequence[Evidence]) -> ReportSection | None:
    """The "Study characteristics" section: one markdown table row per cited item (design,
    population, n (the stated total, "48 (sum of groups: ...)", or "not stated"),
    intervention vs comparator, outcome, primary effect estimate with its CI and outcome,
    follow-up), each value as written in the source, then every effect estimate of each
    item with its outcome; ``None`` when no item has any value. The reference cell cites the
    item (``[E3]``)."""
    rows = []
    estimates: list[str] = []
    dropped = disagreed = 0
    for item in cited:
        study = study_of(item)
        dropped += study.values_dropped
        disagreed += study.disagreements
        effect = study.primary_effect
        size = study.sample_size_text()
        values = [
            study.population,
            size,
            study.intervention,
            study.outcomes[0] if study.outcomes else None,
            effect,
            study.follow_up,
        ]
        if not any(values):
            continue
        comparison = _cell(study.intervention)
        if study.comparator is not None:
            comparison += f" vs {_cell(study.comparator)}"
        rows.append(
            "| "
            + " | ".join(
                [
                    f"[{item.id}]",
                    _cell(grade_evidence(item).value),
                    _cell(study.population),
                    _cell(size or "not stated"),
                    comparison,
                    _cell(study.outcomes[0] if study.outcomes else None),
                    _cell(effect.describe() if effect is not None else None),
                    _cell(study.follow_up),
                ]
            )
            + " |"
        )
        if study.effects:
            estimates.append(f"- [{item.id}] " + "; ".join(e.describe() for e in study.effects))
    if not rows:
        return None
    head = (
        "| Ref | Design | Population | n | Intervention vs comparator | Outcome "
        "| Effect (95% CI) | Follow-up |\n|---|---|---|---|---|---|---|---|"
    )
    note = (
        "Values are quoted as written in each source's abstract or full text, each checked "
        "against the text at the span it was read from; values that could not be proven "
        f"verbatim were dropped ({dropped}). n is shown only when the text states the whole "
        'sample (or all its groups, summed); otherwise "not stated".'
    )
    if disagreed:
        note += (
            f" Values a model read that disagreed with the rules' reading: {disagreed} "
            "(neither is shown)."
        )
    content = f"{head}\n" + "\n".join(rows)
    if estimates:
        content += (
            "\n\nEvery effect estimate read, as written, with the outcome it measures:\n\n"
            + "\n".join(estimates)
        )
    return ReportSection(heading=STUDY_TABLE_HEADING, content=f"{content}\n\n{note}")


def hypothesis_certainty(h: Hypothesis, evidence: Mapping[str, Evidence]) -> Certainty | None:
    """The certainty of the items ``h`` lists as supporting or contradicting it."""
    ids = list(dict.fromkeys([*h.supporting_evidence_ids, *h.contradicting_evidence_ids]))
    items = [evidence[i] for i in ids if i in evidence]
    return rate_certainty(
        items, supporting=h.supporting_evidence_ids, contradicting=h.contradicting_evidence_ids
    )


def certainty_sentence(certainty: Certainty, what: str = "this verdict") -> str:
    """ "Certainty of the evidence behind this verdict (automated GRADE-style rating, not a
    formal GRADE assessment): Low: observational; imprecision, total n = 84." """
    return f"Certainty of the evidence behind {what} ({CERTAINTY_LABEL}): {certainty.summary()}."


def add_appraisal(report: ResearchReport, evidence: Mapping[str, Evidence]) -> ResearchReport:
    """``report`` (modified in place and returned) with each reference's study record, the
    certainty of each hypothesis and each finding section that cites evidence, the
    "Study characteristics" section, ``metadata.certainty`` (of the first hypothesis's
    items when there is a verdict and it lists any, else of every reference) with its
    sentence after the verdict, and
    ``metadata.values_dropped``. ``evidence``: the on-topic items by id."""
    cited = [evidence[r.evidence_id] for r in report.references if r.evidence_id in evidence]
    for ref in report.references:
        if ref.evidence_id in evidence:
            ref.study = study_of(evidence[ref.evidence_id])
    for h in report.hypotheses_tested:
        h.certainty = hypothesis_certainty(h, evidence)
    for section in report.findings:
        ids = [i for i in dict.fromkeys(marker_ids(section.content)) if i in evidence]
        section.certainty = rate_certainty([evidence[i] for i in ids])
    md = report.metadata
    certainty = None
    if md.verdict is not None and report.hypotheses_tested:
        certainty = report.hypotheses_tested[0].certainty
    if certainty is None:  # no verdict, or no source takes a stance on it: the references
        certainty = rate_certainty(cited)
    if certainty is not None and md.verdict is not None:
        report.conclusion = f"{report.conclusion.rstrip()} {certainty_sentence(certainty)}"
    table = study_table(cited)
    if table is not None:
        report.findings.append(table)
    report.metadata = md.model_copy(
        update={
            "certainty": certainty,
            "values_dropped": sum(study_of(e).values_dropped for e in cited),
        }
    )
    return report
