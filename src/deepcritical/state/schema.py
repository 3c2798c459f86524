"""The tables of the run database (SQLAlchemy 2.0 typed ORM).

- ``runs``: one row per research run (the tool trace), updated at every checkpoint; its
  ``owner`` is the user it belongs to (``None``: the local user).
- ``sources``: every source a run saved, once per run (unique on ``source_type`` +
  ``external_id``, and on ``citation_id``); ``number`` is the run-local source number (#1...).
- ``source_keys``: identifier keys of a source (``pmid:...``, ``doi:...``; see
  :func:`deepcritical.evidence.identifiers.identifier_keys`), unique per run: the same paper
  from two sources is one source.
- ``source_questions``: which syllabus questions a source was assigned to.
- ``call_cache``: results of search and LLM calls keyed by a hash of the request.
- ``run_events``: the append-only event log of a run (every event it emitted, numbered
  1, 2, ... per run), which followers of a job read from any offset.
- ``run_follow_ups``: the follow-up questions asked about a finished run and their answers
  (numbered 1, 2, ... per run; ``payload`` is the :class:`~deepcritical.models.FollowUp`).
- ``run_report_versions``: the revised versions of a finished run's report (2, 3, ... per run;
  version 1 is the run's own report in ``runs.result``; ``payload`` is the
  :class:`~deepcritical.models.ReportVersion`).
- ``run_reviews``: the user's reviews of a run's plan and evidence (numbered 1, 2, ... per
  run; ``payload`` is the :class:`~deepcritical.models.RunReview`).
- ``watches``: watched questions (living reviews), each on the run whose report versions are
  its versions; its schedule, window and update lease (:mod:`~deepcritical.state.watch_store`).
- ``watch_updates``: the updates of a watch (1, 2, ... per watch; ``payload`` is the
  :class:`~deepcritical.models.WatchUpdate`).

Times are timezone-aware UTC (SQLite hands back naive values: :func:`aware` fixes them).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from deepcritical.models import utc_now

__all__ = [
    "Base",
    "CacheRow",
    "FollowUpRow",
    "ReportVersionRow",
    "ReviewRow",
    "RunEventRow",
    "RunRow",
    "SourceKeyRow",
    "SourceQuestionRow",
    "SourceRow",
    "WatchRow",
    "WatchUpdateRow",
    "aware",
]

MAX_EXTERNAL_ID_CHARS = 2000
MAX_KEY_CHARS = 1000
MAX_OWNER_CHARS = 200
"""Longest owner name stored (``kind:username``)."""


def aware(value: datetime) -> datetime:
    """``value`` as an aware UTC datetime (SQLite stores no time zone)."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


class Base(DeclarativeBase):
    """Declarative base of the run database."""


class RunRow(Base):
    """One research run: question, settings (no secrets), status and everything learned.

    ``owner`` is the user the run belongs to (``user:alice``, ``hf:alice``: the web app's
    signed-in user); ``None`` is the local user (CLI, Python API, a web app without sign-in).
    A run submitted as a job (:mod:`deepcritical.jobs`) starts ``queued``; ``worker`` names the
    worker that ran it last and ``cancel_requested`` is set by ``runs cancel``.
    """

    __tablename__ = "runs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    owner: Mapped[str | None] = mapped_column(String(MAX_OWNER_CHARS), index=True)
    question: Mapped[str] = mapped_column(Text)
    context: Mapped[str | None] = mapped_column(Text)
    settings: Mapped[dict[str, Any]] = mapped_column(JSON)
    syllabus: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    syllabus_fixed: Mapped[bool] = mapped_column(default=False)
    preferences: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(20), index=True)
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    stage: Mapped[str | None] = mapped_column(String(40))
    refined_question: Mapped[str | None] = mapped_column(Text)
    checklist: Mapped[list[Any]] = mapped_column(JSON, default=list)
    iterations: Mapped[list[Any]] = mapped_column(JSON, default=list)
    metrics: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    report_markdown: Mapped[str | None] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), default=utc_now, index=True
    )
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    worker: Mapped[str | None] = mapped_column(String(MAX_OWNER_CHARS))
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)


class SourceRow(Base):
    """A source saved by a run (stored once; see the module docstring)."""

    __tablename__ = "sources"
    __table_args__ = (
        UniqueConstraint("run_id", "source_type", "external_id", name="uq_source_external"),
        UniqueConstraint("run_id", "number", name="uq_source_number"),
        UniqueConstraint("run_id", "citation_id", name="uq_source_citation"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    source_type: Mapped[str] = mapped_column(String(40))
    external_id: Mapped[str] = mapped_column(String(MAX_EXTERNAL_ID_CHARS))
    url: Mapped[str | None] = mapped_column(Text)
    title: Mapped[str] = mapped_column(Text, default="")
    citation_id: Mapped[str] = mapped_column(String(64))
    key_excerpts: Mapped[list[Any]] = mapped_column(JSON, default=list)
    evidence: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)


class SourceKeyRow(Base):
    """An identifier key of a saved source, unique within its run."""

    __tablename__ = "source_keys"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    key: Mapped[str] = mapped_column(String(MAX_KEY_CHARS), primary_key=True)
    source_id: Mapped[int] = mapped_column(ForeignKey("sources.id", ondelete="CASCADE"), index=True)


class SourceQuestionRow(Base):
    """Assignment of a saved source to one syllabus question."""

    __tablename__ = "source_questions"
    __table_args__ = (Index("ix_source_questions_run_question", "run_id", "question_key"),)

    source_id: Mapped[int] = mapped_column(
        ForeignKey("sources.id", ondelete="CASCADE"), primary_key=True
    )
    question_key: Mapped[str] = mapped_column(String(200), primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))


