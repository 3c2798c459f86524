"""The researcher's reviews of a run, stored in ``run_reviews``: the run opens one when it
stops at a review point (:class:`ReviewBook`, used by the orchestrator's review step) and
the user decides it (:func:`decide_plan`, :func:`decide_evidence`, :func:`cancel_review`),
or its timeout does (:func:`settle_timeout`).

A decision is one conditional write (``status = 'waiting'`` in the ``WHERE`` clause), so of
two deciders (two approvals, an approval and a timeout) exactly one wins; the other gets
:class:`~deepcritical.state.errors.RunNotAwaitingReviewError` and nothing changes. Every
check comes before any write: a bad plan, an unknown record, a run that does not wait get a
clear error and change nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, Literal

from pydantic import ValidationError
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from deepcritical.events import ErrorData, ResearchEvent
from deepcritical.models import (
    ChecklistStatus,
    EvidenceDecision,
    ResearchPlan,
    ReviewStage,
    RunReview,
    plan_changes,
    utc_now,
)
from deepcritical.sources.query_syntax import source_queries
from deepcritical.state.errors import (
    InvalidPlanError,
    InvalidReviewError,
    UnknownRecordError,
    run_not_awaiting_review,
)
from deepcritical.state.event_log import append_event
from deepcritical.state.numbering import last_number
from deepcritical.state.run_store import AWAITING_REVIEW, RunRecord, RunStore
from deepcritical.state.schema import ReviewRow, aware

__all__ = [
    "MAX_PLAN_QUERIES",
    "ReviewBook",
    "cancel_review",
    "check_plan",
    "decide_evidence",
    "decide_plan",
    "run_reviews",
    "settle_timeout",
    "waiting_review",
]

MAX_PLAN_QUERIES = 50
"""Most queries an edited plan may hold."""
MAX_QUERY_CHARS = 300
"""Longest query of an edited plan (characters)."""


def _review(row: ReviewRow) -> RunReview:
    review = RunReview.model_validate(row.payload)
    return review.model_copy(
        update={
            "number": row.number,
            "status": row.status,
            "created_at": aware(row.created_at),
            "decided_at": aware(row.decided_at) if row.decided_at else None,
        }
    )


def _rows(session: Session, run_id: str) -> list[ReviewRow]:
    return list(
        session.scalars(
            select(ReviewRow).where(ReviewRow.run_id == run_id).order_by(ReviewRow.number)
        ).all()
    )


def run_reviews(runs: RunStore, run_id: str) -> list[RunReview]:
    """Every review of run ``run_id`` (its full id), oldest first.

    Raises:
        sqlalchemy.exc.SQLAlchemyError: the database failed.
    """
    return runs.transact(lambda session: [_review(r) for r in _rows(session, run_id)])


def waiting_review(runs: RunStore, run_id: str) -> RunReview | None:
    """The review run ``run_id`` (full id) waits for, or ``None``.

    Raises:
        sqlalchemy.exc.SQLAlchemyError: the database failed.
    """
    reviews = run_reviews(runs, run_id)
    return reviews[-1] if reviews and reviews[-1].status == "waiting" else None


def _settle(session: Session, run_id: str, decided: RunReview, status: str) -> RunReview | None:
    """Write ``decided`` with ``status`` if its row still waits; ``None`` if it does not."""
    now = utc_now()
    payload = decided.model_copy(update={"status": status, "decided_at": now})
    done = session.execute(
        update(ReviewRow)
        .where(
            ReviewRow.run_id == run_id,
            ReviewRow.number == decided.number,
            ReviewRow.status == "waiting",
        )
        .values(status=status, decided_at=now, payload=payload.model_dump(mode="json"))
        .execution_options(synchronize_session=False)
    )
    return payload if getattr(done, "rowcount", 0) == 1 else None


def _cancel_run(session: Session, runs: RunStore, run_id: str, note: str) -> None:
    """The run ``cancelled`` with ``note``, and a last ``error`` event saying so."""
    row = runs.require_row(session, run_id)
    now = utc_now()
    row.status = "cancelled"
    row.error = note
    row.updated_at = now
    row.finished_at = now
    append_event(
        session, run_id, ResearchEvent(type="error", message=note, data=ErrorData(cancelled=True))
    )


def settle_timeout(
    runs: RunStore,
    run_id: str,
    number: int,
    action: Literal["continue", "cancel"],
    *,
    end_run: bool = True,
) -> RunReview | None:
    """Decide the waiting review ``number`` of run ``run_id`` by its timeout: ``continue``
    (status ``timed_out``: the run goes on with the plan or evidence as it stands) or
    ``cancel`` (status ``cancelled``, and the run too, with a last ``error`` event, unless
    ``end_run`` is false: the run itself, resumed, says so). ``None`` when the review no
    longer waits (the user decided first).

    Raises:
        sqlalchemy.exc.SQLAlchemyError: the database failed.
    """

    def work(session: Session) -> RunReview | None:
        row = session.get(ReviewRow, (run_id, number))
        if row is None or row.status != "waiting":
            return None
        review = _review(row)
        if action == "continue":
            decided = review.model_copy(update={"reviewed_plan": review.plan})
            return _settle(session, run_id, decided, "timed_out")
        note = f"the {review.stage} review timed out; the run was cancelled"
        settled = _settle(
            session, run_id, review.model_copy(update={"changes": [note]}), "cancelled"
        )
        if settled is not None and end_run:
            _cancel_run(session, runs, run_id, note)
        return settled

    return runs.transact(work)


class ReviewBook:
    """The reviews of one recorded run, as the run itself reads and opens them (the
    orchestrator's review step), in worker threads.

    Args:
        runs: the run database.
        run_id: the run's full id.
    """

    def __init__(self, runs: RunStore, run_id: str) -> None:
        self.runs = runs
        self.run_id = run_id

    def find(self, stage: ReviewStage, ordinal: int) -> RunReview | None:
        """The run's ``ordinal``-th review of ``stage``, or ``None``."""

        def read(session: Session) -> RunReview | None:
            row = session.scalar(
                select(ReviewRow).where(
                    ReviewRow.run_id == self.run_id,
                    ReviewRow.stage == stage,
                    ReviewRow.ordinal == ordinal,
                )
            )
            return None if row is None else _review(row)

        return self.runs.transact(read)

    def open(
        self,
        proposed: RunReview,
        timeout_seconds: float,
        action: Literal["continue", "cancel"],
    ) -> RunReview:
        """The review of ``proposed``'s stage and ordinal: the stored one when there is one
        (a waiting review older than ``timeout_seconds`` is first decided by its timeout,
        :func:`settle_timeout`), else ``proposed`` stored as waiting with the next number.

        Raises:
            sqlalchemy.exc.SQLAlchemyError: the database failed.
        """
        found = self.find(proposed.stage, proposed.ordinal)
        if found is None:

            def insert(session: Session) -> RunReview:
                number = last_number(session, ReviewRow.number, self.run_id) + 1
                review = proposed.model_copy(
                    update={"number": number, "status": "waiting", "created_at": utc_now()}
                )
                session.add(
                    ReviewRow(
                        run_id=self.run_id,
                        number=number,
                        stage=review.stage,
                        ordinal=review.ordinal,
                        status="waiting",
                        payload=review.model_dump(mode="json"),
                        created_at=review.created_at,
                    )
                )
                return review

            return self.runs.transact(insert)
        waited = utc_now() - found.created_at
        if found.status == "waiting" and waited > timedelta(seconds=timeout_seconds):
            # the run reading it goes on or ends itself (its own error event)
            settle_timeout(self.runs, self.run_id, found.number, action, end_run=False)
            return self.find(proposed.stage, proposed.ordinal) or found
        return found


def _waiting_for(runs: RunStore, record: RunRecord, stage: ReviewStage) -> RunReview:
    """The review of ``stage`` ``record``'s run waits for.

    Raises:
        RunNotAwaitingReviewError: the run does not wait for a review of ``stage``.
    """
    waiting = waiting_review(runs, record.id) if record.status == AWAITING_REVIEW else None
    if waiting is None or waiting.stage != stage:
        raise run_not_awaiting_review(
            record.id, record.status, stage, waiting.stage if waiting else None
        )
    return waiting


def _plan_error(exc: ValidationError) -> InvalidPlanError:
    parts = []
    for error in exc.errors()[:3]:
        where = ".".join(str(p) for p in error["loc"]) or "plan"
        parts.append(f"{where}: {error['msg']}")
    return InvalidPlanError("invalid plan: " + "; ".join(parts))


def check_plan(
    plan: ResearchPlan | Mapping[str, Any], proposed: ResearchPlan, sources: Sequence[str]
) -> ResearchPlan:
    """The user's edit of ``proposed`` (a plan, or its JSON, whose fields replace those of
    ``proposed``: a field left out is kept as proposed), checked and cleaned: the
    original question kept, white space collapsed, checklist statuses and evidence cleared
    (nothing was searched yet), blank queries refused, ``sources`` a subset of the run's
    ``sources`` (all of them stored as ``[]``), ``filters`` valid search filters and
    ``source_queries`` checked (:func:`_checked_source_queries`).

    Raises:
        InvalidPlanError: no checklist item, an empty or duplicate checklist key, an empty
            description, an empty refined question or query, more than
            :data:`MAX_PLAN_QUERIES` queries, an unknown source, queries for a source the
            run does not search or none for one it does, bad search filters (a date range
            that ends before it starts, an unknown language or design), or a malformed
            field.
    """
    edit = plan.model_dump(mode="json") if isinstance(plan, ResearchPlan) else dict(plan)
    data: dict[str, Any] = {**proposed.model_dump(mode="json"), **edit}
    if not data.get("checklist"):
        raise InvalidPlanError("the plan needs at least one checklist item")
    data["question"] = proposed.question
    try:
        edited = ResearchPlan.model_validate(data)
    except ValidationError as exc:
        raise _plan_error(exc) from None
    edited.refined_question = " ".join(edited.refined_question.split())
    if not edited.refined_question:
        raise InvalidPlanError("the plan's refined question is empty")
    keys: set[str] = set()
    for n, item in enumerate(edited.checklist, 1):
        item.key = item.key.strip()
        item.description = " ".join(item.description.split())
        if not item.key or not item.description:
            raise InvalidPlanError(f"checklist item {n} needs a key and a description")
        if item.key in keys:
            raise InvalidPlanError(f"checklist key {item.key!r} is used twice")
        keys.add(item.key)
        item.status, item.evidence_ids = ChecklistStatus.UNSATISFIED, []
    edited.queries = [" ".join(q.split()) for q in edited.queries]
    if len(edited.queries) > MAX_PLAN_QUERIES:
        raise InvalidPlanError(
            f"the plan has {len(edited.queries)} queries; at most {MAX_PLAN_QUERIES}"
        )
    for n, query in enumerate(edited.queries, 1):
        if not query or len(query) > MAX_QUERY_CHARS:
            raise InvalidPlanError(
                f"query {n} is empty or longer than {MAX_QUERY_CHARS} characters"
            )
    unknown = [s for s in edited.sources if s not in sources]
    if unknown:
        raise InvalidPlanError(
            f"unknown source(s) {', '.join(unknown)}; the run searches {', '.join(sources)}"
        )
    per_source = getattr(edited, "source_queries", None)  # the plan's queries per source
    strange = [s for s in per_source or {} if s not in sources]
    if strange:
        raise InvalidPlanError(
            f"queries for unknown source(s) {', '.join(strange)}; the run searches "
            f"{', '.join(sources)}"
        )
    kept = list(dict.fromkeys(edited.sources))
    edited.sources = [] if set(kept) == set(sources) else kept
    edited.source_queries = _checked_source_queries(edited, sources)
    return edited


def _checked_source_queries(plan: ResearchPlan, sources: Sequence[str]) -> dict[str, list[str]]:
    """``plan.source_queries`` for the sources the plan searches (``plan.sources``, else
    ``sources``), each list without repeats; queries for a source the run has but the plan
    dropped are left out.

    Raises:
        InvalidPlanError: queries for a source the run does not search, a searched source
            given no query, a query longer than :data:`MAX_QUERY_CHARS`, or more than
            :data:`MAX_PLAN_QUERIES` for one source.
    """
    searched = plan.sources or list(sources)
    out: dict[str, list[str]] = {}
    for source, queries in plan.source_queries.items():
        if source not in sources:
            raise InvalidPlanError(
                f"queries for {source}, which the run does not search ({', '.join(sources)})"
            )
        if source not in searched:
            continue
        unique = list(dict.fromkeys(queries))
        if not unique:
            raise InvalidPlanError(f"the plan gives {source} no query; drop the source instead")
        if len(unique) > MAX_PLAN_QUERIES:
            raise InvalidPlanError(
                f"the plan gives {source} {len(unique)} queries; at most {MAX_PLAN_QUERIES}"
            )
        for n, query in enumerate(unique, 1):
            if len(query) > MAX_QUERY_CHARS:
                raise InvalidPlanError(
                    f"{source} query {n} is longer than {MAX_QUERY_CHARS} characters"
                )
        out[source] = unique
    return out


def _decide(runs: RunStore, record: RunRecord, decided: RunReview) -> RunReview:
    """Store ``decided`` (approved) if the run's review still waits."""

    def work(session: Session) -> RunReview:
        settled = _settle(session, record.id, decided, "approved")
        if settled is None:
            raise run_not_awaiting_review(record.id, "decided already", decided.stage)
        return settled

    return runs.transact(work)


def decide_plan(
    runs: RunStore,
    run_id: str,
    plan: ResearchPlan | Mapping[str, Any] | None,
    *,
    owner: str | None = None,
) -> RunReview:
    """Approve the plan ``owner``'s run ``run_id`` (a unique prefix works) waits with:
    ``plan`` is the user's edit (``None``: the plan as proposed), checked by
    :func:`check_plan`; the review is stored ``approved`` with the reviewed plan and what it
    changed. The run is continued by whoever resumes it (``api.approve_plan``, a job's
    worker).

    Raises:
        RunNotFoundError: no such run among ``owner``'s runs.
        RunNotAwaitingReviewError: the run does not wait for a plan review (running,
            finished, failed, cancelled, waiting for its evidence review, decided already).
        InvalidPlanError: see :func:`check_plan`.
        sqlalchemy.exc.SQLAlchemyError: the database failed.
    """
    record = runs.require_run(run_id, owner=owner)
    waiting = _waiting_for(runs, record, "plan")
    if waiting.plan is None:  # a stored review always has its plan
        raise InvalidPlanError(f"run {record.id}'s plan review holds no plan")
    reviewed = check_plan(plan if plan is not None else waiting.plan, waiting.plan, waiting.sources)
    year_from = record.settings.get("pubmed_date_from")
    sent = source_queries(
        waiting.plan, waiting.sources, year_from if isinstance(year_from, int) else None
    )
    changes = plan_changes(waiting.plan, reviewed, waiting.sources, sent_before=sent)
    decided = waiting.model_copy(update={"reviewed_plan": reviewed, "changes": changes})
    return _decide(runs, record, decided)


def _evidence_changes(review: RunReview, decisions: Sequence[EvidenceDecision]) -> list[str]:
    """The decisions checked against ``review``'s table, as change lines; each decision gets
    its record's identifier keys.

    Raises:
        UnknownRecordError: a record the table does not hold.
        InvalidReviewError: a record decided twice, an included record included or an
            excluded one excluded.
    """
    rows = {r.id: r for r in review.records}
    seen: set[str] = set()
    changes = []
    for decision in decisions:
        row = rows.get(decision.evidence_id)
        if row is None:
            shown = f"{review.records[0].id}-{review.records[-1].id}" if review.records else "none"
            raise UnknownRecordError(
                f"unknown record {decision.evidence_id!r} (the review shows {shown})"
            )
        if decision.evidence_id in seen:
            raise InvalidReviewError(f"record {decision.evidence_id} is decided twice")
        seen.add(decision.evidence_id)
        if (decision.action == "include") == row.included:
            state = "included" if row.included else "excluded"
            raise InvalidReviewError(f"record {row.id} is already {state}")
        why = f" ({decision.reason})" if decision.reason else ""
        changes.append(f"{decision.action}d {row.id}{why}")
        decision.keys = list(row.keys)
    return changes


def decide_evidence(
    runs: RunStore,
    run_id: str,
    decisions: Sequence[EvidenceDecision | Mapping[str, Any]],
    *,
    more_search: bool = False,
    owner: str | None = None,
) -> RunReview:
    """Decide the evidence review ``owner``'s run ``run_id`` waits for: ``decisions``
    exclude included records (with a reason) or include excluded ones; ``more_search``
    asks for one more search round (after which the run waits for an evidence review
    again). Stored ``approved`` with the decisions and what they change.

    Raises:
        RunNotFoundError: no such run among ``owner``'s runs.
        RunNotAwaitingReviewError: the run does not wait for an evidence review.
        UnknownRecordError: a decision names a record the review did not show.
        InvalidReviewError: a malformed decision (an exclusion without a reason), a record
            decided twice, or a decision that changes nothing.
        sqlalchemy.exc.SQLAlchemyError: the database failed.
    """
    try:
        checked = [EvidenceDecision.model_validate(d).model_copy() for d in decisions]
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InvalidReviewError(f"invalid evidence decision: {first['msg']}") from None
    record = runs.require_run(run_id, owner=owner)
    waiting = _waiting_for(runs, record, "evidence")
    changes = _evidence_changes(waiting, checked)
    decided = waiting.model_copy(
        update={"decisions": checked, "more_search": more_search, "changes": changes}
    )
    return _decide(runs, record, decided)


def cancel_review(runs: RunStore, run_id: str, *, owner: str | None = None) -> RunReview:
    """Cancel ``owner``'s run ``run_id`` at the review it waits for: the review is stored
    ``cancelled`` and the run ``cancelled``, with a last ``error`` event in its log.

    Raises:
        RunNotFoundError: no such run among ``owner``'s runs.
        RunNotAwaitingReviewError: the run waits for no review.
        sqlalchemy.exc.SQLAlchemyError: the database failed.
    """
    record = runs.require_run(run_id, owner=owner)
    waiting = waiting_review(runs, record.id) if record.status == AWAITING_REVIEW else None
    if waiting is None:
        raise run_not_awaiting_review(record.id, record.status, "any")
    note = f"the run was cancelled at its {waiting.stage} review"

    def work(session: Session) -> RunReview:
        settled = _settle(
            session, record.id, waiting.model_copy(update={"changes": [note]}), "cancelled"
        )
        if settled is None:
            raise run_not_awaiting_review(record.id, "decided already", waiting.stage)
        _cancel_run(session, runs, record.id, note)
        return settled

    return runs.transact(work)
