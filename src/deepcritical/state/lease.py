"""The resume lease: at most one process continues a run at a time.

A running run shows it is alive by its heartbeat, the ``updated_at`` of its row: the recorder
writes it at every checkpoint and :class:`~deepcritical.state.lifecycle.PersistentRun` touches
it every :data:`~deepcritical.state.run_store.HEARTBEAT_SECONDS` (10 s). :func:`claim_run` takes a
run over for a resume: a ``pending`` or ``in_progress`` run whose heartbeat is younger than
:data:`~deepcritical.state.run_store.STALE_AFTER_SECONDS` (60 s, six missed beats) is still running
somewhere and is refused with :class:`~deepcritical.state.errors.RunInProgressError`; an older
one (its process died) and a ``failed``, ``cancelled`` or ``time_budget`` run are taken over.

The take-over is one conditional ``UPDATE ... WHERE status = <seen> AND attempts = <seen>``
(and, for a run that looked alive, ``AND updated_at < <now - stale_after>``), so of two
processes that resume the same run at once exactly one wins: on PostgreSQL the loser's
``UPDATE`` waits for the winner's row lock and then matches no row; on SQLite the
``BEGIN IMMEDIATE`` transactions run one after the other and the loser sees the winner's fresh
heartbeat. Heartbeat ages are computed from the clocks of the processes that write them
(``utc_now``), so the hosts of a shared PostgreSQL database need synchronised clocks.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, select, update
from sqlalchemy.orm import Session

from deepcritical.models import utc_now
from deepcritical.state.errors import RunInProgressError, run_not_found, run_not_resumable
from deepcritical.state.run_store import (
    AWAITING_REVIEW,
    FINISHED_STATUSES,
    STALE_AFTER_SECONDS,
    RunStore,
)
from deepcritical.state.schema import RunRow, aware

__all__ = [
    "LIVE_STATUSES",
    "abandon_runs",
    "claim_run",
    "dead_workers",
    "release_run",
    "touch_waiting",
]

LIVE_STATUSES = frozenset({"pending", "in_progress"})
"""Statuses of a run that may have a process working on it (decided by its heartbeat)."""


def claim_run(runs: RunStore, run_id: str, *, stale_after: float = STALE_AFTER_SECONDS) -> int:
    """Take run ``run_id`` (its full id) over for a resume, atomically (see the module
    docstring): its row becomes ``in_progress`` with a fresh heartbeat, no error and no finish
    time, and one more attempt.

    Args:
        runs: the run database.
        run_id: the run's full id (32 hex characters).
        stale_after: seconds without a heartbeat after which a ``pending`` or ``in_progress``
            run counts as dead and may be taken over.

    Returns:
        The run's attempt number now (1 + the number of resumes; a ``queued`` job's first
        start is attempt 1).

    Raises:
        RunNotFoundError: no run with this id.
        RunNotResumableError: the run already delivered its final report (``completed``,
            ``max_iterations``).
        RunInProgressError: the run's heartbeat is younger than ``stale_after`` seconds, or
            another process took it over at the same moment.
        sqlalchemy.exc.SQLAlchemyError: the database failed (after the store's retries).
    """

    def work(session: Session) -> int:
        seen = session.execute(
            select(RunRow.status, RunRow.attempts, RunRow.updated_at).where(RunRow.id == run_id)
        ).one_or_none()
        if seen is None:
            raise run_not_found(run_id)
        status, attempts, updated = seen
        if status in FINISHED_STATUSES:
            raise run_not_resumable(run_id, status)
        now = utc_now()
        conditions = [RunRow.id == run_id, RunRow.status == status, RunRow.attempts == attempts]
        if status in LIVE_STATUSES:
            age = (now - aware(updated)).total_seconds()
            if age <= stale_after:
                raise RunInProgressError(run_id, age, stale_after)
            conditions.append(RunRow.updated_at < now - timedelta(seconds=stale_after))
        taken = cast(
            "CursorResult[Any]",
            session.execute(
                update(RunRow)
                .where(*conditions)
                .values(
                    status="in_progress",
                    updated_at=now,
                    # a queued job's first start is its first attempt, not a resume
                    attempts=RunRow.attempts + (0 if status == "queued" else 1),
                    error=None,
                    finished_at=None,
                )
                .execution_options(synchronize_session=False)
            ),
        )
        if taken.rowcount != 1:  # another resumer changed the row since we read it
            raise RunInProgressError(run_id, 0.0, stale_after)
        return int(attempts or 1) + (0 if status == "queued" else 1)

    return runs.transact(work)


def release_run(runs: RunStore, run_id: str, error: str) -> None:
    """Give back a run claimed by :func:`claim_run` whose resume stopped before the run
    restarted (e.g. its local corpus is gone): an ``in_progress`` row becomes ``failed`` with
    ``error``, so the next resume need not wait for its heartbeat to go stale. A row in any
    other status is left alone.

    Raises:
        sqlalchemy.exc.SQLAlchemyError: the database failed (after the store's retries).
    """

    def work(session: Session) -> None:
        now = utc_now()
        session.execute(
            update(RunRow)
            .where(RunRow.id == run_id, RunRow.status == "in_progress")
            .values(status="failed", error=error, updated_at=now, finished_at=now)
            .execution_options(synchronize_session=False)
        )

    runs.transact(work)


def abandon_runs(runs: RunStore, worker: str) -> list[str]:
    """Give up the heartbeats of the jobs that ``worker`` was running when it died, as the
    worker with the same id starts again (before it takes any job): every ``pending`` or
    ``in_progress`` row whose ``worker`` is ``worker`` keeps its status (followers keep
    waiting) but its heartbeat is set a day back, so :func:`claim_run` lets whichever worker
    recovers the job take it over at once instead of waiting for it to go stale. Only a
    worker that runs nothing yet may call it, and worker ids must be unique among live
    workers. The ids of the runs given up.

    Raises:
        sqlalchemy.exc.SQLAlchemyError: the database failed (after the store's retries).
    """

    def work(session: Session) -> list[str]:
        found = list(
            session.scalars(
                select(RunRow.id).where(RunRow.worker == worker, RunRow.status.in_(LIVE_STATUSES))
            ).all()
        )
        if found:
            session.execute(
                update(RunRow)
                .where(RunRow.id.in_(found), RunRow.status.in_(LIVE_STATUSES))
                .values(updated_at=utc_now() - timedelta(days=1))
                .execution_options(synchronize_session=False)
            )
        return [str(r) for r in found]

    return runs.transact(work)


def touch_waiting(runs: RunStore, worker: str) -> int:
    """The heartbeat of the jobs ``worker`` holds while they wait for a review
    (``awaiting_review`` rows whose ``worker`` is ``worker``): a waiting run has no process
    of its own, so its worker touches it (every recovery pass) and
    :func:`dead_workers` tells a dead worker's waiting jobs from a live one's. The number of
    runs touched.

    Raises:
        sqlalchemy.exc.SQLAlchemyError: the database failed (after the store's retries).
    """

    def work(session: Session) -> int:
        touched = session.execute(
            update(RunRow)
            .where(RunRow.worker == worker, RunRow.status == AWAITING_REVIEW)
            .values(updated_at=utc_now())
            .execution_options(synchronize_session=False)
        )
        return int(getattr(touched, "rowcount", 0) or 0)

    return runs.transact(work)


def dead_workers(
    runs: RunStore, alive: str, *, stale_after: float = STALE_AFTER_SECONDS
) -> list[str]:
    """The workers (other than ``alive``) of jobs still ``pending``/``in_progress``, or
    waiting for a review (``awaiting_review``, touched by their worker:
    :func:`touch_waiting`), whose heartbeat is older than ``stale_after`` seconds: their
    worker died, and their jobs (and review waits) are to be recovered by a live one.

    Raises:
        sqlalchemy.exc.SQLAlchemyError: the database failed (after the store's retries).
    """

    def read(session: Session) -> list[str]:
        cutoff = utc_now() - timedelta(seconds=stale_after)
        found = session.scalars(
            select(RunRow.worker)
            .where(
                RunRow.worker.is_not(None),
                RunRow.worker != alive,
                RunRow.status.in_([*LIVE_STATUSES, AWAITING_REVIEW]),
                RunRow.updated_at < cutoff,
            )
            .distinct()
        ).all()
        return sorted(str(w) for w in found if w)

    return runs.transact(read)
