"""The iterative orchestrator: stop rules in code, degraded runs, validated reports, events."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from deepcritical.agents.search import SearchAgent
from deepcritical.api import research
from deepcritical.config import Settings
from deepcritical.events import PlanningData, ResearchEvent
from deepcritical.evidence.store import EvidenceStore
from deepcritical.models import (
    PICO,
    ChecklistItem,
    Citation,
    Evidence,
    Hypothesis,
    JudgeAssessment,
    QuestionType,
    Reference,
    ReportSection,
    ResearchPlan,
    ResearchReport,
    SearchFilters,
    marker_ids,
)
from deepcritical.orchestrators.agent_set import AgentSet
from deepcritical.orchestrators.deps import QuestionError, RunDeps
from deepcritical.orchestrators.iterative import IterativeOrchestrator
from deepcritical.orchestrators.progress import gathering_stop_rule
from deepcritical.report.validation import citation_problems
from deepcritical.testing.embedders import HashingEmbedder
from deepcritical.testing.failing_sources import FailingSource, HangingSource

TOPICS = ["metformin", "insulin", "statin", "aspirin", "vitamin", "exercise", "diet", "sleep"]


def make_evidence(pmid: int, query: str) -> Evidence:
    topic = TOPICS[pmid % len(TOPICS)]
    return Evidence(
        content=(
            f"CONCLUSIONS: {topic} therapy number {pmid} was associated with outcome {pmid * 7} "
            f"in cohort {pmid * 13} of patients with condition {pmid % 5}."
        ),
        citation=Citation(source="fake", id=str(pmid), pmid=str(pmid), title=f"Study {pmid}"),
        query=query,
        relevance=0.5,
    )


class CountingSource:
    """Returns ``limit`` fresh papers per query (distinct PMIDs per query)."""

    name = "fake"

    def __init__(self, repeat: bool = False) -> None:
        self.calls: list[str] = []
        self.repeat = repeat

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        self.calls.append(query)
        base = 0 if self.repeat else 100 * len(self.calls)
        return [make_evidence(base + i, query) for i in range(1, limit + 1)]


class Planner:
    async def plan(self, question: str, context: str | None = None) -> ResearchPlan:
        return ResearchPlan(
            question=question,
            refined_question=question,
            checklist=[
                ChecklistItem(key="efficacy", description="metformin efficacy outcome"),
                ChecklistItem(key="mechanism", description="insulin mechanism pathway"),
            ],
            queries=["q1"],
            question_type=QuestionType.INTERVENTION,
            pico=PICO(intervention="metformin", outcome="glycaemic control"),
        )


class Queries:
    async def queries(
        self,
        plan: ResearchPlan,
        assessment: JudgeAssessment | None,
        round_no: int,
        max_queries: int,
        tried: Sequence[str],
    ) -> list[str]:
        return [f"q{round_no}"]


class Hypotheses:
    async def hypothesize(
        self, plan: ResearchPlan, evidence: Sequence[Evidence], previous: Sequence[Hypothesis]
    ) -> list[Hypothesis]:
        return [
            Hypothesis(
                statement="metformin helps",
                confidence=0.6,
                supporting_evidence_ids=[e.id for e in evidence[:2]],
            )
        ]


class Judge:
    def __init__(self, sufficient_at: int | None = None) -> None:
        self.sufficient_at = sufficient_at

    async def assess(
        self,
        plan: ResearchPlan,
        evidence: Sequence[Evidence],
        hypotheses: Sequence[Hypothesis],
        round_no: int,
        total_evidence: int,
    ) -> JudgeAssessment:
        done = self.sufficient_at is not None and round_no >= self.sufficient_at
        return JudgeAssessment(
            sufficient=done, recommendation="synthesize" if done else "continue", coverage=0.5
        )


class Writer:
    """Cites the first two real items, plus a fabricated id and a fabricated PMID."""

    async def write(
        self,
        plan: ResearchPlan,
        evidence: Sequence[Evidence],
        hypotheses: Sequence[Hypothesis],
        assessment: JudgeAssessment | None,
    ) -> ResearchReport:
        real = [e.id for e in evidence[:2]]
        cites = ", ".join(real)
        findings = f"Metformin was studied [{cites}]." if real else "Nothing was found."
        return ResearchReport(
            title="Report",
            research_question=plan.question,
            executive_summary=findings + " A made-up result was reported [E999].",
            findings=[
                ReportSection(
                    heading="Efficacy",
                    content=findings + " Another fabricated claim [PMID: 99999999].",
                )
            ],
            conclusion="Done.",
            references=[
                Reference(
                    evidence_id="E999",
                    citation=Citation(source="pubmed", id="1", title="Invented paper"),
                ),
                *[
                    Reference(
                        evidence_id=e.id, citation=Citation(source="x", id="y", title="wrong")
                    )
                    for e in evidence[:1]
                ],
            ],
        )


class Broken:
    """An LLM agent whose every call fails (as an LLM returning invalid JSON would)."""

    async def plan(self, question: str, context: str | None = None) -> ResearchPlan:
        raise ValueError("invalid JSON from model")

    async def write(self, *args: object) -> ResearchReport:
        raise ValueError("invalid JSON from model")


def agents(judge: Judge | None = None, **override: object) -> AgentSet:
    parts: dict[str, object] = {
        "planner": Planner(),
        "queries": Queries(),
        "hypotheses": Hypotheses(),
        "judge": judge or Judge(),
        "writer": Writer(),
    }
    parts.update(override)
    return AgentSet(**parts)  # type: ignore[arg-type]


def orchestrator(
    sources: Sequence[object],
    settings: Settings | None = None,
    agent_set: AgentSet | None = None,
    fallback: AgentSet | None = None,
) -> tuple[IterativeOrchestrator, EvidenceStore]:
    settings = settings or Settings(max_rounds=3, results_per_query=3, sources=["local"])
    store = EvidenceStore(HashingEmbedder(), near_duplicate_threshold=0.999)
    search = SearchAgent(sources, store, settings.results_per_query)  # type: ignore[arg-type]
    deps = RunDeps(
        settings=settings,
        agents=agent_set or agents(),
        store=store,
        search=search,
        source_names=[s.name for s in sources],  # type: ignore[attr-defined]
        fallback=fallback,
    )
    return IterativeOrchestrator(deps), store


async def collect(
    orch: IterativeOrchestrator, question: str = "Does metformin help?"
) -> list[ResearchEvent]:
    return [e async for e in orch.run(question)]


def final(events: list[ResearchEvent]) -> ResearchReport:
    assert events[-1].type == "done", [e.message for e in events if e.type in {"error", "warning"}]
    assert events[-1].result is not None
    return events[-1].result.report


async def test_runs_to_max_rounds_and_validates_citations() -> None:
    orch, store = orchestrator([CountingSource()])
    events = await collect(orch)
    report = final(events)
    assert report.metadata.stop_reason == "max_rounds"
    assert report.metadata.iterations == 3
    assert len(store) == 9  # 3 rounds x 1 query x 3 results, all distinct
    # fabricated ids are gone; every reference is a stored item with the store's citation
    ev = {e.id: e for e in store.all()}
    assert citation_problems(report, ev) == []
    assert all(r.evidence_id in ev for r in report.references)
    for ref in report.references:
        assert ref.citation == ev[ref.evidence_id].citation
    text = report.to_markdown()
    assert "Invented paper" not in text
    assert "wrong" not in text
    assert "E999" not in " ".join(report.texts())
    assert "fabricated claim" not in text  # sentence citing only a fake PMID removed
    assert report.metadata.citation_validation.references_removed >= 1
    assert report.metadata.citation_validation.markers_removed >= 2
    types = [e.type for e in events]
    assert types[0] == "started"
    assert types[1] == "planning"
    # the question's type and PICO elements are shown in the plan and the methodology
    planning = events[1].data_as(PlanningData)
    assert planning.question_type == "intervention"
    assert planning.pico.intervention == "metformin"
    assert (
        "Question type (by rules): intervention / therapy (intervention, exposure or test: "
        "metformin; outcome or condition: glycaemic control)." in report.methodology
    )
    assert types.count("searching") == 3
    assert "judge_assessment" in types


async def test_stops_when_judge_says_sufficient() -> None:
    orch, _ = orchestrator([CountingSource()], agent_set=agents(judge=Judge(sufficient_at=2)))
    report = final(await collect(orch))
    assert report.metadata.stop_reason == "sufficient"
    assert report.metadata.iterations == 2


async def test_stops_at_max_sources() -> None:
    settings = Settings(max_rounds=10, results_per_query=4, max_sources=6, sources=["local"])
    orch, store = orchestrator([CountingSource()], settings=settings)
    report = final(await collect(orch))
    assert report.metadata.stop_reason == "max_sources"
    assert report.metadata.iterations == 2
    assert len(store) == 6  # round 2 kept only the room left (the most relevant 2 of 4)


async def test_stops_when_a_round_adds_nothing_new() -> None:
    orch, store = orchestrator([CountingSource(repeat=True)])
    report = final(await collect(orch))
    assert report.metadata.stop_reason == "no_new_evidence"
    assert report.metadata.iterations == 2
    assert len(store) == 3


class EmptySource:
    """Answers every query with nothing (a question whose words match no record)."""

    name = "fake"

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        self.calls.append(query)
        return []


@pytest.mark.parametrize(("mode", "rounds"), [("extractive", 1), ("llm", 2)])
async def test_a_run_that_finds_nothing_on_topic_stops_after_its_empty_rounds(
    mode: str, rounds: int
) -> None:
    """Issue 13: a question of nonsense words searched all its rounds. Extractive queries
    stop after one empty round; queries written by a model get one rephrased round more."""
    source = EmptySource()
    settings = Settings(max_rounds=5, results_per_query=3, sources=["local"])
    orch, _ = orchestrator([source], settings=settings, agent_set=agents(mode=mode))
    events = await collect(orch)
    report = final(events)
    assert report.metadata.stop_reason == "insufficient_evidence"
    assert report.metadata.iterations == rounds
    assert source.calls == [f"q{n}" for n in range(1, rounds + 1)]
    assert report.references == []
    assert report.metadata.checklist_coverage == 0.0
    assert not [e for e in events if e.type in {"judge_assessment", "reflection"}]


@pytest.mark.parametrize(
    ("on_topic", "round_no", "empty_rounds", "sufficient", "expected"),
    [
        (0, 1, 1, None, "insufficient_evidence"),
        (0, 1, 2, None, None),
        (0, 2, 2, None, "insufficient_evidence"),
        (3, 1, 1, None, None),
        (3, 1, 1, True, "sufficient"),
    ],
)
def test_the_empty_round_rule(
    on_topic: int, round_no: int, empty_rounds: int, sufficient: bool | None, expected: str | None
) -> None:
    stop = gathering_stop_rule(
        sufficient=sufficient,
        on_topic=on_topic,
        empty_rounds=empty_rounds,
        store_size=10,
        max_sources=60,
        round_no=round_no,
        added=10,
        max_rounds=3,
    )
    assert stop == expected


async def test_failing_source_is_reported_and_run_goes_on() -> None:
    orch, store = orchestrator([CountingSource(), FailingSource()])
    events = await collect(orch)
    report = final(events)
    assert len(store) == 9
    assert report.metadata.source_failures == {"broken": "HTTP 503 after 3 tries"}
    assert "broken unavailable: HTTP 503 after 3 tries" in report.methodology
    assert any(e.type == "warning" and "503" in e.message for e in events)


async def test_all_sources_failing_ends_with_a_report_saying_why() -> None:
    orch, store = orchestrator([FailingSource()])
    report = final(await collect(orch))
    assert report.metadata.stop_reason == "no_sources"
    assert len(store) == 0
    assert report.references == []


async def test_time_budget_bounds_gathering_and_still_reports() -> None:
    settings = Settings(max_rounds=3, time_budget_seconds=0.5, sources=["local"])
    orch, _ = orchestrator([HangingSource()], settings=settings)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    report = final(await collect(orch))
    assert loop.time() - t0 < 5
    assert report.metadata.stop_reason == "time_budget"
    # no source answered in time: the report says so plainly and cites nothing
    assert report.executive_summary.startswith(
        "The time budget (0.5 s) ran out before any source was searched."
    )
    assert report.references == []
    assert report.metadata.sources_searched == []
    assert report.methodology.startswith("Sources chosen (none was searched): slow. 1 search")


async def test_failing_llm_agents_fall_back_to_extractive_with_a_note() -> None:
    broken = Broken()
    orch, _ = orchestrator(
        [CountingSource()],
        agent_set=agents(planner=broken, writer=broken),
        fallback=agents(),
    )
    events = await collect(orch)
    report = final(events)
    notes = " ".join(report.metadata.notes)
    assert "planner failed" in notes
    assert "report writer failed" in notes
    assert "extractive implementation was used instead" in notes
    assert sum(e.type == "warning" for e in events) >= 2


async def test_failing_agent_without_fallback_ends_in_error_event() -> None:
    orch, _ = orchestrator([CountingSource()], agent_set=agents(planner=Broken()))
    events = await collect(orch)
    assert events[-1].type == "error"
    assert "planning failed" in events[-1].message


@pytest.mark.parametrize("question", ["", "   ", "x" * 5000])
async def test_bad_questions_are_refused_before_any_work(question: str) -> None:
    source = CountingSource()
    settings = Settings(persist_runs=False, sources=["local"])
    with pytest.raises(QuestionError):
        async for _ in research(question, settings, sources=[source], embedder=HashingEmbedder()):
            pass
    assert source.calls == []


async def test_hypotheses_and_markers_only_cite_stored_items() -> None:
    orch, store = orchestrator([CountingSource()])
    report = final(await collect(orch))
    ids = set(store.ids())
    for h in report.hypotheses_tested:
        assert set(h.supporting_evidence_ids) <= ids
    for text in report.texts():
        assert set(marker_ids(text)) <= ids
