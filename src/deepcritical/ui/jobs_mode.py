"""The web app and its MCP tool on durable jobs (``Settings.jobs``, ``DEEPCRITICAL_JOBS=1``,
``deepcritical serve --jobs``; see ``docs/jobs.md``).

In jobs mode a click on *Research* (and a ``deep_research`` call) submits the run as a job
(:func:`deepcritical.jobs.submit_run`) and follows the run's event log
(:func:`deepcritical.jobs.follow_run`): :func:`job_research` has the signature of
:func:`deepcritical.api.research`, so the app renders the followed events exactly as it
renders an in-process run. The run executes in a worker (``deepcritical worker``): closing the
page or restarting the app stops only the following, never the run; opening the run again
in History follows it again from its first event (:func:`follow_events`). *Stop* cancels the
job in its worker (:meth:`JobBackend.cancel`).

:class:`JobBackend` is what the app needs from the engine; :class:`DbosJobs` is the real one
(:mod:`deepcritical.jobs`), tests pass fakes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Protocol

from deepcritical.config import Settings
from deepcritical.events import ResearchEvent, StartedData
from deepcritical.state.event_log import LoggedEvent
from deepcritical.ui.mcp_tool import ResearchFn
from deepcritical.ui.streams import closing

__all__ = [
    "FOLLOWED_STATUSES",
    "FOLLOWERS",
    "FOLLOW_POLL_SECONDS",
    "JOB_KEY_REFUSED",
    "REVIEW_PICKUP_SECONDS",
    "DbosJobs",
    "JobBackend",
    "continued_events",
    "follow_events",
    "job_research",
    "reattach_events",
    "submitted_event",
]

FOLLOWED_STATUSES = frozenset({"queued", "pending", "in_progress"})
"""Statuses of a run that a worker has yet to run or is running: History follows such a run
live (its event log) instead of showing its stored state."""
FOLLOWERS = 32
"""Handlers the app's queue runs at once in jobs mode (at least): a handler there only follows
a run's event log, the workers' ``--concurrency`` limits the runs themselves."""
FOLLOW_POLL_SECONDS = 0.5
"""How often a page's follower reads the run's event log."""
JOB_KEY_REFUSED = (
    "This server runs research as jobs on its workers, which use the server's API keys: "
    "leave the API key empty (or ask the operator to configure the model's key)."
)
"""Why a session's own API key is refused in jobs mode: secrets are never stored with a run,
so a worker could not use it."""
REVIEW_PICKUP_SECONDS = 120.0
"""How long a page waits, after a review's decision, for a worker to continue the job (its
status leaves ``awaiting_review`` or its log grows) before it follows the log anyway."""


class JobBackend(Protocol):
    """What the web app needs from the job engine."""

    def submit(
        self, question: str, settings: Settings, *, context: str | None, owner: str | None
    ) -> str:
        """Record ``owner``'s run of ``question`` as a queued job; its run id (blocking).

        Raises:
            QuestionError: empty or too long question.
            Exception: the run or job database cannot be reached.
        """
        ...

    def follow(
        self, run_id: str, settings: Settings, *, owner: str | None, after_seq: int = 0
    ) -> AsyncIterator[LoggedEvent]:
        """The run's logged events above ``after_seq``, live, until the run ends."""
        ...

    def cancel(self, run_id: str, settings: Settings, *, owner: str | None) -> str:
        """Cancel ``owner``'s job ``run_id``; the run's status after the request (blocking).

        Raises:
            RunNotFoundError: no such run among ``owner``'s runs.
        """
        ...

    def wake(self, run_id: str, number: int, settings: Settings) -> None:
        """Wake the workflow waiting for review ``number`` of job ``run_id`` (its decision is
        stored); never raises (a workflow not woken reads the decision when it starts or at
        its timeout)."""
        ...


class DbosJobs:
    """The job engine of :mod:`deepcritical.jobs` (DBOS over the run database)."""

    def submit(
        self, question: str, settings: Settings, *, context: str | None, owner: str | None
    ) -> str:
        from deepcritical.jobs import submit_run

        return submit_run(question, settings, context=context, owner=owner)

    def follow(
        self, run_id: str, settings: Settings, *, owner: str | None, after_seq: int = 0
    ) -> AsyncIterator[LoggedEvent]:
        from deepcritical.jobs import follow_run

        return follow_run(
            run_id, settings, owner=owner, after_seq=after_seq, poll_seconds=FOLLOW_POLL_SECONDS
        )

    def cancel(self, run_id: str, settings: Settings, *, owner: str | None) -> str:
        from deepcritical.jobs import cancel_run

        return cancel_run(run_id, settings, owner=owner)

    def wake(self, run_id: str, number: int, settings: Settings) -> None:
        from deepcritical.jobs import wake_review

        wake_review(settings, run_id, number)


