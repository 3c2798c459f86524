"""A round searched within the plan's filters: the filters reach every source, records outside
them by their own metadata are screened out and counted in the flow of records, per-source
queries go out verbatim, the call cache keys on the filters, and the methodology says so."""

from __future__ import annotations

import dataclasses
from datetime import date

from deepcritical.agents.search import SearchAgent, screen_by_filters
from deepcritical.evidence.store import EvidenceStore
from deepcritical.llm.model_cache import request_key
from deepcritical.models import (
    DATE_CAUSE,
    DESIGN_CAUSE,
    ChecklistItem,
    Citation,
    DesignFilter,
    Evidence,
    RecordFlow,
    ResearchPlan,
    SearchFilters,
    flow_lines,
)
from deepcritical.report.methodology import (
    FullTextCounts,
    MethodologyRecord,
    ScreeningCounts,
    methodology_text,
)
from deepcritical.state.cache import CachedSource, CallCache
from deepcritical.state.run_store import RunStore
from deepcritical.testing.embedders import HashingEmbedder

SINCE_2015 = SearchFilters(published_from=date(2015, 1, 1))


def record(pmid: str, year: int | None, source: str = "openalex", kind: str = "") -> Evidence:
    return Evidence(
        content=f"{kind} Study {pmid} of metformin and dementia in {pmid} patients.",
        citation=Citation(
            source=source, id=pmid, pmid=pmid, title=f"{kind} paper {pmid}", year=year
        ),
    )


class RecordingSource:
    """Answers fixed records and keeps what every call was sent."""

    def __init__(self, name: str, items: list[Evidence]) -> None:
        self.name = name
        self.items = items
        self.calls: list[tuple[str, SearchFilters | None]] = []

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        self.calls.append((query, filters))
        return [i.model_copy(deep=True) for i in self.items[:limit]]


class PlainSource:
    """A source written before filters existed: ``search(query, limit)`` only."""

    name = "web"

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def search(self, query: str, limit: int) -> list[Evidence]:
        self.calls.append(query)
        return []


def _store() -> EvidenceStore:
    return EvidenceStore(HashingEmbedder(), near_duplicate_threshold=0.999)


def test_screen_by_filters_counts_each_cause() -> None:
    items = [
        record("1", 2012),
        record("2", 2019),
        record("3", None),
        record("4", 2020, kind="Narrative review."),
    ]
    kept, excluded = screen_by_filters(items, SINCE_2015)
    assert [e.citation.pmid for e in kept] == ["2", "3", "4"]
    assert excluded == {DATE_CAUSE: 1}
    trials = SearchFilters(designs=(DesignFilter.RANDOMISED_TRIAL,))
    review = record("5", 2020, kind="A systematic review and meta-analysis.")
    kept, excluded = screen_by_filters([review, record("6", 2021)], trials)
    assert [e.citation.pmid for e in kept] == ["6"]  # design unknown: kept
    assert excluded == {DESIGN_CAUSE: 1}
    assert screen_by_filters(items, None) == (items, {})


async def test_filters_reach_sources_and_outside_records_are_counted() -> None:
    openalex = RecordingSource("openalex", [record("1", 2012), record("2", 2019)])
    web = PlainSource()
    agent = SearchAgent([openalex, web], _store(), 5)  # type: ignore[list-item]
    result = await agent.run(["metformin dementia"], filters=SINCE_2015)
    assert openalex.calls == [("metformin dementia", SINCE_2015)]
    assert result.hits_per_source == {"openalex": 2, "web": 0}
    assert result.excluded_by_filters == {DATE_CAUSE: 1}
    assert "web" in result.failures  # a source that cannot take filters fails, reported
    kept = len(result.added_ids) + result.beyond_limit
    kept += result.identifier_copies + result.near_duplicate_copies
    assert result.returned == kept + sum(result.excluded_by_filters.values())
    assert len(result.added_ids) == 1


async def test_no_filters_call_sources_as_before() -> None:
    web = PlainSource()
    agent = SearchAgent([web], _store(), 5)  # type: ignore[list-item]
    result = await agent.run(["metformin dementia"], filters=SearchFilters())
    assert web.calls == ["metformin dementia"]
    assert result.failures == {}


