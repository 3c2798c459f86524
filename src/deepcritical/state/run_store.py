"""The run repository: :class:`RunStore` (open, create, list, show, export runs) and
:class:`RunRecord`, the read model of one run that the CLI and the web UI show.

Every write is one transaction (:meth:`RunStore.transact`), retried with backoff when the
database is momentarily locked or the connection drops (tenacity). A run killed mid-way stays
``in_progress`` in the database; :attr:`RunRecord.interrupted` says so when no process has
updated it for :data:`STALE_AFTER_SECONDS` (running runs touch ``updated_at`` every
:data:`HEARTBEAT_SECONDS`).

Runs belong to an owner (``RunRow.owner``: the web app's signed-in user, such as
``user:alice`` or ``hf:alice``; ``None`` is the local user of the CLI and the Python API).
Every read takes the caller's ``owner`` and sees only that owner's runs: a run of another
owner is "not found", exactly like a run that does not exist, never revealed.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, Literal, TypeVar

from pydantic import BaseModel
from sqlalchemy import ColumnElement, Engine, func, select, update
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker
from tenacity import (
    retry,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

from deepcritical.config import Settings
from deepcritical.events import ResearchEvent
from deepcritical.models import FollowUp, ReportVersion, ReportVersionInfo, RunResult, utc_now
from deepcritical.state.db import (
    create_db_engine,
    create_memory_engine,
    database_url,
    migrate,
)
from deepcritical.state.errors import run_not_found, version_not_found
from deepcritical.state.event_log import LoggedEvent, append_event, read_events
from deepcritical.state.follow_up_log import append_follow_up, read_follow_ups
from deepcritical.state.report_versions import (
    append_version,
    latest_version_number,
    read_version,
    read_versions,
)
from deepcritical.state.saved import sources_by_question
from deepcritical.state.schema import ReviewRow, RunRow, SourceQuestionRow, SourceRow, aware
from deepcritical.state.syllabus import Syllabus

__all__ = [
    "AWAITING_REVIEW",
    "FINISHED_STATUSES",
    "HEARTBEAT_SECONDS",
    "STALE_AFTER_SECONDS",
    "RunRecord",
    "RunStatus",
    "RunStore",
]

T = TypeVar("T")
RunStatus = Literal[
    "queued",
    "pending",
    "in_progress",
    "completed",
    "failed",
    "cancelled",
    "max_iterations",
    "time_budget",
    "awaiting_review",
]
AWAITING_REVIEW = "awaiting_review"
"""Status of a run stopped at a review point (``Settings.review_plan`` / ``review_evidence``):
not finished, resumable, held by no process; its ``stage`` is ``review_plan`` or
``review_evidence``."""
FINISHED_STATUSES = frozenset({"completed", "max_iterations"})
"""Statuses of runs that delivered their final report (they cannot be resumed). A run that
stopped on its time budget (``time_budget``) has a report too, but may be resumed."""
HEARTBEAT_SECONDS = 10.0
"""How often a running run touches its row's ``updated_at`` (seconds)."""
STALE_AFTER_SECONDS = 60.0
"""An ``in_progress`` run not updated for this long (seconds) is shown as interrupted."""


class RunRecord(BaseModel):
    """One run as stored (a read-only snapshot).

    ``owner`` is the user the run belongs to (``None``: the local user); ``progress`` is 0..1;
    ``stage`` the step the run was in (``planning``, ``searching``...);
    ``interrupted`` is true for an ``in_progress`` run nobody has updated for
    :data:`STALE_AFTER_SECONDS` (its process died: resume it); ``sources`` the number of saved
    sources; ``attempts`` 1 + the number of resumes.
    """

    id: str
    owner: str | None = None
    question: str
    context: str | None = None
    status: str
    progress: float
    stage: str | None = None
    refined_question: str | None = None
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None = None
    error: str | None = None
    report_markdown: str | None = None
    interrupted: bool = False
    sources: int = 0
    attempts: int = 1
    checklist: list[dict[str, Any]] = []
    iterations: list[dict[str, Any]] = []
    metrics: dict[str, Any] = {}
    settings: dict[str, Any] = {}
    syllabus: dict[str, Any] | None = None
    syllabus_fixed: bool = False
    preferences: dict[str, Any] | None = None
    worker: str | None = None
    cancel_requested: bool = False

    @property
    def resumable(self) -> bool:
        """True unless the run already delivered its final report (a run stopped by its time
        budget is resumable); a run whose heartbeat is live is refused when resumed all the
        same (:func:`~deepcritical.state.lease.claim_run`)."""
        return self.status not in FINISHED_STATUSES


