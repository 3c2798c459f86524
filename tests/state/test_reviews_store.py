"""The reviews kept in the run database (``run_reviews``, :mod:`deepcritical.state.reviews`),
on SQLite and on PostgreSQL: a review is opened once per stage and ordinal and numbered per
run; of two deciders exactly one wins (an approval and a timeout); a timeout that cancels
cancels the run; ``runs cancel`` of a waiting run cancels its review too."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session

from deepcritical.models import ChecklistItem, ResearchPlan, RunReview
from deepcritical.state import RunStore
from deepcritical.state.errors import RunNotAwaitingReviewError
from deepcritical.state.reviews import (
    ReviewBook,
    decide_plan,
    run_reviews,
    settle_timeout,
    waiting_review,
)
from deepcritical.state.run_store import AWAITING_REVIEW

PLAN = ResearchPlan(
    question="Does aspirin prevent stroke?",
    refined_question="Does aspirin prevent stroke?",
    checklist=[ChecklistItem(key="effect", description="Effect on stroke")],
)


def _waiting_run(runs: RunStore) -> tuple[str, RunReview]:
    run_id = runs.create_run(PLAN.question, {})
    review = ReviewBook(runs, run_id).open(
        RunReview(number=1, stage="plan", plan=PLAN, sources=["pubmed"]), 3600, "continue"
    )

    def work(session: Session) -> None:
        runs.require_row(session, run_id).status = AWAITING_REVIEW

    runs.transact(work)
    return run_id, review


def test_a_review_is_opened_once_and_decided_once(runs: RunStore) -> None:
    run_id, _ = _waiting_run(runs)
    book = ReviewBook(runs, run_id)
    again = book.open(RunReview(number=9, stage="plan", plan=PLAN), 3600, "continue")
    assert (again.number, again.status) == (1, "waiting")
    evidence = book.open(RunReview(number=9, stage="evidence", ordinal=1), 3600, "continue")
    assert evidence.number == 2
    assert waiting_review(runs, run_id) is not None
    # the plan review is not the last one any more: it cannot be decided as waiting
    with pytest.raises(RunNotAwaitingReviewError, match="waits for its evidence review"):
        decide_plan(runs, run_id, None)
    assert [r.status for r in run_reviews(runs, run_id)] == ["waiting", "waiting"]


def test_an_approval_and_a_timeout_one_wins(runs: RunStore) -> None:
    run_id, review = _waiting_run(runs)
    decided = decide_plan(runs, run_id, PLAN.model_copy(update={"queries": ["aspirin stroke"]}))
    assert decided.status == "approved"
    assert decided.changes == ["added query 'aspirin stroke'"]
    assert settle_timeout(runs, run_id, review.number, "cancel") is None  # too late
    assert runs.require_run(run_id).status == AWAITING_REVIEW  # not cancelled
    stored = run_reviews(runs, run_id)[0]
    assert stored.status == "approved"
    assert stored.reviewed_plan is not None
    assert stored.reviewed_plan.queries == ["aspirin stroke"]
    assert stored.decided_at is not None


def test_a_timeout_that_cancels_cancels_the_run(runs: RunStore) -> None:
    run_id, review = _waiting_run(runs)
    settled = settle_timeout(runs, run_id, review.number, "cancel")
    assert settled is not None
    assert settled.status == "cancelled"
    record = runs.require_run(run_id)
    assert record.status == "cancelled"
    assert record.error == "the plan review timed out; the run was cancelled"
    last = runs.events(run_id)[-1].event
    assert last.type == "error"
    with pytest.raises(RunNotAwaitingReviewError, match="cancelled"):
        decide_plan(runs, run_id, None)


def test_runs_cancel_of_a_waiting_run_cancels_its_review(runs: RunStore) -> None:
    run_id, _ = _waiting_run(runs)
    assert runs.request_cancel(run_id) == "cancelled"
    assert [r.status for r in run_reviews(runs, run_id)] == ["cancelled"]
    assert runs.require_run(run_id).error == "cancelled while it waited for a review"
