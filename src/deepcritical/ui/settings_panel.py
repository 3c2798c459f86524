"""The research form's *Settings* accordion: a session's own model, API key, orchestrator,
sources and depth for its runs (closed by default: the server's settings are the defaults).
What a session may choose, and how a choice becomes a run's settings, is
:mod:`deepcritical.ui.session`."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from deepcritical.config import Settings, redact_model_spec
from deepcritical.ui.session import source_choices
from deepcritical.ui.source_check import default_sources, sources_note

MODEL_CHOICES = [
    "none",
    "openai:gpt-4o",
    "openai:gpt-4o-mini",
    "anthropic:claude-sonnet-4-5",
    "openai-compatible:llama3.1@http://localhost:11434/v1",
]
"""The models offered besides the server's own (any other ``provider:model`` may be typed)."""


@dataclass(frozen=True)
class SettingsPanel:
    """The components of :func:`settings_panel`."""

    llm: gr.Dropdown
    api_key: gr.Textbox
    orchestrator: gr.Radio
    sources: gr.CheckboxGroup
    sources_info: gr.Markdown
    """The note on the sources that cannot work (set at page load)."""
    max_rounds: gr.Slider
    max_sources: gr.Slider
    review_plan: gr.Checkbox
    review_evidence: gr.Checkbox

    def run_inputs(self) -> list[gr.components.Component]:
        """The choices in the order *Research*'s handler takes them after the question and
        its context: model, key, sources, max rounds, max sources, orchestrator, then the
        two review toggles."""
        return [
            self.llm,
            self.api_key,
            self.sources,
            self.max_rounds,
            self.max_sources,
            self.orchestrator,
            self.review_plan,
            self.review_evidence,
        ]


def _review_toggles(settings: Settings) -> tuple[gr.Checkbox, gr.Checkbox]:
    """The two review toggles, outside the accordion (seen before a run starts): off unless
    the server's settings ask for the reviews (a run then goes straight to its report)."""
    with gr.Row(elem_id="dc-review-toggles"):
        plan = gr.Checkbox(
            value=settings.review_plan,
            label="Review the plan before searching",
            info="The run stops after planning; edit the plan, then Start search.",
            elem_id="dc-review-plan-toggle",
        )
        evidence = gr.Checkbox(
            value=settings.review_evidence,
            label="Review the evidence before writing",
            info="The run stops after screening; include or exclude records, then Write report.",
            elem_id="dc-review-evidence-toggle",
        )
    return plan, evidence


def settings_panel(settings: Settings, corpus_exists: bool) -> SettingsPanel:
    """Build the accordion inside the current Blocks, its values the server's ``settings``
    (the model spec redacted; the sources ticked those that can work before the page load's
    check answers: the local corpus when ``corpus_exists``), and above it the two review
    toggles (:func:`_review_toggles`)."""
    review_plan, review_evidence = _review_toggles(settings)
    with gr.Accordion("Settings", open=False):
        with gr.Row():
            llm = gr.Dropdown(
                choices=list(dict.fromkeys([redact_model_spec(settings.llm), *MODEL_CHOICES])),
                value=redact_model_spec(settings.llm),
                allow_custom_value=True,
                label="Model (provider:model)",
                elem_id="dc-llm",
            )
            api_key = gr.Textbox(
                label="API key (kept in this browser session only)",
                type="password",
                elem_id="dc-api-key",
            )
            orchestrator = gr.Radio(
                ["iterative", "magentic"],
                value=settings.orchestrator,
                label="Orchestrator",
                elem_id="dc-orchestrator",
            )
        with gr.Row():
            with gr.Column():
                sources = gr.CheckboxGroup(
                    source_choices(),
                    value=default_sources(settings.sources, None, corpus_exists),
                    label="Sources",
                    elem_id="dc-sources",
                )
                sources_info = gr.Markdown(
                    sources_note(None, corpus_exists),
                    elem_id="dc-sources-note",
                    elem_classes=["dc-sources-note"],
                )
            max_rounds = gr.Slider(
                1, 20, value=settings.max_rounds, step=1, label="Max rounds", elem_id="dc-rnd"
            )
            max_sources = gr.Slider(
                1,
                300,
                value=settings.max_sources,
                step=1,
                label="Max sources",
                elem_id="dc-max-sources",
            )
    return SettingsPanel(
        llm,
        api_key,
        orchestrator,
        sources,
        sources_info,
        max_rounds,
        max_sources,
        review_plan,
        review_evidence,
    )
