"""A job waiting for the researcher's review, durably, on DBOS's own messaging.

When a job's run stops at a review point (``awaiting_review``: ``Settings.review_plan``,
``review_evidence``), its queued workflow ``deepcritical.run_job`` ends, giving its worker
slot back, after starting the workflow :data:`REVIEW_WORKFLOW` (not queued) with the id
:func:`review_workflow_id` (``<run id>-review-<n>``, one per review). That workflow
(:func:`wait_for_review`) records its worker as the run's, then waits with
``DBOS.recv_async`` on :data:`REVIEW_TOPIC` for at most what is left of
``Settings.review_timeout_seconds`` (a durable wait: a recovered workflow waits only the
rest). The decision itself is in the run database (``deepcritical.state.reviews``); the
message only wakes the workflow:

- approved (or timed out with ``review_timeout_action = "continue"``, which the workflow
  records): the run is enqueued again as ``deepcritical.run_job`` with the id
  :func:`continuation_id` (``<run id>-reviewed-<n>``): the same run id, continued by any
  worker from its checkpoints (no search repeated);
- cancelled (by the user, or by the timeout with ``"cancel"``): nothing more is enqueued.

:func:`wake_review` is the sender (``DBOSClient.send``), called after a decision is stored
by ``deepcritical runs approve-plan|approve-evidence|cancel``. A message sent before the
waiting workflow exists is refused by DBOS; that is harmless, as the workflow reads the
decision from the run database before it waits.

A waiting run holds no worker slot and has no run heartbeat; its worker touches it instead
(:func:`~deepcritical.state.lease.touch_waiting`, every recovery pass), so a dead worker's
waiting workflows are recovered by another worker like its running jobs
(:func:`~deepcritical.state.lease.dead_workers`), or at once by a restart with its id.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from deepcritical.config import Settings
from deepcritical.jobs.engine import QUEUE, open_client
from deepcritical.logs import get_logger
from deepcritical.models import RunReview, utc_now
from deepcritical.state.reviews import run_reviews, settle_timeout
from deepcritical.state.run_store import AWAITING_REVIEW, RunStore

__all__ = [
    "REVIEW_TOPIC",
    "REVIEW_WORKFLOW",
    "continuation_id",
    "review_workflow_id",
    "start_review_wait",
    "wait_for_review",
    "wake_review",
]

log = get_logger(__name__)

REVIEW_WORKFLOW = "deepcritical.await_review"
"""The DBOS workflow that waits for one review of a job's run."""
REVIEW_TOPIC = "deepcritical.review"
"""The DBOS message topic that wakes a waiting review workflow."""
MIN_WAIT_SECONDS = 0.01
"""The wait of a review whose timeout has passed (the workflow always waits once)."""


def review_workflow_id(run_id: str, number: int) -> str:
    """The id of the workflow waiting for review ``number`` of run ``run_id``."""
    return f"{run_id}-review-{number}"


def continuation_id(run_id: str, number: int) -> str:
    """The id of the job that continues run ``run_id`` after its review ``number``."""
    return f"{run_id}-reviewed-{number}"


def _review(settings: Settings, run_id: str, number: int | None = None) -> RunReview | None:
    """Review ``number`` of the run (``None``: its last one), or ``None``."""
    store = RunStore.open(settings)
    try:
        reviews = run_reviews(store, run_id)
    finally:
        store.close()
    if number is None:
        return reviews[-1] if reviews else None
    return next((r for r in reviews if r.number == number), None)


async def start_review_wait(
    run_id: str, settings: Settings, workflow: Callable[[str, int], Coroutine[Any, Any, str]]
) -> int | None:
    """Start ``workflow`` (the registered :data:`REVIEW_WORKFLOW`) for the review run
    ``run_id`` stopped at (its last), with the id :func:`review_workflow_id` (starting it
    twice is one workflow); the review's number, ``None`` when the run has none. Called
    from the job's own workflow, whose child it is, when the job ends ``awaiting_review``.

    Raises:
        sqlalchemy.exc.SQLAlchemyError: the run database failed.
    """
    from dbos import DBOS, SetWorkflowID

    review = await asyncio.to_thread(_review, settings, run_id)
    if review is None:
        return None
    # the run's last review is the one it stopped at; one decided meanwhile (a quick
    # approval whose wake-up found no workflow yet) is read by the workflow at its start
    with SetWorkflowID(review_workflow_id(run_id, review.number)):
        await DBOS.start_workflow_async(workflow, run_id, review.number)
    return review.number


