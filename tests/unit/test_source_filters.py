"""Each source sends the plan's search filters in its API's own form (respx captures the
exact request), the local corpus filters by record date and import time, and a search with
no filters is the request it was before filters existed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import respx

from deepcritical.corpus.hybrid import ScoredDocument
from deepcritical.corpus.index import LocalCorpus
from deepcritical.formats.pubmed_xml import PubmedArticle
from deepcritical.models import DesignFilter, SearchFilters, TrialPhase, TrialStatus
from deepcritical.sources.clinicaltrials import ClinicalTrialsSource
from deepcritical.sources.europepmc import EuropePMCSource
from deepcritical.sources.http import HttpOptions
from deepcritical.sources.local import LocalCorpusSource
from deepcritical.sources.openalex import OpenAlexSource
from deepcritical.sources.pubmed import PubMedSource
from deepcritical.testing.embedders import HashingEmbedder
from tests.unit.test_corpus_index import TOPICS, rec, write_jsonl

FAST = HttpOptions(requests_per_second=1000.0, timeout_seconds=5.0, tries=1)
FULL = SearchFilters(
    published_from=date(2015, 1, 1),
    published_to=date(2020, 12, 31),
    languages=("en", "fr"),
    designs=(DesignFilter.RANDOMISED_TRIAL, DesignFilter.META_ANALYSIS),
    trial_phases=(TrialPhase.PHASE2, TrialPhase.PHASE3),
    trial_statuses=(TrialStatus.COMPLETED, TrialStatus.RECRUITING),
    added_since=datetime(2024, 3, 1, 8, 30, tzinfo=UTC),
)


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as c:
        yield c


def _params(route: respx.Route, call: int = 0) -> dict[str, str]:
    """The query parameters of a captured request (last value of each)."""
    query = urlsplit(str(route.calls[call].request.url)).query
    return {k: v[-1] for k, v in parse_qs(query, keep_blank_values=True).items()}


# --------------------------------------------------------------------------- PubMed


@respx.mock
async def test_pubmed_sends_dp_la_pt_in_the_term_and_the_entrez_date(
    client: httpx.AsyncClient,
) -> None:
    base = "https://eutils.test"
    esearch = respx.get(f"{base}/esearch.fcgi").mock(
        return_value=httpx.Response(200, json={"esearchresult": {"idlist": []}})
    )
    source = PubMedSource(client, base_url=base, http=FAST)
    assert await source.search("metformin[tiab]", 5, filters=FULL) == []
    params = _params(esearch)
    assert params["term"] == (
        '(metformin[tiab]) AND ("2015/01/01"[dp] : "2020/12/31"[dp]) AND '
        "(english[la] OR french[la]) AND "
        '("meta-analysis"[pt] OR "randomized controlled trial"[pt])'
    )
    assert params["datetype"] == "edat"
    assert params["mindate"] == "2024/03/01"
    assert params["maxdate"] == "3000/12/31"


@respx.mock
async def test_pubmed_without_filters_sends_the_term_as_before(
    client: httpx.AsyncClient,
) -> None:
    base = "https://eutils.test"
    esearch = respx.get(f"{base}/esearch.fcgi").mock(
        return_value=httpx.Response(200, json={"esearchresult": {"idlist": []}})
    )
    source = PubMedSource(client, base_url=base, http=FAST)
    await source.search("metformin", 5)
    await source.search("metformin", 5, filters=SearchFilters())
    for call in range(2):
        params = _params(esearch, call)
        assert params["term"] == "metformin"
        assert "datetype" not in params
        assert "mindate" not in params


@respx.mock
async def test_pubmed_open_ended_range(client: httpx.AsyncClient) -> None:
    base = "https://eutils.test"
    esearch = respx.get(f"{base}/esearch.fcgi").mock(
        return_value=httpx.Response(200, json={"esearchresult": {"idlist": []}})
    )
    source = PubMedSource(client, base_url=base, http=FAST)
    await source.search("x", 5, filters=SearchFilters(published_to=date(2010, 6, 30)))
    assert _params(esearch)["term"] == '(x) AND ("1000/01/01"[dp] : "2010/06/30"[dp])'


# --------------------------------------------------------------------------- Europe PMC


@respx.mock
async def test_europepmc_ands_first_pdate_lang_pub_type_and_creation_date(
    client: httpx.AsyncClient,
) -> None:
    base = "https://epmc.test/rest"
    route = respx.get(f"{base}/search").mock(
        return_value=httpx.Response(200, json={"resultList": {"result": []}})
    )
    source = EuropePMCSource(client, base_url=base, http=FAST)
    await source.search("metformin dementia", 5, filters=FULL)
    assert _params(route)["query"] == (
        "(metformin dementia) AND FIRST_PDATE:[2015-01-01 TO 2020-12-31] AND "
        "(LANG:eng OR LANG:fre) AND "
        '(PUB_TYPE:"Meta-Analysis" OR PUB_TYPE:"Randomized Controlled Trial") AND '
        "CREATION_DATE:[2024-03-01 TO 3000-12-31]"
    )


@respx.mock
async def test_europepmc_without_filters_sends_the_query_as_before(
    client: httpx.AsyncClient,
) -> None:
    base = "https://epmc.test/rest"
    route = respx.get(f"{base}/search").mock(
        return_value=httpx.Response(200, json={"resultList": {"result": []}})
    )
    await EuropePMCSource(client, base_url=base, http=FAST).search("metformin", 5)
    assert _params(route)["query"] == "metformin"


# --------------------------------------------------------------------------- ClinicalTrials.gov


@respx.mock
async def test_trials_send_status_phase_start_date_design_and_last_update(
    client: httpx.AsyncClient,
) -> None:
    base = "https://ct.test/api/v2"
    route = respx.get(f"{base}/studies").mock(
        return_value=httpx.Response(200, json={"studies": []})
    )
    await ClinicalTrialsSource(client, base_url=base, http=FAST).search("metformin", 5, FULL)
    params = _params(route)
    assert params["filter.overallStatus"] == "COMPLETED,RECRUITING"
    assert params["filter.advanced"] == (
        "AREA[Phase](PHASE2 OR PHASE3) AND "
        "AREA[StartDate]RANGE[2015-01-01,2020-12-31] AND "
        "AREA[DesignAllocation]RANDOMIZED AND "
        "AREA[LastUpdatePostDate]RANGE[2024-03-01,MAX]"
    )


@respx.mock
async def test_trials_open_ended_start_date_and_designs_ored(client: httpx.AsyncClient) -> None:
    base = "https://ct.test/api/v2"
    route = respx.get(f"{base}/studies").mock(
        return_value=httpx.Response(200, json={"studies": []})
    )
    filters = SearchFilters(
        published_from=date(2018, 1, 1),
        designs=(DesignFilter.CLINICAL_TRIAL, DesignFilter.OBSERVATIONAL),
    )
    await ClinicalTrialsSource(client, base_url=base, http=FAST).search("x", 5, filters)
    params = _params(route)
    assert "filter.overallStatus" not in params
    assert params["filter.advanced"] == (
        "AREA[StartDate]RANGE[2018-01-01,MAX] AND "
        "(AREA[StudyType]INTERVENTIONAL OR AREA[StudyType]OBSERVATIONAL)"
    )


@respx.mock
async def test_trials_asked_only_for_reviews_send_no_request(client: httpx.AsyncClient) -> None:
    base = "https://ct.test/api/v2"
    route = respx.get(f"{base}/studies").mock(
        return_value=httpx.Response(200, json={"studies": []})
    )
    reviews = SearchFilters(designs=(DesignFilter.SYSTEMATIC_REVIEW,))
    assert (
        await ClinicalTrialsSource(client, base_url=base, http=FAST).search("x", 5, reviews) == []
    )
    assert not route.called


@respx.mock
async def test_trials_explicit_statuses_still_win(client: httpx.AsyncClient) -> None:
    base = "https://ct.test/api/v2"
    route = respx.get(f"{base}/studies").mock(
        return_value=httpx.Response(200, json={"studies": []})
    )
    source = ClinicalTrialsSource(client, base_url=base, http=FAST, statuses=["withdrawn"])
    await source.search("x", 5, SearchFilters(languages=("en",)))
    assert _params(route)["filter.overallStatus"] == "WITHDRAWN"  # the constructor's
    assert "filter.advanced" not in _params(route)  # languages have no CT.gov form
    await source.search("x", 5, FULL, statuses=["terminated"])
    assert _params(route, 1)["filter.overallStatus"] == "TERMINATED"


# --------------------------------------------------------------------------- OpenAlex


@respx.mock
async def test_openalex_sends_the_filter_parameter(client: httpx.AsyncClient) -> None:
    base = "https://openalex.test"
    route = respx.get(f"{base}/works").mock(
        return_value=httpx.Response(200, json={"meta": {"count": 0}, "results": []})
    )
    source = OpenAlexSource(client, base_url=base, http=FAST)
    await source.search("metformin", 5, filters=FULL)
    assert _params(route)["filter"] == (
        "from_publication_date:2015-01-01,to_publication_date:2020-12-31,"
        "language:en|fr,from_created_date:2024-03-01"
    )  # randomised trials have no OpenAlex type: screened after retrieval
    reviews = SearchFilters(designs=(DesignFilter.SYSTEMATIC_REVIEW, DesignFilter.REVIEW))
    await source.search("metformin", 5, filters=reviews)
    assert _params(route, 1)["filter"] == "type:review"
    await source.search("metformin", 5)
    assert "filter" not in _params(route, 2)


# --------------------------------------------------------------------------- local corpus


class FakeCorpus:
    """A corpus answering fixed hits, with import times per PMID."""

    def __init__(self, hits: list[ScoredDocument], added: dict[str, datetime]) -> None:
        self.hits = hits
        self.added = added
        self.limits: list[int] = []

    def search(self, query: str, limit: int) -> list[ScoredDocument]:
        self.limits.append(limit)
        return self.hits[:limit]

    def added_times(self, pmids: Any) -> dict[str, datetime]:
        return {p: self.added[p] for p in pmids if p in self.added}


def _hit(pmid: str, year: int | None, score: float) -> ScoredDocument:
    article = PubmedArticle(pmid=pmid, title=f"Record {pmid}", abstract="Text.", year=year)
    return ScoredDocument(article=article, score=score)


async def test_local_corpus_filters_by_record_date_and_import_time(tmp_path: Path) -> None:
    old = datetime(2023, 1, 1, tzinfo=UTC)
    new = datetime(2024, 6, 1, tzinfo=UTC)
    corpus = FakeCorpus(
        [_hit("1", 2012, 0.9), _hit("2", 2018, 0.8), _hit("3", None, 0.7), _hit("4", 2019, 0.6)],
        {"1": new, "2": new, "3": new, "4": old},
    )
    source = LocalCorpusSource(corpus)  # type: ignore[arg-type]
    dated = SearchFilters(published_from=date(2015, 1, 1))
    assert [e.citation.pmid for e in await source.search("q", 3, dated)] == ["2", "3", "4"]
    assert corpus.limits == [15]  # asked for more, so the filtered list can still fill 3
    since = SearchFilters(added_since=datetime(2024, 1, 1, tzinfo=UTC))
    assert [e.citation.pmid for e in await source.search("q", 10, since)] == ["1", "2", "3"]
    both = SearchFilters(published_from=date(2015, 1, 1), added_since=new)
    assert [e.citation.pmid for e in await source.search("q", 10, both)] == ["2", "3"]
    assert len(await source.search("q", 2)) == 2
    assert corpus.limits[-1] == 2


async def test_a_real_corpus_keeps_its_import_times(tmp_path: Path) -> None:
    records = [rec(p, t, year=2019) for p, t in TOPICS.items()]
    before = datetime.now(UTC).replace(microsecond=0)
    corpus = LocalCorpus(tmp_path / "corpus", HashingEmbedder())
    try:
        corpus.add_file(write_jsonl(tmp_path / "topics.jsonl", records))
        after = datetime.now(UTC)
        times = corpus.added_times([*TOPICS, "999"])
        assert set(times) == set(TOPICS)
        assert all(before <= t <= after for t in times.values())
        source = LocalCorpusSource(corpus)
        query = next(iter(TOPICS.values()))
        assert await source.search(query, 5, SearchFilters(added_since=before))
        assert (
            await source.search(query, 5, SearchFilters(added_since=after.replace(year=3000))) == []
        )
        assert await source.search(query, 5, SearchFilters(published_to=date(2018, 12, 31))) == []
    finally:
        corpus.close()
