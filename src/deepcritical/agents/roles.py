"""Protocols of the agent roles, so orchestrators depend on roles, not implementations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from deepcritical.models import (
    Evidence,
    Hypothesis,
    JudgeAssessment,
    ResearchPlan,
    ResearchReport,
)

if TYPE_CHECKING:
    from deepcritical.agents.reflection import Reflection


class Planner(Protocol):
    """Turns a question into a :class:`ResearchPlan` (refined question, 3-7 item checklist,
    first queries)."""

    async def plan(self, question: str, context: str | None = None) -> ResearchPlan:
        """Plan research for ``question`` (``context``: optional user notes)."""
        ...


class QueryGenerator(Protocol):
    """Writes the search queries of a round for the unsatisfied checklist items."""

    async def queries(
        self,
        plan: ResearchPlan,
        assessment: JudgeAssessment | None,
        round_no: int,
        max_queries: int,
        tried: Sequence[str],
    ) -> list[str]:
        """At most ``max_queries`` new queries (none of ``tried``), best first."""
        ...


class HypothesisGenerator(Protocol):
    """Forms and updates mechanistic hypotheses from a slice of the evidence."""

    async def hypothesize(
        self,
        plan: ResearchPlan,
        evidence: Sequence[Evidence],
        previous: Sequence[Hypothesis],
    ) -> list[Hypothesis]:
        """Hypotheses citing only ids of ``evidence`` (previous ones may be revised)."""
        ...


class Judge(Protocol):
    """Assesses whether the evidence suffices (advice only: stop rules live in code)."""

    async def assess(
        self,
        plan: ResearchPlan,
        evidence: Sequence[Evidence],
        hypotheses: Sequence[Hypothesis],
        round_no: int,
        total_evidence: int,
    ) -> JudgeAssessment:
        """Assessment after round ``round_no`` given a selected slice of ``evidence``."""
        ...


class ReportWriter(Protocol):
    """Writes the draft report; citation markers ``[E3]`` must be ids of ``evidence``.

    The orchestrator validates every draft (see :mod:`deepcritical.report.validation`).
    """

    async def write(
        self,
        plan: ResearchPlan,
        evidence: Sequence[Evidence],
        hypotheses: Sequence[Hypothesis],
        assessment: JudgeAssessment | None,
    ) -> ResearchReport:
        """A draft report (metadata is filled in by the orchestrator)."""
        ...


class Reflector(Protocol):
    """Decides after a round which checklist items are satisfied, partial or unsatisfied and
    which follow-up searches to run (see :mod:`deepcritical.agents.reflection`)."""

    async def reflect(
        self, plan: ResearchPlan, evidence: Sequence[Evidence], tried: Sequence[str]
    ) -> Reflection:
        """The reflection on ``plan`` given a slice of ``evidence`` (``tried``: queries run)."""
        ...
