"""A follow-up question on a finished run and its answer (:class:`FollowUp`), kept with the run.

The answer is made from the run's own evidence store only
(:func:`deepcritical.writing.follow_up.answer_follow_up`) and checked like the report: its
citations by citation validation, its cited sentences by grounding; the figures of both
checks are kept here. Its markdown renumbers the ``[E3]`` markers ``[1]``, ``[2]``... by the
report's own code path (:meth:`FollowUp.as_report`, :func:`~._markdown.reference_lines`).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from deepcritical.models._evidence import utc_now
from deepcritical.models._markdown import (
    citation_check_line,
    grounding_appendix,
    grounding_line,
    reference_lines,
)
from deepcritical.models._markers import numbered
from deepcritical.models._report import (
    CitationValidation,
    GroundedClaim,
    GroundingCheck,
    Reference,
    ReportSection,
    ResearchReport,
)

__all__ = ["ANSWER_HEADING", "FollowUp"]

ANSWER_HEADING = "Answer"
"""The heading of the one section of the report an answer is checked as."""


class FollowUp(BaseModel):
    """A question asked about a finished run, and its answer from that run's evidence.

    Attributes:
        question: the question as checked (control characters out, white space collapsed).
        answer: markdown; when ``answered``, verbatim source sentences each with its ``[E3]``
            marker (the run's evidence ids), one paragraph per source; otherwise the fixed
            "does not answer" sentence, citing nothing.
        answered: whether some evidence of the run answers the question (a quote survived
            citation validation and grounding).
        references: the cited items, each with the evidence store's citation, in order of
            first citation.
        citation_validation: what citation validation checked and removed
            (:func:`deepcritical.report.validation.validate_report`).
        grounding_check: what grounding checked and removed; ``None`` when nothing was
            grounded.
        grounding_score: share of cited sentences supported by a cited source (0..1);
            ``None`` when no cited sentence was checked.
        grounding: one record per cited sentence checked, with its supporting quotes.
        asked_at: when it was answered (UTC).
        suggestion: when not ``answered``, what to do instead: the command that starts a new
            run seeded with the question; ``""`` otherwise.
    """

    question: str
    answer: str
    answered: bool
    references: list[Reference] = Field(default_factory=list)
    citation_validation: CitationValidation = Field(default_factory=CitationValidation)
    grounding_check: GroundingCheck | None = None
    grounding_score: float | None = Field(default=None, ge=0.0, le=1.0)
    grounding: list[GroundedClaim] = Field(default_factory=list)
    asked_at: datetime = Field(default_factory=utc_now)
    suggestion: str = ""

    def as_report(self) -> ResearchReport:
        """The answer as the one-section report it was checked as (heading
        :data:`ANSWER_HEADING`), with its references and grounding records: what
        :func:`deepcritical.report.validation.citation_problems` reads."""
        return ResearchReport(
            title=f"Follow-up: {self.question}",
            research_question=self.question,
            findings=[ReportSection(heading=ANSWER_HEADING, content=self.answer)],
            references=self.references,
            grounding=self.grounding,
        )

    def first_line(self) -> str:
        """The answer's first line, markers numbered (for lists: ``runs show``)."""
        text = numbered(self.answer, self.as_report().reference_numbers()).strip()
        return text.splitlines()[0] if text else ""

    def to_markdown(self) -> str:
        """The question, the answer with its markers numbered ``[1]``, ``[2]``... in order of
        first citation (as :meth:`ResearchReport.to_markdown`), its references, the
        supporting quotes and the two checks' lines; unanswered: the answer and the
        suggestion."""
        out = [f"**Question:** {self.question}", ""]
        if not self.answered:
            out.append(self.answer)
            if self.suggestion:
                out += ["", self.suggestion]
            return "\n".join(out) + "\n"
        report = self.as_report()
        numbers = report.reference_numbers()
        out.append(numbered(self.answer, numbers))
        out += reference_lines(report, numbers)
        out += grounding_appendix(report, numbers)
        out += ["", "---", "", citation_check_line(self.citation_validation)]
        if self.grounding_check is not None:
            out.append(grounding_line(self.grounding_check, self.grounding_score))
        return "\n".join(out) + "\n"
