"""Follow-up questions under the report: a question box and *Ask* for the finished run the
page shows (a live run that ended with its report, or one opened from History), and the
run's follow-ups below it, newest first.

The answer comes from :func:`deepcritical.api.ask` (the run's own evidence, no model, no
search; kept with the run) for the caller's run only (:meth:`~deepcritical.ui.auth.Access.owner`,
as the other handlers ask). Each follow-up is rendered as the report is: its markdown
(:meth:`~deepcritical.models.FollowUp.to_markdown`) made safe HTML
(:func:`~deepcritical.ui.render.markdown_to_safe_html`) and its citations linked
(:func:`~deepcritical.ui.citation_links.link_citations`) to its own references, whose ids
carry the follow-up's number (``dc-fu-2-ref-1``; ``dc-hfu-2-ref-1`` under History's report),
never the report's. Text from sources is data: it only ever reaches the page escaped.

The panel is closed (box and button disabled, a note saying why) whenever no finished run is
shown: before the first run, while a run runs, after a run that failed or was stopped.
Nothing is raised to the page: bad input and failures show as one line above the answers.
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gradio as gr

from deepcritical.config import Settings
from deepcritical.logs import get_logger
from deepcritical.models import FollowUp, RunResult, error_text
from deepcritical.state import RunNotFoundError
from deepcritical.ui import history as hist
from deepcritical.ui.ask_tool import ASK_ERRORS, AskFn
from deepcritical.ui.auth import Access, SignInRequired
from deepcritical.ui.citation_links import link_citations
from deepcritical.ui.progress_view import ProgressView
from deepcritical.ui.render import markdown_to_safe_html
from deepcritical.ui.session import redact, secret_values

log = get_logger(__name__)

__all__ = [
    "HISTORY_PREFIX",
    "PANEL_PREFIX",
    "WEB_SUGGESTION",
    "FollowUpHandlers",
    "FollowUpPanel",
    "closed_panel",
    "follow_up_panel",
    "follow_ups_html",
    "open_panel",
    "skipped_panel",
]

PANEL_PREFIX = "dc-fu-"
"""The follow-ups under the Report tab's report: references ``dc-fu-<k>-ref-<n>``."""
HISTORY_PREFIX = "dc-hfu-"
"""The follow-ups under History's report: references ``dc-hfu-<k>-ref-<n>``."""
NO_RUN_NOTE = (
    "**Follow-up questions** open once a run has finished with its report: research a "
    "question above, or open a finished run from History."
)
WEB_SUGGESTION = (
    "To search the literature for it, start a new run with this question in the question box "
    "at the top of the page."
)
"""What an unanswered question suggests in the page (the stored suggestion names the command
line's command)."""
PanelValues = tuple[Any, ...]
"""The values of :meth:`FollowUpPanel.outputs`: run id, note, question box, *Ask*, status
line, answers."""


def _ready_note(run_id: str) -> str:
    return (
        f"**Ask a follow-up question** about run `{html.escape(run_id)}`: answered from this "
        "run's evidence only (no new search), its citations checked as the report's; every "
        "question and answer is kept with the run."
    )


def _line(text: str, css: str) -> str:
    role = "alert" if css == "dc-error" else "status"
    return f'<p class="{css}" role="{role}">{html.escape(text, quote=False)}</p>'


def follow_up_html(follow_up: FollowUp, ref_prefix: str) -> str:
    """One follow-up as safe HTML: its markdown (an unanswered one suggesting a new run in
    this page, :data:`WEB_SUGGESTION`) sanitised, its ``[n]`` linked to its own references,
    whose ids are ``<ref_prefix><n>``."""
    if not follow_up.answered:
        follow_up = follow_up.model_copy(update={"suggestion": WEB_SUGGESTION})
    fragment = markdown_to_safe_html(follow_up.to_markdown())
    checked = RunResult(report=follow_up.as_report())
    return link_citations(fragment, checked, ref_prefix=ref_prefix)


def follow_ups_html(follow_ups: Sequence[FollowUp], prefix: str) -> str:
    """A run's follow-ups (in the order asked) as HTML, newest first, each in its own
    section numbered by when it was asked (its references ``<prefix><k>-ref-<n>``); ``""``
    for none."""
    sections = []
    for k, follow_up in reversed(list(enumerate(follow_ups, start=1))):
        css = "dc-follow-up" if follow_up.answered else "dc-follow-up dc-unanswered"
        body = follow_up_html(follow_up, f"{prefix}{k}-ref-")
        sections.append(
            f'<section class="{css}" data-follow-up="{k}" aria-label="Follow-up {k}">'
            f"<h3>Follow-up {k}</h3>{body}</section>"
        )
    return "".join(sections)


def closed_panel() -> PanelValues:
    """The panel with no finished run shown: no run id, box and *Ask* disabled, a note."""
    off = gr.update(interactive=False)
    return None, NO_RUN_NOTE, gr.update(value="", interactive=False), off, "", ""


