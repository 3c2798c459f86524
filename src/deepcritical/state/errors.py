"""Errors of the durable state layer; each message says what was wrong and what is valid."""

from __future__ import annotations

__all__ = [
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


class SyllabusError(StateError, ValueError):
    """A syllabus file or checklist is malformed (missing keys, duplicates, bad minimums)."""


class UnknownQuestionError(StateError, ValueError):
    """A source was assigned to a question key that is not in the run's syllabus."""


class UnknownCitationError(StateError, ValueError):
    """``save_source`` got a ``citation_id`` that is neither registered nor in the run's
    evidence store."""
