"""The deterministic ``iterative`` orchestrator: plan -> (search -> assign -> hypothesise ->
judge) x rounds -> report -> validate.

Stop rules live here, in code, whatever the judge says: the judge's ``sufficient`` verdict, the
round limit, the evidence limit (``max_sources``), the time budget, and a round that adds no new
evidence. Every run that gets past planning ends with a validated report built from the
evidence store, and the report metadata says why the run stopped.

A failing LLM agent degrades the run instead of killing it: the orchestrator falls back to the
extractive implementation of that role, emits a ``warning`` event and records a note in the
report metadata (never a silent fallback).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TypeVar

import structlog

from deepcritical.agents.checklist import assign_to_checklist
from deepcritical.agents.factory import AgentSet
from deepcritical.agents.search import SearchAgent, SearchRound
from deepcritical.config import Settings
from deepcritical.evidence.store import EvidenceStore
from deepcritical.models import (
    SOURCE_LABELS,
    Evidence,
    Hypothesis,
    JudgeAssessment,
    ResearchPlan,
    ResearchReport,
    RunResult,
    StopReason,
)
from deepcritical.orchestrators.events import ResearchEvent
from deepcritical.report.validation import citation_problems, validate_report

log = structlog.get_logger(__name__)
T = TypeVar("T")


class QuestionError(ValueError):
    """The research question is empty or longer than ``Settings.max_question_chars``."""


def check_question(question: str, max_chars: int) -> str:
    """The question stripped of surrounding white space.

    Raises:
        QuestionError: empty, or more than ``max_chars`` characters.
    """
    text = " ".join(question.split())
    if not text:
        raise QuestionError("the research question is empty")
    if len(text) > max_chars:
        raise QuestionError(
            f"the research question has {len(text)} characters; the limit is {max_chars} "
            "(put background material in the context instead)"
        )
    return text


@dataclass
class RunState:
    """What the orchestrator has learned so far (all of it ends up in the report metadata)."""

    plan: ResearchPlan | None = None
    hypotheses: list[Hypothesis] = field(default_factory=list)
    assessments: list[JudgeAssessment] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    rounds: int = 0
    source_failures: dict[str, str] = field(default_factory=dict)
    sources_answered: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    stop_reason: StopReason | None = None


class IterativeOrchestrator:
    """Runs one research question to a validated report, emitting :class:`ResearchEvent`.

    Args:
        settings: limits (max_rounds, max_sources, time_budget_seconds, ...).
        agents: the role implementations in use (LLM or extractive).
        fallback: extractive implementations used when an LLM agent fails; ``None`` when
            ``agents`` are already extractive.
        store: this run's evidence store (never shared between runs).
        search: the search agent bound to this run's sources and store.
        source_names: the names of the sources searched (for the report metadata).
        llm_label: the model spec shown in the report (never a key).
    """

    name = "iterative"

    def __init__(
        self,
        settings: Settings,
        agents: AgentSet,
        store: EvidenceStore,
        search: SearchAgent,
        source_names: Sequence[str],
        *,
        fallback: AgentSet | None = None,
        llm_label: str = "none",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.agents = agents
        self.fallback = fallback
        self.store = store
        self.search = search
        self.source_names = list(source_names)
        self.llm_label = llm_label
        self.clock = clock

    async def run(
        self, question: str, context: str | None = None
    ) -> AsyncGenerator[ResearchEvent, None]:
        """Research ``question``; yield events, the last being ``done`` (with the result).

        Raises:
            QuestionError: before any event, when the question is empty or too long.
        """
        question = check_question(question, self.settings.max_question_chars)
        started = self.clock()
        state = RunState()
        yield ResearchEvent(
            type="started",
            message=f"Researching: {question}",
            data={"sources": self.source_names, "llm": self.llm_label, "orchestrator": self.name},
        )

        # --- plan --------------------------------------------------------------------------
        plan: ResearchPlan | None = None

        async def make_plan(a: AgentSet) -> ResearchPlan:
            return await a.planner.plan(question, context)

        async for event in self._guarded("planner", make_plan, state):
            if isinstance(event, ResearchEvent):
                yield event
            else:
                plan = event
        if plan is None:  # both the LLM and the extractive planner failed
            yield ResearchEvent(type="error", message="planning failed: " + "; ".join(state.notes))
            return
        state.plan = plan
        yield ResearchEvent(
            type="planning",
            message=f"Plan: {len(plan.checklist)} checklist items",
            data={
                "refined_question": plan.refined_question,
                "checklist": [c.model_dump(mode="json") for c in plan.checklist],
                "queries": plan.queries,
            },
        )

        # --- gather ------------------------------------------------------------------------
        budget = self.settings.time_budget_seconds - (self.clock() - started)
        try:
            async with (
                asyncio.timeout(max(budget, 0.001)),
                aclosing(self._gather(plan, state)) as gather,
            ):
                async for event in gather:
                    yield event
        except TimeoutError:
            state.stop_reason = "time_budget"
            yield ResearchEvent(
                type="warning",
                round=state.rounds,
                message=f"time budget of {self.settings.time_budget_seconds:g} s reached",
            )
        except Exception as exc:  # a bug or an unexpected agent failure: keep what we have
            log.exception("gathering failed")
            state.stop_reason = "error"
            state.notes.append(f"gathering stopped by an error: {type(exc).__name__}: {exc}")
            yield ResearchEvent(type="warning", round=state.rounds, message=state.notes[-1])

        # --- report ------------------------------------------------------------------------
        async with aclosing(self._report(plan, state, started)) as reporting:
            async for event in reporting:
                yield event

    async def _gather(
        self, plan: ResearchPlan, state: RunState
    ) -> AsyncGenerator[ResearchEvent, None]:
        s = self.settings
        assessment: JudgeAssessment | None = None
        for round_no in range(1, s.max_rounds + 1):
            queries: list[str] = []

            async def write_queries(
                a: AgentSet, rn: int = round_no, ja: JudgeAssessment | None = assessment
            ) -> list[str]:
                return await a.queries.queries(
                    plan, ja, rn, s.max_queries_per_round, list(state.queries)
                )

            async for item in self._guarded("query generator", write_queries, state):
                if isinstance(item, ResearchEvent):
                    yield item
                else:
                    queries = [q for q in item if q not in state.queries]
            queries = queries[: s.max_queries_per_round]
            if not queries:
                state.stop_reason = "no_new_evidence"
                return
            state.rounds = round_no
            state.queries.extend(queries)
            yield ResearchEvent(
                type="searching",
                round=round_no,
                message=(
                    f"Round {round_no}: {len(queries)} queries × {len(self.source_names)} sources"
                ),
                data={"queries": queries, "sources": self.source_names},
            )
            result: SearchRound = await self.search.run(queries)
            for source, reason in result.failures.items():
                state.source_failures[source] = reason
                yield ResearchEvent(
                    type="warning",
                    round=round_no,
                    message=f"{SOURCE_LABELS.get(source, source)} unavailable: {reason}",
                    data={"source": source, "reason": reason},
                )
            for source, reason in result.partial_failures.items():
                label = SOURCE_LABELS.get(source, source)
                state.notes.append(f"round {round_no}: {label} partly failed: {reason}")
                yield ResearchEvent(
                    type="warning",
                    round=round_no,
                    message=f"{SOURCE_LABELS.get(source, source)} partly failed: {reason}",
                    data={"source": source, "reason": reason, "partial": True},
                )
            state.sources_answered.update(
                src for src in self.source_names if src not in result.failures
            )
            if result.added_ids:
                await asyncio.to_thread(
                    assign_to_checklist,
                    plan,
                    self.store,
                    result.added_ids,
                    s.checklist_assign_threshold,
                )
            yield ResearchEvent(
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
            if len(self.store) == 0:
                if len(result.failures) == len(self.source_names):
                    state.stop_reason = "no_sources"
                    return
                continue

            evidence_slice = self.store.select_diverse(
                plan.refined_question, s.report_max_evidence * 2, lambda_=s.mmr_lambda
            )

            async def hypothesize(
                a: AgentSet, ev: list[Evidence] = evidence_slice
            ) -> list[Hypothesis]:
                return await a.hypotheses.hypothesize(plan, ev, state.hypotheses)

            async for hyp in self._guarded("hypothesis agent", hypothesize, state):
                if isinstance(hyp, ResearchEvent):
                    yield hyp
                else:
                    state.hypotheses = self._number_hypotheses(hyp)
            for h in state.hypotheses:
                yield ResearchEvent(
                    type="hypothesis",
                    round=round_no,
                    message=h.statement,
                    data=h.model_dump(mode="json"),
                )

            async def judge(
                a: AgentSet, ev: list[Evidence] = evidence_slice, rn: int = round_no
            ) -> JudgeAssessment:
                return await a.judge.assess(plan, ev, state.hypotheses, rn, len(self.store))

            async for verdict in self._guarded("judge", judge, state):
                if isinstance(verdict, ResearchEvent):
                    yield verdict
                else:
                    assessment = verdict
            if assessment is not None:
                state.assessments.append(assessment)
                yield ResearchEvent(
                    type="judge_assessment",
                    round=round_no,
                    message=(
                        f"Judge: {'sufficient' if assessment.sufficient else 'not sufficient'}"
                        f" (coverage {assessment.coverage:.0%}) → {assessment.recommendation}"
                    ),
                    data=assessment.model_dump(mode="json"),
                )

            # Stop rules, in code.
            if assessment is not None and assessment.sufficient:
                state.stop_reason = "sufficient"
                return
            if len(self.store) >= s.max_sources:
                state.stop_reason = "max_sources"
                return
            if round_no > 1 and not result.added_ids:
                state.stop_reason = "no_new_evidence"
                return
        state.stop_reason = "max_rounds"

    async def _report(
        self, plan: ResearchPlan, state: RunState, started: float
    ) -> AsyncGenerator[ResearchEvent, None]:
        s = self.settings
        selected = self.store.select_diverse(
            plan.refined_question, s.report_max_evidence, lambda_=s.mmr_lambda
        )
        assessment = state.assessments[-1] if state.assessments else None
        draft: ResearchReport | None = None

        async def write(a: AgentSet) -> ResearchReport:
            return await a.writer.write(plan, selected, state.hypotheses, assessment)

        async for item in self._guarded("report writer", write, state):
            if isinstance(item, ResearchEvent):
                yield item
            else:
                draft = item
        if draft is None:
            yield ResearchEvent(
                type="error", message="report writing failed: " + "; ".join(state.notes)
            )
            return

        evidence_by_id = {e.id: e for e in self.store.all()}
        if not draft.hypotheses_tested:
            draft.hypotheses_tested = list(state.hypotheses)
        draft.methodology = self._methodology(plan, state)
        draft.metadata = draft.metadata.model_copy(
            update={
                "sources_searched": self.source_names,
                "source_failures": {
                    k: v
                    for k, v in state.source_failures.items()
                    if k not in state.sources_answered
                },
                "papers_reviewed": len(self.store),
                "iterations": state.rounds,
                "confidence": self._confidence(plan, state),
                "stop_reason": state.stop_reason or "max_rounds",
                "orchestrator": self.name,
                "llm": self.llm_label,
                "duration_seconds": round(self.clock() - started, 3),
                "checklist_coverage": plan.coverage(),
                "queries": list(state.queries),
                "notes": [*state.notes, *draft.metadata.notes],
            }
        )
        report = validate_report(draft, evidence_by_id)
        problems = citation_problems(report, evidence_by_id)
        if problems:  # validation must leave nothing behind; refuse to ship otherwise
            yield ResearchEvent(
                type="error", message="citation validation left problems: " + "; ".join(problems)
            )
            return
        for section in report.findings:
            yield ResearchEvent(
                type="report_section", message=section.heading, data={"heading": section.heading}
            )
        cv = report.metadata.citation_validation
        result = RunResult(
            report=report,
            plan=plan,
            evidence=self.store.all(),
            assessments=state.assessments,
        )
        yield ResearchEvent(
            type="done",
            round=state.rounds,
            message=(
                f"Report ready: {len(report.references)} references, stopped: "
                f"{report.metadata.stop_reason}; citation check removed "
                f"{cv.references_removed} references, {cv.markers_removed} citations"
            ),
            data={"stop_reason": report.metadata.stop_reason},
            result=result,
        )

    async def _guarded(
        self,
        role: str,
        call: Callable[[AgentSet], Awaitable[T]],
        state: RunState,
    ) -> AsyncGenerator[T | ResearchEvent, None]:
        """Run ``call`` on the configured agents; on failure, warn and use the fallback."""
        try:
            yield await call(self.agents)
            return
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if self.fallback is None:
                state.notes.append(f"{role} failed: {type(exc).__name__}: {exc}")
                yield ResearchEvent(type="warning", round=state.rounds, message=state.notes[-1])
                return
            note = (
                f"{role} failed ({type(exc).__name__}: {exc}); "
                "its extractive implementation was used instead"
            )
            state.notes.append(note)
            yield ResearchEvent(type="warning", round=state.rounds, message=note)
        try:
            yield await call(self.fallback)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            state.notes.append(f"extractive {role} failed too: {type(exc).__name__}: {exc}")
            yield ResearchEvent(type="warning", round=state.rounds, message=state.notes[-1])

    @staticmethod
    def _number_hypotheses(hypotheses: Sequence[Hypothesis]) -> list[Hypothesis]:
        return [
            h if h.id else h.model_copy(update={"id": f"H{i}"})
            for i, h in enumerate(hypotheses, start=1)
        ]

    @staticmethod
    def _confidence(plan: ResearchPlan, state: RunState) -> float:
        """Half checklist coverage, half the best hypothesis confidence (coverage if none)."""
        coverage = plan.coverage()
        best = max((h.confidence for h in state.hypotheses), default=coverage)
        return round(0.5 * coverage + 0.5 * best, 2)

    def _methodology(self, plan: ResearchPlan, state: RunState) -> str:
        """Factual account of the run (built from what happened, never by a model)."""
        labels = [SOURCE_LABELS.get(s, s) for s in self.source_names]
        lines = [
            f"Sources searched: {', '.join(labels)}. "
            f"{state.rounds} search round(s), {len(state.queries)} queries, "
            f"{len(self.store)} distinct records kept after de-duplication by identifier "
            "(PMID, DOI, PMCID, NCT ID, URL) and by near-duplicate text.",
            f"Checklist ({len(plan.checklist)} items, coverage {plan.coverage():.0%}): "
            + "; ".join(f"{c.description} — {c.status.value}" for c in plan.checklist)
            + ".",
            f"Evidence for the report was chosen by maximal marginal relevance "
            f"(λ = {self.settings.mmr_lambda:g}) among all records; every citation was checked "
            "against the evidence collected in this run.",
        ]
        if state.queries:
            lines.append("Queries: " + "; ".join(f"“{q}”" for q in state.queries) + ".")
        failed = {k: v for k, v in state.source_failures.items() if k not in state.sources_answered}
        for src, reason in failed.items():
            lines.append(f"{SOURCE_LABELS.get(src, src)} unavailable: {reason}.")
        return "\n\n".join(lines)