def _claim_waiting(settings: Settings, run_id: str, worker: str) -> None:
    """Record ``worker`` as the run's while it waits (the worker touches it from now on)."""
    store = RunStore.open(settings)
    try:
        record = store.job_record(run_id)
        if record is not None and record.status == AWAITING_REVIEW:
            store.set_worker(run_id, worker)
            store.touch(run_id)
    finally:
        store.close()


def _settle(settings: Settings, run_id: str, number: int) -> RunReview | None:
    """Review ``number`` after the wait: decided by its timeout if it still waits."""
    review = _review(settings, run_id, number)
    if review is not None and review.status == "waiting":
        store = RunStore.open(settings)
        try:
            settle_timeout(store, run_id, number, settings.review_timeout_action)
        finally:
            store.close()
        review = _review(settings, run_id, number)
    return review


async def wait_for_review(
    run_id: str,
    number: int,
    settings: Settings,
    worker: str,
    run_job: Callable[..., Coroutine[Any, Any, str]],
) -> str:
    """The body of :data:`REVIEW_WORKFLOW` (see the module docstring): wait for review
    ``number`` of run ``run_id`` and enqueue ``run_job`` (the registered job workflow) to
    continue the run once the review is approved or timed out; ``"continued"``,
    ``"cancelled"`` or ``"missing"``. The timeout is the run's own
    (``review_timeout_seconds`` and ``review_timeout_action`` of its stored settings, else
    ``settings``').

    Raises:
        sqlalchemy.exc.SQLAlchemyError: the run database failed (DBOS recovers the
            workflow when its process died; an error ends it).
    """
    from dbos import DBOS, SetWorkflowID

    await asyncio.to_thread(_claim_waiting, settings, run_id, worker)
    review = await asyncio.to_thread(_review, settings, run_id, number)
    if review is None:
        return "missing"
    timeouts = await asyncio.to_thread(_run_timeouts, settings, run_id)
    waited = (utc_now() - review.created_at).total_seconds()
    remaining = timeouts.review_timeout_seconds - waited if review.status == "waiting" else 0.0
    await DBOS.recv_async(REVIEW_TOPIC, timeout_seconds=max(remaining, MIN_WAIT_SECONDS))
    settled = await asyncio.to_thread(_settle, timeouts, run_id, number)
    if settled is None or settled.status not in {"approved", "timed_out"}:
        return "cancelled"
    with SetWorkflowID(continuation_id(run_id, number)):
        await DBOS.enqueue_workflow_async(QUEUE, run_job, run_id)
    log.info("review decided; the run goes on", run_id=run_id, review=number)
    return "continued"


def _run_timeouts(settings: Settings, run_id: str) -> Settings:
    """``settings`` with the run's own stored review timeout and action."""
    store = RunStore.open(settings)
    try:
        record = store.job_record(run_id)
    finally:
        store.close()
    stored = record.settings if record is not None else {}
    keys = ("review_timeout_seconds", "review_timeout_action")
    return settings.model_copy(update={k: stored[k] for k in keys if k in stored})


def wake_review(settings: Settings, run_id: str, number: int) -> bool:
    """Wake the workflow waiting for review ``number`` of run ``run_id`` (after its
    decision was stored); False when no such workflow exists yet (it reads the decision
    when it starts) or the job database cannot be reached (it then decides at its timeout).
    """
    try:
        client = open_client(settings)
    except Exception:  # noqa: BLE001 - the decision is stored; the wait's timeout reads it
        log.warning("could not reach the job database to wake the review", run_id=run_id)
        return False
    try:
        client.send(review_workflow_id(run_id, number), "decided", topic=REVIEW_TOPIC)
        return True
    except Exception:  # noqa: BLE001 - no such workflow yet: it reads the decision at start
        log.info("no workflow waits for this review yet", run_id=run_id, review=number)
        return False
    finally:
        client.destroy()
