"""Submitting and cancelling jobs: :func:`submit_run`, :func:`cancel_run`.

A job is one run: :func:`submit_run` checks the question, records the run as ``queued`` with
its question, context, public settings, report preferences and syllabus (what
:func:`deepcritical.api.resume` reads back), then enqueues the workflow whose id is the run
id, with the submitter's W3C trace context (``traceparent``, ``tracestate``) as its
``trace`` argument when tracing is on (the worker's spans join the submitter's trace).
:func:`cancel_run` sets the run's ``cancel_requested`` (the worker running it stops it
within a second; a queued job is cancelled at once) and cancels the DBOS workflow, so a job
not yet started never starts.
"""

from __future__ import annotations

from deepcritical.config import Settings
from deepcritical.jobs.engine import QUEUE, WORKFLOW, open_client
from deepcritical.jobs.review_wait import wake_review
from deepcritical.logs import get_logger
from deepcritical.models import ReportPreferences
from deepcritical.orchestrators.deps import check_context, check_question
from deepcritical.state.reviews import waiting_review
from deepcritical.state.run_store import RunStore
from deepcritical.state.syllabus import Syllabus
from deepcritical.telemetry.tracing import inject_context

__all__ = ["cancel_run", "submit_run"]

log = get_logger(__name__)


def submit_run(
    question: str,
    settings: Settings,
    *,
    context: str | None = None,
    preferences: ReportPreferences | None = None,
    syllabus: Syllabus | None = None,
    owner: str | None = None,
) -> str:
    """Record a ``queued`` run of ``question`` for ``owner`` and enqueue it; its run id.

    Raises:
        QuestionError: empty or too long question (nothing recorded).
        sqlalchemy.exc.SQLAlchemyError: the run database cannot be opened.
        Exception: the job database cannot be reached (the run is then marked failed).
    """
    question = check_question(question, settings.max_question_chars)
    context = check_context(context)
    store = RunStore.open(settings)
    try:
        run_id = store.create_run(
            question,
            settings.public_dict(),
            context=context,
            syllabus=syllabus,
            preferences=preferences.model_dump(mode="json") if preferences else None,
            owner=owner,
            status="queued",
        )
        try:
            # the submitter's trace context travels with the job's arguments, which DBOS keeps
            # with the workflow (a recovered job gets them again); nothing when tracing is off
            carried = inject_context()
            extra = {"trace": carried} if carried else {}
            client = open_client(settings)
            try:
                client.enqueue(
                    {"queue_name": QUEUE, "workflow_name": WORKFLOW, "workflow_id": run_id},
                    run_id,
                    **extra,
                )
            finally:
                client.destroy()
        except Exception:
            store.request_cancel(run_id, owner=owner)  # never left queued without a job
            raise
    finally:
        store.close()
    return run_id


def cancel_run(run_id: str, settings: Settings, *, owner: str | None = None) -> str:
    """Cancel ``owner``'s job ``run_id`` (a unique prefix works); the run's status after the
    request (``cancelled`` for a job that had not started or waits for a review, whose
    waiting workflow is woken and ends; a running job's status changes when its worker has
    stopped it, within a few seconds).

    Raises:
        RunNotFoundError: no such run among ``owner``'s runs.
    """
    store = RunStore.open(settings)
    try:
        record = store.require_run(run_id, owner=owner)
        waiting = waiting_review(store, record.id)
        status = store.request_cancel(record.id, owner=owner)
    finally:
        store.close()
    if waiting is not None:  # the review's waiting workflow ends
        wake_review(settings, record.id, waiting.number)
    try:
        client = open_client(settings)
        try:
            client.cancel_workflow(record.id)
        finally:
            client.destroy()
    except Exception:
        # only matters for a job no worker has dequeued, which checks the flag too
        log.warning("could not cancel the job's workflow", run_id=record.id, exc_info=True)
    return status