def _owned_by(owner: str | None) -> ColumnElement[bool]:
    """The SQL condition "the run belongs to ``owner``" (``owner IS NULL`` for the local
    user)."""
    return RunRow.owner.is_(None) if owner is None else RunRow.owner == owner


def _retrying(fn: Callable[[], T]) -> T:
    call = retry(
        retry=retry_if_exception_type(OperationalError),
        stop=stop_after_attempt(4),
        wait=wait_exponential(multiplier=0.2, max=3.0),
        reraise=True,
    )(fn)
    return call()


class RunStore:
    """Repository of runs in one database (SQLite file or PostgreSQL).

    Open it with :meth:`open` (from settings) or :meth:`open_url`; both create or migrate the
    schema. Safe to share between threads (one engine, a session per transaction). Close it
    with :meth:`close` (disposes the engine's connections).
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    @classmethod
    def open(cls, settings: Settings) -> RunStore:
        """The store at ``settings.database_url`` (default ``<data_dir>/deepcritical.db``).

        Raises:
            sqlalchemy.exc.SQLAlchemyError: the database cannot be reached or migrated.
            OSError: the SQLite directory cannot be created.
        """
        return cls.open_url(database_url(settings))

    @classmethod
    def open_url(cls, url: str) -> RunStore:
        """The store at SQLAlchemy ``url``, migrated to the newest schema."""
        engine = create_db_engine(url)
        try:
            _retrying(lambda: migrate(engine))
        except Exception:
            engine.dispose()
            raise
        return cls(engine)

    @classmethod
    def in_memory(cls) -> RunStore:
        """A private store in memory (:func:`~deepcritical.state.db.create_memory_engine`):
        the source collection of a run that is not recorded; gone when closed. Its
        transactions must not overlap (one shared connection)."""
        return cls(create_memory_engine())

    def close(self) -> None:
        """Release every connection."""
        self.engine.dispose()

    def transact(self, work: Callable[[Session], T]) -> T:
        """Run ``work(session)`` in one transaction and commit; retried (whole) up to 4 times
        when the database is locked or unreachable; rolled back when ``work`` raises."""

        def attempt() -> T:
            with self._sessions.begin() as session:
                return work(session)

        return _retrying(attempt)

    # --- runs ---------------------------------------------------------------------------

    def create_run(
        self,
        question: str,
        settings: dict[str, Any],
        *,
        context: str | None = None,
        syllabus: Syllabus | None = None,
        preferences: dict[str, Any] | None = None,
        owner: str | None = None,
        status: Literal["pending", "queued"] = "pending",
    ) -> str:
        """Insert a ``pending`` run (``queued``: a job waiting for a worker) and return its id
        (32 hex characters).

        ``settings`` must already be public (:meth:`Settings.public_dict`: no secrets);
        ``preferences`` are the user's report preferences
        (:class:`~deepcritical.models.ReportPreferences` as JSON), kept for a resume;
        ``owner`` is the user the run belongs to (at most 200 characters; ``None``: the
        local user).
        """
        run_id = uuid.uuid4().hex

        def insert(session: Session) -> None:
            now = utc_now()
            session.add(
                RunRow(
                    id=run_id,
                    owner=owner,
                    question=question,
                    context=context,
                    settings=settings,
                    syllabus=syllabus.model_dump(mode="json") if syllabus else None,
                    syllabus_fixed=syllabus is not None,
                    preferences=preferences,
                    status=status,
                    progress=0.0,
                    stage=None,
                    checklist=[],
                    iterations=[],
                    metrics={},
                    attempts=1,
                    created_at=now,
                    updated_at=now,
                )
            )

        self.transact(insert)
        return run_id

    def require_row(self, session: Session, run_id: str) -> RunRow:
        """The run's row in ``session``.

        Raises:
            RunNotFoundError: no run with this id.
        """
        row = session.get(RunRow, run_id)
        if row is None:
            raise run_not_found(run_id)
        return row

    def touch(self, run_id: str) -> None:
        """Set the run's ``updated_at`` to now (heartbeat of a running run)."""

        def work(session: Session) -> None:
            row = session.get(RunRow, run_id)
            if row is not None:
                row.updated_at = utc_now()

        self.transact(work)

    def require_run(self, run_id: str, *, owner: str | None = None) -> RunRecord:
        """:meth:`get_run`, for a run that must exist.

        Raises:
            RunNotFoundError: no run with this id, or it belongs to another owner.
        """
        record = self.get_run(run_id, owner=owner)
        if record is None:
            raise run_not_found(run_id)
        return record

    def get_run(self, run_id: str, *, owner: str | None = None) -> RunRecord | None:
        """The run with ``run_id`` (a unique prefix of at least 6 characters works too) that
        belongs to ``owner`` (``None``: the local user), or ``None``; a prefix is matched
        among ``owner``'s runs only, so another owner's run is never found or counted."""

        def read(session: Session) -> RunRecord | None:
            row = session.get(RunRow, run_id)
            if row is not None and row.owner != owner:
                row = None
            if row is None and len(run_id) >= 6:
                rows = session.scalars(
                    select(RunRow)
                    .where(RunRow.id.startswith(run_id, autoescape=True), _owned_by(owner))
                    .limit(2)
                ).all()
                row = rows[0] if len(rows) == 1 else None
            return None if row is None else self._record(session, row, full=True)

        return self.transact(read)

    def list_runs(self, limit: int = 50, *, owner: str | None = None) -> list[RunRecord]:
        """The ``limit`` newest runs of ``owner`` (``None``: the local user), newest first
        (without checklist, iterations, settings)."""

        def read(session: Session) -> list[RunRecord]:
            rows = session.scalars(
                select(RunRow)
                .where(_owned_by(owner))
                .order_by(RunRow.created_at.desc(), RunRow.id)
                .limit(limit)
            ).all()
            counted = session.execute(
                select(SourceRow.run_id, func.count())
                .where(SourceRow.run_id.in_([r.id for r in rows]))
                .group_by(SourceRow.run_id)
            ).all()
            counts = {str(run): int(n) for run, n in counted}
            return [self._record(session, r, full=False, sources=counts.get(r.id, 0)) for r in rows]

        return self.transact(read)

    def _record(
        self, session: Session, row: RunRow, *, full: bool, sources: int | None = None
    ) -> RunRecord:
        if sources is None:
            sources = session.scalar(
                select(func.count()).select_from(SourceRow).where(SourceRow.run_id == row.id)
            )
        updated = aware(row.updated_at)
        stale = utc_now() - updated > timedelta(seconds=STALE_AFTER_SECONDS)
        return RunRecord(
            id=row.id,
            owner=row.owner,
            question=row.question,
            context=row.context,
            status=row.status,
            progress=row.progress,
            stage=row.stage,
            refined_question=row.refined_question,
            created_at=aware(row.created_at),
            updated_at=updated,
            finished_at=aware(row.finished_at) if row.finished_at else None,
            error=row.error,
            report_markdown=row.report_markdown if full else None,
            interrupted=row.status in {"in_progress", "pending"} and stale,
            sources=sources or 0,
            attempts=row.attempts,
            checklist=list(row.checklist or []) if full else [],
            iterations=list(row.iterations or []) if full else [],
            metrics=dict(row.metrics or {}),
            settings=dict(row.settings or {}) if full else {},
            syllabus=row.syllabus,
            syllabus_fixed=row.syllabus_fixed,
            preferences=row.preferences,
            worker=row.worker,
            cancel_requested=bool(row.cancel_requested),
        )

    # --- jobs ---------------------------------------------------------------------------

    def job_record(self, run_id: str) -> RunRecord | None:
        """The run ``run_id`` (full id) whoever owns it, or ``None``: for the job worker,
        which runs every owner's jobs (never shown to a user)."""

        def read(session: Session) -> RunRecord | None:
            row = session.get(RunRow, run_id)
            return None if row is None else self._record(session, row, full=True)

        return self.transact(read)

    def set_worker(self, run_id: str, worker: str) -> None:
        """Record that ``worker`` runs the job ``run_id`` now."""

        def work(session: Session) -> None:
            self.require_row(session, run_id).worker = worker

        self.transact(work)

    def request_cancel(self, run_id: str, *, owner: str | None = None) -> str:
        """Ask the worker running ``owner``'s run ``run_id`` to stop it: sets
        ``cancel_requested``; a job still ``queued`` and a run waiting for a review
        (``awaiting_review``, whose review is then ``cancelled`` too) become ``cancelled`` at
        once. Returns the run's status after the request.

        Raises:
            RunNotFoundError: no run with this id, or it belongs to another owner.
        """
        record = self.require_run(run_id, owner=owner)

        def work(session: Session) -> str:
            row = self.require_row(session, record.id)
            row.cancel_requested = True
            if row.status in {"queued", AWAITING_REVIEW}:
                now = utc_now()
                if row.status == AWAITING_REVIEW:
                    _cancel_waiting_reviews(session, row.id, now)
                    row.error = "cancelled while it waited for a review"
                else:
                    row.error = "cancelled before a worker started it"
                row.status = "cancelled"
                row.updated_at = now
                row.finished_at = now
                append_event(session, row.id, ResearchEvent(type="error", message=row.error))
            return row.status

        return self.transact(work)

    def end_cancelled(self, run_id: str, note: str) -> None:
        """Record that a worker stopped the cancelled job ``run_id``: status ``cancelled``
        (unless it delivered its report first) and, in the same transaction, a last ``error``
        event ``note`` in its log, so a follower knows it ended."""

        def work(session: Session) -> None:
            row = self.require_row(session, run_id)
            if row.status not in FINISHED_STATUSES:
                now = utc_now()
                row.status = "cancelled"
                row.error = row.error or note
                row.updated_at = now
                row.finished_at = row.finished_at or now
            append_event(session, run_id, ResearchEvent(type="error", message=note))

        self.transact(work)

    def cancel_requested(self, run_id: str) -> bool:
        """Whether ``runs cancel`` asked to stop run ``run_id``."""

        def read(session: Session) -> bool:
            value = session.scalar(select(RunRow.cancel_requested).where(RunRow.id == run_id))
            return bool(value)

        return self.transact(read)

    def events(self, run_id: str, after_seq: int = 0, limit: int = 1000) -> list[LoggedEvent]:
        """The events of run ``run_id``'s log numbered above ``after_seq``, in order (at most
        ``limit``): see :mod:`~deepcritical.state.event_log`."""
        return self.transact(lambda session: read_events(session, run_id, after_seq, limit))

    def append_event(self, run_id: str, event: ResearchEvent) -> int:
        """Append ``event`` to run ``run_id``'s log outside a checkpoint (the note a worker
        adds when it stopped a cancelled run); its number."""
        return self.transact(lambda session: append_event(session, run_id, event))

    def export_run(self, run_id: str, *, owner: str | None = None) -> dict[str, Any]:
        """Everything stored about ``owner``'s run (``None``: the local user), JSON-able:
        ``{"run": {...}, "checklist": [...], "iterations": [...], "sources_by_question":
        {key: [source, ...]}, "screening": {...}, "report": {...} | None,
        "report_markdown": str | None}``. Sources assigned to no question are under
        ``"_unassigned"``; every source carries its screening status and reason
        (:class:`~deepcritical.state.saved.SavedSource`). ``"screening"`` counts the sources
        per status and lists the excluded (off-topic) ones: ``{"counts": {status: n},
        "excluded": [{"citation_id", "title", "url", "relevance", "reason"}]}``.

        Raises:
            RunNotFoundError: no run with this id, or it belongs to another owner.
        """
        record = self.require_run(run_id, owner=owner)

        def read(session: Session) -> tuple[dict[str, Any] | None, dict[str, Any]]:
            row = self.require_row(session, record.id)
            grouped = sources_by_question(session, record.id)
            return row.result, {
                k: [s.model_dump(mode="json") for s in v] for k, v in grouped.items()
            }

        result, grouped = self.transact(read)
        run = record.model_dump(mode="json", exclude={"checklist", "iterations", "report_markdown"})
        return {
            "run": run,
            "checklist": record.checklist,
            "iterations": record.iterations,
            "sources_by_question": grouped,
            "screening": _screening_summary(grouped),
            "report": (result or {}).get("report"),
            "report_markdown": record.report_markdown,
        }

    def result(self, run_id: str, *, owner: str | None = None) -> RunResult | None:
        """The stored :class:`~deepcritical.models.RunResult` (report, plan, assessments and
        every evidence item) of ``owner``'s run (``None``: the local user); ``None`` when
        the run has not written a report yet.

        Raises:
            RunNotFoundError: no run with this id, or it belongs to another owner.
        """
        record = self.require_run(run_id, owner=owner)

        def read(session: Session) -> dict[str, Any] | None:
            return self.require_row(session, record.id).result

        data = self.transact(read)
        return None if data is None else RunResult.model_validate(data)

    def add_follow_up(self, run_id: str, follow_up: FollowUp, *, owner: str | None = None) -> int:
        """Keep ``follow_up`` (a question asked about the run and its answer) with ``owner``'s
        run ``run_id`` (``None``: the local user); its number (1, 2, ... per run).

        Raises:
            RunNotFoundError: no run with this id, or it belongs to another owner.
        """
        record = self.require_run(run_id, owner=owner)
        return self.transact(lambda session: append_follow_up(session, record.id, follow_up))

    def follow_ups(self, run_id: str, *, owner: str | None = None) -> list[FollowUp]:
        """The follow-up questions asked about ``owner``'s run ``run_id`` and their answers,
        in the order asked.

        Raises:
            RunNotFoundError: no run with this id, or it belongs to another owner.
        """
        record = self.require_run(run_id, owner=owner)
        return self.transact(lambda session: read_follow_ups(session, record.id))

    def add_report_version(
        self, run_id: str, version: ReportVersion, *, owner: str | None = None
    ) -> int:
        """Keep ``version`` (a revision of the report, numbered 2, 3, ...) with ``owner``'s
        run ``run_id`` (``None``: the local user); its number.

        Raises:
            RunNotFoundError: no run with this id, or it belongs to another owner.
            StateError: ``version.version`` is not the next number.
        """
        record = self.require_run(run_id, owner=owner)
        return self.transact(lambda session: append_version(session, record.id, version))

    def report_versions(self, run_id: str, *, owner: str | None = None) -> list[ReportVersionInfo]:
        """The versions of ``owner``'s run ``run_id``'s report, oldest first: version 1, the
        run's own report (not copied, read from the run), then each revision; ``[]`` when the
        run has no report.

        Raises:
            RunNotFoundError: no run with this id, or it belongs to another owner.
        """
        result = self.result(run_id, owner=owner)
        if result is None:
            return []
        record = self.require_run(run_id, owner=owner)
        revised = self.transact(lambda session: read_versions(session, record.id))
        return [ReportVersion.of_run(result).info(), *(v.info() for v in revised)]

    def report_version(
        self, run_id: str, version: int | None = None, *, owner: str | None = None
    ) -> ReportVersion | None:
        """Version ``version`` of ``owner``'s run ``run_id``'s report (``None``: the newest;
        1: the run's own report); ``None`` when the run has no report.

        Raises:
            RunNotFoundError: no run with this id, or it belongs to another owner.
            ReportVersionNotFoundError: the report has no version of that number.
        """
        result = self.result(run_id, owner=owner)
        if result is None:
            return None
        record = self.require_run(run_id, owner=owner)
        latest = self.transact(lambda session: latest_version_number(session, record.id))
        number = latest if version is None else version
        if number == 1:
            return ReportVersion.of_run(result)
        found = (
            self.transact(lambda session: read_version(session, record.id, number))
            if 1 < number <= latest
            else None
        )
        if found is None:
            raise version_not_found(record.id, number, latest)
        return found

    def question_counts(self, run_id: str) -> dict[str, int]:
        """Saved sources per question key of the run."""

        def read(session: Session) -> dict[str, int]:
            rows = session.execute(
                select(SourceQuestionRow.question_key, func.count())
                .where(SourceQuestionRow.run_id == run_id)
                .group_by(SourceQuestionRow.question_key)
            ).all()
            return {str(k): int(n) for k, n in rows}

        return self.transact(read)


def _cancel_waiting_reviews(session: Session, run_id: str, now: datetime) -> None:
    """Mark the run's waiting review ``cancelled`` (the run is cancelled with it)."""
    session.execute(
        update(ReviewRow)
        .where(ReviewRow.run_id == run_id, ReviewRow.status == "waiting")
        .values(status="cancelled", decided_at=now)
        .execution_options(synchronize_session=False)
    )


def _screening_summary(grouped: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Sources per screening status and the excluded (off-topic) ones with their reasons,
    from the exported sources (each listed once, however many questions it is under)."""
    unique = {s["citation_id"]: s for group in grouped.values() for s in group}
    counts: dict[str, int] = {}
    for source in unique.values():
        status = source.get("screening") or "not_screened"
        counts[status] = counts.get(status, 0) + 1
    excluded = [
        {
            "citation_id": s["citation_id"],
            "title": s["title"],
            "url": s["url"],
            "relevance": s.get("relevance"),
            "reason": s.get("screening_reason", ""),
        }
        for s in unique.values()
        if s.get("screening") == "off_topic"
    ]
    return {"counts": counts, "excluded": excluded}
