"""What both orchestrators share: the run context, the steps of a run, and the report stage.

A :class:`ResearchRun` holds everything one research run works with: the question, the
settings (limits), the role implementations (LLM or extractive, plus the extractive fallback),
the run's evidence store and search agent, what has happened so far (:class:`RunState`) and
the usage accounting (:class:`RunAccounting`). Its methods are the steps of a run (plan, write
queries, search, hypothesise, judge, write, finish); each emits the run's
:class:`~deepcritical.events.ResearchEvent` through one sink, so the
``iterative`` loop and the ``magentic`` participants emit the same events.

Failure policy (both orchestrators): a failing LLM role falls back to its extractive
implementation with a ``warning`` event and a note in the report metadata; a run that got past
planning always ends in a report built from the store, validated and grounded
(:meth:`ResearchRun.finish`, :mod:`deepcritical.report.finish`), whose metadata
says why gathering stopped. The run's record, stop rules and accounting live in
:mod:`deepcritical.orchestrators.progress` (re-exported here).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import structlog

from deepcritical.agents.checklist import assign_to_checklist
from deepcritical.agents.queries import fresh_queries
from deepcritical.agents.reflection import Reflection, apply_reflection
from deepcritical.agents.search import SearchAgent, SearchRound
from deepcritical.config import Settings
from deepcritical.events import ResearchEvent
from deepcritical.evidence.store import EvidenceStore
from deepcritical.llm.usage import UsageTracker
from deepcritical.models import (
    SOURCE_LABELS,
    Evidence,
    Hypothesis,
    JudgeAssessment,
    ReportPreferences,
    ResearchPlan,
    ResearchReport,
    RunResult,
    UsageReport,
)
from deepcritical.orchestrators.agent_set import AgentSet
from deepcritical.orchestrators.progress import (
    QuestionError,
    RunAccounting,
    RunState,
    check_question,
    gathering_stop_rule,
    number_hypotheses,
)
from deepcritical.report.finish import finish_run, methodology

__all__ = [
    "EventSink",
    "QuestionError",
    "ResearchRun",
    "RunAccounting",
    "RunState",
    "check_question",
    "gathering_stop_rule",
    "number_hypotheses",
]

log = structlog.get_logger(__name__)
T = TypeVar("T")
EventSink = Callable[[ResearchEvent], None]


class ResearchRun:
    """The shared context and steps of one research run.

    Args:
        question: the (checked) research question.
        context: optional background from the user, for the planner.
        settings: limits (max_rounds, max_sources, ...) and report settings.
        agents: the role implementations in use (LLM or extractive).
        store: this run's evidence store (never shared between runs).
        search: the search agent bound to this run's sources and store.
        source_names: names of the sources searched (for the report metadata).
        orchestrator: ``"iterative"`` or ``"magentic"`` (report metadata).
        fallback: extractive implementations used when an LLM role fails; ``None`` when
            ``agents`` are extractive already.
        llm_label: the model spec shown in the report (never a key).
        clock: monotonic clock (seconds).
        usage_trackers: more LLM usage trackers to report (e.g. the Magentic manager's);
            ``agents.usage`` and ``fallback.usage`` are always reported.

    Events go to the sink set with :meth:`set_sink`; by default they are buffered and
    returned by :meth:`drain`.
    """

    def __init__(
        self,
        *,
        question: str,
        context: str | None,
        settings: Settings,
        preferences: ReportPreferences | None = None,
        agents: AgentSet,
        store: EvidenceStore,
        search: SearchAgent,
        source_names: Sequence[str],
        orchestrator: str,
        fallback: AgentSet | None = None,
        llm_label: str = "none",
        clock: Callable[[], float] = time.monotonic,
        usage_trackers: Sequence[UsageTracker] = (),
    ) -> None:
        self.question = question
        self.context = context
        self.preferences = preferences
        self.settings = settings
        self.agents = agents
        self.fallback = fallback
        self.store = store
        self.search = search
        self.source_names = list(source_names)
        self.orchestrator = orchestrator
        self.llm_label = llm_label
        self.clock = clock
        self.started = clock()
        self.state = RunState()
        self.accounting = RunAccounting(clock)
        self.usage_trackers = [agents.usage, *([fallback.usage] if fallback else [])]
        self.usage_trackers.extend(t for t in usage_trackers if t not in self.usage_trackers)
        self._buffer: list[ResearchEvent] = []
        self._sink: EventSink = self._buffer.append

    # --- events -----------------------------------------------------------------------------

    def set_sink(self, sink: EventSink) -> None:
        """Send every later event to ``sink`` (buffered events stay in the buffer)."""
        self._sink = sink

    def buffer_events(self) -> None:
        """Buffer every later event again (the default), for :meth:`drain`."""
        self._sink = self._buffer.append

    def emit(self, event: ResearchEvent) -> None:
        """Send ``event`` to the sink."""
        self._sink(event)

    def drain(self) -> list[ResearchEvent]:
        """The buffered events, oldest first; the buffer is emptied."""
        events = list(self._buffer)
        self._buffer.clear()
        return events

    def warn(self, note: str, *, data: dict[str, Any] | None = None) -> None:
        """Record ``note`` in the report metadata and emit it as a ``warning``."""
        self.state.notes.append(note)
        self.emit(
            ResearchEvent(type="warning", round=self.state.rounds, message=note, data=data or {})
        )

    @property
    def plan(self) -> ResearchPlan:
        """The research plan (set by :meth:`make_plan`)."""
        if self.state.plan is None:
            raise RuntimeError("the run has no plan yet")
        return self.state.plan

    def elapsed(self) -> float:
        """Seconds since the run started."""
        return self.clock() - self.started

    # --- guarded role calls ---------------------------------------------------------------

    async def guarded(
        self, role: str, call: Callable[[AgentSet], Awaitable[T]], stage: str | None = None
    ) -> T | None:
        """Run ``call`` on the configured agents; on failure warn and use the extractive
        fallback; ``None`` when that fails too (or there is none). Timed as ``stage``."""
        with self.accounting.stage(stage or role):
            try:
                return await call(self.agents)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self.fallback is None:
                    self.warn(f"{role} failed: {type(exc).__name__}: {exc}")
                    return None
                self.warn(
                    f"{role} failed ({type(exc).__name__}: {exc}); "
                    "its extractive implementation was used instead"
                )
            try:
                return await call(self.fallback)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.warn(f"extractive {role} failed too: {type(exc).__name__}: {exc}")
                return None

    # --- steps ------------------------------------------------------------------------------

    async def make_plan(self) -> ResearchPlan | None:
        """Plan the research (emits ``planning``); ``None`` when every planner failed."""

        async def make(a: AgentSet) -> ResearchPlan:
            return await a.planner.plan(self.question, self.context)

        plan = await self.guarded("planner", make, "planning")
        if plan is None:
            return None
        if self.preferences is not None:
            plan.preferences = self.preferences.model_copy()
        self.state.plan = plan
        self.emit(
            ResearchEvent(
                type="planning",
                message=f"Plan: {len(plan.checklist)} checklist items",
                data={
                    "refined_question": plan.refined_question,
                    "checklist": [c.model_dump(mode="json") for c in plan.checklist],
                    "queries": plan.queries,
                    "scope_in": plan.scope_in,
                    "scope_out": plan.scope_out,
                    "mesh_terms": plan.mesh_terms,
                    "sub_questions": [q.model_dump(mode="json") for q in plan.sub_questions],
                    "preferences": plan.preferences.model_dump(mode="json"),
                },
            )
        )
        return plan

    async def write_queries(self, round_no: int, assessment: JudgeAssessment | None) -> list[str]:
        """At most ``max_queries_per_round`` queries for round ``round_no``, none tried
        before (``[]`` when the query generators have nothing new). The last reflection's
        follow-up queries are given to the generator first among the suggested queries
        (``assessment.next_queries``)."""
        s = self.settings
        tried = list(self.state.queries)
        if self.state.follow_ups:  # the last reflection's follow-ups go first as suggestions
            base = assessment or JudgeAssessment()
            suggested = [*self.state.follow_ups, *base.next_queries]
            assessment = base.model_copy(update={"next_queries": list(dict.fromkeys(suggested))})
            self.state.follow_ups = []

        async def write(a: AgentSet) -> list[str]:
            return await a.queries.queries(
                self.plan, assessment, round_no, s.max_queries_per_round, tried
            )

        proposed = await self.guarded("query generator", write, "query_generation") or []
        return fresh_queries(proposed, self.state.queries, s.max_queries_per_round)

    def begin_round(self, round_no: int, queries: Sequence[str]) -> None:
        """Record round ``round_no`` and its queries; emit ``searching``."""
        self.state.rounds = round_no
        self.state.queries.extend(queries)
        self.emit(
            ResearchEvent(
                type="searching",
                round=round_no,
                message=(
                    f"Round {round_no}: {len(queries)} queries × {len(self.source_names)} sources"
                ),
                data={"queries": list(queries), "sources": self.source_names},
            )
        )

    async def run_search(self, round_no: int, queries: Sequence[str]) -> SearchRound:
        """Search ``queries`` on every source into the store, assign the new items to the
        checklist; emit source warnings and ``evidence_added``. The round's results are
        re-ranked by relevance to the question and checklist, and at most the room left
        under ``max_sources`` is kept (the most relevant)."""
        plan, state = self.plan, self.state
        with self.accounting.stage("searching"):
            targets = [plan.refined_question, *(c.description for c in plan.checklist)]
            room = max(self.settings.max_sources - len(self.store), 0)
            result = await self.search.run(queries, relevance_to=targets, keep=room)
        self.accounting.record_search(result, self.source_names)
        for source, reason in result.failures.items():
            state.source_failures[source] = reason
            self.emit(
                ResearchEvent(
                    type="warning",
                    round=round_no,
                    message=f"{SOURCE_LABELS.get(source, source)} unavailable: {reason}",
                    data={"source": source, "reason": reason},
                )
            )
        for source, reason in result.partial_failures.items():
            label = SOURCE_LABELS.get(source, source)
            state.notes.append(f"round {round_no}: {label} partly failed: {reason}")
            self.emit(
                ResearchEvent(
                    type="warning",
                    round=round_no,
                    message=f"{label} partly failed: {reason}",
                    data={"source": source, "reason": reason, "partial": True},
                )
            )
        state.sources_answered.update(
            src for src in self.source_names if src not in result.failures
        )
        if result.added_ids:
            with self.accounting.stage("searching"):
                await asyncio.to_thread(
                    assign_to_checklist,
                    plan,
                    self.store,
                    result.added_ids,
                    self.settings.checklist_assign_threshold,
                )
        self.emit(
            ResearchEvent(
                type="evidence_added",
                round=round_no,
                message=(
                    f"{len(result.added_ids)} new evidence items "
                    f"({len(self.store)} in store, coverage {plan.coverage():.0%})"
                ),
                data={
                    "added": len(result.added_ids),
                    "added_ids": result.added_ids,
                    "merged": len(result.merged),
                    "near_duplicates": len(result.near_duplicates),
                    "per_source": result.hits_per_source,
                    "total": len(self.store),
                    "coverage": plan.coverage(),
                    "checklist": {c.key: c.status.value for c in plan.checklist},
                },
            )
        )
        return result

    def evidence_slice(self) -> list[Evidence]:
        """A diverse slice (MMR) of the store for the hypothesis agent and the judge."""
        s = self.settings
        return self.store.select_diverse(
            self.plan.refined_question, s.report_max_evidence * 2, lambda_=s.mmr_lambda
        )

    async def hypothesise(self, round_no: int, evidence: Sequence[Evidence]) -> None:
        """Form or revise the hypotheses from ``evidence``; emit one ``hypothesis`` event per
        current hypothesis (the previous ones stay when every generator fails)."""
        state = self.state

        async def make(a: AgentSet) -> list[Hypothesis]:
            return await a.hypotheses.hypothesize(self.plan, evidence, state.hypotheses)

        hypotheses = await self.guarded("hypothesis agent", make, "hypotheses")
        if hypotheses is not None:
            state.hypotheses = number_hypotheses(hypotheses)
        for h in state.hypotheses:
            self.emit(
                ResearchEvent(
                    type="hypothesis",
                    round=round_no,
                    message=h.statement,
                    data=h.model_dump(mode="json"),
                )
            )

    async def judge(self, round_no: int, evidence: Sequence[Evidence]) -> JudgeAssessment | None:
        """Assess the evidence after round ``round_no``; record and emit the assessment
        (``None`` when every judge failed)."""
        state = self.state

        async def assess(a: AgentSet) -> JudgeAssessment:
            return await a.judge.assess(
                self.plan, evidence, state.hypotheses, round_no, len(self.store)
            )

        assessment = await self.guarded("judge", assess, "judging")
        if assessment is None:
            return None
        state.assessments.append(assessment)
        self.emit(
            ResearchEvent(
                type="judge_assessment",
                round=round_no,
                message=(
                    f"Judge: {'sufficient' if assessment.sufficient else 'not sufficient'}"
                    f" (coverage {assessment.coverage:.0%}) → {assessment.recommendation}"
                ),
                data=assessment.model_dump(mode="json"),
            )
        )
        return assessment

    async def reflect(self, round_no: int, evidence: Sequence[Evidence]) -> Reflection | None:
        """Reflect on the checklist after round ``round_no`` (statuses written into the plan,
        follow-up queries kept for the next round); emit ``reflection``. ``None`` when every
        reflector failed."""
        state = self.state

        async def reflect(a: AgentSet) -> Reflection:
            return await a.reflector.reflect(self.plan, evidence, list(state.queries))

        reflection = await self.guarded("reflection", reflect, "reflection")
        if reflection is None:
            return None
        reflection = apply_reflection(self.plan, reflection)
        state.reflections.append(reflection)
        state.follow_ups = list(reflection.follow_up_queries)
        counts = {
            status: sum(i.status == status for i in reflection.items)
            for status in ("satisfied", "partial", "unsatisfied")
        }
        self.emit(
            ResearchEvent(
                type="reflection",
                round=round_no,
                message=(
                    f"Reflection: {counts['satisfied']} satisfied, {counts['partial']} partial, "
                    f"{counts['unsatisfied']} unsatisfied; "
                    f"{len(reflection.follow_up_queries)} follow-up searches"
                ),
                data=reflection.model_dump(mode="json"),
            )
        )
        return reflection

    async def write_draft(self) -> ResearchReport | None:
        """A draft report from a diverse (MMR) selection of the store; ``None`` when every
        writer failed. Citations are validated by :meth:`finish`, not here."""
        s, state = self.settings, self.state
        selected = self.store.select_diverse(
            self.plan.refined_question, s.report_max_evidence, lambda_=s.mmr_lambda
        )
        assessment = state.assessments[-1] if state.assessments else None

        async def write(a: AgentSet) -> ResearchReport:
            return await a.writer.write(self.plan, selected, state.hypotheses, assessment)

        return await self.guarded("report writer", write, "writing")

    async def finish(
        self, draft: ResearchReport | None, done_data: dict[str, Any] | None = None
    ) -> RunResult | None:
        """Turn ``draft`` into the run's validated, grounded report; emit ``report_section``
        events and ``done`` (or ``error`` when there is no draft or validation left problems).
        See :func:`deepcritical.report.finish.finish_run`."""
        return await finish_run(self, draft, done_data)

    def usage_report(self) -> UsageReport:
        """LLM, search and time usage of the run so far."""
        return self.accounting.report(self.usage_trackers)

    def confidence(self) -> float:
        """Half checklist coverage, half the best hypothesis confidence (coverage if none)."""
        coverage = self.plan.coverage()
        best = max((h.confidence for h in self.state.hypotheses), default=coverage)
        return round(0.5 * coverage + 0.5 * best, 2)

    def methodology(self) -> str:
        """Factual account of the run (built from what happened, never by a model; see
        :func:`deepcritical.report.finish.methodology`)."""
        return methodology(self)
