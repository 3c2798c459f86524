"""Scheduled updates of living reviews in the job workers (see ``docs/watches.md``).

Every worker looks for due watches every :data:`WATCH_POLL_SECONDS` (:func:`enqueue_due`)
and enqueues one DBOS workflow per watch and due time on the queue :data:`WATCH_QUEUE`, its
workflow id ``watch-<watch id>-<due time in ms>``: DBOS keeps one workflow per id, so two
workers that see the same due watch enqueue one update, and it runs once (on whichever worker
dequeues it). The update (:func:`execute_watch_update`) ends by setting the watch's next due
time one period after it ended, so a watch whose due times were missed while every worker
was down gets one update when a worker starts, not one per missed period.

A worker killed mid-update leaves its workflow ``PENDING``: DBOS runs it again when the worker
restarts with the same id, or another worker recovers it once the watch's update lease is
stale (:func:`recover_stale_watches`). The update writes everything in one transaction at its
end, so the killed attempt left nothing; the searches it had made are answered by the call
cache, so no source is asked twice. The recovered workflow has the same id, which is the
lease holder's name, so it takes its lease back at once; if the killed attempt had committed
already (the watch's next due time moved past this one), the workflow ends without a second
update.
"""

from __future__ import annotations

import asyncio
from datetime import datetime

from deepcritical.config import Settings
from deepcritical.jobs.engine import APP_VERSION
from deepcritical.logs import get_logger
from deepcritical.orchestrators.watch_update import WatchBusyError, run_watch_update
from deepcritical.state.run_store import RunStore
from deepcritical.state.watch_store import LEASE_STALE_SECONDS, WatchStore

__all__ = [
    "WATCH_POLL_SECONDS",
    "WATCH_QUEUE",
    "WATCH_WORKFLOW",
    "enqueue_due",
    "execute_watch_update",
    "recover_stale_watches",
    "update_workflow_id",
]

log = get_logger(__name__)

WATCH_QUEUE = "deepcritical-watches"
WATCH_WORKFLOW = "deepcritical.watch_update"
WATCH_POLL_SECONDS = 1.0
"""How often a worker looks for due watches."""
BUSY_WAIT_SECONDS = 5.0
"""How long an update waits before trying again a watch another process is updating."""


def update_workflow_id(watch_id: str, due: datetime) -> str:
    """The workflow id of ``watch_id``'s update due at ``due``: ``watch-<id>-<ms>``."""
    return f"watch-{watch_id}-{int(due.timestamp() * 1000)}"


def enqueue_due(store: RunStore) -> list[str]:
    """Enqueue an update workflow for every due watch (idempotent per watch and due time);
    the workflow ids. Needs a launched DBOS.

    Raises:
        Exception: the run or job database cannot be reached.
    """
    from dbos import DBOS

    ids: list[str] = []
    for watch_id, due in WatchStore(store).due():
        workflow_id = update_workflow_id(watch_id, due)
        DBOS.enqueue_workflow_with_options(
            {
                "queue_name": WATCH_QUEUE,
                "workflow_name": WATCH_WORKFLOW,
                "workflow_id": workflow_id,
                "app_version": APP_VERSION,
            },
            watch_id,
            due.isoformat(),
        )
        ids.append(workflow_id)
    return ids


async def execute_watch_update(
    watch_id: str, due: str, workflow_id: str, settings: Settings
) -> str:
    """Run the scheduled update ``workflow_id`` of watch ``watch_id`` due at ``due`` (ISO
    8601); its outcome, or why none was made: ``"missing"`` (the watch was removed),
    ``"paused"``, ``"done"`` (an update already covered this due time).

    Raises:
        Exception: what the update raised (recorded as a ``failed`` update; not retried: the
            next due time retries).
    """
    due_at = datetime.fromisoformat(due)
    store = await asyncio.to_thread(RunStore.open, settings)
    try:
        watches = WatchStore(store)
        while True:
            watch = await asyncio.to_thread(watches.job_watch, watch_id)
            if watch is None:
                return "missing"
            if watch.paused:
                return "paused"
            if watch.next_due_at is None or watch.next_due_at > due_at:
                return "done"
            try:
                update = await run_watch_update(
                    watch, settings, holder=workflow_id, trigger="schedule"
                )
            except WatchBusyError:
                log.warning("watch being updated by another process; waiting", watch=watch_id)
                await asyncio.sleep(BUSY_WAIT_SECONDS)
                continue
            return update.outcome
    finally:
        store.close()


def recover_stale_watches(store: RunStore, alive: str) -> list[str]:
    """Recover the update workflows whose lease went stale (their worker died): DBOS
    re-enqueues the pending workflows of those workers; the workers recovered."""
    from dbos import DBOS

    holders = WatchStore(store).stale_leases(LEASE_STALE_SECONDS)
    if not holders:
        return []
    found = DBOS.list_workflows(workflow_ids=holders, status="PENDING", load_input=False)
    dead = sorted({w.executor_id for w in found if w.executor_id and w.executor_id != alive})
    if dead:
        log.warning("recovering the watch updates of dead workers", workers=dead)
        DBOS._recover_pending_workflows(dead)
    return dead