def submitted_event(run_id: str) -> ResearchEvent:
    """The event shown at once for a submitted job (its run id, before a worker takes it)."""
    return ResearchEvent(
        type="started",
        message=f"Run {run_id} submitted as a job; waiting for a worker",
        data=StartedData(run_id=run_id, job=True),
    )


async def follow_events(
    backend: JobBackend, run_id: str, settings: Settings, owner: str | None
) -> AsyncIterator[ResearchEvent]:
    """The events of ``owner``'s job ``run_id`` from its first, live, until the run ends;
    closing this stream stops following (never the run)."""
    async with closing(backend.follow(run_id, settings, owner=owner)) as logged:
        async for item in logged:
            yield item.event


async def reattach_events(
    backend: JobBackend, run_id: str, status: str, settings: Settings, owner: str | None
) -> AsyncIterator[ResearchEvent]:
    """Re-attaching to ``owner``'s job ``run_id`` (now ``status``): an event naming the run
    (so *Stop* can cancel it even before a worker has taken it), then
    :func:`follow_events`."""
    yield ResearchEvent(
        type="started",
        message=f"Following run {run_id} ({status})",
        data=StartedData(run_id=run_id, job=True),
    )
    async for event in follow_events(backend, run_id, settings, owner):
        yield event


def _moved(settings: Settings, run_id: str, last_seq: int) -> bool:
    """Whether the run ``run_id`` (full id) left ``awaiting_review`` or logged an event
    numbered above ``last_seq``."""
    from deepcritical.state.run_store import AWAITING_REVIEW, RunStore

    store = RunStore.open(settings)
    try:
        record = store.job_record(run_id)
        return (
            record is None
            or record.status != AWAITING_REVIEW
            or bool(store.events(run_id, last_seq))
        )
    finally:
        store.close()


def _last_seq(settings: Settings, run_id: str) -> int:
    """The number of the last event in the log of run ``run_id`` (full id); 0 when none."""
    from deepcritical.state.run_store import RunStore

    store = RunStore.open(settings)
    try:
        seq = 0
        while batch := store.events(run_id, seq):
            seq = batch[-1].seq
        return seq
    finally:
        store.close()


async def continued_events(
    backend: JobBackend,
    run_id: str,
    number: int,
    settings: Settings,
    owner: str | None,
    *,
    pickup_seconds: float = REVIEW_PICKUP_SECONDS,
) -> AsyncIterator[ResearchEvent]:
    """The job ``run_id`` (full id) after its review ``number`` was decided: its waiting
    workflow is woken (:meth:`JobBackend.wake`), an event names the run, and once a worker
    has taken it up again (its status left ``awaiting_review`` or its log grew; at most
    ``pickup_seconds``) its event log is followed from the first event
    (:func:`follow_events`) until the run ends or stops at its next review."""
    last_seq = await asyncio.to_thread(_last_seq, settings, run_id)
    await asyncio.to_thread(backend.wake, run_id, number, settings)
    yield ResearchEvent(
        type="started",
        message=f"Run {run_id} goes on after its review on a worker",
        data=StartedData(run_id=run_id, job=True),
    )
    waited = 0.0
    while waited < pickup_seconds:
        if await asyncio.to_thread(_moved, settings, run_id, last_seq):
            break
        await asyncio.sleep(FOLLOW_POLL_SECONDS)
        waited += FOLLOW_POLL_SECONDS
    async for event in follow_events(backend, run_id, settings, owner):
        yield event


def job_research(backend: JobBackend) -> ResearchFn:
    """A ``research(question, settings, context=..., owner=...)`` (as
    :func:`deepcritical.api.research`) that submits the run as a job on ``backend`` and
    streams :func:`submitted_event`, then the run's event log (:func:`follow_events`)."""

    async def research(
        question: str,
        settings: Settings,
        *,
        context: str | None = None,
        owner: str | None = None,
    ) -> AsyncIterator[ResearchEvent]:
        run_id = await asyncio.to_thread(
            backend.submit, question, settings, context=context, owner=owner
        )
        yield submitted_event(run_id)
        async for event in follow_events(backend, run_id, settings, owner):
            yield event

    return research
