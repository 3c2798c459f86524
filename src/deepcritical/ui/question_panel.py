"""The research form's first part: the question and its optional context, the *Research*,
*Stop* and *Resume* buttons, the line naming the sources a run will search, and the example
questions (:mod:`deepcritical.ui.examples`). The buttons' handlers are
:mod:`deepcritical.ui.run_handlers`."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from deepcritical.config import Settings
from deepcritical.ui.examples import choose_examples
from deepcritical.ui.source_check import default_sources, sources_on_md


@dataclass(frozen=True)
class QuestionPanel:
    """The components of :func:`question_panel` that handlers read or update."""

    question: gr.Textbox
    context: gr.Textbox
    run_btn: gr.Button
    stop_btn: gr.Button
    """Disabled until a run starts."""
    resume_btn: gr.Button
    """Hidden until a run ends without its report."""
    sources_on: gr.Markdown
    """The sources ticked, in one line (the Settings accordion is closed by default)."""


def question_panel(settings: Settings, corpus_exists: bool) -> QuestionPanel:
    """Build the question, the buttons, the sources line (the server's default sources until
    the page load's check answers) and the examples (answered from the local corpus when
    ``corpus_exists``), inside the current Blocks."""
    with gr.Row():
        with gr.Column(scale=4):
            question = gr.Textbox(
                label="Research question (Enter starts the research)",
                lines=1,
                max_lines=6,
                elem_id="dc-question",
            )
            context = gr.Textbox(
                label="Context (optional)", lines=1, max_lines=4, elem_id="dc-context"
            )
        with gr.Column(scale=1, min_width=160):
            run_btn = gr.Button("Research", variant="primary", elem_id="dc-run")
            stop_btn = gr.Button("Stop", variant="stop", interactive=False, elem_id="dc-stop")
            resume_btn = gr.Button(
                "Resume", variant="secondary", visible=False, elem_id="dc-resume"
            )
    sources_on = gr.Markdown(
        sources_on_md(default_sources(settings.sources, None, corpus_exists)),
        elem_id="dc-sources-on",
    )
    gr.Examples(
        examples=[[q] for q in choose_examples(corpus_exists)],
        inputs=[question],
        label="Examples (answered from the local corpus)" if corpus_exists else "Examples",
    )
    return QuestionPanel(question, context, run_btn, stop_btn, resume_btn, sources_on)
