"""The *Watches* tab: living reviews in the web app (see ``docs/watches.md``).

- **Keep this review up to date**: a finished run of the caller (its id, as History shows it)
  becomes a watch, on the schedule chosen (every 7 or 30 days, or by hand only), through
  :func:`deepcritical.api.watch_run`;
- the caller's watches, listed with their schedule, report version, last update and a badge
  counting the updates with changes not yet seen;
- **Update now** runs an update of the selected watch (:func:`deepcritical.api.update_watch`)
  and says what is new, or that nothing is;
- **Show what changed** shows the newest version's "What's new" section and the diff by
  section against the version before (:mod:`deepcritical.ui.section_diff`), and marks the
  watch's updates seen (its badge clears).

Every handler asks :meth:`~deepcritical.ui.auth.Access.owner` who the caller is and acts on
that caller's runs and watches only; errors show as one line, never a traceback. The feeds
(:mod:`deepcritical.ui.feed_route`) are linked from the tab.
"""

from __future__ import annotations

import asyncio
import html
from dataclasses import dataclass
from typing import Any

import gradio as gr

from deepcritical.config import Settings
from deepcritical.logs import get_logger
from deepcritical.models import Watch, error_text, format_every
from deepcritical.state import RunStore, StateError
from deepcritical.state.watch_store import WatchStore
from deepcritical.ui.auth import Access, SignInRequired
from deepcritical.ui.feed_route import watch_feed_path
from deepcritical.ui.render import markdown_to_safe_html
from deepcritical.ui.section_diff import diff_html, section_changes

__all__ = ["SCHEDULES", "WatchHandlers", "watches_html", "watches_tab"]

log = get_logger(__name__)

SCHEDULES = {"Every 7 days": "7d", "Every 30 days": "30d", "By hand only": None}
"""The schedules offered, by label."""
_ERRORS = (SignInRequired, StateError, ValueError)


def _line(text: str, css: str = "dc-watch-line") -> str:
    role = "alert" if css == "dc-error" else "status"
    return f'<p class="{css}" role="{role}">{html.escape(text, quote=False)}</p>'


def watches_html(watches: list[Watch]) -> str:
    """The caller's watches as an escaped table: id, question, schedule, version, last
    update, and the badge of unseen changes (``<span class="dc-badge">2 new</span>``)."""
    if not watches:
        return _line("No watches yet: keep a finished run's review up to date above.")
    rows = []
    for w in watches:
        badge = f'<span class="dc-badge">{w.unseen} new</span>' if w.unseen else ""
        last = f"{w.last_update_at:%Y-%m-%d %H:%M} UTC" if w.last_update_at else "never"
        state = "paused" if w.paused else f"every {format_every(w.every_seconds)}"
        feed = html.escape(watch_feed_path(w.id))
        rows.append(
            f'<tr data-watch="{html.escape(w.id)}"><td><code>{html.escape(w.id)}</code></td>'
            f"<td>{html.escape(w.question)} {badge}</td><td>{html.escape(state)}</td>"
            f"<td>{w.version}</td><td>{html.escape(last)}<br>"
            f"<small>{html.escape(w.last_summary)}</small></td>"
            f'<td><a href="{feed}">Atom</a></td></tr>'
        )
    head = "<tr><th>watch</th><th>question</th><th>schedule</th><th>version</th>"
    head += "<th>last update</th><th>feed</th></tr>"
    feed = html.escape(watch_feed_path())
    return (
        f'<table class="dc-watches">{head}{"".join(rows)}</table>'
        f'<p><a href="{feed}">Atom feed of your watches</a></p>'
    )


