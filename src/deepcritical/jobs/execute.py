"""Executing one job in a worker: :func:`execute_run`.

The job is run with :func:`deepcritical.api.resume` on its recorded run: a ``queued`` run
starts from the beginning (its first attempt); a run that already has checkpoints (its
worker died) continues from them, its finished search calls answered by the call cache, its
sources saved idempotently. The resume lease decides who may continue a run: a run left
``in_progress`` by a dead worker is taken over once its heartbeat is stale, at once when the
worker restarted with the same id gave the heartbeat up
(:func:`~deepcritical.state.lease.abandon_runs`); while another process holds the lease the
job waits (a duplicate recovery ends when the run does).

While the run streams, a watcher reads ``cancel_requested`` every
:data:`CANCEL_POLL_SECONDS`; when it is set the run's stream is closed (the run is recorded
``cancelled``, as on Ctrl-C) and a last ``error`` event saying so is appended to the log.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Mapping
from typing import cast

from deepcritical.api import resume
from deepcritical.config import Settings
from deepcritical.events import ResearchEvent
from deepcritical.logs import get_logger
from deepcritical.state.errors import RunInProgressError
from deepcritical.state.lease import LIVE_STATUSES
from deepcritical.state.run_store import FINISHED_STATUSES, RunStore
from deepcritical.telemetry.tracing import attached, extract_context, span, tracer_provider

__all__ = ["CANCEL_POLL_SECONDS", "execute_run"]

log = get_logger(__name__)

CANCELLED_NOTE = "the run was cancelled"
CANCEL_POLL_SECONDS = 0.5
"""How often a running job checks whether it was cancelled."""

LEASE_WAIT_SECONDS = 5.0
"""How long a job waits before trying again a run whose lease another process holds."""


async def execute_run(
    run_id: str, settings: Settings, worker: str, *, trace: Mapping[str, str] | None = None
) -> str:
    """Run job ``run_id`` to its end in this process (the worker ``worker``); the run's
    final status. A run already finished or cancelled is left as it is.

    With tracing on, the job is the span ``job`` (the parent of the run's span), a child of
    the submitter's trace context ``trace`` (W3C headers, :func:`submit_run`'s) when there
    is one: the worker's spans share the submitter's trace id.

    Raises:
        RunInProgressError: another live process runs it (its heartbeat is fresh).
        Exception: what the run raised (recorded ``failed`` on the run).
    """
    if tracer_provider() is None:  # tracing off: nothing read, nothing made
        return await _execute(run_id, settings, worker)
    with (
        attached(extract_context(trace)),
        span("job", {"deepcritical.run_id": run_id, "deepcritical.worker": worker}) as job,
    ):
        status = await _execute(run_id, settings, worker)
        if job is not None:
            job.set_attribute("deepcritical.status", status)
        return status


async def _execute(run_id: str, settings: Settings, worker: str) -> str:
    """:func:`execute_run` under the current trace context."""
    store = await asyncio.to_thread(RunStore.open, settings)
    try:
        record = await asyncio.to_thread(store.job_record, run_id)
        if record is None:
            log.warning("job without a run", run_id=run_id)
            return "missing"
        if record.status in FINISHED_STATUSES:
            return record.status
        if record.cancel_requested:
            await asyncio.to_thread(_mark_cancelled, store, run_id)
            return "cancelled"
        while True:
            try:
                cancelled = await _run_until_cancelled(
                    store, run_id, settings, record.owner, worker
                )
                break
            except RunInProgressError:
                # another process holds the run's lease: a live one (a duplicate recovery)
                # finishes it; a dead one's heartbeat goes stale and the lease is ours
                log.warning("job's run held by another process; waiting", run_id=run_id)
                await asyncio.sleep(LEASE_WAIT_SECONDS)
                current = await asyncio.to_thread(store.job_record, run_id)
                if current is None or current.status not in LIVE_STATUSES:
                    return current.status if current is not None else "missing"
        if cancelled:
            await asyncio.to_thread(_mark_cancelled, store, run_id)
        final = await asyncio.to_thread(store.job_record, run_id)
        return final.status if final is not None else "missing"
    finally:
        store.close()


async def _run_until_cancelled(
    store: RunStore, run_id: str, settings: Settings, owner: str | None, worker: str
) -> bool:
    """Stream the run through :func:`~deepcritical.api.resume` until it ends or is
    cancelled (the run's ``worker`` is set at its first event, once this process holds its
    lease); True when it was cancelled."""

    async def consume() -> None:
        claimed = False
        async with contextlib.aclosing(_stream(run_id, settings, owner)) as events:
            async for _event in events:
                if not claimed:
                    claimed = True
                    await asyncio.to_thread(store.set_worker, run_id, worker)

    task = asyncio.create_task(consume())
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=CANCEL_POLL_SECONDS)
            if done:
                task.result()  # re-raises the run's failure
                return False
            if await asyncio.to_thread(store.cancel_requested, run_id):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                return True
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def _stream(
    run_id: str, settings: Settings, owner: str | None
) -> AsyncGenerator[ResearchEvent, None]:
    """The run's events through :func:`~deepcritical.api.resume` (an async generator)."""
    return cast("AsyncGenerator[ResearchEvent, None]", resume(run_id, settings, owner=owner))


def _mark_cancelled(store: RunStore, run_id: str) -> None:
    store.end_cancelled(run_id, CANCELLED_NOTE)
