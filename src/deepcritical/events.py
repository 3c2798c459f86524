"""The event model both orchestrators emit while a run streams.

Consumers (CLI, web UI, MCP tool, jobs event log, Python callers) iterate
``async for event in research(...)``; the last event is ``done`` (carrying the
:class:`~deepcritical.models.RunResult`) or ``error``.

Each event type carries its own typed ``data`` (:data:`EventData`, a union discriminated by
``data.type``, which always equals the event's ``type``): consumers read fields, never string
keys, so a renamed field fails type checking instead of silently reading nothing. The stored
event log (``run_events.payload``) keeps the JSON of :meth:`ResearchEvent.model_dump`; rows
written before ``data`` carried its ``type`` still load (the event's ``type`` is filled in).
"""

from __future__ import annotations

import builtins
from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from deepcritical.models import (
    PICO,
    ChecklistItem,
    Hypothesis,
    JudgeAssessment,
    ReportPreferences,
    ResearchPlan,
    RunResult,
    ScreenedRecord,
    SearchFilters,
    SubQuestion,
    UsageReport,
    utc_now,
)

__all__ = [
    "CitationTrackingData",
    "DoneData",
    "ErrorData",
    "EventData",
    "EventType",
    "EvidenceAddedData",
    "EvidenceReadyData",
    "HypothesisData",
    "JudgeAssessmentData",
    "ManagerData",
    "PlanReadyData",
    "PlanningData",
    "ReflectionData",
    "ReflectionItemData",
    "ReportSectionData",
    "ResearchEvent",
    "SearchingData",
    "StartedData",
    "WarningData",
    "WorkflowSummary",
    "WritingData",
]

D = TypeVar("D", bound=BaseModel)

EventType = Literal[
    "started",
    "planning",
    "searching",
    "evidence_added",
    "hypothesis",
    "judge_assessment",
    "reflection",
    "writing",
    "report_section",
    "manager",
    "plan_ready",
    "evidence_ready",
    "warning",
    "error",
    "done",
]


class _Data(BaseModel):
    """Base of every event's data: unknown fields are an error, not silently dropped."""

    model_config = ConfigDict(extra="forbid")


class StartedData(_Data):
    """``started``: the run's id (set once the run is recorded; ``None`` without a state
    store), whether it runs as a job, the sources searched, the model's label (``"none"``
    offline), the orchestrator's name, and the Magentic manager's limits (rounds, stalls,
    resets; ``None`` for the iterative orchestrator)."""

    type: Literal["started"] = "started"
    run_id: str | None = None
    job: bool = False
    sources: list[str] = Field(default_factory=list)
    llm: str = ""
    orchestrator: str = ""
    max_round_count: int | None = None
    max_stall_count: int | None = None
    max_reset_count: int | None = None


class PlanningData(_Data):
    """``planning``: the plan as made (see :class:`~deepcritical.models.ResearchPlan`);
    ``question_type`` is the :class:`~deepcritical.models.QuestionType` value, ``""`` when
    none was recognised; ``filters`` the plan's search filters and ``source_queries`` its
    per-source round-1 queries (empty in events stored before they existed)."""

    type: Literal["planning"] = "planning"
    refined_question: str
    question_type: str = ""
    pico: PICO = Field(default_factory=PICO)
    checklist: list[ChecklistItem] = Field(default_factory=list)
    queries: list[str] = Field(default_factory=list)
    scope_in: list[str] = Field(default_factory=list)
    scope_out: list[str] = Field(default_factory=list)
    mesh_terms: list[str] = Field(default_factory=list)
    sub_questions: list[SubQuestion] = Field(default_factory=list)
    preferences: ReportPreferences = Field(default_factory=ReportPreferences)
    filters: SearchFilters = Field(default_factory=SearchFilters)
    source_queries: dict[str, list[str]] = Field(default_factory=dict)
    sources: list[str] = Field(default_factory=list)
    reviewed: bool = False
    changes: list[str] = Field(default_factory=list)
    """A plan the user reviewed (``reviewed``) is announced again by a second ``planning``
    event, with the sources it keeps (empty: all) and what the user changed."""

    @classmethod
    def of_plan(
        cls, plan: ResearchPlan, *, reviewed: bool = False, changes: list[str] | None = None
    ) -> PlanningData:
        """The event data of ``plan`` (a copy: later changes to the plan do not reach it);
        ``reviewed`` and ``changes`` for the plan the user reviewed."""
        return cls(
            refined_question=plan.refined_question,
            question_type=plan.question_type.value if plan.question_type else "",
            pico=plan.pico.model_copy(deep=True),
            checklist=[c.model_copy(deep=True) for c in plan.checklist],
            queries=list(plan.queries),
            scope_in=list(plan.scope_in),
            scope_out=list(plan.scope_out),
            mesh_terms=list(plan.mesh_terms),
            sub_questions=[q.model_copy(deep=True) for q in plan.sub_questions],
            preferences=plan.preferences.model_copy(),
            filters=plan.filters,
            source_queries={k: list(v) for k, v in plan.source_queries.items()},
            sources=list(plan.sources) if reviewed else [],
            reviewed=reviewed,
            changes=list(changes or []),
        )


