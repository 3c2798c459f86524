"""The answer card at the top of the Report tab, and the data of its two charts.

The card says, for a finished run: the question; the answer (the report's yes/no verdict,
"uncertain", or that the sources searched hold no evidence: an abstention); the sources the
report cites, by study design; the automated GRADE-style certainty of the evidence the answer
rests on (`metadata.certainty`); the grounding score; what was searched. Every value is escaped
with :func:`html.escape`. The charts show the included (on-topic) evidence by publication
year and by study design, cited records apart from the others (``gr.BarPlot`` over a pandas
DataFrame; pandas comes with Gradio).
"""

from __future__ import annotations

import html
from collections import Counter
from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd

from deepcritical.evidence.grading import grade_evidence
from deepcritical.models import (
    CERTAINTY_LABEL,
    SOURCE_LABELS,
    CertaintyLevel,
    Evidence,
    RunResult,
    StudyDesign,
    on_topic_items,
)

__all__ = [
    "CARD_CSS",
    "CITED",
    "NOT_CITED",
    "AnswerPanel",
    "Verdict",
    "answer_card_html",
    "answer_panel",
    "blank_answer",
    "cited_designs",
    "design_frame",
    "verdict_of_report",
    "year_frame",
]

CITED = "cited"
NOT_CITED = "included, not cited"
UNKNOWN_YEAR = "unknown"
COLORS = {CITED: "#1d4ed8", NOT_CITED: "#9ca3af"}
"""The charts' colours: cited records dark blue, the other included ones grey."""

CARD_CSS = """
.dc-card { border: 1px solid #d1d5db; border-radius: 8px; padding: 10px 14px; margin-bottom: 8px; }
.dc-card dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 6px 0 0; }
.dc-card dt { font-weight: 600; }
.dc-card dd { margin: 0; }
.dc-verdict { font-size: 1.25em; font-weight: 700; margin: 4px 0; }
.dc-verdict-yes { color: #047857; } .dc-verdict-no { color: #b91c1c; }
.dc-verdict-uncertain { color: #b45309; } .dc-verdict-none { color: #4b5563; }
.dc-verdict.dc-verdict-tentative { color: #374151; font-size: 1.05em; font-weight: 600; }
.dc-flow { display: grid; grid-template-columns: minmax(12rem, 22rem) 2rem minmax(12rem, 26rem); align-items: center; gap: 4px; margin: 8px 0; }
.dc-flow-box { border: 1px solid #6b7280; border-radius: 6px; padding: 4px 8px; font-size: 0.9em; }
.dc-flow-side { border-style: dashed; }
.dc-flow-arrow { text-align: center; color: #6b7280; }
"""  # noqa: E501


@dataclass(frozen=True)
class Verdict:
    """The answer shown on the card: ``kind`` (``yes``, ``no``, ``uncertain``, ``none``: an
    abstention or a question that is not yes/no), its ``label`` and one line of ``detail``;
    ``tentative`` for a yes or no whose evidence is of low, very low or unrated certainty
    (shown as "Probably yes (low certainty, 1 study)" in a neutral style, never as a bold
    coloured "Yes")."""

    kind: str
    label: str
    detail: str
    tentative: bool = False


STRONG_LEVELS = (CertaintyLevel.HIGH, CertaintyLevel.MODERATE)
"""Certainty levels under which a yes or no is shown plainly; below them it is "Probably"."""


def _yes_no(kind: str, result: RunResult) -> Verdict:
    """A yes or no as the card shows it: plain when its evidence's certainty is High or
    Moderate, else "Probably yes (low certainty, 2 studies)" and tentative."""
    md = result.report.metadata
    certainty = md.certainty
    word = "Yes" if kind == "yes" else "No"
    if certainty is not None and certainty.level in STRONG_LEVELS:
        return Verdict(kind, word, md.verdict_reason)
    studies = (
        len(certainty.evidence_ids) if certainty is not None else len(result.report.references)
    )
    level = f"{certainty.level.value.lower()} certainty" if certainty else "certainty not rated"
    count = f"{studies} stud{'y' if studies == 1 else 'ies'}"
    return Verdict(kind, f"Probably {word.lower()} ({level}, {count})", md.verdict_reason, True)