@dataclass(frozen=True)
class WatchHandlers:
    """The tab's handlers over ``settings``' run database, for the caller ``access``
    names."""

    settings: Settings
    access: Access

    def _owner(self, request: gr.Request | None, profile: gr.OAuthProfile | None) -> str | None:
        return self.access.owner(request, profile)

    def _listing(self, owner: str | None) -> str:
        runs = RunStore.open(self.settings)
        try:
            return watches_html(WatchStore(runs).list_watches(owner=owner))
        finally:
            runs.close()

    async def refresh(
        self, request: gr.Request | None = None, profile: gr.OAuthProfile | None = None
    ) -> str:
        """The caller's watches (nothing before sign-in)."""
        try:
            owner = self._owner(request, profile)
        except SignInRequired:
            return ""
        return await asyncio.to_thread(self._listing, owner)

    async def keep_up_to_date(
        self,
        run_id: str,
        schedule: str,
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
    ) -> tuple[str, str, str]:
        """Watch the caller's finished run ``run_id``: (status line, listing, watch id)."""
        from deepcritical.api import watch_run

        try:
            owner = self._owner(request, profile)
            made = await watch_run(
                run_id.strip(), self.settings, every=SCHEDULES.get(schedule), owner=owner
            )
        except _ERRORS as exc:
            return _line(error_text(exc), "dc-error"), gr.skip(), gr.skip()
        line = f"Watching run {made.run_id}: watch {made.id}, {format_every(made.every_seconds)}."
        listing = await asyncio.to_thread(self._listing, owner)
        return _line(line), listing, made.id

    async def update_now(
        self,
        watch_id: str,
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
    ) -> tuple[str, str]:
        """Update the caller's watch now: (what is new or that nothing is, listing)."""
        from deepcritical.api import update_watch

        try:
            owner = self._owner(request, profile)
            made = await update_watch(watch_id.strip(), self.settings, owner=owner)
        except _ERRORS as exc:
            return _line(error_text(exc), "dc-error"), gr.skip()
        except Exception as exc:  # noqa: BLE001 - recorded as a failed update; one line here
            log.warning("watch update failed", error=type(exc).__name__)
            return _line(f"The update failed: {error_text(exc)}", "dc-error"), gr.skip()
        listing = await asyncio.to_thread(self._listing, owner)
        version = f" Version {made.version} written." if made.version else ""
        return _line(made.summary + version), listing

    def _changes(self, watch_id: str, owner: str | None) -> tuple[str, str]:
        runs = RunStore.open(self.settings)
        try:
            watches = WatchStore(runs)
            watch = watches.require(watch_id, owner=owner)
            if watch.version < 2:
                return _line("No update has written a new version yet."), ""
            new = runs.report_version(watch.run_id, watch.version, owner=owner)
            old = runs.report_version(watch.run_id, watch.version - 1, owner=owner)
            watches.mark_seen(watch.id, owner=owner)
        finally:
            runs.close()
        if new is None or old is None:
            return _line("The watched run has no report any more."), ""
        first = new.report.findings[0] if new.report.findings else None
        whats_new = (
            markdown_to_safe_html(f"### {first.heading}\n\n{first.content}")
            if first is not None and first.heading.startswith("What's new")
            else ""
        )
        changes = section_changes(old.report.to_markdown(), new.report.to_markdown())
        caption = f"Version {old.version} -> version {new.version}"
        return whats_new, diff_html(changes, caption)

    async def show_changes(
        self,
        watch_id: str,
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
    ) -> tuple[str, str, str]:
        """The newest version's "What's new" and its diff by section; marks the watch's
        updates seen: (what's new, diff, listing)."""
        try:
            owner = self._owner(request, profile)
            whats_new, diff = await asyncio.to_thread(self._changes, watch_id.strip(), owner)
        except _ERRORS as exc:
            return _line(error_text(exc), "dc-error"), "", gr.skip()
        listing = await asyncio.to_thread(self._listing, owner)
        return whats_new, diff, listing


def _shown_run(run_id: str | None) -> Any:
    """The finished run the page shows, for the run box (left as it is without one)."""
    return run_id if run_id else gr.skip()


def watches_tab(settings: Settings, access: Access, shown_run: gr.State | None = None) -> None:
    """Build the *Watches* tab (inside the current ``gr.Tabs``) and wire its handlers;
    ``shown_run`` (the finished run the page shows, the versions panel's) fills the run box,
    so *Keep this review up to date* acts on it."""
    handlers = WatchHandlers(settings, access)
    with gr.Tab("Watches", elem_id="dc-watches-tab") as tab:
        gr.Markdown(
            "**Living reviews.** Keep a finished run's review up to date: each update searches "
            "only the records added since the last one, checks retractions again, and writes "
            "a new version saying what changed (or says nothing is new)."
        )
        with gr.Row():
            run_id = gr.Textbox(label="Finished run id (from History)", elem_id="dc-watch-run")
            schedule = gr.Dropdown(
                list(SCHEDULES), value="Every 7 days", label="Schedule", elem_id="dc-watch-every"
            )
            keep_btn = gr.Button("Keep this review up to date", elem_id="dc-watch-keep")
        status = gr.HTML(elem_id="dc-watch-status")
        listing = gr.HTML(elem_id="dc-watches")
        with gr.Row():
            watch_id = gr.Textbox(label="Watch id", elem_id="dc-watch-id")
            update_btn = gr.Button("Update now", elem_id="dc-watch-update")
            changes_btn = gr.Button("Show what changed", elem_id="dc-watch-changes")
            refresh_btn = gr.Button("Refresh", elem_id="dc-watch-refresh")
        whats_new = gr.HTML(elem_id="dc-watch-whats-new")
        diff = gr.HTML(elem_id="dc-watch-diff")
    private: dict[str, Any] = {"api_visibility": "private"}
    tab.select(handlers.refresh, None, listing, **private)
    refresh_btn.click(handlers.refresh, None, listing, **private)
    keep_btn.click(
        handlers.keep_up_to_date, [run_id, schedule], [status, listing, watch_id], **private
    )
    update_btn.click(handlers.update_now, watch_id, [status, listing], **private)
    if shown_run is not None:
        shown_run.change(_shown_run, shown_run, run_id, queue=False, **private)
    changes_btn.click(handlers.show_changes, watch_id, [whats_new, diff, listing], **private)
