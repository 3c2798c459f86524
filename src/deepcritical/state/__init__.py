"""Durable research state: run traces, question-aware source collection, call caches,
checkpoints and resume.

Public interface: :class:`RunStore` (``RunStore.open(settings)``, ``list_runs``, ``get_run``,
``export_run``, ``close``; each read takes the caller's ``owner`` and sees only that owner's
runs) and :class:`RunRecord`. The database is SQLite
(``<data_dir>/deepcritical.db``) unless ``DEEPCRITICAL_DATABASE_URL`` names another (PostgreSQL).
"""

from deepcritical.state.errors import (
    ReportVersionNotFoundError,
    RunInProgressError,
    RunNotFoundError,
    RunNotResumableError,
    RunWithoutReportError,
    StateError,
    SyllabusError,
    UnknownCitationError,
    UnknownQuestionError,
)
from deepcritical.state.run_store import RunRecord, RunStore
from deepcritical.state.syllabus import QuestionSpec, Syllabus

__all__ = [
    "QuestionSpec",
    "ReportVersionNotFoundError",
    "RunInProgressError",
    "RunNotFoundError",
    "RunNotResumableError",
    "RunRecord",
    "RunStore",
    "RunWithoutReportError",
    "StateError",
    "Syllabus",
    "SyllabusError",
    "UnknownCitationError",
    "UnknownQuestionError",
]
