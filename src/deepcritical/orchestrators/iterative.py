"""The deterministic ``iterative`` orchestrator: plan -> (search -> assign -> hypothesise ->
judge -> reflect) x rounds -> report -> validate -> ground.

Stop rules live in code, whatever the judge says (:func:`~deepcritical.orchestrators.common.
gathering_stop_rule`, shared with the ``magentic`` orchestrator): the judge's ``sufficient``
verdict, every checklist item satisfied (the reflection step), the round limit, the
evidence limit (``max_sources``), the time budget, and a round that adds no new evidence.
The steps and the report stage are those of
:class:`~deepcritical.orchestrators.run.ResearchRun`. Every run that gets past planning
ends with a validated report built from the evidence store, and the report metadata says why
the run stopped.

A failing LLM agent degrades the run instead of killing it: the orchestrator falls back to the
extractive implementation of that role, emits a ``warning`` event and records a note in the
report metadata (never a silent fallback).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing

import structlog

from deepcritical.agents.search import SearchAgent
from deepcritical.config import Settings
from deepcritical.events import ResearchEvent
from deepcritical.evidence.store import EvidenceStore
from deepcritical.models import JudgeAssessment, ReportPreferences
from deepcritical.orchestrators.agent_set import AgentSet
from deepcritical.orchestrators.run import (
    QuestionError,
    ResearchRun,
    RunState,
    check_question,
    gathering_stop_rule,
)

__all__ = ["IterativeOrchestrator", "QuestionError", "RunState", "check_question"]

log = structlog.get_logger(__name__)


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

    def new_run(
        self,
        question: str,
        context: str | None = None,
        preferences: ReportPreferences | None = None,
    ) -> ResearchRun:
        """The shared context of one run of ``question`` (see :class:`ResearchRun`)."""
        return ResearchRun(
            question=question,
            context=context,
            preferences=preferences,
            settings=self.settings,
            agents=self.agents,
            store=self.store,
            search=self.search,
            source_names=self.source_names,
            orchestrator=self.name,
            fallback=self.fallback,
            llm_label=self.llm_label,
            clock=self.clock,
        )

    async def run(
        self,
        question: str,
        context: str | None = None,
        preferences: ReportPreferences | None = None,
    ) -> AsyncGenerator[ResearchEvent, None]:
        """Research ``question``; yield events, the last being ``done`` (with the result).
        ``preferences``: the user's report preferences (audience, length, focus).

        Raises:
            QuestionError: before any event, when the question is empty or too long.
        """
        question = check_question(question, self.settings.max_question_chars)
        run = self.new_run(question, context, preferences)
        yield ResearchEvent(
            type="started",
            message=f"Researching: {question}",
            data={"sources": self.source_names, "llm": self.llm_label, "orchestrator": self.name},
        )

        # --- plan --------------------------------------------------------------------------
        plan = await run.make_plan()
        for event in run.drain():
            yield event
        if plan is None:  # both the LLM and the extractive planner failed
            yield ResearchEvent(
                type="error", message="planning failed: " + "; ".join(run.state.notes)
            )
            return

        # --- gather ------------------------------------------------------------------------
        state = run.state
        budget = self.settings.time_budget_seconds - run.elapsed()
        try:
            async with (
                asyncio.timeout(max(budget, 0.001)),
                aclosing(self._gather(run)) as gather,
            ):
                async for event in gather:
                    yield event
        except TimeoutError:
            for event in run.drain():
                yield event
            state.stop_reason = "time_budget"
            yield ResearchEvent(
                type="warning",
                round=state.rounds,
                message=f"time budget of {self.settings.time_budget_seconds:g} s reached",
            )
        except Exception as exc:  # a bug or an unexpected agent failure: keep what we have
            log.exception("gathering failed")
            for event in run.drain():
                yield event
            state.stop_reason = "error"
            run.warn(f"gathering stopped by an error: {type(exc).__name__}: {exc}")
            for event in run.drain():
                yield event

        # --- report ------------------------------------------------------------------------
        draft = await run.write_draft()
        for event in run.drain():
            yield event
        await run.finish(draft)
        for event in run.drain():
            yield event

    async def _gather(self, run: ResearchRun) -> AsyncGenerator[ResearchEvent, None]:
        s, state, store = self.settings, run.state, self.store
        assessment: JudgeAssessment | None = None
        for round_no in range(1, s.max_rounds + 1):
            queries = await run.write_queries(round_no, assessment)
            for event in run.drain():
                yield event
            if not queries:
                state.stop_reason = "no_new_evidence"
                return
            run.begin_round(round_no, queries)
            for event in run.drain():
                yield event
            result = await run.run_search(round_no, queries)
            for event in run.drain():
                yield event
            if len(store) == 0:
                if len(result.failures) == len(self.source_names):
                    state.stop_reason = "no_sources"
                    return
                continue

            evidence_slice = run.evidence_slice()
            await run.hypothesise(round_no, evidence_slice)
            for event in run.drain():
                yield event
            assessment = await run.judge(round_no, evidence_slice) or assessment
            for event in run.drain():
                yield event
            reflection = await run.reflect(round_no, evidence_slice)
            for event in run.drain():
                yield event

            # Stop rules, in code.
            stop = gathering_stop_rule(
                sufficient=assessment is not None and assessment.sufficient,
                all_satisfied=reflection is not None and reflection.all_satisfied,
                store_size=len(store),
                max_sources=s.max_sources,
                round_no=round_no,
                added=len(result.added_ids),
                max_rounds=s.max_rounds,
            )
            if stop is not None:
                state.stop_reason = stop
                return
        state.stop_reason = "max_rounds"
