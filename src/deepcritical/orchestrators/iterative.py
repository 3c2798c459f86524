"""The deterministic ``iterative`` orchestrator: plan -> (search -> screen -> assign ->
hypothesise -> reflect -> judge) x rounds -> report -> validate -> ground.

Stop rules live in code, whatever the judge says (:func:`~deepcritical.orchestrators.progress.
gathering_stop_rule`, shared with the ``magentic`` orchestrator): the judge's ``sufficient``
verdict, every checklist item satisfied (the reflection step), nothing on-topic found (after
one round, two when a model writes the queries), the round limit, the evidence limit
(``max_sources``), the time budget, and a round that adds no new evidence.
The steps and the report stage are those of
:class:`~deepcritical.orchestrators.run.ResearchRun`. Every run that gets past planning
ends with a validated report built from the evidence store, and the report metadata says why
the run stopped.

A failing LLM agent degrades the run instead of killing it: the orchestrator falls back to the
extractive implementation of that role, emits a ``warning`` event and records a note in the
report metadata (never a silent fallback).

With ``Settings.review_plan`` / ``review_evidence`` the run stops for the researcher's review
after planning and after gathering (:mod:`~deepcritical.orchestrators.review_step`); an
evidence reviewer may ask for one more search round, after which the evidence is reviewed
again.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing

from deepcritical.events import ResearchEvent
from deepcritical.llm.llm_errors import describe_error
from deepcritical.logs import get_logger
from deepcritical.models import JudgeAssessment, ReportPreferences, StopReason
from deepcritical.orchestrators.deps import RunDeps
from deepcritical.orchestrators.progress import gathering_stop_rule
from deepcritical.orchestrators.review_step import review_evidence, review_plan
from deepcritical.orchestrators.run import ResearchRun

__all__ = ["IterativeOrchestrator"]

log = get_logger(__name__)


class IterativeOrchestrator:
    """Runs one research question to a validated report, emitting :class:`ResearchEvent`.

    Args:
        deps: the run's dependencies (settings with the limits: max_rounds, max_sources,
            time_budget_seconds...; roles; evidence store; search; sources; model label).
    """

    name = "iterative"

    def __init__(self, deps: RunDeps) -> None:
        self.deps = deps
        self.settings = deps.settings

    async def run(
        self,
        question: str,
        context: str | None = None,
        preferences: ReportPreferences | None = None,
    ) -> AsyncGenerator[ResearchEvent, None]:
        """Research ``question`` (checked already:
        :func:`~deepcritical.orchestrators.deps.check_question`); yield events, the last being
        ``done`` (with the result) or ``error``. ``preferences``: the user's report
        preferences (audience, length, focus)."""
        run = ResearchRun(self.deps, question, context, preferences, orchestrator=self.name)
        async with aclosing(run.stream(lambda: self._work(run))) as events:
            async for event in events:
                yield event

    async def _work(self, run: ResearchRun) -> None:
        await run.start()
        if await run.make_plan() is None:  # both the LLM and the extractive planner failed
            return
        if not await review_plan(run):  # the run waits for the plan's review, or was cancelled
            return
        await self._budgeted(run, self._gather)
        ordinal = 1
        while (verdict := await review_evidence(run, ordinal)) == "search":
            ordinal += 1  # one more search round asked for by the reviewer, then review again
            await self._budgeted(run, self._one_more_round)
        if verdict == "stop":  # the run waits for the evidence's review, or was cancelled
            return
        await run.finish(await run.write_draft())

    async def _budgeted(
        self, run: ResearchRun, gather: Callable[[ResearchRun], Awaitable[StopReason]]
    ) -> None:
        """``gather(run)`` within what is left of the time budget; its stop reason (or the
        budget's, or an error's, with a warning) becomes the run's."""
        s, state = self.settings, run.state
        try:
            async with asyncio.timeout(max(s.time_budget_seconds - run.elapsed(), 0.001)):
                state.stop_reason = await gather(run)
        except TimeoutError:
            state.stop_reason = "time_budget"
            run.emit(
                ResearchEvent(
                    type="warning",
                    round=state.rounds,
                    message=f"time budget of {s.time_budget_seconds:g} s reached",
                )
            )
        except Exception as exc:
            log.exception("gathering failed")
            state.stop_reason = "error"
            run.warn(f"gathering stopped by an error: {describe_error(exc)}")

    async def _gather(self, run: ResearchRun) -> StopReason:
        """Search rounds until a stop rule fires; the rule that did."""
        assessment: JudgeAssessment | None = None
        for round_no in range(1, self.settings.max_rounds + 1):
            stop, assessment = await self._round(run, round_no, assessment)
            if stop is not None:
                return stop
        return "max_rounds"

    async def _one_more_round(self, run: ResearchRun) -> StopReason:
        """The search round an evidence reviewer asked for, past the round limit; the run's
        stop reason stays the one gathering ended with unless this round finds nothing new."""
        state = run.state
        previous = state.stop_reason or "max_rounds"
        assessment = state.assessments[-1] if state.assessments else None
        rounds = state.rounds
        stop, _ = await self._round(run, rounds + 1, assessment, extra=True)
        if state.rounds == rounds:
            run.warn("the search round the reviewer asked for found no new query to run")
        return stop if stop in {"no_new_evidence", "no_sources"} else previous

    async def _round(
        self,
        run: ResearchRun,
        round_no: int,
        assessment: JudgeAssessment | None,
        *,
        extra: bool = False,
    ) -> tuple[StopReason | None, JudgeAssessment | None]:
        """Search round ``round_no`` (queries, search, assessment); the stop rule that fired
        (``None``: go on) and the latest assessment. ``extra``: a round past the limit."""
        s, store = self.settings, run.store
        queries = await run.write_queries(round_no, assessment)
        if not queries:
            return "no_new_evidence", assessment
        await run.begin_round(round_no, queries)
        result = await run.run_search(round_no, queries)
        if len(store) == 0 and len(result.failures) == len(run.source_names):
            return "no_sources", assessment
        on_topic = run.on_topic_ids()
        reflection, judged = None, None
        if on_topic:  # else nothing to assess: search again, or stop (rule 3)
            evidence_slice = run.evidence_slice()
            await run.hypothesise(round_no, evidence_slice)
            reflection = await run.reflect(round_no, evidence_slice)
            judged = await run.judge(round_no, evidence_slice)
            assessment = judged or assessment
        stop = gathering_stop_rule(
            sufficient=None if judged is None else judged.sufficient,
            all_satisfied=reflection is not None and reflection.all_satisfied,
            on_topic=len(on_topic),
            empty_rounds=run.empty_round_limit,
            store_size=len(store),
            max_sources=s.max_sources,
            round_no=round_no,
            added=len(result.added_ids),
            max_rounds=max(s.max_rounds, round_no) if extra else s.max_rounds,
        )
        return stop, assessment