def verdict_of_report(result: RunResult) -> Verdict:
    """What the card says the answer is: the verdict as the report states it; an abstention
    when it cites nothing (or only the closest partly relevant record)."""
    report = result.report
    md = report.metadata
    if not report.references:
        if not md.sources_searched:
            return Verdict("none", "No source was searched", "The run ended before any search.")
        return Verdict(
            "none",
            "No evidence found in the sources searched",
            "The report abstains: no record found addresses the question.",
        )
    if md.verdict is None and md.stop_reason == "insufficient_evidence":
        return Verdict(
            "none",
            "No evidence found in the sources searched",
            "No record addresses the question directly; the report quotes the closest one.",
        )
    if md.verdict in ("yes", "no"):
        return _yes_no(md.verdict, result)
    if md.verdict == "uncertain":
        return Verdict("uncertain", "Uncertain", md.verdict_reason)
    return Verdict("none", "See the report", "Not a yes/no question: the summary answers it.")


def _design_of(result: RunResult, evidence_id: str, by_id: dict[str, Evidence]) -> StudyDesign:
    ref = next((r for r in result.report.references if r.evidence_id == evidence_id), None)
    if ref is not None and ref.study_design is not None:
        return ref.study_design
    item = by_id.get(evidence_id)
    return grade_evidence(item) if item is not None else StudyDesign.OTHER


def cited_designs(result: RunResult) -> dict[StudyDesign, int]:
    """Study design -> number of cited sources, strongest design first (the references'
    designs, else read from the evidence with
    :func:`~deepcritical.evidence.grading.grade_evidence`)."""
    by_id = {e.id: e for e in result.evidence}
    ids = dict.fromkeys(r.evidence_id for r in result.report.references)
    counts = Counter(_design_of(result, eid, by_id) for eid in ids)
    return {d: counts[d] for d in StudyDesign if counts[d]}


def _grounding(result: RunResult) -> str:
    md = result.report.metadata
    check = md.grounding_check
    if md.grounding_score is None:
        return "not checked (nothing cited, or grounding off)"
    text = f"{md.grounding_score:.2f}"
    if check is not None and check.sentences_checked:
        text += (
            f" ({check.sentences_supported} of {check.sentences_checked} cited sentences"
            " supported by a passage of a cited source)"
        )
    return text


def _searched(result: RunResult) -> str:
    md = result.report.metadata
    searched = ", ".join(SOURCE_LABELS.get(s, s) for s in md.sources_searched) or "none"
    if md.source_failures:
        failed = ", ".join(SOURCE_LABELS.get(s, s) for s in md.source_failures)
        searched += f" (unavailable: {failed})"
    return searched


def _certainty(result: RunResult) -> str:
    """The certainty of the evidence the answer rests on, with its reasons and what it is;
    "not rated" without one."""
    certainty = result.report.metadata.certainty
    if certainty is None:
        return "not rated"
    return f"{certainty.summary()} ({CERTAINTY_LABEL})"


def answer_card_html(result: RunResult) -> str:
    """The answer card of ``result`` (every value escaped)."""
    report = result.report
    verdict = verdict_of_report(result)
    designs = cited_designs(result)
    total = sum(designs.values())
    by_design = "; ".join(f"{d.value}: {n}" for d, n in designs.items())
    cited = f"{total}" + (f" ({by_design})" if by_design else "")
    e = html.escape
    tentative = " dc-verdict-tentative" if verdict.tentative else ""
    detail = f'<p class="dc-verdict-reason">{e(verdict.detail)}</p>' if verdict.detail else ""
    method = report.metadata.verdict_method if verdict.kind in ("yes", "no", "uncertain") else ""
    if method:
        detail += f'<p class="dc-verdict-method">{e(method)}</p>'
    return (
        f'<section class="dc-card" id="dc-answer" data-verdict="{e(verdict.kind)}">'
        f'<p class="dc-card-question"><strong>Question:</strong> {e(report.research_question)}'
        "</p>"
        f'<p class="dc-verdict dc-verdict-{e(verdict.kind)}{tentative}">{e(verdict.label)}</p>'
        f"{detail}"
        "<dl>"
        f'<dt>Cited sources</dt><dd class="dc-card-cited">{e(cited)}</dd>'
        f'<dt>Certainty</dt><dd class="dc-card-certainty">{e(_certainty(result))}</dd>'
        f'<dt>Grounding score</dt><dd class="dc-card-grounding">{e(_grounding(result))}</dd>'
        f'<dt>Searched</dt><dd class="dc-card-searched">{e(_searched(result))}</dd>'
        "</dl>"
        + (
            ""
            if _included(result)
            else '<p class="dc-no-charts">No charts: the run included no on-topic record.</p>'
        )
        + "</section>"
    )


