"""A job worker: :func:`run_worker` (``deepcritical worker``).

It launches DBOS with its worker id as the executor id, listens to the job queue with at
most ``concurrency`` jobs at a time, and runs each job with
:func:`~deepcritical.jobs.execute.execute_run`. Failures it retries are those of the
infrastructure only: a job whose worker died is recovered (DBOS re-runs its workflow, which
continues the run from its checkpoints), at most :data:`MAX_RECOVERY_ATTEMPTS` times; a run
that ended with an error report or raised is never retried.

A job's workflow arguments are its run id and, when its submitter traced, the submitter's
trace context (``trace``: W3C ``traceparent``/``tracestate``), the parent of the job's span.
A job whose run stops for the researcher's review ends there (its slot is free) and starts
the review's waiting workflow (:mod:`~deepcritical.jobs.review_wait`), which enqueues the
run again once the review is decided; the worker touches the runs it holds waiting, so a
dead worker's waits are recovered like its jobs.

Two ways a dead worker's job is picked up:

- on restart with the same worker id (``--worker-id``): the worker first gives up the
  heartbeats of the runs it had (:func:`~deepcritical.state.lease.abandon_runs`), then DBOS
  recovers that executor's pending workflows at launch (re-enqueued; any worker dequeues
  them) and the run is taken over at once;
- by any other worker, within :data:`~deepcritical.state.run_store.STALE_AFTER_SECONDS` +
  :data:`RECOVERY_POLL_SECONDS`: every worker looks for runs whose worker's heartbeat is
  stale (:func:`~deepcritical.state.lease.dead_workers`) and recovers that worker's
  workflows (DBOS re-enqueues them; one worker dequeues each).
"""

from __future__ import annotations

import os
import socket
import threading
from dataclasses import dataclass

from deepcritical.config import Settings
from deepcritical.jobs.engine import QUEUE, QUEUE_POLL_SECONDS, WORKFLOW, dbos_config
from deepcritical.jobs.execute import execute_run
from deepcritical.jobs.review_wait import REVIEW_WORKFLOW, start_review_wait, wait_for_review
from deepcritical.logs import get_logger
from deepcritical.state.lease import abandon_runs, dead_workers, touch_waiting
from deepcritical.state.run_store import AWAITING_REVIEW, STALE_AFTER_SECONDS, RunStore
from deepcritical.telemetry.tracing import configure_tracing

__all__ = [
    "MAX_RECOVERY_ATTEMPTS",
    "RECOVERY_POLL_SECONDS",
    "REVIEW_RECOVERY_ATTEMPTS",
    "default_worker_id",
    "run_worker",
]

log = get_logger(__name__)

MAX_RECOVERY_ATTEMPTS = 5
"""How often one job is recovered after its worker died before DBOS gives up on it."""
REVIEW_RECOVERY_ATTEMPTS = 100
"""How often one review's wait is recovered (its worker died or restarted) before DBOS gives
up on it: a wait may last days, across many restarts of the workers."""
RECOVERY_POLL_SECONDS = 5.0
"""How often a worker looks for the jobs of dead workers."""


@dataclass
class _WorkerContext:
    settings: Settings
    worker_id: str


_CONTEXT: _WorkerContext | None = None
"""This process's worker (the workflow reads it: DBOS passes it only the job's arguments)."""


def default_worker_id() -> str:
    """``<host>-<pid>``: unique per process; give ``--worker-id`` to restart as the same."""
    return f"{socket.gethostname()}-{os.getpid()}"


def _register_workflow() -> None:
    from dbos import DBOS

    @DBOS.workflow(name=WORKFLOW, max_recovery_attempts=MAX_RECOVERY_ATTEMPTS)
    async def run_job(run_id: str, trace: dict[str, str] | None = None) -> str:
        if _CONTEXT is None:
            raise RuntimeError("no worker in this process")
        status = await execute_run(run_id, _CONTEXT.settings, _CONTEXT.worker_id, trace=trace)
        if status == AWAITING_REVIEW:  # the slot is given back; a workflow waits for the user
            await start_review_wait(run_id, _CONTEXT.settings, await_review)
        return status

    @DBOS.workflow(name=REVIEW_WORKFLOW, max_recovery_attempts=REVIEW_RECOVERY_ATTEMPTS)
    async def await_review(run_id: str, number: int) -> str:
        if _CONTEXT is None:
            raise RuntimeError("no worker in this process")
        return await wait_for_review(run_id, number, _CONTEXT.settings, _CONTEXT.worker_id, run_job)


def run_worker(
    settings: Settings,
    *,
    concurrency: int = 1,
    worker_id: str | None = None,
    stop: threading.Event | None = None,
) -> None:
    """Run a worker until ``stop`` is set (or forever): launch DBOS on ``settings``' job
    database as ``worker_id`` (default :func:`default_worker_id`), run at most
    ``concurrency`` jobs at once, and recover the jobs of dead workers.

    Raises:
        ValueError: ``concurrency`` < 1.
        Exception: the run or job database cannot be opened.
    """
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    from dbos import DBOS

    global _CONTEXT
    configure_tracing()  # on when an OTLP endpoint is set: each job's span from the first
    name = worker_id or default_worker_id()
    _CONTEXT = _WorkerContext(settings=settings, worker_id=name)
    store = RunStore.open(settings)  # the run database exists and is migrated
    try:
        # this worker id runs nothing yet: what it ran before is for whoever recovers it
        given_up = abandon_runs(store, name)
    finally:
        store.close()
    if given_up:
        log.warning("continuing the runs of this worker's last life", runs=given_up)
    _register_workflow()
    DBOS(config=dbos_config(settings, name))
    DBOS.launch()
    try:
        DBOS.register_queue(
            QUEUE, worker_concurrency=concurrency, polling_interval_sec=QUEUE_POLL_SECONDS
        )
        log.info("worker started", worker=name, concurrency=concurrency)
        waiting = stop or threading.Event()
        store = RunStore.open(settings)
        try:
            while not waiting.wait(RECOVERY_POLL_SECONDS):
                _recover_dead(store, name)
        finally:
            store.close()
    finally:
        DBOS.destroy()
        _CONTEXT = None


def _recover_dead(store: RunStore, alive: str) -> None:
    """Touch the runs this worker holds while they wait for a review; recover the workflows
    of workers whose runs' heartbeats are stale."""
    from dbos import DBOS

    try:
        touch_waiting(store, alive)
        dead = dead_workers(store, alive, stale_after=STALE_AFTER_SECONDS)
        if dead:
            log.warning("recovering the jobs of dead workers", workers=dead)
            DBOS._recover_pending_workflows(dead)
    except Exception:
        log.exception("recovering dead workers' jobs failed")
