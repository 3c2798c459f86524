"""Errors of the durable state layer; each message says what was wrong and what is valid."""

from __future__ import annotations

__all__ = [
    "RunInProgressError",
    "RunNotFoundError",
    "RunNotResumableError",
    "StateError",
    "SyllabusError",
    "UnknownCitationError",
    "UnknownQuestionError",
]


class StateError(Exception):
    """Base class: the run database could not do what was asked."""


class RunNotFoundError(StateError, LookupError):
    """No run with this id in the database."""


class RunNotResumableError(StateError):
    """The run already finished (completed or stopped at its round limit with a report)."""


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
