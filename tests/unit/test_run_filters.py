"""A whole run (iterative orchestrator, scripted roles) within search filters: the requested
filters go into the plan and to every search call, round 1 sends the plan's per-source
queries verbatim, and records outside the range are removed and counted in the flow and the
methodology."""

from __future__ import annotations

from datetime import date

from deepcritical.config import Settings
from deepcritical.events import PlanningData
from deepcritical.models import Evidence, ResearchPlan, SearchFilters
from tests.unit.test_iterative_orchestrator import (
    Planner,
    agents,
    collect,
    final,
    make_evidence,
    orchestrator,
)

FILTERS = SearchFilters(published_from=date(2015, 1, 1))


class DatedSource:
    """PubMed-named source: every odd record is from 2010, the others undated."""

    name = "pubmed"

    def __init__(self) -> None:
        self.calls: list[tuple[str, SearchFilters | None]] = []

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        self.calls.append((query, filters))
        base = 100 * len(self.calls)
        items = [make_evidence(base + i, query) for i in range(1, limit + 1)]
        for i, item in enumerate(items):
            if i % 2:
                item.citation.year = 2010
        return items


class PlannerWithSourceQueries(Planner):
    async def plan(self, question: str, context: str | None = None) -> ResearchPlan:
        plan = await super().plan(question, context)
        return plan.model_copy(update={"source_queries": {"pubmed": ["metformin[mh]"]}})


async def test_a_run_searches_within_the_requested_filters() -> None:
    source = DatedSource()
    settings = Settings(
        _env_file=None,
        max_rounds=2,
        results_per_query=4,
        sources=["pubmed"],
        search_filters=FILTERS.key(),
    )
    orch, _ = orchestrator([source], settings, agents(planner=PlannerWithSourceQueries()))
    events = await collect(orch)
    report = final(events)
    assert [q for q, _ in source.calls] == ["metformin[mh]", "q2"]  # round 1: verbatim
    assert all(f == FILTERS for _, f in source.calls)
    planning = next(e for e in events if e.type == "planning").data_as(PlanningData)
    assert planning.filters == FILTERS
    assert planning.source_queries == {"pubmed": ["metformin[mh]"]}
    flow = report.metadata.flow
    assert flow is not None
    assert flow.excluded_by_filters == 4  # two 2010 records of four, in each of two rounds
    assert flow.problems() == []
    assert "Search filters (in the plan): Published: 2015-01-01 to today." in report.methodology
    assert "4 record(s) returned outside the filters" in report.methodology


async def test_a_run_without_filters_calls_sources_as_before() -> None:
    source = DatedSource()
    settings = Settings(_env_file=None, max_rounds=1, results_per_query=4, sources=["pubmed"])
    orch, _ = orchestrator([source], settings)
    report = final(await collect(orch))
    assert source.calls == [("q1", None)]
    assert report.metadata.flow is not None
    assert report.metadata.flow.excluded_by_filters == 0
    assert "Search filters" not in report.methodology