async def test_source_queries_go_verbatim_to_their_source_only() -> None:
    pubmed = RecordingSource("pubmed", [])
    openalex = RecordingSource("openalex", [])
    agent = SearchAgent([pubmed, openalex], _store(), 5, pubmed_date_from=2015)
    result = await agent.run(
        ["metformin[tiab] AND dementia[tiab]"],
        source_queries={"pubmed": ["metformin[mh]", " "]},
    )
    assert [q for q, _ in pubmed.calls] == ["metformin[mh]"]  # no date filter added
    assert [q for q, _ in openalex.calls] == ["metformin dementia"]
    assert result.queries == ["metformin[tiab] AND dementia[tiab]", "metformin[mh]"]


async def test_the_cache_never_answers_a_filtered_search_with_an_unfiltered_one() -> None:
    runs = RunStore.in_memory()
    try:
        inner = RecordingSource("openalex", [record("1", 2019)])
        cached = CachedSource(inner, CallCache(runs))
        plain_key = cached.key("metformin", 5)
        assert plain_key == request_key(
            "search", {"source": "openalex", "query": "metformin", "limit": 5, "root": None}
        )  # the key of an unfiltered search did not change: older caches replay
        assert cached.key("metformin", 5, SearchFilters()) == plain_key
        filtered_key = cached.key("metformin", 5, SINCE_2015)
        assert filtered_key != plain_key
        assert filtered_key != cached.key("metformin", 5, SearchFilters(languages=("en",)))
        await cached.search("metformin", 5)
        await cached.search("metformin", 5, SINCE_2015)
        assert cached.live_calls == 2
        assert inner.calls == [("metformin", None), ("metformin", SINCE_2015)]
        await cached.search("metformin", 5, SearchFilters(published_from=date(2015, 1, 1)))
        assert cached.live_calls == 2  # the same filters: answered from the cache
    finally:
        runs.close()


def test_flow_counts_the_records_removed_by_the_filters() -> None:
    flow = RecordFlow(
        identified_per_source={"openalex": 10},
        excluded_by_filters=3,
        filter_exclusion_reasons={DATE_CAUSE: 2, DESIGN_CAUSE: 1},
        unique=7,
        screened=7,
        included=7,
        relevant=7,
    )
    assert flow.problems() == []
    assert (
        "- Removed by the plan's search filters: 3 (publication date outside the range: 2; "
        "study design not asked for: 1)"
    ) in flow_lines(flow)
    wrong = flow.model_copy(update={"excluded_by_filters": 0, "filter_exclusion_reasons": {}})
    assert wrong.problems() == ["identified - duplicates - beyond limit != unique"]
    assert RecordFlow.model_validate({"identified_per_source": {}}).excluded_by_filters == 0


def test_methodology_states_the_filters_and_the_sources_that_ignore_them() -> None:
    plan = ResearchPlan(
        question="q",
        refined_question="q",
        checklist=[ChecklistItem(key="k", description="d")],
        filters=SearchFilters(published_from=date(2015, 1, 1), languages=("en",)),
    )
    record_ = MethodologyRecord(
        sources=["pubmed", "web"],
        searched=True,
        rounds=1,
        queries=["q"],
        records=4,
        plan=plan,
        mmr_lambda=0.7,
        screening=ScreeningCounts(0, False, 0, None, 0),
        retracted=0,
        full_text=FullTextCounts(0, 4, False, 0, 10),
        citations=None,
        filtered_out={DATE_CAUSE: 2},
    )
    text = methodology_text(record_)
    assert "Search filters (in the plan): Published: 2015-01-01 to today; Languages: " in text
    assert "PubMed as [dp], [la] and [pt]" in text
    assert "Web ignored published_from, languages." in text
    assert "2 record(s) returned outside the filters" in text
    assert "(publication date outside the range: 2)" in text
    unfiltered = dataclasses.replace(
        record_, plan=plan.model_copy(update={"filters": SearchFilters()})
    )
    assert "Search filters" not in methodology_text(unfiltered)
