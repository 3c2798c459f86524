"""The record of one run and the rules that do not need the run itself: what the run has
learned so far (:class:`RunState`), the stop rules of gathering
(:func:`gathering_stop_rule`), hypothesis numbering and the usage accounting
(:class:`RunAccounting`: seconds per stage, search calls per source)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from deepcritical.agents.reflection import Reflection
from deepcritical.agents.search import SearchRound
from deepcritical.llm.usage import UsageTracker
from deepcritical.models import (
    Hypothesis,
    JudgeAssessment,
    LLMUsage,
    ResearchPlan,
    ResearchReport,
    SourceUsage,
    StopReason,
    UsageReport,
)
from deepcritical.orchestrators.citation_tracking import CitationLog
from deepcritical.orchestrators.full_texts import FullTextLog
from deepcritical.telemetry.tracing import span

__all__ = [
    "REPHRASED_EMPTY_ROUNDS",
    "RunAccounting",
    "RunState",
    "gathering_stop_rule",
    "judged_stop",
    "number_hypotheses",
]

REPHRASED_EMPTY_ROUNDS = 2
"""Search rounds a run whose queries a model writes may spend without finding anything
on-topic before gathering stops (``insufficient_evidence``): the model rephrases after an
empty round (synonyms, broader or MeSH terms, the search agent's next queries), which can
find what the question's own words did not. A run with extractive queries stops after one
empty round: its next queries only add checklist words to the same key terms, and a key
term that matched nothing on-topic still matches nothing."""


@dataclass
class RunState:
    """What the run has learned so far (all of it ends up in the report metadata).

    ``draft`` is a report drafted during gathering (the Magentic ``ReportAgent``), with
    ``draft_store_size`` the number of evidence items the store held when it was drafted.
    ``methodology`` holds extra lines for the report's methodology (orchestrator specific).
    ``reflections`` holds one reflection per round; ``follow_ups`` the follow-up queries of
    the last one and of the search agent's screening, run first in the next round.
    ``model_screened`` / ``calibrated_screened`` count the records screened by the search
    agent's model and by calibrated relevance; ``collection_note`` is the source collector's
    last completion check (one line, < 500 characters; ``None`` before a model screened).
    ``full_texts`` records the full texts read and those that could not be; ``citations``
    what citation tracking did.
    """

    plan: ResearchPlan | None = None
    hypotheses: list[Hypothesis] = field(default_factory=list)
    assessments: list[JudgeAssessment] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    rounds: int = 0
    source_failures: dict[str, str] = field(default_factory=dict)
    sources_answered: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    stop_reason: StopReason | None = None
    draft: ResearchReport | None = None
    draft_store_size: int = -1
    methodology: list[str] = field(default_factory=list)
    reflections: list[Reflection] = field(default_factory=list)
    follow_ups: list[str] = field(default_factory=list)
    model_screened: int = 0
    calibrated_screened: int = 0
    collection_note: str | None = None
    full_texts: FullTextLog = field(default_factory=FullTextLog)
    citations: CitationLog = field(default_factory=CitationLog)


def judged_stop(*, sufficient: bool | None, all_satisfied: bool) -> StopReason | None:
    """The stop rules of the judgement and reflection (rules 1 and 2 of
    :func:`gathering_stop_rule`): ``sufficient`` is the judge's verdict (``None``: no
    judgement), ``all_satisfied`` the reflection's."""
    if sufficient:
        return "all_satisfied" if all_satisfied else "sufficient"
    if sufficient is None and all_satisfied:
        return "all_satisfied"
    return None


