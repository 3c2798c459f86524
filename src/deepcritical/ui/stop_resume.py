"""Stop and Resume in the web app: the run's progress as the user last saw it, kept across
*Stop*, so the stopped run keeps its panel and run id and can be resumed.

:class:`RunWatch` folds the events a handler streams (the same fold as the progress panel,
:func:`~deepcritical.ui.progress_view.fold`); the handler keeps its view in the session's state.
*Stop* cancels the handler and renders that view stopped (:func:`stopped_html`: "Stopped",
no error); :func:`resumable` says whether *Resume* applies.
"""

from __future__ import annotations

import html
from collections.abc import AsyncIterator, Callable
from typing import Any

from deepcritical.events import ResearchEvent
from deepcritical.models import error_text
from deepcritical.ui.progress_view import ProgressView, fail, fold, stop
from deepcritical.ui.render import progress_html
from deepcritical.ui.streams import closing

__all__ = ["RunWatch", "resumable", "stopped_html"]

STOPPED_NOTE = "The run was stopped before its report; Resume continues it where it stopped."
STOPPED_EARLY = "The run was stopped before it was recorded; start it again with Research."


def _scrubbed(value: Any, scrub: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {k: _scrubbed(v, scrub) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrubbed(v, scrub) for v in value]
    return value


class RunWatch:
    """The :class:`ProgressView` of the events that went through :meth:`watch`;
    :attr:`shown` is that view with ``scrub`` applied to every text (the run's API keys
    redacted: the view is kept in the session and rendered again on *Stop*)."""

    def __init__(
        self, max_rounds: int | None = None, scrub: Callable[[str], str] | None = None
    ) -> None:
        self.view = ProgressView(max_rounds=max_rounds)
        self._scrub = scrub

    @property
    def shown(self) -> ProgressView:
        """:attr:`view`, every text scrubbed."""
        if self._scrub is None:
            return self.view
        return ProgressView.model_validate(_scrubbed(self.view.model_dump(), self._scrub))

    async def watch(self, events: AsyncIterator[ResearchEvent]) -> AsyncIterator[ResearchEvent]:
        """``events``, folded into :attr:`view` on the way (an exception of ``events``
        marks it failed, then goes on); closing this stream closes ``events``."""
        async with closing(events) as stream:
            try:
                async for event in stream:
                    self.view = fold(self.view, event)
                    yield event
            except Exception as exc:
                self.view = fail(self.view, error_text(exc))
                raise


def resumable(view: ProgressView | None) -> bool:
    """Whether *Resume* applies to the run of ``view``: it has a run id and did not end
    with its report (stopped, failed or cut off)."""
    if view is None or not view.run_id:
        return False
    return view.stopped or view.failed or not view.finished


def stopped_html(view: ProgressView | None) -> str:
    """The progress panel of ``view`` stopped: stage "Stopped", the counts and the run id as
    they were, and a note (a status, not an error) saying at which stage it stopped ("Stopped
    at screening evidence.") and how to go on. A run that already ended (report, failure)
    keeps its panel."""
    if view is not None and view.finished:
        return progress_html(view)
    stopped = stop(view or ProgressView())
    note = STOPPED_NOTE if stopped.run_id else STOPPED_EARLY
    panel = progress_html(stopped)
    head, sep, tail = panel.rpartition("</div>")
    at = view.stage if view is not None and view.stage not in {"Waiting", "Stopped"} else ""
    said = f"Stopped at {at.lower()}." if at else "Stopped."
    extra = (
        f'<p class="dc-stopped" role="status"><strong>{html.escape(said)}</strong> '
        f"{html.escape(note)}</p>"
    )
    return f"{head}{extra}{sep}{tail}" if sep else panel + extra
