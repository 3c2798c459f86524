"""A run's saved sources as they are read back (exports, the report writer):
:class:`SavedSource` and :func:`sources_by_question`, over the ``sources`` and
``source_questions`` tables."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.orm import Session

from deepcritical.state.schema import SourceQuestionRow, SourceRow

__all__ = ["UNASSIGNED", "SavedSource", "sources_by_question"]

UNASSIGNED = "_unassigned"
"""Key under which :meth:`SourceCollector.finalize_sources` lists sources of no question."""


class SavedSource(BaseModel):
    """A saved source as the report writer and exports see it.

    ``screening`` (``relevant`` / ``partial`` / ``off_topic``, ``None`` when the run did not
    screen it), ``screening_reason`` and ``relevance`` (calibrated, 0..1) come from the
    evidence item saved with the source (:class:`~deepcritical.models.Evidence`); an
    off-topic source stays saved, with its reason, but reached no part of the report.
    """

    number: int
    source_type: str
    external_id: str
    url: str | None
    title: str
    citation_id: str
    key_excerpts: list[str]
    questions: list[str]
    screening: str | None = None
    screening_reason: str = ""
    relevance: float | None = None

    @classmethod
    def from_row(cls, row: SourceRow, questions: list[str]) -> SavedSource:
        """The saved source of a ``sources`` row, assigned to ``questions`` (in that
        order)."""
        return cls(
            number=row.number,
            source_type=row.source_type,
            external_id=row.external_id,
            url=row.url,
            title=row.title,
            citation_id=row.citation_id,
            key_excerpts=list(row.key_excerpts or []),
            questions=questions,
            **_screening_of(row.evidence),
        )


def sources_by_question(session: Session, run_id: str) -> dict[str, list[SavedSource]]:
    """The run's saved sources grouped by question key (``_unassigned`` for none), in
    source-number order."""
    links: dict[int, list[str]] = {}
    for source_id, key in session.execute(
        select(SourceQuestionRow.source_id, SourceQuestionRow.question_key).where(
            SourceQuestionRow.run_id == run_id
        )
    ).all():
        links.setdefault(int(source_id), []).append(str(key))
    grouped: dict[str, list[SavedSource]] = {}
    rows = session.scalars(
        select(SourceRow).where(SourceRow.run_id == run_id).order_by(SourceRow.number)
    ).all()
    for row in rows:
        questions = sorted(links.get(row.id, []))
        saved = SavedSource.from_row(row, questions)
        for key in questions or [UNASSIGNED]:
            grouped.setdefault(key, []).append(saved)
    return grouped


def _screening_of(evidence: dict[str, Any] | None) -> dict[str, Any]:
    """The screening fields of a saved evidence item's JSON (``{}`` when there is none)."""
    if not evidence:
        return {}
    relevance = evidence.get("relevance")
    return {
        "screening": evidence.get("screening"),
        "screening_reason": str(evidence.get("screening_reason") or ""),
        "relevance": float(relevance) if isinstance(relevance, int | float) else None,
    }
