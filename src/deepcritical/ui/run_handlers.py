"""The handlers of the research form: *Research* (the button and Enter), *Resume* (a stopped
run of this page, or a run chosen in History), *Stop*, and the sources ticked at page load.

Each asks :meth:`~deepcritical.ui.auth.Access.owner` who the caller is before it records or
reads a run, and streams the run through :meth:`~deepcritical.ui.live_run.RunStreams.watched`.
In jobs mode (a :class:`~deepcritical.ui.jobs_mode.JobBackend`) *Research* submits a job and
follows it, a session's own API key is refused (a worker never sees it), and *Stop* also
cancels the job in its worker.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import gradio as gr
from pydantic import SecretStr

from deepcritical.config import Settings
from deepcritical.logs import get_logger
from deepcritical.ui import history as hist
from deepcritical.ui.auth import Access, SignInRequired
from deepcritical.ui.jobs_mode import JOB_KEY_REFUSED, JobBackend
from deepcritical.ui.live_run import RunOutputs, RunStreams, blank_outputs, stop_off
from deepcritical.ui.mcp_tool import ResearchFn
from deepcritical.ui.progress_view import ProgressView, fail
from deepcritical.ui.session import SessionChoice, SettingsError, visitor_settings
from deepcritical.ui.source_check import SourceCheck, default_sources, sources_note, sources_on_md
from deepcritical.ui.stop_resume import resumable, stopped_html

log = get_logger(__name__)

SOURCE_WAIT = 3.0
"""Seconds the page load waits for the source check started with the app."""
STOP_SETTLE_SECONDS = 0.5
"""How long *Stop* waits after cancelling before it shows "Stopped" (the cancelled run's
last update, already on its way, lands first)."""


def _choice(
    llm: str,
    api_key: str,
    sources: Sequence[str] | None,
    max_rounds: float | None,
    max_sources: float | None,
    orchestrator: str | None,
    reviews: Sequence[bool] = (False, False),
) -> SessionChoice:
    orch: Literal["iterative", "magentic"] | None = (
        "magentic" if orchestrator == "magentic" else "iterative" if orchestrator else None
    )
    return SessionChoice(
        llm=llm or "",
        api_key=SecretStr(api_key) if api_key else None,
        sources=list(sources or []),
        max_rounds=int(max_rounds) if max_rounds else None,
        max_sources=int(max_sources) if max_sources else None,
        orchestrator=orch,
        review_plan=bool(reviews[0]),
        review_evidence=bool(reviews[1]),
    )


def _refused(message: str, settings: Settings) -> RunOutputs:
    """The outputs of a run refused before it started: ``message`` as its error, no view to
    stop or resume, *Resume* hidden and *Stop* off."""
    view = fail(ProgressView(), message)
    return (*blank_outputs(view, settings), None, gr.update(visible=False), stop_off())


def _check_job_key(backend: JobBackend | None, api_key: str | None) -> None:
    """Refuse a session's own API key in jobs mode (a worker never sees it).

    Raises:
        SettingsError: jobs mode and a key was given.
    """
    if backend is not None and (api_key or "").strip():
        raise SettingsError(JOB_KEY_REFUSED)


def _cancel_job(
    backend: JobBackend | None,
    view: ProgressView | None,
    settings: Settings,
    access: Access,
    request: gr.Request | None,
    profile: gr.OAuthProfile | None,
) -> None:
    """In jobs mode, cancel the caller's job of ``view`` in its worker (when it has a run id
    and has not ended); a failure is logged, never shown (the panel says Stopped; the job may
    have ended meanwhile)."""
    if backend is None or view is None or not view.run_id or view.finished:
        return
    try:
        owner = access.owner(request, profile)
        backend.cancel(view.run_id, settings, owner=owner)
    except Exception as exc:  # noqa: BLE001 - Stop must always answer
        log.warning(
            "could not cancel job", run_id=view.run_id, error=f"{type(exc).__name__}: {exc}"
        )


@dataclass(frozen=True)
class RunHandlers:
    """The research form's handlers for runs with the server's ``settings``.

    Args:
        settings: the server's settings (each run gets a validated copy with the session's
            choices: :func:`~deepcritical.ui.session.visitor_settings`).
        run_fn: ``research(question, settings, context=..., owner=...)``, the run's events.
        backend: the job engine in jobs mode, else ``None`` (runs in this process).
        access: the deployment's sign-in, which names each caller's owner.
        streams: the app's run streams (rendering, and *Stop* of a session).
        check: the reachability check of the live sources.
        corpus_exists: whether the local corpus exists (ticked by default then).
    """

    settings: Settings
    run_fn: ResearchFn
    backend: JobBackend | None
    access: Access
    streams: RunStreams
    check: SourceCheck
    corpus_exists: bool

    async def run(
        self,
        question: str,
        context: str | None,
        llm: str,
        api_key: str,
        sources: list[str],
        max_rounds: float,
        max_sources: float,
        orchestrator: str,
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
        review_plan: bool = False,
        review_evidence: bool = False,
    ) -> AsyncIterator[RunOutputs]:
        """*Research*: the caller's run of ``question`` with the session's choices, streamed
        (with ``review_plan`` / ``review_evidence`` it stops at ``plan_ready`` /
        ``evidence_ready`` for the review panel; Gradio gives them after the injected
        ``request`` and ``profile``); a refused choice or a missing sign-in is shown as the
        run's error. ``context`` is ``None`` when it comes from the clarify card's state and
        the card gave none (a call of this handler through the API, whose state inputs are
        the session's)."""
        try:
            owner = self.access.owner(request, profile)
            _check_job_key(self.backend, api_key)
            reviews = (review_plan, review_evidence)
            choice = _choice(llm, api_key, sources, max_rounds, max_sources, orchestrator, reviews)
            per_run = await visitor_settings(self.settings, choice)
            del api_key, choice  # the key lives on only inside per_run, as a SecretStr
        except (SettingsError, SignInRequired) as exc:
            yield _refused(str(exc), self.settings)
            return
        events = self.run_fn(
            question, per_run, context=(context or "").strip() or None, owner=owner
        )
        async for out in self.streams.watched(events, per_run, owner, request):
            yield out

    async def resume_run(
        self, run_id: str, request: gr.Request | None = None, profile: gr.OAuthProfile | None = None
    ) -> AsyncIterator[RunOutputs]:
        """Continue the caller's stored run ``run_id`` (stopped, failed or interrupted) to its
        report, streamed like a new run."""
        try:
            owner = self.access.owner(request, profile)
        except SignInRequired as exc:
            yield _refused(str(exc), self.settings)
            return
        if not run_id.strip():
            yield _refused("No run to resume: choose a run in History first.", self.settings)
            return
        events = hist.resume_events(run_id, self.settings, owner)
        async for out in self.streams.watched(events, self.settings, owner, request):
            yield out

    async def resume_stopped(
        self,
        view: ProgressView | None,
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
    ) -> AsyncIterator[RunOutputs]:
        """*Resume* under the form: :meth:`resume_run` of the run this session stopped."""
        run_id = view.run_id if view is not None and view.run_id else ""
        async for out in self.resume_run(run_id, request, profile):
            yield out

    async def stop(
        self,
        view: ProgressView | None,
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
    ) -> tuple[str, Any, ProgressView | None]:
        """*Stop*: the run's panel as it was, "Stopped" (its handler is cancelled); in jobs
        mode the run's job is cancelled in its worker too. It answers outside the queue (a
        full queue cannot hold it back) and after :data:`STOP_SETTLE_SECONDS`, so that an
        update the cancelled run had already sent cannot land after it and hide "Stopped"."""
        self.streams.ask_stop(request)
        await asyncio.to_thread(
            _cancel_job, self.backend, view, self.settings, self.access, request, profile
        )
        await asyncio.sleep(STOP_SETTLE_SECONDS)
        return stopped_html(view), gr.update(visible=resumable(view)), view

    async def load_sources(self) -> tuple[Any, str, str]:
        """At page load: the sources ticked (those that can work, after waiting up to
        :data:`SOURCE_WAIT` seconds for the check), the note on the unreachable ones, and
        the line naming the ticked ones."""
        reachable = await asyncio.to_thread(self.check.wait, SOURCE_WAIT)
        ticked = default_sources(self.settings.sources, reachable, self.corpus_exists)
        return (
            gr.update(value=ticked),
            sources_note(reachable, self.corpus_exists),
            sources_on_md(ticked),
        )