class PlanReadyData(_Data):
    """``plan_ready``: the run stopped after planning and waits for the user's review
    (``Settings.review_plan``): the plan as proposed, the run's sources (a reviewed plan
    may keep a subset), the review's number among the run's reviews and the seconds it waits
    before ``Settings.review_timeout_action`` applies. Approve it with
    ``deepcritical.api.approve_plan`` (or ``deepcritical runs approve-plan``)."""

    type: Literal["plan_ready"] = "plan_ready"
    plan: ResearchPlan
    sources: list[str] = Field(default_factory=list)
    review: int = 1
    timeout_seconds: float = 0.0


class EvidenceReadyData(_Data):
    """``evidence_ready``: the run stopped after gathering and waits for the user's review
    of the screened evidence (``Settings.review_evidence``): the table of every record
    (included and excluded, with the screening reason), the review's number and its timeout
    in seconds. Decide with ``deepcritical.api.approve_evidence`` (or ``deepcritical runs
    approve-evidence``)."""

    type: Literal["evidence_ready"] = "evidence_ready"
    records: list[ScreenedRecord] = Field(default_factory=list)
    review: int = 1
    timeout_seconds: float = 0.0


class SearchingData(_Data):
    """``searching``: the round's queries, each sent to every source named."""

    type: Literal["searching"] = "searching"
    queries: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)


class CitationTrackingData(_Data):
    """What citation tracking did in a round (see
    :class:`~deepcritical.orchestrators.citation_tracking.CitationLog`): the seeds' labels,
    the records the services returned, those already in the store, the number added and
    how many of those screening found off-topic; ``skipped`` says why nothing was added."""

    seeds: list[str] = Field(default_factory=list)
    identified: int = 0
    already_found: int = 0
    added: int = 0
    off_topic: int = 0
    skipped: str = ""


class EvidenceAddedData(_Data):
    """``evidence_added``: a round's results. ``added`` new records (their ids in
    ``added_ids``), ``merged`` into records already held, ``near_duplicates`` folded;
    hits per source; records found off-topic; full texts read this round and in all;
    citation tracking (when it ran this round); on-topic and total records in the store;
    checklist coverage (0-1) and each checklist item's status by key."""

    type: Literal["evidence_added"] = "evidence_added"
    added: int = 0
    added_ids: list[str] = Field(default_factory=list)
    merged: int = 0
    near_duplicates: int = 0
    per_source: dict[str, int] = Field(default_factory=dict)
    off_topic: int = 0
    full_texts: int = 0
    full_texts_total: int = 0
    citation_tracking: CitationTrackingData | None = None
    on_topic_total: int = 0
    total: int = 0
    coverage: float = 0.0
    checklist: dict[str, str] = Field(default_factory=dict)


class HypothesisData(Hypothesis):
    """``hypothesis``: one hypothesis of the round's set (a new round's set replaces the
    last)."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["hypothesis"] = "hypothesis"


class JudgeAssessmentData(JudgeAssessment):
    """``judge_assessment``: the judge's assessment after a round."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["judge_assessment"] = "judge_assessment"


class ReflectionItemData(_Data):
    """One checklist item's status after a reflection (``satisfied``, ``partial`` or
    ``unsatisfied``) and what evidence it still misses."""

    key: str
    status: str
    missing: str = ""


class ReflectionData(_Data):
    """``reflection``: the checklist statuses after a round and the follow-up queries kept
    for the next (the JSON of :class:`~deepcritical.agents.reflection.Reflection`)."""

    type: Literal["reflection"] = "reflection"
    items: list[ReflectionItemData] = Field(default_factory=list)
    follow_up_queries: list[str] = Field(default_factory=list)
    reasoning: str = ""


class WritingData(_Data):
    """``writing``: the number of evidence items chosen for the report."""

    type: Literal["writing"] = "writing"
    evidence: int = 0


class ReportSectionData(_Data):
    """``report_section``: the heading of one checked finding section."""

    type: Literal["report_section"] = "report_section"
    heading: str = ""


class ManagerData(_Data):
    """``manager`` (the ``magentic`` orchestrator only), by ``kind``:

    - ``progress``: a progress-ledger decision: the manager's round, whether it finds the
      request satisfied, the next speaker and its instruction, and the ledger's loop and
      progress flags;
    - ``plan`` / ``replan``: the manager's (new) plan, at most 4,000 characters;
    - ``overruled``: "the request is satisfied" overruled, with the reason, and the
      participant sent on (``next_speaker``).
    """

    type: Literal["manager"] = "manager"
    kind: Literal["progress", "plan", "replan", "overruled"]
    manager_round: int | None = None
    satisfied: bool | None = None
    next_speaker: str | None = None
    instruction: str | None = None
    in_loop: bool | None = None
    progress: bool | None = None
    plan: str | None = None
    reason: str | None = None


