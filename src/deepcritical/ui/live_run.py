"""A run's events rendered into the page's outputs as they come: :func:`stream_run` folds
each :class:`ResearchEvent` into a :class:`~deepcritical.ui.progress_view.ProgressView` and
re-renders the panels (the last event gives the report, the evidence table, the hypotheses,
the answer card and the downloads), and :class:`RunStreams` adds what a session's *Stop* and
*Resume* need (:mod:`deepcritical.ui.stop_resume`).

Every handler that shows a run streams it through here: *Research*, *Resume*, History's open
(a stored run replayed as events) and, in jobs mode, a followed job. Nothing is raised: what
goes wrong is shown in the progress panel, with every API key of the run's settings redacted.
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import AsyncIterator, Callable
from typing import Any

import gradio as gr

from deepcritical.config import Settings, redact_model_spec
from deepcritical.events import ResearchEvent
from deepcritical.logs import get_logger
from deepcritical.models import RunResult, error_text
from deepcritical.ui.answer import (
    answer_card_html,
    blank_answer,
    chart_update,
    design_frame,
    year_frame,
)
from deepcritical.ui.citation_links import report_html
from deepcritical.ui.downloads import (
    NO_DOWNLOADS_HTML,
    DownloadShelf,
    downloads_html,
    write_downloads,
)
from deepcritical.ui.evidence_table import evidence_view
from deepcritical.ui.flow_diagram import flow_html
from deepcritical.ui.progress_view import ProgressView, fail, fold
from deepcritical.ui.render import hypotheses_html, progress_html
from deepcritical.ui.session import mode_notice, redact, secret_values
from deepcritical.ui.stop_resume import RunWatch, resumable, stopped_html
from deepcritical.ui.streams import closing

log = get_logger(__name__)

Outputs = tuple[str, str, str, str, str, str, str, Any, Any, str]
"""(notice, progress, report, evidence, hypotheses, download links, answer card, evidence by
year, evidence by study design, flow of records); ``evidence`` is the Evidence tab's table,
carrying its rows for sorting and filtering
(:func:`~deepcritical.ui.evidence_table.evidence_view`)."""
RunOutputs = tuple[Any, ...]
""":data:`Outputs`, then the run's :class:`ProgressView` (session state, for *Stop*), the
update of the *Resume* button and that of the *Stop* button (enabled while the run runs)."""
RUN_OUTPUT_COUNT = 13
"""Values in :data:`RunOutputs` (the 10 of :data:`Outputs`, the view, *Resume*, *Stop*)."""
Watcher = Callable[
    [AsyncIterator[ResearchEvent], Settings, str | None, gr.Request | None],
    AsyncIterator[RunOutputs],
]
"""A run's events, its settings, owner and request -> its outputs, as
:meth:`RunStreams.watched` streams them (*Stop* in the request's session ends them)."""


def notice_md(settings: Settings) -> str:
    """The line above the question: the extractive-mode notice, else the model the runs use
    (its spec redacted: no key or password of a URL)."""
    return mode_notice(settings) or f"Model: `{html.escape(redact_model_spec(settings.llm))}`"


def stop_off() -> Any:
    """*Stop* disabled: nothing runs (after Stop, and for a run refused before it started)."""
    return gr.update(interactive=False)


def blank_outputs(view: ProgressView, settings: Settings) -> Outputs:
    """The outputs of a run refused before it started: ``view`` in the progress panel
    (its error), every other panel empty."""
    card, _, _, flow = blank_answer()
    hidden = chart_update(None)
    notice, progress, files = notice_md(settings), progress_html(view), NO_DOWNLOADS_HTML
    return notice, progress, "", "", "", files, card, hidden, hidden, flow


async def stream_run(
    events: AsyncIterator[ResearchEvent],
    settings: Settings,
    shelf: DownloadShelf,
    owner: str | None,
) -> AsyncIterator[Outputs]:
    """Fold ``events`` into UI outputs, one tuple per event (the generator behind *Run* and
    *Resume*); the final tuple carries the report, evidence, hypotheses and the links to its
    download files, written to ``shelf`` for ``owner`` (the run's, who alone may fetch them).

    Exceptions of the run are shown in the progress panel, never raised: a failed run must
    not look like a hung page. Every API key of ``settings`` is redacted from what is shown
    and from the downloads.
    """
    secrets = secret_values(settings)

    def out(
        view: ProgressView,
        report: str,
        evidence: str,
        hypotheses: str,
        files: str,
        answer: tuple[str, Any, Any, str] | None = None,
    ) -> Outputs:
        def r(text: str) -> str:
            return redact(text, secrets)

        card, years, designs, flow = answer or blank_answer()
        return (
            notice,
            r(progress_html(view)),
            r(report),
            r(evidence),
            r(hypotheses),
            files,
            r(card),
            chart_update(years),
            chart_update(designs),
            r(flow),
        )

    notice = notice_md(settings)
    view = ProgressView(max_rounds=settings.max_rounds)
    report = '<p class="dc-empty">The report appears here when the run ends.</p>'
    evidence = '<p class="dc-empty">No evidence yet.</p>'
    hypotheses = '<p class="dc-empty">No hypothesis yet.</p>'
    files = NO_DOWNLOADS_HTML
    yield out(view, report, evidence, hypotheses, files)
    result: RunResult | None = None
    try:
        async with closing(events) as stream:
            async for event in stream:
                view = fold(view, event)
                if event.type == "done" and event.result is not None:
                    result = event.result
                    break
                yield out(view, report, evidence, hypotheses, files)
    except Exception as exc:  # noqa: BLE001 - shown to the user (keys redacted by out())
        log.warning("run failed", error=type(exc).__name__)
        view = fail(view, error_text(exc))
    if result is None:
        if not view.finished:
            view = fail(view, "the run ended without a report")
        yield out(view, report, evidence, hypotheses, files)
        return
    report = report_html(result)
    evidence = evidence_view(result)
    hypotheses = hypotheses_html(result)
    paths = await asyncio.to_thread(
        shelf.shelve,
        owner,
        lambda directory: write_downloads(result, directory, lambda text: redact(text, secrets)),
    )
    answer = (
        answer_card_html(result),
        year_frame(result),
        design_frame(result),
        flow_html(result.report.metadata.flow),
    )
    yield out(view, report, evidence, hypotheses, downloads_html(shelf, paths), answer)


class RunStreams:
    """The app's run streams: :meth:`watched` renders a run's events for its session, and
    :meth:`ask_stop` ends the stream of a session whose *Stop* was pressed.

    Args:
        shelf: where finished runs' download files go.
    """

    def __init__(self, shelf: DownloadShelf) -> None:
        self.shelf = shelf
        self._stop_requests: set[str] = set()

    def ask_stop(self, request: gr.Request | None) -> None:
        """*Stop* was pressed in ``request``'s session: its run shows nothing more but
        "Stopped" (Gradio's cancellation of the run's handler may come after the run's next
        update, which would otherwise replace "Stopped")."""
        session = getattr(request, "session_hash", None)
        if session:
            self._stop_requests.add(session)

    async def watched(
        self,
        events: AsyncIterator[ResearchEvent],
        run_settings: Settings,
        owner: str | None,
        request: gr.Request | None,
    ) -> AsyncIterator[RunOutputs]:
        """:func:`stream_run` of ``owner``'s run, each tuple followed by the run's view (kept
        in the session's state for *Stop*), the *Resume* button (shown when the run ended
        without its report) and the *Stop* button (enabled while it runs). After
        :meth:`ask_stop` for the request's session, one last tuple shows "Stopped" and the
        run is closed."""
        session = getattr(request, "session_hash", None) or ""
        self._stop_requests.discard(session)  # a new run of the session
        secrets = secret_values(run_settings)
        watch = RunWatch(run_settings.max_rounds, lambda text: redact(text, secrets))
        outputs = stream_run(watch.watch(events), run_settings, self.shelf, owner)
        async with closing(outputs) as stream:
            async for out in stream:
                view = watch.shown
                if session and session in self._stop_requests:
                    self._stop_requests.discard(session)
                    skipped = [gr.skip() for _ in out]
                    skipped[1] = stopped_html(view)
                    yield (*skipped, view, gr.update(visible=resumable(view)), stop_off())
                    return  # closes stream_run, which closes the run
                yield (
                    *out,
                    view,
                    gr.update(visible=view.finished and resumable(view)),
                    gr.update(interactive=not view.finished),  # Stop, while the run runs
                )
