"""The review panel under the progress panel: the *plan card* of a run waiting for its plan
review and the *evidence review* of a run waiting for its evidence review (both hidden
otherwise). The components are built here (:func:`review_panel`); their values come from
:mod:`deepcritical.ui.review_forms` and the handlers that fill and decide them are
:mod:`deepcritical.ui.review_handlers`.

Plan card: the refined question, the checklist (one ``key: description`` line per item:
delete a line to remove an item, add one to add an item), the sources the plan searches (a
subset of the run's), each source's round-1 queries (one per line, as the source receives
them), the publication date range, languages and study designs; *Start search* and
*Cancel*. Evidence review: the screened records (id, title, source, year, design,
included or excluded, the screening reason), a toggle per record (ticked: included), a
reasons box for the exclusions, *One more search round*, *Write report* and *Cancel*.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from deepcritical.config import ALL_SOURCES
from deepcritical.models import LANGUAGES, SOURCE_LABELS, DesignFilter

__all__ = ["REVIEW_CSS", "ReviewPanel", "hidden_review", "review_panel"]

REVIEW_CSS = """
#dc-review-plan, #dc-review-evidence { border: 2px solid #2563eb; border-radius: 8px; }
.dc-review-status .dc-error { color: #b91c1c; }
"""


@dataclass(frozen=True)
class ReviewPanel:
    """The components of :func:`review_panel`; ``waiting`` (session state) holds the review
    shown (a :class:`~deepcritical.ui.review_handlers.Shown`), ``decided`` the run id whose
    review was just decided (its continuation streams next; ``""``: none)."""

    plan_box: gr.Column
    evidence_box: gr.Column
    status: gr.HTML
    waiting: gr.State
    decided: gr.State
    refined: gr.Textbox
    checklist: gr.Textbox
    sources: gr.CheckboxGroup
    queries: dict[str, gr.Textbox]
    published_from: gr.Textbox
    published_to: gr.Textbox
    languages: gr.Dropdown
    designs: gr.CheckboxGroup
    start_btn: gr.Button
    cancel_plan_btn: gr.Button
    records: gr.HTML
    included: gr.CheckboxGroup
    reasons: gr.Textbox
    more_btn: gr.Button
    write_btn: gr.Button
    cancel_evidence_btn: gr.Button

    def outputs(self) -> list[Any]:
        """What showing a review sets, in :func:`deepcritical.ui.review_handlers.shown`'s
        order: the two boxes, the status line, the state, then the plan card's fields
        (refined question, checklist, sources, each source's queries in
        :data:`~deepcritical.config.ALL_SOURCES` order, dates, languages, designs) and the
        evidence review's (table, toggles, reasons)."""
        return [
            self.plan_box,
            self.evidence_box,
            self.status,
            self.waiting,
            *self.plan_inputs(),
            self.records,
            self.included,
            self.reasons,
        ]

    def plan_inputs(self) -> list[Any]:
        """The plan card's fields, in the order *Start search* takes them."""
        return [
            self.refined,
            self.checklist,
            self.sources,
            *(self.queries[s] for s in ALL_SOURCES),
            self.published_from,
            self.published_to,
            self.languages,
            self.designs,
        ]


def hidden_review() -> tuple[Any, ...]:
    """:meth:`ReviewPanel.outputs` for no review: both boxes hidden, the status and the
    state cleared, the fields left as they are."""
    hide = gr.update(visible=False)
    return (hide, hide, "", None, *(gr.skip() for _ in range(10 + len(ALL_SOURCES))))


def _plan_card() -> dict[str, Any]:
    """The plan card's components (inside the current Blocks), by field name."""
    gr.Markdown("### Review the plan\nEdit the plan, then *Start search* (or *Cancel* the run).")
    parts: dict[str, Any] = {
        "refined": gr.Textbox(label="Refined question", elem_id="dc-review-refined"),
        "checklist": gr.Textbox(
            label="Checklist (one 'key: description' per line; delete a line to remove it)",
            lines=4,
            elem_id="dc-review-checklist",
        ),
        "sources": gr.CheckboxGroup(label="Sources searched", elem_id="dc-review-sources"),
    }
    parts["queries"] = {
        s: gr.Textbox(
            label=f"Queries sent to {SOURCE_LABELS.get(s, s)} (one per line)",
            lines=2,
            visible=False,
            elem_id=f"dc-review-queries-{s}",
        )
        for s in ALL_SOURCES
    }
    with gr.Row():
        parts["published_from"] = gr.Textbox(
            label="Published from (YYYY, YYYY-MM or YYYY-MM-DD)", elem_id="dc-review-from"
        )
        parts["published_to"] = gr.Textbox(
            label="Published to (YYYY, YYYY-MM or YYYY-MM-DD)", elem_id="dc-review-to"
        )
    parts["languages"] = gr.Dropdown(
        choices=[(f"{lang.name} ({code})", code) for code, lang in LANGUAGES.items()],
        multiselect=True,
        label="Languages (none: any)",
        elem_id="dc-review-languages",
    )
    parts["designs"] = gr.CheckboxGroup(
        [d.value for d in DesignFilter],
        label="Study designs (none: any)",
        elem_id="dc-review-designs",
    )
    with gr.Row():
        parts["start_btn"] = gr.Button("Start search", variant="primary", elem_id="dc-review-start")
        parts["cancel_plan_btn"] = gr.Button("Cancel", elem_id="dc-review-cancel-plan")
    return parts


def _evidence_review() -> dict[str, Any]:
    """The evidence review's components (inside the current Blocks), by field name."""
    gr.Markdown(
        "### Review the evidence\nUntick a record to exclude it (give the reason below), "
        "tick an excluded one to include it; then *Write report*, or search one more round."
    )
    parts: dict[str, Any] = {
        "records": gr.HTML(elem_id="dc-review-records"),
        "included": gr.CheckboxGroup(
            label="Included records (untick to exclude)", elem_id="dc-review-included"
        ),
        "reasons": gr.Textbox(
            label="Why the unticked records are excluded (one reason for all, or 'E3: reason' "
            "lines)",
            lines=2,
            elem_id="dc-review-reasons",
        ),
    }
    with gr.Row():
        parts["write_btn"] = gr.Button("Write report", variant="primary", elem_id="dc-review-write")
        parts["more_btn"] = gr.Button("One more search round", elem_id="dc-review-more")
        parts["cancel_evidence_btn"] = gr.Button("Cancel", elem_id="dc-review-cancel-evidence")
    return parts


def review_panel() -> ReviewPanel:
    """Build the review panel inside the current Blocks (both boxes hidden)."""
    status = gr.HTML(elem_id="dc-review-status", elem_classes=["dc-review-status"])
    with gr.Column(visible=False, elem_id="dc-review-plan") as plan_box:
        plan = _plan_card()
    with gr.Column(visible=False, elem_id="dc-review-evidence") as evidence_box:
        evidence = _evidence_review()
    return ReviewPanel(
        plan_box=plan_box,
        evidence_box=evidence_box,
        status=status,
        waiting=gr.State(None),
        decided=gr.State(""),
        **plan,
        **evidence,
    )
