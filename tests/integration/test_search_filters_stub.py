"""A run with search filters against the local API stub: every search request the stub logs
carries the date bounds in its API's own form, the stub answers within them, the web source
(which has no filters) is named in a warning, and the report keeps only records inside the
range (or of unknown date) and states the filters."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import httpx

from deepcritical.config import Settings
from deepcritical.events import PlanningData
from deepcritical.models import SearchFilters, TrialStatus
from deepcritical.testing.api_stub import StubAPI, build_stub_sources
from deepcritical.testing.embedders import HashingEmbedder

QUESTION = "Does MEK inhibition improve survival in BRAF-mutated melanoma?"
FILTERS = SearchFilters(published_from=date(2015, 1, 1), published_to=date(2020, 12, 31))
SEARCH_ROUTES = {"esearch", "trials", "europepmc", "openalex"}


def _settings(stub: StubAPI, tmp_path: Path) -> Settings:
    return Settings(
        _env_file=None,
        llm="none",
        sources=["pubmed", "trials", "europepmc", "openalex", "web"],
        max_rounds=1,
        max_sources=30,
        results_per_query=10,
        max_queries_per_round=2,
        max_full_texts=0,
        citation_seeds=0,
        http_timeout_seconds=5.0,
        http_retries=2,
        data_dir=tmp_path,
        persist_runs=False,
        source_base_urls={
            "pubmed": stub.eutils_url,
            "trials": stub.trials_url,
            "europepmc": stub.europepmc_url,
            "openalex": stub.openalex_url,
            "web": stub.ddgs_url,
        },
    )


def _date_bounded(route: str, params: dict[str, str]) -> bool:
    """Whether a logged search request carries the 2015-2020 bounds in its API's form."""
    if route == "esearch":
        return '("2015/01/01"[dp] : "2020/12/31"[dp])' in params.get("term", "")
    if route == "europepmc":
        return "FIRST_PDATE:[2015-01-01 TO 2020-12-31]" in params.get("query", "")
    if route == "trials":
        return "AREA[StartDate]RANGE[2015-01-01,2020-12-31]" in params.get("filter.advanced", "")
    return "from_publication_date:2015-01-01,to_publication_date:2020-12-31" in params.get(
        "filter", ""
    )


async def test_a_filtered_run_sends_only_date_bounded_searches(
    stub: StubAPI, tmp_path: Path
) -> None:
    from deepcritical.api import research

    events = [
        e
        async for e in research(
            QUESTION, _settings(stub, tmp_path), filters=FILTERS, embedder=HashingEmbedder()
        )
    ]
    last = events[-1]
    assert last.type == "done", last.message
    assert last.result is not None
    searches = [r for r in stub.requests if r.route in SEARCH_ROUTES]
    assert {r.route for r in searches} == SEARCH_ROUTES
    unbounded = [(r.route, r.params) for r in searches if not _date_bounded(r.route, r.params)]
    assert unbounded == []
    years = [e.citation.year for e in last.result.evidence]
    assert years, "the stub has records inside the range"
    assert all(y is None or 2015 <= y <= 2020 for y in years), years
    warnings = [e.message for e in events if e.type == "warning"]
    assert (
        "Web ignores the plan's search filters published_from, published_to; its records are "
        "screened by their own date and design only"
    ) in warnings
    assert "Web ignored published_from, published_to." in last.result.report.methodology
    planning = next(e for e in events if e.type == "planning")
    assert planning.data_as(PlanningData).filters == FILTERS
    methodology = last.result.report.methodology
    assert "Search filters (in the plan): Published: 2015-01-01 to 2020-12-31" in methodology


async def test_the_stub_answers_within_the_added_since_bound(
    stub: StubAPI, client: httpx.AsyncClient
) -> None:
    sources = build_stub_sources(
        stub, client, timeout_seconds=5.0, tries=1, names=("pubmed", "europepmc", "openalex")
    )
    everything = {s.name: await s.search("melanoma MEK", 50) for s in sources}
    assert all(everything.values())
    later = SearchFilters(added_since=datetime(2999, 1, 1, tzinfo=UTC))
    for source in sources:
        assert await source.search("melanoma MEK", 50, filters=later) == [], source.name
    pubmed_since = SearchFilters(added_since=datetime(2016, 1, 1, tzinfo=UTC))
    (pubmed, *_) = sources
    newer = await pubmed.search("melanoma MEK", 50, filters=pubmed_since)
    assert 0 < len(newer) < len(everything["pubmed"])
    edat = [r.params for r in stub.requests_for("esearch") if r.params.get("datetype")]
    assert edat[-1] == {**edat[-1], "datetype": "edat", "mindate": "2016/01/01"}


async def test_the_stub_answers_trials_updated_since_and_of_a_status(
    stub: StubAPI, client: httpx.AsyncClient
) -> None:
    (trials,) = build_stub_sources(stub, client, timeout_seconds=5.0, tries=1, names=("trials",))
    since = SearchFilters(added_since=datetime(2016, 1, 1, tzinfo=UTC))
    updated = await trials.search("phelan", 50, filters=since)
    assert sorted(e.citation.nct_id or "" for e in updated) == ["NCT00763412", "NCT03475563"]
    withdrawn = SearchFilters(trial_statuses=(TrialStatus.WITHDRAWN,))
    assert [e.citation.nct_id for e in await trials.search("phelan", 50, withdrawn)] == [
        "NCT00973089"
    ]
    (last, *_) = reversed(stub.requests_for("trials"))
    assert last.params["filter.overallStatus"] == "WITHDRAWN"


async def test_citation_tracking_keeps_to_the_filters(stub: StubAPI, tmp_path: Path) -> None:
    """The seed (PMID 22663011, 2012) is inside 2010-; its references from 2001 and the
    papers citing it from 1990 and 1976 (the stub's synthetic graph) are removed by the
    filters and counted in the flow, which still adds up."""
    from deepcritical.api import research

    settings = _settings(stub, tmp_path).model_copy(
        update={"sources": ["pubmed", "openalex"], "citation_seeds": 1, "citation_candidates": 10}
    )
    since_2010 = SearchFilters(published_from=date(2010, 1, 1))
    events = [
        e
        async for e in research(QUESTION, settings, filters=since_2010, embedder=HashingEmbedder())
    ]
    result = events[-1].result
    assert result is not None, events[-1].message
    assert any(r.route == "elink" for r in stub.requests), "citation tracking ran"
    years = [e.citation.year for e in result.evidence]
    assert all(y is None or y >= 2010 for y in years), years
    flow = result.report.metadata.flow
    assert flow is not None
    assert flow.identified_by_citation_tracking > 0
    assert flow.excluded_by_filters > 0
    assert flow.problems() == []
