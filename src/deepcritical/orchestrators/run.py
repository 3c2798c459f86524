"""The steps of a research run, shared by both orchestrators: :class:`ResearchRun`.

A :class:`ResearchRun` holds one run's question, its dependencies (:class:`~deepcritical.
orchestrators.deps.RunDeps`: settings, roles, evidence store, search), what has happened so
far (:class:`~deepcritical.orchestrators.progress.RunState`) and the usage accounting. Its
methods are the steps of a run (plan, write queries, search, hypothesise, judge, reflect,
write, finish); each emits the run's :class:`~deepcritical.events.ResearchEvent` into the
run's :class:`~deepcritical.orchestrators.channel.EventChannel` and publishes them when it
ends, so the ``iterative`` loop and the ``magentic`` participants stream the same events the
same way.

Failure policy (both orchestrators): a failing LLM role falls back to its extractive
implementation with a ``warning`` event and a note in the report metadata; a run that got past
planning always ends in a report built from the store, validated and grounded
(:meth:`ResearchRun.finish`, :func:`deepcritical.report.finish.finish_report`), whose metadata
says why gathering stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Sequence
from typing import Any, ParamSpec, TypeVar

from deepcritical.agents.queries import fresh_queries
from deepcritical.agents.reflection import Reflection
from deepcritical.agents.search import SearchRound
from deepcritical.events import (
    PlanningData,
    ResearchEvent,
    SearchingData,
    StartedData,
    WarningData,
    WorkflowSummary,
    WritingData,
)
from deepcritical.llm.llm_errors import describe_error
from deepcritical.llm.usage import UsageTracker
from deepcritical.models import (
    Evidence,
    JudgeAssessment,
    ReportPreferences,
    ResearchPlan,
    ResearchReport,
    RunResult,
    UsageReport,
    on_topic_items,
    plural,
    retracted_items,
)
from deepcritical.orchestrators.agent_set import AgentSet
from deepcritical.orchestrators.assessment_step import (
    form_hypotheses,
    judge_evidence,
    reflect_on_checklist,
)
from deepcritical.orchestrators.channel import EventChannel
from deepcritical.orchestrators.deps import RunDeps, requested_filters
from deepcritical.orchestrators.flow import FlowLog
from deepcritical.orchestrators.progress import (
    REPHRASED_EMPTY_ROUNDS,
    RunAccounting,
    RunState,
)
from deepcritical.orchestrators.report_step import finish_run
from deepcritical.orchestrators.search_step import search_round
from deepcritical.state.run_store import RunStore
from deepcritical.state.sources import SourceCollector
from deepcritical.state.syllabus import Syllabus
from deepcritical.telemetry.tracing import attached

__all__ = ["ResearchRun"]

T = TypeVar("T")
P = ParamSpec("P")


def step(method: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, Coroutine[Any, Any, T]]:
    """A step of the run (a :class:`ResearchRun` method): when it returns, the events it
    emitted are published (and taken by the consumer) before the caller goes on."""

    @functools.wraps(method)
    async def published(*args: P.args, **kwargs: P.kwargs) -> T:
        result = await method(*args, **kwargs)
        run = args[0]
        if isinstance(run, ResearchRun):
            await run.events.publish()
        return result

    return published


class ResearchRun:
    """The shared context and steps of one research run.

    Args:
        deps: the run's dependencies (settings, roles, store, search, sources, model label,
            clock).
        question: the research question, checked already
            (:func:`~deepcritical.orchestrators.deps.check_question`).
        context: optional background from the user, for the planner.
        preferences: the user's report preferences (audience, length, focus).
        orchestrator: ``"iterative"`` or ``"magentic"`` (report metadata).
        usage_trackers: more LLM usage trackers to report (e.g. the Magentic manager's);
            ``agents.usage`` and ``fallback.usage`` are always reported.

    Events go to :attr:`events`; :meth:`stream` runs an orchestrator's work and yields them.
    """

    def __init__(
        self,
        deps: RunDeps,
        question: str,
        context: str | None = None,
        preferences: ReportPreferences | None = None,
        *,
        orchestrator: str,
        usage_trackers: Sequence[UsageTracker] = (),
    ) -> None:
        self.deps = deps
        self.question = question
        self.context = context
        self.preferences = preferences
        self.settings = deps.settings
        self.agents = deps.agents
        self.fallback = deps.fallback
        self.store = deps.store
        self.search = deps.search
        self.source_names = list(deps.source_names)
        self.orchestrator = orchestrator
        self.llm_label = deps.llm_label
        self.clock = deps.clock
        self.started = self.clock()
        self.state = RunState()
        self.accounting = RunAccounting(self.clock)
        self.flow_log = FlowLog()
        self.events = EventChannel()
        fallback = [deps.fallback.usage] if deps.fallback else []
        self.usage_trackers = [deps.agents.usage, *fallback]
        self.usage_trackers.extend(t for t in usage_trackers if t not in self.usage_trackers)
        self.collector = deps.collector
        self._private_runs: RunStore | None = None

    # --- events -----------------------------------------------------------------------------

    def emit(self, event: ResearchEvent) -> None:
        """Emit ``event`` (the consumer gets it when the current step ends)."""
        self.events.emit(event)

    async def stream(
        self, work: Callable[[], Awaitable[None]]
    ) -> AsyncGenerator[ResearchEvent, None]:
        """Run ``work()`` (the orchestrator's steps) as one task and stream the events it
        emits (see :meth:`~deepcritical.orchestrators.channel.EventChannel.stream`), in the
        trace of the run's span (``deps.trace_parent``); the run's private source collection
        (if one was opened) is closed when it ends."""

        async def traced() -> None:  # the run's steps, children of its span
            with attached(self.deps.trace_parent):
                await work()

        try:
            async with contextlib.aclosing(self.events.stream(traced)) as events:
                async for event in events:
                    yield event
        finally:
            if self._private_runs is not None:
                self._private_runs.close()
                self._private_runs = None

    def source_collector(self) -> SourceCollector:
        """The run's source collector, its syllabus set from the plan's checklist when it has
        none: the one of :class:`RunDeps` (the recorder's), else a private one in memory
        (opened on first use, closed when :meth:`stream` ends).

        Raises:
            RuntimeError: the run has no plan yet.
            sqlalchemy.exc.SQLAlchemyError: the private database cannot be created.
        """
        if self.collector is None:
            runs = RunStore.in_memory()
            self._private_runs = runs
            run_id = runs.create_run(self.question, {})
            store = self.store
            self.collector = SourceCollector(runs, run_id, citation_exists=lambda cid: cid in store)
        if self.collector.syllabus is None:
            self.collector.syllabus = Syllabus.from_checklist(self.plan.checklist)
        return self.collector

    def warn(self, note: str, *, data: WarningData | None = None) -> None:
        """Record ``note`` in the report metadata and emit it as a ``warning``."""
        self.state.notes.append(note)
        self.emit(
            ResearchEvent(
                type="warning", round=self.state.rounds, message=note, data=data or WarningData()
            )
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

    @property
    def empty_round_limit(self) -> int:
        """Search rounds this run may spend finding nothing on-topic before gathering stops:
        :data:`~deepcritical.orchestrators.progress.REPHRASED_EMPTY_ROUNDS` when a model
        writes the queries (LLM agents), else 1."""
        return REPHRASED_EMPTY_ROUNDS if self.agents.mode == "llm" else 1

    # --- guarded role calls ---------------------------------------------------------------

    async def guarded(
        self, role: str, call: Callable[[AgentSet], Awaitable[T]], stage: str | None = None
    ) -> T | None:
        """Run ``call`` on the configured agents; on failure warn and use the extractive
        fallback; ``None`` when that fails too (or there is none). Timed as ``stage``."""
        with self.accounting.stage(stage or role, role=role):
            try:
                return await call(self.agents)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - any role failure falls back, with a warning
                if self.fallback is None:
                    self.warn(f"{role} failed: {describe_error(exc)}")
                    return None
                self.warn(
                    f"{role} failed ({describe_error(exc)}); "
                    "its extractive implementation was used instead"
                )
            try:
                return await call(self.fallback)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the step goes without, with a warning
                self.warn(f"extractive {role} failed too: {describe_error(exc)}")
                return None

    # --- steps ------------------------------------------------------------------------------

    @step
    async def start(
        self,
        *,
        max_round_count: int | None = None,
        max_stall_count: int | None = None,
        max_reset_count: int | None = None,
    ) -> None:
        """Emit ``started``: the question, the sources, the model, the orchestrator and (the
        ``magentic`` orchestrator) its manager's limits (see
        :class:`~deepcritical.events.StartedData`)."""
        self.emit(
            ResearchEvent(
                type="started",
                message=f"Researching: {self.question}",
                data=StartedData(
                    sources=list(self.source_names),
                    llm=self.llm_label,
                    orchestrator=self.orchestrator,
                    max_round_count=max_round_count,
                    max_stall_count=max_stall_count,
                    max_reset_count=max_reset_count,
                ),
            )
        )

    @step
    async def make_plan(self) -> ResearchPlan | None:
        """Plan the research (emits ``planning``); ``None`` when every planner failed (then
        the run ends: an ``error`` event says why)."""

        async def make(a: AgentSet) -> ResearchPlan:
            return await a.planner.plan(self.question, self.context)

        plan = await self.guarded("planner", make, "planning")
        if plan is None:
            self.emit(
                ResearchEvent(
                    type="error", message="planning failed: " + "; ".join(self.state.notes)
                )
            )
            return None
        if self.preferences is not None:
            plan.preferences = self.preferences.model_copy()
        plan.filters = requested_filters(self.settings, plan.filters)
        self.state.plan = plan
        self.emit(
            ResearchEvent(
                type="planning",
                message=f"Plan: {len(plan.checklist)} checklist items",
                data=PlanningData.of_plan(plan),
            )
        )
        return plan

    @step
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

    @step
    async def begin_round(self, round_no: int, queries: Sequence[str]) -> None:
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
                data=SearchingData(queries=list(queries), sources=list(self.source_names)),
            )
        )

    @step
    async def run_search(self, round_no: int, queries: Sequence[str]) -> SearchRound:
        """Search ``queries`` on every source into the store, then screen, read full texts,
        track citations and appraise (see
        :func:`~deepcritical.orchestrators.search_step.search_round`)."""
        return await search_round(self, round_no, queries)

    def on_topic(self) -> list[Evidence]:
        """The items screening did not find off-topic and no source marks as retracted
        (``Citation.retracted``), in store order: the only ones that reach the checklist,
        hypotheses, judge, writer, verdict and references."""
        return on_topic_items(self.store.all())

    def retracted(self) -> list[Evidence]:
        """The items screening did not find off-topic but a source marks as retracted, in
        store order: listed, flagged, in the report's "Retracted or flagged records found"
        section, never cited as support."""
        return retracted_items(self.store.all())

    def on_topic_ids(self) -> list[str]:
        """Ids of :meth:`on_topic`."""
        return [e.id for e in self.on_topic()]

    def evidence_slice(self) -> list[Evidence]:
        """A diverse slice (MMR) of the on-topic items for the hypothesis agent and the
        judge."""
        s = self.settings
        return self.store.select_diverse(
            self.plan.refined_question,
            s.report_max_evidence * 2,
            lambda_=s.mmr_lambda,
            candidate_ids=self.on_topic_ids(),
        )

    @step
    async def hypothesise(self, round_no: int, evidence: Sequence[Evidence]) -> None:
        """Form or revise the hypotheses (see :func:`~deepcritical.orchestrators.
        assessment_step.form_hypotheses`)."""
        await form_hypotheses(self, round_no, evidence)

    @step
    async def judge(self, round_no: int, evidence: Sequence[Evidence]) -> JudgeAssessment | None:
        """Assess the evidence after round ``round_no`` (see
        :func:`~deepcritical.orchestrators.assessment_step.judge_evidence`)."""
        return await judge_evidence(self, round_no, evidence)

    @step
    async def reflect(self, round_no: int, evidence: Sequence[Evidence]) -> Reflection | None:
        """Reflect on the checklist after round ``round_no`` (see
        :func:`~deepcritical.orchestrators.assessment_step.reflect_on_checklist`)."""
        return await reflect_on_checklist(self, round_no, evidence)

    @step
    async def write_draft(self) -> ResearchReport | None:
        """A draft report from a diverse (MMR) selection of the store, announced by a
        ``writing`` event; ``None`` when every writer failed. Citations are validated by
        :meth:`finish`, not here."""
        s, state = self.settings, self.state
        selected = self.store.select_diverse(
            self.plan.refined_question,
            s.report_max_evidence,
            lambda_=s.mmr_lambda,
            candidate_ids=self.on_topic_ids(),
        )
        assessment = state.assessments[-1] if state.assessments else None
        self.emit(
            ResearchEvent(
                type="writing",
                round=state.rounds,
                message=f"Writing the report from {plural(len(selected), 'evidence item')}",
                data=WritingData(evidence=len(selected)),
            )
        )

        async def write(a: AgentSet) -> ResearchReport:
            return await a.writer.write(self.plan, selected, state.hypotheses, assessment)

        return await self.guarded("report writer", write, "writing")

    @step
    async def finish(
        self, draft: ResearchReport | None, workflow: WorkflowSummary | None = None
    ) -> RunResult | None:
        """Turn ``draft`` into the run's validated, grounded report and emit
        ``report_section`` events and ``done`` (``error`` when it cannot be): see
        :func:`~deepcritical.orchestrators.report_step.finish_run`."""
        return await finish_run(self, draft, workflow)

    def usage_report(self) -> UsageReport:
        """LLM, search and time usage of the run so far."""
        return self.accounting.report(self.usage_trackers)
