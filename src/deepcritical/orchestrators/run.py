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

from deepcritical.agents.checklist import assign_keys, assign_to_checklist
from deepcritical.agents.queries import fresh_queries
from deepcritical.agents.reflection import Reflection, apply_reflection
from deepcritical.agents.screener import LLMSourceScreener
from deepcritical.agents.search import SearchRound
from deepcritical.environment import software_environment
from deepcritical.events import ResearchEvent
from deepcritical.evidence.embeddings import embedder_name
from deepcritical.evidence.screening import screen_items
from deepcritical.evidence.store import AddResult
from deepcritical.evidence.study_extraction import appraise_items
from deepcritical.llm.llm_errors import describe_error
from deepcritical.llm.usage import UsageTracker
from deepcritical.logs import get_logger
from deepcritical.models import (
    SOURCE_LABELS,
    Evidence,
    GroundedClaim,
    Hypothesis,
    JudgeAssessment,
    ReportPreferences,
    ResearchPlan,
    ResearchReport,
    RunResult,
    Screening,
    UsageReport,
    plural,
    stop_reason_text,
)
from deepcritical.orchestrators.agent_set import AgentSet
from deepcritical.orchestrators.channel import EventChannel
from deepcritical.orchestrators.citation_tracking import (
    choose_candidates,
    citation_seeds,
    follow_citations,
    per_seed_limit,
)
from deepcritical.orchestrators.deps import RunDeps
from deepcritical.orchestrators.flow import FlowLog
from deepcritical.orchestrators.full_texts import full_text_candidates, read_full_texts
from deepcritical.orchestrators.progress import (
    REPHRASED_EMPTY_ROUNDS,
    RunAccounting,
    RunState,
    number_hypotheses,
)
from deepcritical.report.finish import GroundingOptions, RunFacts, finish_report
from deepcritical.report.grounding import RewriteFunction
from deepcritical.report.methodology import (
    CitationCounts,
    FullTextCounts,
    MethodologyRecord,
    ScreeningCounts,
    methodology_text,
)
from deepcritical.sources.bounded import bound_evidence
from deepcritical.state.run_store import RunStore
from deepcritical.state.sources import SourceCollector
from deepcritical.state.syllabus import Syllabus

__all__ = ["ResearchRun"]