def gathering_stop_rule(
    *,
    sufficient: bool | None,
    all_satisfied: bool = False,
    on_topic: int,
    empty_rounds: int = 1,
    store_size: int,
    max_sources: int,
    round_no: int,
    added: int,
    max_rounds: int,
) -> StopReason | None:
    """The stop rules in code, checked after a search round (its reflection, then its
    judgement, which sees the checklist statuses the reflection wrote; neither runs while
    nothing on-topic has been found). ``None``: keep gathering.

    ``sufficient`` is the judge's verdict this round (``None``: no judgement, e.g. every
    judge failed or nothing on-topic to judge). ``on_topic`` is the number of items in the
    store that screening did not find off-topic; ``empty_rounds`` the rounds a run may
    search without finding any (1; :data:`REPHRASED_EMPTY_ROUNDS` when a model writes the
    queries). The judge has the last word on the evidence, so the log never says "not
    sufficient → continue" before a stop for sufficiency: in order,

    1. the judge found it sufficient: ``all_satisfied`` when every checklist item is also
       satisfied, else ``sufficient``;
    2. no judgement, and every checklist item satisfied: ``all_satisfied``;
    3. nothing on-topic after ``empty_rounds`` rounds: ``insufficient_evidence`` (the
       report abstains);
    4. the evidence limit (``max_sources``), a later round adding nothing
       (``no_new_evidence``), the round limit (``max_rounds``).
    """
    judged = judged_stop(sufficient=sufficient, all_satisfied=all_satisfied)
    if judged is not None:
        return judged
    if on_topic == 0 and round_no >= empty_rounds:
        return "insufficient_evidence"
    if store_size >= max_sources:
        return "max_sources"
    if round_no > 1 and added == 0:
        return "no_new_evidence"
    if round_no >= max_rounds:
        return "max_rounds"
    return None


def number_hypotheses(hypotheses: Sequence[Hypothesis]) -> list[Hypothesis]:
    """``hypotheses`` with ``H1``, ``H2``... given to those without an id."""
    return [
        h if h.id else h.model_copy(update={"id": f"H{i}"})
        for i, h in enumerate(hypotheses, start=1)
    ]


@dataclass
class _SourceCount:
    calls: int = 0
    failed_calls: int = 0
    results: int = 0


class RunAccounting:
    """Wall-clock seconds per stage and search calls per source of one run."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.stage_seconds: dict[str, float] = {}
        self._sources: dict[str, _SourceCount] = {}

    def add_time(self, stage: str, seconds: float) -> None:
        """Add ``seconds`` to ``stage``."""
        self.stage_seconds[stage] = self.stage_seconds.get(stage, 0.0) + max(seconds, 0.0)

    @contextmanager
    def stage(self, name: str, role: str | None = None) -> Iterator[None]:
        """Time the block as (part of) stage ``name``, also when it raises or is cancelled,
        and trace it as a span ``name`` (``deepcritical.stage``; ``deepcritical.role``: the
        model role that works in it, when one does) when tracing is on."""
        started = self.clock()
        try:
            with span(name, {"deepcritical.stage": name, "deepcritical.role": role}):
                yield
        finally:
            self.add_time(name, self.clock() - started)

    def record_search(self, result: SearchRound, source_names: Sequence[str]) -> None:
        """Count the calls of one search round: every query went to every source; a call
        failed when it produced nothing but an error (absent from ``hits_per_query``)."""
        calls = len(result.queries)
        if calls == 0:
            return
        for source in source_names:
            entry = self._sources.setdefault(source, _SourceCount())
            answered = sum(1 for per in result.hits_per_query.values() if source in per)
            entry.calls += calls
            entry.failed_calls += max(calls - answered, 0)
            entry.results += result.hits_per_source.get(source, 0)

    def report(self, trackers: Sequence[UsageTracker]) -> UsageReport:
        """The usage report: LLM usage per role summed over ``trackers``, plus what this
        object counted."""
        llm: dict[str, LLMUsage] = {}
        total = LLMUsage()
        for tracker in trackers:
            for role, used in tracker.by_role().items():
                entry = llm.setdefault(role, LLMUsage())
                for target in (entry, total):
                    target.runs += used.runs
                    target.failures += used.failures
                    target.requests += used.requests
                    target.input_tokens += used.input_tokens
                    target.output_tokens += used.output_tokens
                    target.reasoning_tokens += used.reasoning_tokens
        return UsageReport(
            llm=llm,
            llm_total=total,
            search={
                name: SourceUsage(
                    calls=count.calls, failed_calls=count.failed_calls, results=count.results
                )
                for name, count in self._sources.items()
            },
            stage_seconds={k: round(v, 3) for k, v in self.stage_seconds.items()},
        )
