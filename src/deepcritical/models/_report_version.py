"""A version of a finished run's report (:class:`ReportVersion`): version 1 is the report the
run wrote; each later one was rewritten from the same evidence at a user's instruction
("shorter", "for patients", "only randomised trials") and passed the same checks. Kept with
the run; :class:`ReportVersionInfo` is its line in a list of versions.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from deepcritical.models._evidence import utc_now
from deepcritical.models._markers import numbered
from deepcritical.models._plan import ReportPreferences
from deepcritical.models._report import ResearchReport, RunResult

__all__ = ["ReportVersion", "ReportVersionInfo"]

FIRST_LINE_CHARS = 160
"""The most characters of a summary's first line a version's list entry shows."""


class ReportVersionInfo(BaseModel):
    """One line of a run's list of report versions.

    Attributes:
        version: 1 for the run's own report, then 2, 3, ... in the order made.
        instruction: the user's instruction it was revised by (``""`` for version 1).
        created_at: when it was written (UTC).
        title: the report's title.
        first_line: the first line of its executive summary, markers numbered, at most
            160 characters.
    """

    version: int = Field(ge=1)
    instruction: str = ""
    created_at: datetime
    title: str
    first_line: str = ""


class ReportVersion(BaseModel):
    """A version of a run's report.

    Attributes:
        version: 1 for the run's own report, then 2, 3, ... in the order made.
        instruction: the instruction, as checked, it was revised by (``""`` for version 1).
        created_at: when it was written (UTC).
        report: the report, checked like the run's (citation validation, grounding).
        preferences: the report preferences it was written with (the instruction's applied to
            the previous version's).
        designs: the study-design groups it may cite (labels of
            :class:`deepcritical.evidence.design.DesignGroup`); empty for every design.
    """

    version: int = Field(ge=1)
    instruction: str = ""
    created_at: datetime = Field(default_factory=utc_now)
    report: ResearchReport
    preferences: ReportPreferences = Field(default_factory=ReportPreferences)
    designs: list[str] = Field(default_factory=list)

    @classmethod
    def of_run(cls, result: RunResult) -> ReportVersion:
        """Version 1: the report the run wrote, with the preferences it was written with
        (its plan's), dated when it was generated."""
        return cls(
            version=1,
            created_at=result.report.metadata.generated_at,
            report=result.report,
            preferences=(
                result.plan.preferences.model_copy() if result.plan else ReportPreferences()
            ),
        )

    def info(self) -> ReportVersionInfo:
        """Its line in a list of versions."""
        report = self.report
        summary = numbered(report.executive_summary, report.reference_numbers()).strip()
        first = summary.splitlines()[0] if summary else ""
        if len(first) > FIRST_LINE_CHARS:
            first = first[: FIRST_LINE_CHARS - 1].rstrip() + "…"
        return ReportVersionInfo(
            version=self.version,
            instruction=self.instruction,
            created_at=self.created_at,
            title=report.title,
            first_line=first,
        )
