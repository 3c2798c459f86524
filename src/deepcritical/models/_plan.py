"""The research plan and what the run forms from evidence: checklist, sub-questions, report
preferences, hypotheses and the judge's assessments."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from deepcritical.models._appraisal import Certainty
from deepcritical.models._evidence import SourceName
from deepcritical.models._filters import SearchFilters

__all__ = [
    "PICO",
    "ChecklistItem",
    "ChecklistStatus",
    "Hypothesis",
    "JudgeAssessment",
    "QuestionType",
    "ReportLength",
    "ReportPreferences",
    "ResearchPlan",
    "SubQuestion",
]


class ChecklistStatus(StrEnum):
    """How far the collected evidence answers one checklist item."""

    UNSATISFIED = "unsatisfied"
    PARTIAL = "partial"
    SATISFIED = "satisfied"


class ChecklistItem(BaseModel):
    """One thing a complete answer must address, with the evidence assigned to it."""

    key: str
    description: str
    min_evidence: int = Field(default=2, ge=1)
    status: ChecklistStatus = ChecklistStatus.UNSATISFIED
    evidence_ids: list[str] = Field(default_factory=list)


class QuestionType(StrEnum):
    """The kind of clinical question, which decides the shape of the plan's checklist
    (:func:`deepcritical.text.question_type.classify_question`)."""

    INTERVENTION = "intervention"
    DIAGNOSIS_PROGNOSIS = "diagnosis_prognosis"
    AETIOLOGY_RISK = "aetiology_risk"
    MECHANISM = "mechanism"
    PREVALENCE = "prevalence"
    REPURPOSING = "repurposing"


class PICO(BaseModel):
    """The elements of a question, in the question's own words (``""`` when absent).

    ``intervention`` holds the intervention, exposure, risk factor, index test or drug (by
    question type); ``outcome`` the outcome, target condition or disease; ``population`` the
    population or condition the question is asked in; ``comparator`` what it is compared with.
    """

    population: str = ""
    intervention: str = ""
    comparator: str = ""
    outcome: str = ""

    def is_empty(self) -> bool:
        """True when no element was found."""
        return not (self.population or self.intervention or self.comparator or self.outcome)


ReportLength = Literal["brief", "standard", "detailed"]


class ReportPreferences(BaseModel):
    """What the user wants from the report (from the request: API, CLI, UI).

    ``audience``: who reads it ("clinicians", "drug-discovery scientists"; "" = scientists);
    ``length``: ``brief`` (2-3 findings sections), ``standard`` (3-5) or ``detailed`` (4-6);
    ``focus``: an aspect to emphasise ("safety in the elderly"; "" = none).
    """

    audience: str = Field(default="", max_length=200)
    length: ReportLength = "standard"
    focus: str = Field(default="", max_length=300)

    def lines(self) -> list[str]:
        """Plain-text lines for a prompt (``[]`` when everything is the default)."""
        out = []
        if self.audience.strip():
            out.append(f"Audience: {' '.join(self.audience.split())}")
        if self.length != "standard":
            out.append(f"Length: {self.length}")
        if self.focus.strip():
            out.append(f"Focus: {' '.join(self.focus.split())}")
        return out


class SubQuestion(BaseModel):
    """One sub-question of the plan and the queries that search for it."""

    question: str
    queries: list[str] = Field(default_factory=list)


class ResearchPlan(BaseModel):
    """The plan made before searching: refined question, scope, checklist, sub-questions and
    first queries, plus the user's report preferences.

    ``scope_in`` / ``scope_out``: what the answer covers and leaves out (one phrase each);
    ``mesh_terms``: MeSH descriptors of the question (for PubMed ``[MeSH Terms]`` queries);
    ``sub_questions``: at most ``Settings.max_questions``, each with its queries;
    ``question_type`` and ``pico``: the question's type and elements (``None`` and empty in
    plans saved before they existed); ``sources``: see the field.
    ``filters``: what the searches include (dates, languages, designs, trial phases and
    statuses, records added since), applied by every source (:class:`SearchFilters`; empty:
    no filtering). ``source_queries``: source name (:class:`SourceName` value) -> the queries
    sent verbatim to that source in round 1 instead of the plan's ``queries`` translated for
    it (an absent source: as translated; the plan review shows and edits them). Plans saved
    before these fields existed load with both empty.

    Raises:
        pydantic.ValidationError: ``source_queries`` naming an unknown source.
    """

    question: str
    refined_question: str
    checklist: list[ChecklistItem] = Field(min_length=1)
    queries: list[str] = Field(default_factory=list)
    key_terms: list[str] = Field(default_factory=list)
    scope_in: list[str] = Field(default_factory=list)
    scope_out: list[str] = Field(default_factory=list)
    mesh_terms: list[str] = Field(default_factory=list)
    sub_questions: list[SubQuestion] = Field(default_factory=list)
    preferences: ReportPreferences = Field(default_factory=ReportPreferences)
    question_type: QuestionType | None = None
    pico: PICO = Field(default_factory=PICO)
    sources: list[str] = Field(default_factory=list)
    """The sources the plan searches, when the user's review kept a subset of the run's;
    empty: every source of the run (the planner's plan)."""
    filters: SearchFilters = Field(default_factory=SearchFilters)
    source_queries: dict[str, list[str]] = Field(default_factory=dict)

    @field_validator("source_queries")
    @classmethod
    def _known_sources(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        known = {s.value for s in SourceName}
        for name in value:
            if name not in known:
                raise ValueError(
                    f"source_queries names unknown source {name!r}: one of "
                    f"{', '.join(sorted(known))}"
                )
        return {
            name: [q for q in (" ".join(x.split()) for x in queries) if q]
            for name, queries in value.items()
        }

    def unsatisfied(self) -> list[ChecklistItem]:
        """Checklist items not yet satisfied, in plan order."""
        return [c for c in self.checklist if c.status != ChecklistStatus.SATISFIED]

    def coverage(self) -> float:
        """Share of checklist items satisfied, 0..1 (a partial item counts one half)."""
        weights = {
            ChecklistStatus.SATISFIED: 1.0,
            ChecklistStatus.PARTIAL: 0.5,
            ChecklistStatus.UNSATISFIED: 0.0,
        }
        return sum(weights[c.status] for c in self.checklist) / len(self.checklist)


class Hypothesis(BaseModel):
    """A mechanistic hypothesis: drug -> target -> pathway -> effect.

    For questions that are not about a drug, ``drug`` names the exposure or intervention and
    ``target``/``pathway`` may be empty. ``confidence`` is in 0..1. Evidence ids refer to the
    run's evidence store.
    """

    id: str = ""
    statement: str
    drug: str = ""
    target: str = ""
    pathway: str = ""
    effect: str = ""
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)
    supporting_evidence_ids: list[str] = Field(default_factory=list)
    contradicting_evidence_ids: list[str] = Field(default_factory=list)
    certainty: Certainty | None = None
    """The automated GRADE-style certainty of its evidence
    (:func:`deepcritical.evidence.certainty.rate_certainty`); set in the report stage."""


class JudgeAssessment(BaseModel):
    """The judge's view of the evidence after a round.

    Scores are 0..10. ``sufficient`` is the judge's opinion only: stop rules in the orchestrator
    decide, whatever the judge says. ``recommendation`` follows ``sufficient`` ("synthesize"
    exactly when sufficient). ``reason``: why, in one line (at most 300 characters), shown in
    the run's log; ``reasoning``: the full account.
    """

    mechanism_score: int = Field(default=0, ge=0, le=10)
    clinical_evidence_score: int = Field(default=0, ge=0, le=10)
    coverage: float = Field(default=0.0, ge=0.0, le=1.0)
    sufficient: bool = False
    recommendation: Literal["continue", "synthesize"] = "continue"
    next_queries: list[str] = Field(default_factory=list)
    reasoning: str = ""
    reason: str = ""