log = get_logger(__name__)
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
        emits (see :meth:`~deepcritical.orchestrators.channel.EventChannel.stream`); the
        run's private source collection (if one was opened) is closed when it ends."""
        try:
            async with contextlib.aclosing(self.events.stream(work)) as events:
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
        with self.accounting.stage(stage or role):
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
    async def start(self, **details: Any) -> None:
        """Emit ``started``: the question, the sources, the model, the orchestrator and
        ``details`` (orchestrator-specific limits)."""
        self.emit(
            ResearchEvent(
                type="started",
                message=f"Researching: {self.question}",
                data={
                    "sources": self.source_names,
                    "llm": self.llm_label,
                    "orchestrator": self.orchestrator,
                    **details,
                },
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
        self.state.plan = plan
        self.emit(
            ResearchEvent(
                type="planning",
                message=f"Plan: {len(plan.checklist)} checklist items",
                data={
                    "refined_question": plan.refined_question,
                    "question_type": plan.question_type.value if plan.question_type else "",
                    "pico": plan.pico.model_dump(mode="json"),
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
                data={"queries": list(queries), "sources": self.source_names},
            )
        )

    @step
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
        self.flow_log.record(result)
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
        off_topic = await self._screen(round_no, result.added_ids)
        full_texts = await self._read_full_texts(round_no)
        tracked = await self._track_citations(round_no)
        appraise_items(self.on_topic())  # study records (rules; fast), before the checkpoint
        await self._appraise_by_model(result.added_ids)
        self.emit(
            ResearchEvent(
                type="evidence_added",
                round=round_no,
                message=(
                    f"{len(result.added_ids)} new evidence items "
                    + (
                        f"and {tracked.get('added', 0)} from citation tracking "
                        if tracked is not None
                        else ""
                    )
                    + f"({len(self.store)} in store, coverage {plan.coverage():.0%})"
                ),
                data={
                    "added": len(result.added_ids),
                    "added_ids": result.added_ids,
                    "merged": len(result.merged),
                    "near_duplicates": len(result.near_duplicates),
                    "per_source": result.hits_per_source,
                    "off_topic": off_topic,
                    "full_texts": full_texts,
                    "full_texts_total": len(state.full_texts.read),
                    **({"citation_tracking": tracked} if tracked else {}),
                    "on_topic_total": len(self.on_topic_ids()),
                    "total": len(self.store),
                    "coverage": plan.coverage(),
                    "checklist": {c.key: c.status.value for c in plan.checklist},
                },
            )
        )
        return result

    async def _appraise_by_model(self, ids: Sequence[str]) -> int:
        """With a model and ``Settings.model_appraisals`` > 0: the study records of the most
        relevant of the round's new on-topic items (``ids``) read by the model
        (:class:`~deepcritical.agents.appraiser.LLMStudyExtractor`, every value checked
        verbatim), within that many per run; a failed call keeps the rules' record, with a
        warning. Returns how many the model read."""
        appraiser = self.agents.appraiser
        done = sum(e.study is not None and e.study.method == "model" for e in self.store.all())
        room = self.settings.model_appraisals - done
        if appraiser is None or room <= 0:
            return 0
        new = set(ids)
        chosen = sorted(
            (e for e in self.on_topic() if e.id in new and e.study and e.study.method == "rules"),
            key=lambda e: -e.relevance,
        )[:room]
        read = 0
        with self.accounting.stage("appraisal"):
            for item in chosen:
                try:
                    item.study = await appraiser.extract(item)
                    read += 1
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - the rules' record stays, with a warning
                    self.warn(
                        f"appraiser failed on {item.id} ({describe_error(exc)}); its study "
                        "record was read by rules"
                    )
        return read

    async def _read_full_texts(self, round_no: int) -> int:
        """Read the open-access full texts of the most relevant on-topic items with a PMCID
        (:mod:`~deepcritical.orchestrators.full_texts`; within ``max_full_texts`` per run),
        store them as the items' passages, screen them again on their passages (calibrated
        screening: a partial item whose body answers the question becomes relevant), and emit
        a warning for each one that could not be read (the item keeps its abstract). Returns
        the number read this round."""
        reader = self.deps.full_text
        log = self.state.full_texts
        if reader is None:
            return 0
        chosen = full_text_candidates(self.on_topic(), log, self.settings.max_full_texts)
        if not chosen:
            return 0
        with self.accounting.stage("full texts"):
            outcome = await read_full_texts(chosen, reader, log)
        for item in outcome.read:
            self.store.update(item)
        read = [item.id for item in outcome.read]
        calibration = self.deps.screening
        if read and calibration is not None and self.deps.agents.screener is None:
            # screened on the abstract before: now also on the passages that answer the question
            await asyncio.to_thread(
                screen_items, self.store, self.plan.refined_question, read, calibration
            )
        for evidence_id, pmcid, reason in outcome.failed:
            self.emit(
                ResearchEvent(
                    type="warning",
                    round=round_no,
                    message=f"full text of {pmcid} not read ({reason}); its abstract is used",
                    data={"full_text": pmcid, "evidence_id": evidence_id, "reason": reason},
                )
            )
        return len(outcome.read)

    async def _track_citations(self, round_no: int) -> dict[str, Any] | None:
        """Citation tracking, once per run (:mod:`~deepcritical.orchestrators.citation_tracking`):
        after the first round that leaves on-topic records with a PMID or DOI, follow the
        references and citing papers of the ``citation_seeds`` most relevant, add at most
        ``citation_candidates`` new records (within ``max_sources``) to the store, screen them
        as a round's new items and count them in the flow of records. Returns what it did
        (for the round's ``evidence_added`` event), ``None`` when it did not run now."""
        linker, log, s = self.deps.citations, self.state.citations, self.settings
        if linker is None or log.done:
            return None
        if not self.state.sources_answered & {"pubmed", "openalex"}:
            # offline, or both down: every lookup would fail after its retries
            log.skipped = "neither PubMed nor OpenAlex answered the searches"
            return None
        log.skipped = ""
        seeds = citation_seeds(self.on_topic(), self.state.full_texts.references, s.citation_seeds)
        if not seeds:
            return None  # nothing on-topic to start from yet: a later round may have some
        log.done = True
        log.seeds = [seed.label for seed in seeds]
        room = min(s.citation_candidates, max(s.max_sources - len(self.store), 0))
        if room <= 0:
            log.skipped = f"the run already holds max_sources ({s.max_sources}) records"
            return {"seeds": log.seeds, "skipped": log.skipped}
        with self.accounting.stage("citation tracking"):
            limit = per_seed_limit(s.citation_candidates, len(seeds))
            lists, log.failures = await follow_citations(linker, seeds, limit)
            added = await asyncio.to_thread(self._add_candidates, lists, room)
        log.added = added.added_ids
        log.off_topic = await self._screen(round_no, log.added)
        if log.failures:
            self.warn(
                "citation tracking partly failed: " + "; ".join(log.failures[:3]),
                data={"citation_tracking": True},
            )
        return {
            "seeds": log.seeds,
            "identified": log.identified,
            "already_found": log.already_found,
            "added": len(log.added),
            "off_topic": log.off_topic,
        }

    def _add_candidates(self, lists: Sequence[Sequence[Evidence]], room: int) -> AddResult:
        """Bound, choose and store citation-tracking records (at most ``room`` new ones, the
        most relevant to the question and checklist); count them in the run's flow."""
        plan, log = self.plan, self.state.citations
        bound = [[bound_evidence(e, self.settings.max_evidence_chars) for e in x] for x in lists]
        targets = [plan.refined_question, *(c.description for c in plan.checklist)]
        known, chosen, beyond = choose_candidates(
            bound, self.store, targets, self.store.embedder, room
        )
        added = self.store.add([*known, *chosen])
        log.identified = sum(len(x) for x in bound)
        log.already_found = len(known)
        log.duplicates = added.identifier_copies + added.near_duplicate_copies - len(known)
        log.beyond_limit = beyond
        self.flow_log.record_citations(
            log.identified, added.identifier_copies, added.near_duplicate_copies, beyond
        )
        return added

    async def _screen(self, round_no: int, ids: Sequence[str]) -> int:
        """Screen the round's new items ``ids`` and assign the on-topic ones to the checklist:
        by the search agent's model through the source tools when the agents have a screener
        (:class:`~deepcritical.agents.screener.LLMSourceScreener`), falling back to calibrated
        screening with a warning when it fails; calibrated otherwise. Returns the number of
        items found off-topic."""
        self.state.collection_note = None
        if not ids:
            return 0

        async def screen(a: AgentSet) -> int:
            if a.screener is None:
                return await self._screen_calibrated(ids)
            return await self._screen_by_model(a.screener, round_no, ids)

        return await self.guarded("search agent's screening", screen, "screening") or 0

    async def _screen_calibrated(self, ids: Sequence[str]) -> int:
        """Calibrated screening (:func:`~deepcritical.evidence.screening.screen_items`; none
        without a calibration), then checklist assignment by similarity; items off-topic."""
        plan, kept = self.plan, list(ids)
        calibration = self.deps.screening
        if calibration is not None:
            screened = await asyncio.to_thread(
                screen_items, self.store, plan.refined_question, kept, calibration
            )
            kept = [r.evidence_id for r in screened if r.status != Screening.OFF_TOPIC]
        if kept:
            await asyncio.to_thread(
                assign_to_checklist,
                plan,
                self.store,
                kept,
                self.settings.checklist_assign_threshold,
            )
        self.state.calibrated_screened += len(ids)
        return len(ids) - len(kept)

    async def _screen_by_model(
        self, screener: LLMSourceScreener, round_no: int, ids: Sequence[str]
    ) -> int:
        """The search agent's screening: statuses, reasons and checklist questions from what
        its model saved (the calibrated relevance, when there is a calibration, is kept as the
        items' relevance score); its next queries join the follow-ups; items off-topic."""
        collector = await asyncio.to_thread(self.source_collector)
        calibration = self.deps.screening
        if calibration is not None:
            await asyncio.to_thread(
                screen_items, self.store, self.plan.refined_question, ids, calibration
            )
        items = [self.store.require(i) for i in ids]
        outcome = await screener.screen(self.plan, items, collector, round_no)
        assignments: dict[str, list[str]] = {}
        for record in outcome.records:
            item = self.store.require(record.evidence_id)
            item.screening = record.status
            item.screening_reason = record.reason
            if record.checklist_keys:
                assignments[record.evidence_id] = list(record.checklist_keys)
        assign_keys(self.plan, self.store, assignments)
        state = self.state
        state.follow_ups = list(dict.fromkeys([*state.follow_ups, *outcome.next_queries]))
        state.collection_note = outcome.progress or None
        state.model_screened += len(outcome.records)
        return sum(r.status == Screening.OFF_TOPIC for r in outcome.records)

    def on_topic(self) -> list[Evidence]:
        """The items screening did not find off-topic and no source marks as retracted
        (``Citation.retracted``), in store order: the only ones that reach the checklist,
        hypotheses, judge, writer, verdict and references."""
        return [
            e
            for e in self.store.all()
            if e.screening != Screening.OFF_TOPIC and not e.citation.retracted
        ]

    def retracted(self) -> list[Evidence]:
        """The items screening did not find off-topic but a source marks as retracted, in
        store order: listed, flagged, in the report's "Retracted or flagged records found"
        section, never cited as support."""
        return [
            e
            for e in self.store.all()
            if e.screening != Screening.OFF_TOPIC and e.citation.retracted
        ]

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

    @step
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
                    f" (checklist coverage {assessment.coverage:.0%})"
                    + (f": {assessment.reason}" if assessment.reason else "")
                    + f" → {assessment.recommendation}"
                ),
                data=assessment.model_dump(mode="json"),
            )
        )
        return assessment

    @step
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
        on_topic = set(self.on_topic_ids())
        off_topic = {i for i in self.store.ids() if i not in on_topic}
        reflection = apply_reflection(self.plan, reflection, off_topic)
        state.reflections.append(reflection)
        state.follow_ups = list(dict.fromkeys([*reflection.follow_up_queries, *state.follow_ups]))
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
                data={"evidence": len(selected)},
            )
        )

        async def write(a: AgentSet) -> ResearchReport:
            return await a.writer.write(self.plan, selected, state.hypotheses, assessment)

        return await self.guarded("report writer", write, "writing")

    @step
    async def finish(
        self, draft: ResearchReport | None, done_data: dict[str, Any] | None = None
    ) -> RunResult | None:
        """Turn ``draft`` into the run's validated, grounded report
        (:func:`~deepcritical.report.finish.finish_report`); emit a warning for every report
        step that was skipped, ``report_section`` events and ``done`` (``error`` when there
        is no draft or validation left problems). ``done_data`` is added to ``done``'s data.
        """
        state = self.state
        if draft is None:
            self.emit(
                ResearchEvent(
                    type="error", message="report writing failed: " + "; ".join(state.notes)
                )
            )
            return None
        finished = await finish_report(
            draft,
            self._facts(),
            GroundingOptions(
                enabled=self.settings.grounding,
                threshold=self.settings.grounding_threshold,
                max_rewrites=self.settings.grounding_rewrites,
                rewrite=self._rewrite_function(),
            ),
            stage=self.accounting.stage,
        )
        for note in finished.degraded:
            self.state.notes.append(note)
            self.emit(ResearchEvent(type="warning", round=state.rounds, message=note))
        report = finished.report
        if report is None:
            self.emit(
                ResearchEvent(
                    type="error",
                    message="citation validation left problems: " + "; ".join(finished.problems),
                )
            )
            return None
        report.metadata.usage = self.usage_report()
        report.metadata.flow = self.flow_log.flow(self.store.all(), report)
        if report.metadata.flow.problems():  # a counting bug: the report still goes out
            log.warning("the flow of records does not add up", **report.metadata.flow.model_dump())
        for section in report.findings:
            self.emit(
                ResearchEvent(
                    type="report_section",
                    message=section.heading,
                    data={"heading": section.heading},
                )
            )
        cv = report.metadata.citation_validation
        result = RunResult(
            report=report, plan=self.plan, evidence=self.store.all(), assessments=state.assessments
        )
        self.emit(
            ResearchEvent(
                type="done",
                round=state.rounds,
                message=(
                    f"Report ready: {plural(len(report.references), 'reference')}, "
                    f"{stop_reason_text(report.metadata.stop_reason)}; the citation check "
                    f"removed {plural(cv.references_removed, 'reference')} and "
                    f"{plural(cv.markers_removed, 'citation')}"
                ),
                data={
                    "stop_reason": report.metadata.stop_reason,
                    "usage": report.metadata.usage.model_dump(mode="json"),
                    **(done_data or {}),
                },
                result=result,
            )
        )
        return result

    def _failed_sources(self) -> dict[str, str]:
        """Source -> reason, for the sources that failed and never answered."""
        state = self.state
        return {k: v for k, v in state.source_failures.items() if k not in state.sources_answered}

    def _facts(self) -> RunFacts:
        """What happened in the run so far, for the report stage."""
        state = self.state
        on_topic, retracted = self.on_topic(), self.retracted()
        return RunFacts(
            question=self.question,
            plan=self.plan,
            hypotheses=list(state.hypotheses),
            evidence=on_topic,
            screened_out=len(self.store) - len(on_topic) - len(retracted),
            embedder=self.store.embedder,
            methodology=self.methodology(),
            source_names=self.source_names,
            source_failures=self._failed_sources(),
            rounds=state.rounds,
            queries=list(state.queries),
            stop_reason=state.stop_reason or "max_rounds",
            orchestrator=self.orchestrator,
            llm=self.llm_label,
            duration_seconds=self.elapsed(),
            confidence=self.confidence(),
            notes=list(state.notes),
            searched=bool(state.sources_answered or state.source_failures),
            time_budget_seconds=self.settings.time_budget_seconds,
            environment=software_environment(embedder_name(self.store.embedder)),
            retracted=retracted,
        )

    def _rewrite_function(self) -> RewriteFunction | None:
        """The grounding check's rewriter: a synchronous bridge (called from the grounding
        worker thread) to the LLM rewriter on this event loop; ``None`` without one or with
        ``grounding_rewrites = 0``. Each call waits at most twice the LLM timeout
        (seconds)."""
        rewriter = self.agents.rewriter
        if rewriter is None or self.settings.grounding_rewrites <= 0:
            return None
        loop = asyncio.get_running_loop()
        timeout = 2 * self.settings.llm_timeout_seconds

        def rewrite(claim: GroundedClaim) -> str | None:
            passages = [(q.evidence_id, q.quote) for q in claim.quotes if q.quote]
            future = asyncio.run_coroutine_threadsafe(
                rewriter.rewrite(claim.sentence, passages), loop
            )
            try:
                return future.result(timeout=timeout)
            except TimeoutError:
                future.cancel()
                raise

        return rewrite

    def usage_report(self) -> UsageReport:
        """LLM, search and time usage of the run so far."""
        return self.accounting.report(self.usage_trackers)

    def confidence(self) -> float:
        """Half checklist coverage, half the best hypothesis confidence (coverage if none)."""
        coverage = self.plan.coverage()
        best = max((h.confidence for h in self.state.hypotheses), default=coverage)
        return round(0.5 * coverage + 0.5 * best, 2)

    def methodology(self) -> str:
        """Factual account of the run (built from what happened, never by a model):
        :func:`~deepcritical.report.methodology.methodology_text` of its record."""
        state, records = self.state, self.store.all()
        screener = self.agents.screener
        calibration = self.deps.screening
        citations = None
        if self.deps.citations is not None:
            log = state.citations
            citations = CitationCounts(
                done=log.done,
                skipped=log.skipped,
                seeds=list(log.seeds),
                identified=log.identified,
                already_found=log.already_found,
                duplicates=log.duplicates,
                beyond_limit=log.beyond_limit,
                cap=self.settings.citation_candidates,
                added=len(log.added),
                off_topic=log.off_topic,
                failures=list(log.failures),
            )
        retracted = len(self.retracted())
        return methodology_text(
            MethodologyRecord(
                sources=list(self.source_names),
                searched=bool(state.sources_answered or state.source_failures),
                rounds=state.rounds,
                queries=list(state.queries),
                records=len(self.store),
                plan=self.plan,
                mmr_lambda=self.settings.mmr_lambda,
                screening=ScreeningCounts(
                    by_model=state.model_screened,
                    model_tools=screener is None or screener.uses_tools,
                    by_relevance=state.calibrated_screened,
                    off_topic_below=calibration.partial_at if calibration is not None else None,
                    off_topic=len(self.store) - len(self.on_topic()) - retracted,
                ),
                retracted=retracted,
                full_text=FullTextCounts(
                    full=sum(e.full_text for e in records),
                    records=len(records),
                    fetching=self.deps.full_text is not None,
                    fetched=len(state.full_texts.read),
                    per_run=self.settings.max_full_texts,
                    failed=[
                        (self.store.require(eid).citation.pmcid, reason)
                        for eid, reason in state.full_texts.failed.items()
                    ],
                ),
                citations=citations,
                extra=list(state.methodology),
                unavailable=self._failed_sources(),
            )
        )
