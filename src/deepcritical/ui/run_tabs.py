"""The tabs a run fills: *Report* (the answer card, its charts and flow diagram above the
report: :mod:`deepcritical.ui.answer`; under it the report's versions, *Revise* and their
diff: :mod:`deepcritical.ui.versions_panel`, then the follow-up questions:
:mod:`deepcritical.ui.follow_up_panel`), *Evidence* (the sortable, filterable table:
:mod:`deepcritical.ui.evidence_table`), *Hypotheses* and *Downloads*. What goes into them is
:func:`deepcritical.ui.live_run.stream_run`'s outputs."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from deepcritical.ui.answer import AnswerPanel, answer_panel
from deepcritical.ui.downloads import NO_DOWNLOADS_HTML
from deepcritical.ui.evidence_table import evidence_panel
from deepcritical.ui.follow_up_panel import FollowUpPanel, follow_up_panel
from deepcritical.ui.versions_panel import VersionsPanel, versions_panel


@dataclass(frozen=True)
class RunTabs:
    """The run's components in :func:`run_tabs`: the report, the evidence table, the
    hypotheses, the download links, the answer panel, the versions panel and the follow-up
    panel (these two not run outputs: their own handlers fill them)."""

    report: gr.HTML
    evidence: gr.HTML
    hypotheses: gr.HTML
    files: gr.HTML
    answer: AnswerPanel
    follow_up: FollowUpPanel
    versions: VersionsPanel

    def outputs(self) -> list[gr.components.Component]:
        """The components in the order of :data:`~deepcritical.ui.live_run.Outputs` after
        its notice and progress panel."""
        return [self.report, self.evidence, self.hypotheses, self.files, *self.answer.outputs()]


def run_tabs() -> RunTabs:
    """Build the Report (the versions and follow-up panels under the report), Evidence,
    Hypotheses and Downloads tabs inside the current ``gr.Tabs``, empty until a run streams
    into them."""
    with gr.Tab("Report"):
        answer = answer_panel()
        report = gr.HTML(elem_id="dc-report")
        versions = versions_panel()
        follow_up = follow_up_panel()
    with gr.Tab("Evidence"):
        evidence = evidence_panel().table
    with gr.Tab("Hypotheses"):
        hypotheses = gr.HTML(elem_id="dc-hypotheses")
    with gr.Tab("Downloads"):
        files = gr.HTML(NO_DOWNLOADS_HTML, elem_id="dc-downloads")
    return RunTabs(report, evidence, hypotheses, files, answer, follow_up, versions)
