"""The *History* tab: the caller's past runs from the durable store, listed when the tab
opens; a row click (or a typed run id and Enter) opens the run in the Report, Evidence,
Hypotheses and Downloads tabs and its report below the table, with the follow-up questions
asked about it under that report (and, in the Report tab, the follow-up panel opened on it:
:mod:`deepcritical.ui.follow_up_panel`); *Resume* and *Export* act on the selected run. In
jobs mode a queued or running run is followed live from its event log until it ends, as a
run started on this page (*Stop* cancels it).

The tab's helpers over the store are :mod:`deepcritical.ui.history`; here are its components
and handlers (:class:`_HistoryHandlers`), each of which asks
:meth:`~deepcritical.ui.auth.Access.owner` who the caller is and acts on that caller's runs
only.
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr
from pydantic import ValidationError

from deepcritical.config import Settings
from deepcritical.models import FollowUp, RunResult
from deepcritical.state import RunNotFoundError, RunRecord
from deepcritical.state.run_store import AWAITING_REVIEW
from deepcritical.ui import history as hist
from deepcritical.ui.auth import Access, SignInRequired
from deepcritical.ui.downloads import DownloadShelf, export_html
from deepcritical.ui.follow_up_panel import (
    HISTORY_PREFIX,
    FollowUpPanel,
    closed_panel,
    follow_ups_html,
    open_panel,
    skipped_panel,
)
from deepcritical.ui.jobs_mode import FOLLOWED_STATUSES, JobBackend, reattach_events
from deepcritical.ui.live_run import RunOutputs, Watcher, stream_run

_Opened = tuple[RunRecord, RunResult | None, list[FollowUp]]
"""A stored run opened from History: its record, its result (``None`` without a report) and
its follow-ups (none without a report)."""


def _line_html(text: str) -> str:
    return f'<p class="dc-history-line" role="status">{html.escape(text)}</p>'


async def _follow_job(
    backend: JobBackend,
    record: RunRecord,
    owner: str | None,
    settings: Settings,
    watched: Watcher,
    request: gr.Request | None,
    with_store: Callable[[Callable[[hist.RunHistory], Any]], Any],
) -> AsyncIterator[tuple[Any, ...]]:
    """History's re-attach to the job ``record``: its event log from the first event, live,
    rendered in the run's panels (as a run started on this page) with a status line, until
    the run ends; then its final status line (read with ``with_store``) and the report below
    the table."""

    def final_line() -> str:
        ended, _ = with_store(lambda s: hist.stored_run(s, record.id, owner))
        return f"{hist.status_line(ended)}. Followed to its end."

    following = (
        f"{record.status} · run {record.id} — following it live "
        "(Stop cancels it; closing the page does not)."
    )
    last: tuple[Any, ...] = ()
    events = reattach_events(backend, record.id, str(record.status), settings, owner)
    async for out in watched(events, settings, owner, request):
        last = out
        yield (*out, _line_html(following), "")
    try:
        ended = await asyncio.to_thread(final_line)
    except Exception:  # noqa: BLE001 - the panels already show how the run ended
        ended = f"Run {record.id}: followed to its end."
    if last:
        yield (*last, _line_html(ended), last[2])


@dataclass(frozen=True)
class _HistoryHandlers:
    """The *History* tab's handlers over the durable store that ``opener`` opens: each asks
    ``access`` who the caller is before it opens the store, and acts on that caller's runs
    only."""

    opener: hist.StoreOpener
    settings: Settings
    shelf: DownloadShelf
    run_outputs: list[Any]
    access: Access
    watched: Watcher
    backend: JobBackend | None

    def with_store(self, action: Any) -> Any:
        """``action(store)`` on a store opened for it, closed after."""
        store = self.opener(self.settings)
        try:
            return action(store)
        finally:
            store.close()

    def refresh(
        self, request: gr.Request | None = None, profile: gr.OAuthProfile | None = None
    ) -> tuple[list[list[str]], list[str]]:
        """The caller's runs as table rows, and their ids (nothing before sign-in)."""
        try:
            owner = self.access.owner(request, profile)
        except SignInRequired:
            return [], []
        table: tuple[list[list[str]], list[str]] = self.with_store(
            lambda s: hist.history_table(s, owner)
        )
        return table

    @staticmethod
    def pick(ids: list[str] | None, evt: gr.SelectData) -> Any:
        """The run id of the row clicked."""
        index = evt.index[0] if isinstance(evt.index, list | tuple) else evt.index
        found = hist.selected_run_id(
            ids or [], index if isinstance(index, int) else None, evt.row_value
        )
        return found if found is not None else gr.skip()

    def _opened(self, run_id: str, owner: str | None) -> _Opened:
        """``owner``'s stored run ``run_id``, its result and, with a result, its follow-ups."""

        def read(store: hist.RunHistory) -> _Opened:
            record, result = hist.stored_run(store, run_id, owner)
            asked = store.follow_ups(record.id, owner=owner) if result is not None else []
            return record, result, asked

        opened: _Opened = self.with_store(read)
        return opened

    async def open_run(
        self,
        run_id: str,
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
    ) -> AsyncIterator[tuple[Any, ...]]:
        """Open the caller's run ``run_id`` in the run tabs (its report and follow-ups also
        here, the follow-up panel on it); in jobs mode follow a queued or running one live.
        Each tuple: the run outputs, the status line, the report, its follow-ups, then the
        follow-up panel's values."""
        skip = tuple(gr.skip() for _ in self.run_outputs)
        try:
            owner = self.access.owner(request, profile)
            record, result, asked = await asyncio.to_thread(self._opened, run_id, owner)
        except (SignInRequired, RunNotFoundError) as exc:
            error = f'<p class="dc-error">{html.escape(str(exc))}</p>'
            yield (*skip, error, "", "", *skipped_panel())
            return
        except ValidationError:  # a result stored in a shape this version cannot read
            message = f"The stored result of run {run_id.strip()} could not be read."
            yield (
                *skip,
                f'<p class="dc-error">{html.escape(message)}</p>',
                "",
                "",
                *skipped_panel(),
            )
            return

        def line(more: str) -> str:
            return _line_html(f"{hist.status_line(record)}. {more}")

        backend = self.backend
        if backend is not None and result is None and record.status in FOLLOWED_STATUSES:
            async for out in self._follow(backend, record, owner, request):
                yield out
            return
        if result is None:
            more = "No report yet: Resume continues it." if record.resumable else "No report."
            if record.status == AWAITING_REVIEW:
                more = "It waits for your review: decide it below the progress panel."
            yield (*skip, line(more), "", "", *skipped_panel())
            return
        last: tuple[Any, ...] = ()
        replayed = hist.replay_events(record, result)
        async for out in stream_run(replayed, self.settings, self.shelf, owner):
            last = out
        opened = "Opened in the Report, Evidence, Hypotheses and Downloads tabs; report below."
        yield (
            *last,
            gr.skip(),
            gr.skip(),
            gr.skip(),
            line(opened),
            last[2],
            follow_ups_html(asked, HISTORY_PREFIX),
            *open_panel(record.id, asked),
        )

    async def _follow(
        self, backend: JobBackend, record: RunRecord, owner: str | None, request: gr.Request | None
    ) -> AsyncIterator[tuple[Any, ...]]:
        """:func:`_follow_job` with the follow-up panel closed while the run runs, then open on
        it when it ended with its report."""
        follow = _follow_job(
            backend, record, owner, self.settings, self.watched, request, self.with_store
        )
        async for out in follow:
            yield (*out, "", *closed_panel())
        try:
            _, result, asked = await asyncio.to_thread(self._opened, record.id, owner)
        except Exception:  # noqa: BLE001 - the panels already show how the run ended
            return
        if result is not None:
            skip = tuple(gr.skip() for _ in range(len(self.run_outputs) + 2))
            yield (*skip, follow_ups_html(asked, HISTORY_PREFIX), *open_panel(record.id, asked))

    def export(
        self, run_id: str, request: gr.Request | None = None, profile: gr.OAuthProfile | None = None
    ) -> str:
        """A link to the caller's run ``run_id`` as JSON, served to that caller only."""
        try:
            owner = self.access.owner(request, profile)
            rid, data = self.with_store(lambda s: hist.export_of(s, run_id, owner))
        except (SignInRequired, RunNotFoundError) as exc:
            return f'<p class="dc-error">{html.escape(str(exc))}</p>'
        (path,) = self.shelf.shelve(owner, lambda folder: [hist.write_export(rid, data, folder)])
        return export_html(self.shelf, path)