def open_panel(run_id: str, follow_ups: Sequence[FollowUp]) -> PanelValues:
    """The panel for the finished run ``run_id`` shown, with its ``follow_ups`` listed."""
    on = gr.update(interactive=True)
    listed = follow_ups_html(follow_ups, PANEL_PREFIX)
    return run_id, _ready_note(run_id), gr.update(value="", interactive=True), on, "", listed


def skipped_panel() -> PanelValues:
    """The panel left as it is (the page still shows the same run)."""
    return tuple(gr.skip() for _ in range(6))


@dataclass(frozen=True)
class FollowUpPanel:
    """The panel's components (:func:`follow_up_panel`); ``run_id`` is the finished run shown
    (``None``: none)."""

    run_id: gr.State
    note: gr.Markdown
    question: gr.Textbox
    ask_btn: gr.Button
    status: gr.HTML
    answers: gr.HTML

    def outputs(self) -> list[Any]:
        """The components in the order of :data:`PanelValues`."""
        return [self.run_id, self.note, self.question, self.ask_btn, self.status, self.answers]


def follow_up_panel() -> FollowUpPanel:
    """Build the panel (closed) inside the current Blocks, under the report."""
    with gr.Group(elem_id="dc-ask-panel"):
        note = gr.Markdown(NO_RUN_NOTE, elem_id="dc-ask-note")
        with gr.Row():
            question = gr.Textbox(
                label="Follow-up question about this run (Enter asks)",
                lines=1,
                max_lines=4,
                interactive=False,
                scale=4,
                elem_id="dc-ask-question",
            )
            ask_btn = gr.Button(
                "Ask", variant="primary", interactive=False, scale=1, elem_id="dc-ask"
            )
    status = gr.HTML(elem_id="dc-ask-status")
    answers = gr.HTML(elem_id="dc-follow-ups")
    return FollowUpPanel(gr.State(None), note, question, ask_btn, status, answers)


@dataclass(frozen=True)
class FollowUpHandlers:
    """The panel's handlers: :meth:`after_run` opens it on a live run that ended with its
    report, :meth:`ask` answers a question. ``opener`` opens the run store (as History's);
    ``ask_fn`` is :func:`deepcritical.api.ask` (tests pass one with a test embedder)."""

    opener: hist.StoreOpener
    settings: Settings
    access: Access
    ask_fn: AskFn

    def _follow_ups(self, run_id: str, owner: str | None) -> list[FollowUp]:
        store = self.opener(self.settings)
        try:
            return store.follow_ups(run_id, owner=owner)
        finally:
            store.close()

    def _shown(self, run_id: str, owner: str | None) -> PanelValues:
        store = self.opener(self.settings)
        try:
            record, result = hist.stored_run(store, run_id, owner)
            if result is None:
                return closed_panel()
            return open_panel(record.id, store.follow_ups(record.id, owner=owner))
        finally:
            store.close()

    async def after_run(
        self,
        view: ProgressView | None,
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
    ) -> PanelValues:
        """The panel after a live run (its last ``view``): open on the run when it ended with
        its report and is recorded as the caller's, else closed."""
        if view is None or not view.run_id or view.failed or view.stopped or not view.finished:
            return closed_panel()
        try:
            owner = self.access.owner(request, profile)
            shown: PanelValues = await asyncio.to_thread(self._shown, view.run_id, owner)
        except (SignInRequired, RunNotFoundError):
            return closed_panel()
        return shown

    async def ask(
        self,
        run_id: str | None,
        question: str,
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
    ) -> tuple[Any, str, Any]:
        """Answer ``question`` about the run shown (``run_id``) for the caller: ``(question
        box, status line, answers)``, the run's follow-ups newest first; on bad input or a
        failure the question stays and the line says what went wrong."""
        if not run_id:
            return gr.skip(), _line(NO_RUN_NOTE.replace("**", ""), "dc-error"), gr.skip()
        try:
            owner = self.access.owner(request, profile)
            follow_up = await self.ask_fn(run_id, question, self.settings, owner=owner)
        except (SignInRequired, *ASK_ERRORS) as exc:
            return gr.skip(), _line(str(exc), "dc-error"), gr.skip()
        # shown in the page, never raised: a failure must not look like a hung page
        except Exception as exc:  # noqa: BLE001 (see above)
            log.warning("follow-up question failed", error=type(exc).__name__)
            why = redact(error_text(exc), secret_values(self.settings))
            return (
                gr.skip(),
                _line(f"The question could not be answered: {why}", "dc-error"),
                gr.skip(),
            )
        try:
            listed = await asyncio.to_thread(self._follow_ups, run_id, owner)
        except RunNotFoundError:
            listed = [follow_up]
        done = (
            "Answered from this run's evidence."
            if follow_up.answered
            else "This run's evidence does not answer it."
        )
        return "", _line(done, "dc-ask-done"), follow_ups_html(listed, PANEL_PREFIX)
