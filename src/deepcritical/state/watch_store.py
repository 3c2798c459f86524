"""The watches of the run database (living reviews): :class:`WatchStore`.

A watch (``watches``) sits on a finished run whose report versions are the review's versions;
its updates are kept in ``watch_updates``. As for runs, every read takes the caller's
``owner`` and sees only that owner's watches: another owner's watch is "not found".

One update at a time per watch: :meth:`WatchStore.claim` takes the watch's lease with one
conditional ``UPDATE`` (free, held by the same holder (a workflow recovered after its worker
died has the same holder name), or stale: not renewed for :data:`LEASE_STALE_SECONDS`).
:meth:`WatchStore.commit_update` writes everything an update produced in one transaction
(the update, the new report version, the union of the evidence in the run's result, the
window's end, the next due time) and frees the lease, so an update killed midway leaves
nothing behind and is simply done again.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, func, or_, select, update
from sqlalchemy.orm import Session

from deepcritical.models import (
    Evidence,
    ReportVersion,
    RunResult,
    Watch,
    WatchUpdate,
    utc_now,
)
from deepcritical.state.errors import StateError, run_without_report
from deepcritical.state.report_versions import append_version, latest_version_number
from deepcritical.state.run_store import RunStore
from deepcritical.state.schema import RunRow, WatchRow, WatchUpdateRow, aware

__all__ = ["LEASE_STALE_SECONDS", "WatchNotFoundError", "WatchStore"]

LEASE_STALE_SECONDS = 120.0
"""An update lease not renewed for this long (seconds) belongs to a dead process."""
MAX_QUERIES = 8
"""The most searches an update repeats (the run's first queries)."""


class WatchNotFoundError(StateError, LookupError):
    """No watch with this id among the caller's watches."""


def _owned_by(owner: str | None) -> ColumnElement[bool]:
    return WatchRow.owner.is_(None) if owner is None else WatchRow.owner == owner


def _queries(result: RunResult) -> list[str]:
    """The searches an update repeats: the run's queries, each once, at most
    :data:`MAX_QUERIES`; the refined question when the run recorded none."""
    queries = list(dict.fromkeys(q.strip() for q in result.report.metadata.queries if q.strip()))
    if not queries and result.plan is not None:
        queries = [result.plan.refined_question]
    return queries[:MAX_QUERIES] or [result.report.research_question]


class WatchStore:
    """Watches in the run database of ``runs`` (shares its engine; see the module
    docstring)."""

    def __init__(self, runs: RunStore) -> None:
        self.runs = runs

    # --- making and reading -------------------------------------------------------------

    def create(
        self,
        run_id: str,
        *,
        owner: str | None = None,
        every_seconds: float | None = None,
        webhook_url: str | None = None,
    ) -> Watch:
        """A watch on ``owner``'s finished run ``run_id`` (a unique prefix works): its
        question, plan, public settings and queries copied; its window starts when the run's
        report was written; the first scheduled update due ``every_seconds`` after now.

        Raises:
            RunNotFoundError: no such run among ``owner``'s runs.
            RunWithoutReportError: the run has no report (failed, cancelled, unfinished).
            StateError: the run is watched already (one watch per run: its updates are the
                run's report versions).
        """
        record = self.runs.require_run(run_id, owner=owner)
        result = self.runs.result(record.id, owner=owner)
        if result is None:
            raise run_without_report(record.id, record.status, record.error, action="watch")
        watched = self.runs.transact(
            lambda s: s.scalar(select(WatchRow.id).where(WatchRow.run_id == record.id))
        )
        if watched is not None:
            raise StateError(
                f"run {record.id} is watched already (watch {watched})",
                cli_hint=f"see `deepcritical watch show {watched}`",
            )
        now = utc_now()
        watch_id = uuid.uuid4().hex
        row = WatchRow(
            id=watch_id,
            owner=owner,
            run_id=record.id,
            question=record.question,
            plan=result.plan.model_dump(mode="json") if result.plan else None,
            settings=dict(record.settings),
            queries=_queries(result),
            every_seconds=every_seconds,
            paused=False,
            webhook_url=webhook_url,
            created_at=now,
            checked_until=result.report.metadata.generated_at,
            next_due_at=now + timedelta(seconds=every_seconds) if every_seconds else None,
        )
        self.runs.transact(lambda session: session.add(row))
        return self.require(watch_id, owner=owner)

    def get(self, watch_id: str, *, owner: str | None = None) -> Watch | None:
        """``owner``'s watch ``watch_id`` (a unique prefix of 6+ characters works), or
        ``None``."""

        def read(session: Session) -> Watch | None:
            row = self._find(session, watch_id, owner)
            return None if row is None else self._watch(session, row)

        return self.runs.transact(read)

    def require(self, watch_id: str, *, owner: str | None = None) -> Watch:
        """:meth:`get` for a watch that must exist.

        Raises:
            WatchNotFoundError: no such watch among ``owner``'s watches.
        """
        found = self.get(watch_id, owner=owner)
        if found is None:
            raise WatchNotFoundError(
                f"no watch {watch_id!r}", cli_hint="see `deepcritical watch list`"
            )
        return found

    def job_watch(self, watch_id: str) -> Watch | None:
        """Watch ``watch_id`` (full id) whoever owns it: for the worker, never shown."""

        def read(session: Session) -> Watch | None:
            row = session.get(WatchRow, watch_id)
            return None if row is None else self._watch(session, row)

        return self.runs.transact(read)

    def list_watches(self, *, owner: str | None = None) -> list[Watch]:
        """``owner``'s watches, newest first."""

        def read(session: Session) -> list[Watch]:
            rows = session.scalars(
                select(WatchRow).where(_owned_by(owner)).order_by(WatchRow.created_at.desc())
            ).all()
            return [self._watch(session, row) for row in rows]

        return self.runs.transact(read)

    def updates(self, watch_id: str, *, owner: str | None = None) -> list[WatchUpdate]:
        """The updates of ``owner``'s watch, oldest first.

        Raises:
            WatchNotFoundError: no such watch among ``owner``'s watches.
        """
        watch = self.require(watch_id, owner=owner)

        def read(session: Session) -> list[WatchUpdate]:
            rows = session.scalars(
                select(WatchUpdateRow)
                .where(WatchUpdateRow.watch_id == watch.id)
                .order_by(WatchUpdateRow.number)
            ).all()
            return [_update(row) for row in rows]

        return self.runs.transact(read)

    def _find(self, session: Session, watch_id: str, owner: str | None) -> WatchRow | None:
        row = session.get(WatchRow, watch_id)
        if row is not None and row.owner != owner:
            row = None
        if row is None and len(watch_id) >= 6:
            rows = session.scalars(
                select(WatchRow)
                .where(WatchRow.id.startswith(watch_id, autoescape=True), _owned_by(owner))
                .limit(2)
            ).all()
            row = rows[0] if len(rows) == 1 else None
        return row

    def _watch(self, session: Session, row: WatchRow) -> Watch:
        last = session.scalars(
            select(WatchUpdateRow)
            .where(WatchUpdateRow.watch_id == row.id)
            .order_by(WatchUpdateRow.number.desc())
            .limit(1)
        ).first()
        unseen = session.scalar(
            select(func.count())
            .select_from(WatchUpdateRow)
            .where(
                WatchUpdateRow.watch_id == row.id,
                WatchUpdateRow.seen.is_(False),
                WatchUpdateRow.outcome == "new_version",
            )
        )
        return Watch(
            id=row.id,
            owner=row.owner,
            question=row.question,
            run_id=row.run_id,
            plan=row.plan,
            settings=dict(row.settings or {}),
            queries=[str(q) for q in row.queries or []],
            every_seconds=row.every_seconds,
            paused=bool(row.paused),
            webhook_url=row.webhook_url,
            created_at=aware(row.created_at),
            checked_until=aware(row.checked_until),
            next_due_at=aware(row.next_due_at) if row.next_due_at else None,
            last_update_at=aware(row.last_update_at) if row.last_update_at else None,
            last_summary=str(last.payload.get("summary", "")) if last is not None else "",
            version=latest_version_number(session, row.run_id),
            unseen=int(unseen or 0),
        )

    # --- changing -----------------------------------------------------------------------

    def set_paused(self, watch_id: str, paused: bool, *, owner: str | None = None) -> Watch:
        """Pause (no scheduled update) or resume ``owner``'s watch; resuming makes the next
        update due one period from now.

        Raises:
            WatchNotFoundError: no such watch among ``owner``'s watches.
        """
        watch = self.require(watch_id, owner=owner)

        def work(session: Session) -> None:
            row = session.get(WatchRow, watch.id)
            assert row is not None
            row.paused = paused
            if not paused and row.every_seconds:
                row.next_due_at = utc_now() + timedelta(seconds=row.every_seconds)

        self.runs.transact(work)
        return self.require(watch.id, owner=owner)

    def set_webhook(self, watch_id: str, url: str | None, *, owner: str | None = None) -> None:
        """Set (``None``: remove) the webhook of ``owner``'s watch; the caller checked
        ``url``.

        Raises:
            WatchNotFoundError: no such watch among ``owner``'s watches.
        """
        watch = self.require(watch_id, owner=owner)
        self.runs.transact(
            lambda s: s.execute(
                update(WatchRow).where(WatchRow.id == watch.id).values(webhook_url=url)
            )
        )

    def remove(self, watch_id: str, *, owner: str | None = None) -> str:
        """Delete ``owner``'s watch and its updates (the run and its versions stay); its id.

        Raises:
            WatchNotFoundError: no such watch among ``owner``'s watches.
        """
        watch = self.require(watch_id, owner=owner)

        def work(session: Session) -> None:
            session.query(WatchUpdateRow).filter(WatchUpdateRow.watch_id == watch.id).delete()
            session.query(WatchRow).filter(WatchRow.id == watch.id).delete()

        self.runs.transact(work)
        return watch.id

    def mark_seen(self, watch_id: str, *, owner: str | None = None) -> int:
        """Mark every update of ``owner``'s watch seen (its badge clears); how many were not.

        Raises:
            WatchNotFoundError: no such watch among ``owner``'s watches.
        """
        watch = self.require(watch_id, owner=owner)

        def work(session: Session) -> int:
            done = session.execute(
                update(WatchUpdateRow)
                .where(WatchUpdateRow.watch_id == watch.id, WatchUpdateRow.seen.is_(False))
                .values(seen=True)
            )
            return int(getattr(done, "rowcount", 0) or 0)

        return self.runs.transact(work)

    # --- scheduling and leases ----------------------------------------------------------

    def due(self, now: datetime | None = None) -> list[tuple[str, datetime]]:
        """Every owner's watches due for a scheduled update at ``now`` (not paused, due time
        passed), as ``(watch id, due time)``, earliest first."""
        moment = now or utc_now()

        def read(session: Session) -> list[tuple[str, datetime]]:
            rows = session.execute(
                select(WatchRow.id, WatchRow.next_due_at)
                .where(
                    WatchRow.paused.is_(False),
                    WatchRow.next_due_at.is_not(None),
                    WatchRow.next_due_at <= moment,
                )
                .order_by(WatchRow.next_due_at)
            ).all()
            return [(str(i), aware(d)) for i, d in rows if d is not None]

        return self.runs.transact(read)

    def claim(self, watch_id: str, holder: str) -> datetime | None:
        """Take the update lease of watch ``watch_id`` for ``holder`` when it is free, stale
        or already ``holder``'s (see the module docstring); the end of the update's window,
        or ``None`` when another holder has the lease.

        The window's end is the moment the lease was taken afresh, kept while the same holder
        takes it again: a workflow recovered after its worker died searches the same window,
        with the same cache keys, as its killed attempt did.
        """
        now = utc_now()
        stale = now - timedelta(seconds=LEASE_STALE_SECONDS)

        def work(session: Session) -> datetime | None:
            session.execute(
                update(WatchRow)
                .where(
                    WatchRow.id == watch_id,
                    or_(
                        WatchRow.lease_owner.is_(None),
                        and_(
                            WatchRow.lease_owner != holder,
                            WatchRow.lease_at.is_not(None),
                            WatchRow.lease_at < stale,
                        ),
                    ),
                )
                .values(lease_owner=holder, lease_at=now, lease_until=now)
            )
            session.execute(
                update(WatchRow)
                .where(WatchRow.id == watch_id, WatchRow.lease_owner == holder)
                .values(lease_at=now)
            )
            row = session.execute(
                select(WatchRow.lease_owner, WatchRow.lease_until).where(WatchRow.id == watch_id)
            ).first()
            if row is None or row[0] != holder:
                return None
            return aware(row[1]) if row[1] is not None else now

        return self.runs.transact(work)

    def stale_leases(self, stale_after: float = LEASE_STALE_SECONDS) -> list[str]:
        """The holders of update leases not renewed for ``stale_after`` seconds (their
        process died)."""
        limit = utc_now() - timedelta(seconds=stale_after)

        def read(session: Session) -> list[str]:
            rows = session.scalars(
                select(WatchRow.lease_owner).where(
                    WatchRow.lease_owner.is_not(None), WatchRow.lease_at < limit
                )
            ).all()
            return [str(r) for r in rows if r]

        return self.runs.transact(read)

    def renew(self, watch_id: str, holder: str) -> None:
        """Renew ``holder``'s lease (a heartbeat while the update runs)."""
        self.runs.transact(
            lambda s: s.execute(
                update(WatchRow)
                .where(WatchRow.id == watch_id, WatchRow.lease_owner == holder)
                .values(lease_at=utc_now())
            )
        )

    def release(self, watch_id: str, holder: str) -> None:
        """Free ``holder``'s lease without recording anything (an update that failed)."""
        self.runs.transact(
            lambda s: s.execute(
                update(WatchRow)
                .where(WatchRow.id == watch_id, WatchRow.lease_owner == holder)
                .values(lease_owner=None, lease_at=None, lease_until=None)
            )
        )

    def commit_update(
        self,
        watch_id: str,
        holder: str,
        update_: WatchUpdate,
        *,
        version: ReportVersion | None = None,
        evidence: Sequence[Evidence] | None = None,
    ) -> WatchUpdate:
        """Record ``update_`` of watch ``watch_id`` in one transaction (see the module
        docstring): its number set to the next; ``version`` appended to the run's report
        versions; ``evidence`` (the union of known and new records) stored as the run
        result's evidence; unless it failed, the window's end (``update_.change.until``) kept
        as ``checked_until``; ``next_due_at`` one period after it ended; the lease freed.

        Raises:
            StateError: ``holder`` no longer holds the lease (another process took it over
                after this one stalled), or ``version`` is not the run's next version.
        """

        def work(session: Session) -> WatchUpdate:
            row = session.get(WatchRow, watch_id)
            if row is None or row.lease_owner != holder:
                raise StateError(f"the update of watch {watch_id} lost its lease; not recorded")
            last = session.scalar(
                select(func.max(WatchUpdateRow.number)).where(WatchUpdateRow.watch_id == watch_id)
            )
            number = int(last or 0) + 1
            kept = update_.model_copy(update={"number": number})
            if version is not None:
                append_version(session, row.run_id, version)
            if evidence is not None:
                _store_evidence(session, row.run_id, evidence)
            session.add(
                WatchUpdateRow(
                    watch_id=watch_id,
                    number=number,
                    outcome=kept.outcome,
                    version=kept.version,
                    seen=False,
                    payload=kept.model_dump(mode="json"),
                    created_at=kept.finished_at,
                )
            )
            if kept.outcome != "failed" and kept.change is not None:
                row.checked_until = kept.change.until
            row.last_update_at = kept.finished_at
            if row.every_seconds:
                row.next_due_at = kept.finished_at + timedelta(seconds=row.every_seconds)
            row.lease_owner = None
            row.lease_at = None
            row.lease_until = None
            return kept

        return self.runs.transact(work)


def _store_evidence(session: Session, run_id: str, evidence: Sequence[Evidence]) -> None:
    """Replace the evidence of run ``run_id``'s stored result with ``evidence``."""
    run = session.get(RunRow, run_id)
    if run is None or run.result is None:
        raise StateError(f"run {run_id} has no stored result to add evidence to")
    data: dict[str, Any] = dict(run.result)
    data["evidence"] = [e.model_dump(mode="json") for e in evidence]
    run.result = data


def _update(row: WatchUpdateRow) -> WatchUpdate:
    return WatchUpdate.model_validate({**row.payload, "seen": bool(row.seen)})