@dataclass(frozen=True)
class HistoryTab:
    """The *History* tab's events that *Stop* cancels: ``resume`` (its *Resume*) and
    ``opens`` (a row click and a typed run id: in jobs mode they may follow a running
    job)."""

    resume: Any
    opens: list[Any]
    resume_btn: gr.Button
    run_id: gr.Textbox
    """The selected run's id (what the opens opened)."""


def history_tab(
    opener: hist.StoreOpener,
    settings: Settings,
    shelf: DownloadShelf,
    run_outputs: list[Any],
    access: Access,
    resume_run: Callable[..., AsyncIterator[RunOutputs]],
    watched: Watcher,
    backend: JobBackend | None,
    follow_up: FollowUpPanel,
) -> HistoryTab:
    """Build the *History* tab (inside the current ``gr.Tabs``) and wire it: the table lists
    the caller's runs from the store ``opener`` opens, on the tab's ``select`` and
    *Refresh*; a run opened streams into ``run_outputs`` (the run tabs' components, as
    ``watched`` streams them: :data:`~deepcritical.ui.live_run.RunOutputs`) then the status
    line and the report below the table; *Resume* streams ``resume_run(run_id)`` there too.
    Downloads and exports go to ``shelf``; ``backend`` (jobs mode) follows queued and
    running runs live. A run opened with its report lists its follow-ups under that report
    and opens ``follow_up`` (the Report tab's panel) on it."""
    handlers = _HistoryHandlers(opener, settings, shelf, run_outputs, access, watched, backend)
    with gr.Tab("History", elem_id="dc-history-tab") as tab:
        gr.Markdown(
            "Your runs, newest first (listed when this tab opens). Click a row to open the "
            "run; Resume and Export act on the selected run."
        )
        table = gr.Dataframe(
            headers=hist.HEADERS,
            interactive=False,
            wrap=True,
            column_widths=["12%", "14%", "10%", "44%", "10%", "10%"],
            label="Runs",
            elem_id="dc-history",
        )
        ids = gr.State([])
        with gr.Row():
            run_id = gr.Textbox(
                label="Selected run (click a row, or type a run id and press Enter)",
                elem_id="dc-history-id",
            )
            refresh_btn = gr.Button("Refresh", elem_id="dc-history-refresh")
            resume_btn = gr.Button("Resume", elem_id="dc-history-resume")
            export_btn = gr.Button("Export", elem_id="dc-history-export-btn")
        status = gr.HTML(elem_id="dc-history-status")
        stored_report = gr.HTML(elem_id="dc-history-report")
        stored_follow_ups = gr.HTML(elem_id="dc-history-follow-ups")
        exported = gr.HTML(elem_id="dc-history-export")
    tab.select(handlers.refresh, None, [table, ids], api_visibility="private")
    refresh_btn.click(handlers.refresh, None, [table, ids], api_visibility="private")
    open_outputs = [*run_outputs, status, stored_report, stored_follow_ups, *follow_up.outputs()]
    opened = table.select(handlers.pick, [ids], run_id, api_visibility="private").then(
        handlers.open_run, run_id, open_outputs, api_visibility="private"
    )
    typed = run_id.submit(handlers.open_run, run_id, open_outputs, api_visibility="private")
    export_btn.click(handlers.export, run_id, exported, api_visibility="private")
    resumed = resume_btn.click(resume_run, run_id, run_outputs, api_visibility="private")
    return HistoryTab(resume=resumed, opens=[opened, typed], resume_btn=resume_btn, run_id=run_id)