class CacheRow(Base):
    """A cached search or LLM call: ``key`` is the SHA-256 of the request, ``payload`` the
    JSON of the answer."""

    __tablename__ = "call_cache"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    kind: Mapped[str] = mapped_column(String(20))
    label: Mapped[str] = mapped_column(String(200), default="")
    payload: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)


class RunEventRow(Base):
    """One event of a run's append-only log: ``seq`` counts 1, 2, ... within the run,
    ``payload`` is the :class:`~deepcritical.events.ResearchEvent` as JSON."""

    __tablename__ = "run_events"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    type: Mapped[str] = mapped_column(String(40))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)


class FollowUpRow(Base):
    """A follow-up question asked about a finished run, and its answer: ``seq`` counts 1, 2,
    ... within the run, ``payload`` is the :class:`~deepcritical.models.FollowUp` as JSON
    (answer, references, checks); deleted with its run."""

    __tablename__ = "run_follow_ups"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    question: Mapped[str] = mapped_column(Text)
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)


class ReportVersionRow(Base):
    """A revised version of a finished run's report: ``version`` counts 2, 3, ... within the
    run (version 1 is the run's own report, in ``runs.result``), ``instruction`` is the user's,
    ``payload`` is the :class:`~deepcritical.models.ReportVersion` as JSON; deleted with its
    run."""

    __tablename__ = "run_report_versions"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    version: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    instruction: Mapped[str] = mapped_column(Text)
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)


class ReviewRow(Base):
    """A review of a run (its plan before the search, its evidence before the writing):
    ``number`` counts 1, 2, ... within the run, ``stage`` is ``plan`` or ``evidence``,
    ``ordinal`` counts the reviews of that stage, ``status`` is ``waiting``, ``approved``,
    ``cancelled`` or ``timed_out``; ``payload`` is the
    :class:`~deepcritical.models.RunReview` as JSON; deleted with its run."""

    __tablename__ = "run_reviews"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    number: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    stage: Mapped[str] = mapped_column(String(20))
    ordinal: Mapped[int] = mapped_column(Integer, default=1)
    status: Mapped[str] = mapped_column(String(20))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)
    decided_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class WatchRow(Base):
    """A watched question (a living review) on the run ``run_id``, whose report versions are
    its versions.

    ``plan`` and ``settings`` are the run's reviewed plan and public settings (no secrets),
    ``queries`` the searches each update repeats; ``every_seconds`` the schedule (``None``:
    by hand only), ``next_due_at`` when the next scheduled update is due; ``checked_until``
    the end of the last update's window. ``lease_owner`` / ``lease_at`` say who is updating
    it now (one update at a time), ``lease_until`` the end of that update's window.
    ``webhook_url`` may hold a token: never logged or shown in clear.
    """

    __tablename__ = "watches"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    owner: Mapped[str | None] = mapped_column(String(MAX_OWNER_CHARS), index=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    question: Mapped[str] = mapped_column(Text)
    plan: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    settings: Mapped[dict[str, Any]] = mapped_column(JSON)
    queries: Mapped[list[Any]] = mapped_column(JSON, default=list)
    every_seconds: Mapped[float | None] = mapped_column(Float)
    paused: Mapped[bool] = mapped_column(Boolean, default=False)
    webhook_url: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)
    checked_until: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    next_due_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), index=True)
    last_update_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    lease_owner: Mapped[str | None] = mapped_column(String(MAX_KEY_CHARS))
    lease_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    lease_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class WatchUpdateRow(Base):
    """One update of a watch: ``number`` counts 1, 2, ... per watch; ``outcome`` is
    ``new_version``, ``nothing_new`` or ``failed``; ``payload`` the
    :class:`~deepcritical.models.WatchUpdate` as JSON; ``seen`` whether its owner looked at
    it. Deleted with its watch."""

    __tablename__ = "watch_updates"

    watch_id: Mapped[str] = mapped_column(
        ForeignKey("watches.id", ondelete="CASCADE"), primary_key=True
    )
    number: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    outcome: Mapped[str] = mapped_column(String(20))
    version: Mapped[int | None] = mapped_column(Integer)
    seen: Mapped[bool] = mapped_column(Boolean, default=False)
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)