class WarningData(_Data):
    """``warning``: what failed, when it concerns one thing: a ``source`` (with the
    ``reason``; ``partial`` when only some of its searches failed), a full text (its
    PMCID in ``full_text``, the record in ``evidence_id``), or citation tracking. Empty for
    other notes (the event's message says it all)."""

    type: Literal["warning"] = "warning"
    source: str | None = None
    reason: str | None = None
    partial: bool = False
    full_text: str | None = None
    evidence_id: str | None = None
    citation_tracking: bool = False


class ErrorData(_Data):
    """``error``: the event's message says why the run ended."""

    type: Literal["error"] = "error"
    cancelled: bool = False
    """The run was cancelled (a review cancelled by the user or by its timeout), not failed."""


class WorkflowSummary(_Data):
    """How the Magentic workflow went: the manager's rounds, re-plans and overruled
    "satisfied" answers; whether it found the request satisfied; whether the workflow timed
    out or failed (the error's description); turns per participant; the manager's final
    answer (at most 2,000 characters)."""

    manager_rounds: int = 0
    replans: int = 0
    overruled: int = 0
    satisfied: bool = False
    timed_out: bool = False
    error: str | None = None
    speakers: dict[str, int] = Field(default_factory=dict)
    final_answer: str = ""


class DoneData(_Data):
    """``done``: why gathering stopped (a
    :data:`~deepcritical.models.StopReason` value), the run's usage, and (``magentic``
    only) how its workflow went."""

    type: Literal["done"] = "done"
    stop_reason: str = ""
    usage: UsageReport = Field(default_factory=UsageReport)
    workflow: WorkflowSummary | None = None


EventData = Annotated[
    StartedData
    | PlanningData
    | SearchingData
    | EvidenceAddedData
    | HypothesisData
    | JudgeAssessmentData
    | ReflectionData
    | WritingData
    | ReportSectionData
    | ManagerData
    | PlanReadyData
    | EvidenceReadyData
    | WarningData
    | ErrorData
    | DoneData,
    Field(discriminator="type"),
]
"""The data of one event, by event type."""


class ResearchEvent(BaseModel):
    """One progress event.

    ``message`` is a short human-readable line; ``data`` holds the typed details of the
    event's type (:data:`EventData`; e.g. ``searching``: :class:`SearchingData`). ``data``
    may be omitted (then the type's defaults) or given as a dict (validated as the type's
    model). ``round`` is the 1-based search round, 0 before the first. ``result`` is set on
    ``done`` only.

    ``writing`` marks the start of the report's writing; ``report_section`` events follow,
    one per finding section, once the report is checked. ``manager`` events come from the
    ``magentic`` orchestrator only.

    Raises:
        pydantic.ValidationError: ``data`` does not fit the type's model, or its ``type``
            is not the event's.
    """

    type: EventType
    message: str
    round: int = 0
    # Omitted, ``data`` is the event type's own default (filled in by ``_typed_data``, which
    # runs first); this factory is reached only when ``type`` is missing too, an error then.
    data: EventData = Field(default_factory=ErrorData)
    timestamp: datetime = Field(default_factory=utc_now)
    result: RunResult | None = None

    @model_validator(mode="before")
    @classmethod
    def _typed_data(cls, value: Any) -> Any:
        """Give ``data`` the event's type when it has none (omitted, a dict without
        ``type``: the rows stored before events were typed)."""
        if not isinstance(value, dict) or "type" not in value:
            return value
        data = value.get("data")
        if data is None:
            return {**value, "data": {"type": value["type"]}}
        if isinstance(data, dict) and "type" not in data:
            return {**value, "data": {**data, "type": value["type"]}}
        return value

    @model_validator(mode="after")
    def _same_type(self) -> ResearchEvent:
        if self.data.type != self.type:
            raise ValueError(f"a {self.type!r} event cannot carry {self.data.type!r} data")
        return self

    def data_as(self, kind: builtins.type[D]) -> D:
        """``data``, typed as ``kind`` (e.g. ``event.data_as(DoneData).stop_reason``).

        Raises:
            TypeError: the event's data is not a ``kind``.
        """
        if not isinstance(self.data, kind):
            raise TypeError(f"a {self.type!r} event carries no {kind.__name__}")
        return self.data

    @property
    def run_id(self) -> str | None:
        """The run's id, on a ``started`` event of a recorded run; else ``None``."""
        return self.data.run_id if isinstance(self.data, StartedData) else None
