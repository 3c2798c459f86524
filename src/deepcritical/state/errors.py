"""Errors of the durable state layer; each message says what was wrong and what is valid."""

from __future__ import annotations

__all__ = [
    "RUNS_LIST_HINT",
    "InvalidPlanError",
    "InvalidReviewError",
    "ReportVersionNotFoundError",
    "RunInProgressError",
    "RunNotAwaitingReviewError",
    "RunNotFoundError",
    "RunNotResumableError",
    "RunWithoutReportError",
    "StateError",
    "SyllabusError",
    "UnknownCitationError",
    "UnknownQuestionError",
    "UnknownRecordError",
    "run_not_awaiting_review",
    "run_not_found",
    "run_not_resumable",
    "run_without_report",
    "version_not_found",
]


RUNS_LIST_HINT = "see `deepcritical runs list` for the stored runs"
"""The command line's hint after a run that is not found."""


class StateError(Exception):
    """Base class: the run database could not do what was asked. Its message is for any
    reader (the web app, the API); ``cli_hint`` names the command that helps, which only the
    command line adds (:func:`deepcritical.cli.run_output.error_line`)."""

    def __init__(self, message: str = "", *, cli_hint: str = "") -> None:
        super().__init__(message)
        self.cli_hint = cli_hint


class RunNotFoundError(StateError, LookupError):
    """No run with this id in the database."""


class RunNotResumableError(StateError):
    """The run already finished (completed or stopped at its round limit with a report)."""


class RunWithoutReportError(StateError):
    """The run has no report to ask a follow-up question about: it failed, was cancelled, or
    has not finished yet."""


class ReportVersionNotFoundError(StateError, LookupError):
    """The run's report has no version of this number."""


class RunInProgressError(StateError):
    """The run is still running in another process: its heartbeat is live.

    Attributes:
        run_id: the run's id.
        heartbeat_age: seconds since the run's row was last updated (its last heartbeat).
        stale_after: seconds without a heartbeat after which the run may be taken over.
    """

    def __init__(self, run_id: str, heartbeat_age: float, stale_after: float) -> None:
        self.run_id = run_id
        self.heartbeat_age = heartbeat_age
        self.stale_after = stale_after
        super().__init__(
            f"run {run_id} is still running in another process (last heartbeat "
            f"{max(heartbeat_age, 0.0):.0f} s ago); resume it after it goes stale "
            f"(> {stale_after:g} s)"
        )


class SyllabusError(StateError, ValueError):
    """A syllabus file or checklist is malformed (missing keys, duplicates, bad minimums)."""


class UnknownQuestionError(StateError, ValueError):
    """A source was assigned to a question key that is not in the run's syllabus."""


class UnknownCitationError(StateError, ValueError):
    """``save_source`` got a ``citation_id`` that is neither registered nor in the run's
    evidence store."""


class RunNotAwaitingReviewError(StateError):
    """The run does not wait for this review: it is running, finished, failed, cancelled,
    waits for the other stage's review, or its review was decided already."""


class InvalidReviewError(StateError, ValueError):
    """A review's decision is malformed: nothing was stored."""


class InvalidPlanError(InvalidReviewError):
    """An edited plan is not valid: no checklist item, an empty or duplicate key, an empty
    query, an unknown source, or a field of the wrong type."""


class UnknownRecordError(InvalidReviewError, LookupError):
    """An evidence decision names a record the review did not show."""


def run_not_awaiting_review(
    run_id: str, status: str, stage: str, waiting: str | None = None
) -> RunNotAwaitingReviewError:
    """ "run x is not waiting for a plan review (completed)", with the command line's hint to
    show the run. ``stage``: ``plan``, ``evidence`` or ``any``; ``waiting``: the stage the
    run does wait for, if any."""
    what = {"plan": "a plan review", "evidence": "an evidence review"}.get(stage, "a review")
    if waiting is not None and waiting != stage:
        other = "its plan review" if waiting == "plan" else "its evidence review"
        why = f"it waits for {other}"
    else:
        why = status
    return RunNotAwaitingReviewError(
        f"run {run_id} is not waiting for {what} ({why}); nothing was changed",
        cli_hint=f"see `deepcritical runs show {run_id}`",
    )


def run_not_found(run_id: str) -> RunNotFoundError:
    """ "no run with id 'x'", with the command line's hint to list the runs."""
    return RunNotFoundError(f"no run with id {run_id!r}", cli_hint=RUNS_LIST_HINT)


def run_not_resumable(run_id: str, status: str) -> RunNotResumableError:
    """ "run x already finished (status); its report is stored", with the command line's hint
    to export it."""
    return RunNotResumableError(
        f"run {run_id} already finished ({status}); its report is stored",
        cli_hint=f"export it: `deepcritical runs export {run_id}`",
    )


def run_without_report(
    run_id: str, status: str, error: str | None = None, *, action: str = "ask"
) -> RunWithoutReportError:
    """ "run x failed (why) and has no report to ask about", or "run x has no report yet",
    with the command line's hint to resume it (a failed or interrupted run can be).
    ``action``: what was asked of the run, ``"ask"`` (a follow-up question) or ``"revise"``."""
    what = "to ask a question about" if action == "ask" else "to revise"
    if status in {"failed", "cancelled"}:
        why = f": {error}" if error else ""
        message = f"run {run_id} {status}{why}; it has no report {what}"
    else:
        message = f"run {run_id} has no report yet ({status}); {action} once it has finished"
    return RunWithoutReportError(
        message, cli_hint=f"finish it first: `deepcritical runs resume {run_id}`"
    )


def version_not_found(run_id: str, version: int, latest: int) -> ReportVersionNotFoundError:
    """ "run x's report has no version n (it has versions 1 to m)", with the command line's
    hint to list them."""
    has = "only version 1" if latest == 1 else f"versions 1 to {latest}"
    return ReportVersionNotFoundError(
        f"run {run_id}'s report has no version {version} (it has {has})",
        cli_hint=f"see `deepcritical runs versions {run_id}`",
    )