def _included(result: RunResult) -> list[Evidence]:
    """The records the run included: not off-topic, not retracted (as the flow counts)."""
    return on_topic_items(result.evidence)


def year_frame(result: RunResult) -> pd.DataFrame:
    """Included records by publication year (``"unknown"`` without one), cited apart: columns
    ``year`` (text, oldest first), ``records``, ``status`` (:data:`CITED` or
    :data:`NOT_CITED`)."""
    cited = {r.evidence_id for r in result.report.references}
    counts = Counter(
        (
            str(e.citation.year) if e.citation.year is not None else UNKNOWN_YEAR,
            CITED if e.id in cited else NOT_CITED,
        )
        for e in _included(result)
    )
    keys = sorted(counts, key=lambda k: (k[0] == UNKNOWN_YEAR, k[0], k[1]))
    return pd.DataFrame(
        {
            "year": [k[0] for k in keys],
            "records": [counts[k] for k in keys],
            "status": [k[1] for k in keys],
        }
    )


def design_frame(result: RunResult) -> pd.DataFrame:
    """Included records by study design (strongest first), cited apart: columns ``design``,
    ``records``, ``status``."""
    cited = {r.evidence_id for r in result.report.references}
    by_id = {e.id: e for e in result.evidence}
    counts = Counter(
        (_design_of(result, e.id, by_id), CITED if e.id in cited else NOT_CITED)
        for e in _included(result)
    )
    order = list(StudyDesign)
    keys = sorted(counts, key=lambda k: (order.index(k[0]), k[1]))
    return pd.DataFrame(
        {
            "design": [k[0].value for k in keys],
            "records": [counts[k] for k in keys],
            "status": [k[1] for k in keys],
        }
    )


def blank_answer() -> tuple[str, Any, Any, str]:
    """The card, the two charts and the flow diagram before a run ends (all empty)."""
    return "", None, None, ""


def chart_update(frame: pd.DataFrame | None) -> Any:
    """A chart's output: shown with its data, hidden while it has none (no empty box on the
    start page, nor after a run that included nothing; the card then says so)."""
    shown = frame is not None and not frame.empty
    return gr.update(value=frame if shown else None, visible=shown)


@dataclass(frozen=True)
class AnswerPanel:
    """The components above the report: card, year chart, design chart, flow diagram."""

    card: Any
    years: Any
    designs: Any
    flow: Any

    def outputs(self) -> list[Any]:
        """The components in the order of :func:`blank_answer` and the handler's outputs."""
        return [self.card, self.years, self.designs, self.flow]


def answer_panel() -> AnswerPanel:
    """Build the card, the charts and the flow diagram (inside the Report tab)."""
    card = gr.HTML(elem_id="dc-answer-card")
    with gr.Row():
        years = gr.BarPlot(
            x="year",
            y="records",
            color="status",
            color_map=COLORS,
            title="Included evidence by year",
            x_title="Year",
            y_title="Records",
            sort="x",
            height=240,
            visible=False,
            elem_id="dc-chart-years",
        )
        designs = gr.BarPlot(
            x="design",
            y="records",
            color="status",
            color_map=COLORS,
            title="Included evidence by study design",
            x_title="Study design",
            y_title="Records",
            x_label_angle=-30,
            height=240,
            visible=False,
            elem_id="dc-chart-designs",
        )
    flow = gr.HTML(elem_id="dc-flow")
    return AnswerPanel(card, years, designs, flow)
