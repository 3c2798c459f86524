"""The real source clients against a local stub of the search APIs (a real HTTP server).

The stub (:mod:`deepcritical.testing.api_stub`) serves the recorded responses of
``../shared/fixtures/api`` on 127.0.0.1; these tests skip when the fixtures are absent. They
cover, in order: what each source gets from the recorded data (paging with the recorded
tokens and cursors included), faults through the real HTTP stack (429 with Retry-After, 5xx,
hangs, malformed and HTML bodies), and finally whole research runs through every source with
:func:`deepcritical.api.research` (LLM-free), checking cross-source deduplication, the report
and how failing sources are reported.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Sequence
from pathlib import Path

import httpx
import pytest

from deepcritical.config import Settings
from deepcritical.events import ResearchEvent
from deepcritical.evidence.embeddings import Embedder
from deepcritical.evidence.identifiers import identifier_keys
from deepcritical.models import SOURCE_LABELS, Evidence, RunResult
from deepcritical.sources.base import SearchSource, SourceError
from deepcritical.sources.clinicaltrials import ClinicalTrialsSource
from deepcritical.sources.europepmc import EuropePMCSource
from deepcritical.sources.http import new_http_client
from deepcritical.sources.openalex import OpenAlexSource
from deepcritical.sources.pubmed import PubMedSource
from deepcritical.sources.web import WebSearchSource
from deepcritical.testing.api_stub import (
    NO_HITS,
    PMID_ALL_SOURCES,
    PMID_BY_DOI,
    Fault,
    Route,
    StubAPI,
    build_stub_sources,
    stub_only_guard,
)

QUESTION = "Does MEK inhibition improve survival in BRAF-mutated melanoma?"
QUERY = "MEK inhibition melanoma survival"
ALL_SOURCES = ("pubmed", "trials", "europepmc", "openalex", "web")
NEJM_DOI = "10.1056/nejmoa1203421"
FRONT_PHYSIOL_DOI = "10.3389/fphys.2018.01034"
FRONT_PHYSIOL_PMCID = "PMC6079548"
FAST = 0.001
"""Backoff for tests: retries are immediate unless the server says Retry-After."""


def _source(
    name: str,
    stub: StubAPI,
    client: httpx.AsyncClient,
    *,
    timeout_seconds: float = 5.0,
    tries: int = 3,
) -> SearchSource:
    (source,) = build_stub_sources(
        stub,
        client,
        timeout_seconds=timeout_seconds,
        tries=tries,
        backoff_seconds=FAST,
        names=[name],
    )
    return source


# --------------------------------------------------------------------------- the stub itself


def test_stub_serves_every_route_on_loopback(stub: StubAPI) -> None:
    assert stub.host == "127.0.0.1"
    assert stub.port > 0
    with httpx.Client(timeout=5) as http:
        esearch = http.get(
            f"{stub.eutils_url}/esearch.fcgi", params={"term": "x", "retmode": "json"}
        )
        efetch = http.get(f"{stub.eutils_url}/efetch.fcgi", params={"id": PMID_ALL_SOURCES})
        trials = http.get(f"{stub.trials_url}/studies", params={"query.term": "x"})
        epmc = http.get(f"{stub.europepmc_url}/search", params={"query": "x", "format": "json"})
        works = http.get(f"{stub.openalex_url}/works", params={"search": "x"})
        web = http.get(f"{stub.ddgs_url}/search/text", params={"query": "x"})
        missing = http.get(stub.url("/no/such/api"))
    assert esearch.json()["esearchresult"]["idlist"][:2] == [PMID_ALL_SOURCES, PMID_BY_DOI]
    assert efetch.headers["content-type"].startswith("text/xml")
    assert b'<PMID Version="1">22663011</PMID>' in efetch.content
    assert trials.json()["nextPageToken"]
    assert epmc.json()["nextCursorMark"]
    assert works.json()["meta"]["count"] == 5
    assert all(r["href"].startswith(stub.root) for r in web.json()["results"])
    assert missing.status_code == 404
    assert missing.headers["content-type"].startswith("text/html")
    assert [r.route for r in stub.requests][:6] == [
        "esearch", "efetch", "trials", "europepmc", "openalex", "websearch",
    ]  # fmt: skip


# --------------------------------------------------------------------------- sources, no faults


async def test_pubmed_esearch_then_efetch(stub: StubAPI, client: httpx.AsyncClient) -> None:
    source = _source("pubmed", stub, client)
    items = await source.search(QUERY, 10)

    assert [e.citation.pmid for e in items] == stub.data.pubmed_order
    assert items[0].relevance == 1.0
    assert all(e.query == QUERY for e in items)
    nejm = items[0]
    assert nejm.citation.doi == NEJM_DOI
    assert nejm.content.startswith("BACKGROUND:")  # structured abstract labels kept
    assert items[1].citation.pmcid == FRONT_PHYSIOL_PMCID
    esearch, efetch = stub.requests_for("esearch"), stub.requests_for("efetch")
    assert len(esearch) == 1
    assert esearch[0].params["retmode"] == "json"
    assert esearch[0].params["sort"] == "relevance"
    assert esearch[0].params["tool"] == "deepcritical"
    assert efetch[0].params["id"].split(",") == stub.data.pubmed_order
    assert efetch[0].params["retmode"] == "xml"


async def test_pubmed_respects_limit(stub: StubAPI, client: httpx.AsyncClient) -> None:
    items = await _source("pubmed", stub, client).search(QUERY, 3)
    assert [e.citation.pmid for e in items] == stub.data.pubmed_order[:3]
    assert stub.requests_for("esearch")[0].params["retmax"] == "3"


async def test_no_hits_gives_empty_lists(stub: StubAPI, client: httpx.AsyncClient) -> None:
    for name in ("pubmed", "trials", "europepmc", "openalex"):
        assert await _source(name, stub, client).search(f"{NO_HITS} query", 10) == []
    assert stub.requests_for("efetch") == []  # PubMed skips efetch when esearch finds nothing


async def test_pubmed_rate_limit_spaces_requests(stub: StubAPI, client: httpx.AsyncClient) -> None:
    """Without an API key NCBI allows 3 requests/s: arrivals are >= 1/3 s apart."""
    source = _source("pubmed", stub, client)
    assert isinstance(source, PubMedSource)
    assert source.requests_per_second == 3.0
    await asyncio.gather(source.search("one", 5), source.search("two", 5))
    arrivals = [r.arrived for r in stub.requests if r.route in ("esearch", "efetch")]
    assert len(arrivals) == 4
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    # Sent 1/3 s apart; arrival times jitter by a few milliseconds, never to a burst.
    assert arrivals[-1] - arrivals[0] >= 3 * (1 / 3) - 0.05, gaps
    assert min(gaps) >= 0.25, gaps


async def test_trials_pages_with_recorded_tokens(stub: StubAPI, client: httpx.AsyncClient) -> None:
    source = _source("trials", stub, client)
    items = await source.search(QUERY, 12)

    expected = [s["protocolSection"]["identificationModule"]["nctId"] for s in stub.data.studies]
    assert [e.citation.nct_id for e in items] == expected[:12]
    calls = stub.requests_for("trials")
    assert [c.params.get("pageToken") for c in calls] == [
        None,
        stub.data.trial_tokens[5],  # the recorded page-1 nextPageToken
        stub.data.trial_tokens[10],  # the recorded page-2 nextPageToken
    ]
    assert all(c.params["query.term"] == QUERY for c in calls)
    assert all(c.params["format"] == "json" for c in calls)
    withdrawn = next(e for e in items if e.citation.nct_id == "NCT00973089")
    assert "WITHDRAWN" in withdrawn.content
    assert items[0].relevance == 1.0
    assert items[-1].relevance == pytest.approx(1 / 12)


async def test_trials_reads_to_the_last_page(stub: StubAPI, client: httpx.AsyncClient) -> None:
    items = await _source("trials", stub, client).search(QUERY, 100)
    assert len(items) == len(stub.data.studies) == 13
    assert len(stub.requests_for("trials")) == 3  # the last page has no nextPageToken


async def test_europepmc_pages_with_cursor_marks(stub: StubAPI, client: httpx.AsyncClient) -> None:
    source = _source("europepmc", stub, client)
    items = await source.search(QUERY, 40)

    assert len(items) == 40
    calls = stub.requests_for("europepmc")
    assert [c.params["cursorMark"] for c in calls] == ["*", "AoIIP4ZawSg1MzEyODI1MA=="]
    assert all(c.params["resultType"] == "core" for c in calls)
    by_pmid = {e.citation.pmid: e for e in items if e.citation.pmid}
    nejm = by_pmid[PMID_ALL_SOURCES]
    assert nejm.citation.doi == NEJM_DOI
    assert nejm.content.startswith("BACKGROUND:")
    pmc_only = next(e for e in items if e.citation.pmcid == FRONT_PHYSIOL_PMCID)
    assert pmc_only.citation.pmid is None
    assert pmc_only.citation.doi == FRONT_PHYSIOL_DOI  # sent upper-case, normalised


async def test_europepmc_stops_at_end_of_results(stub: StubAPI, client: httpx.AsyncClient) -> None:
    items = await _source("europepmc", stub, client).search(QUERY, 1000)
    assert len(items) == len(stub.data.europepmc_records) == 125
    calls = stub.requests_for("europepmc")
    assert len(calls) == 5  # 25 per page; the 5th reply repeats its cursor: end of results
    assert sum(e.is_preprint for e in items) == 8  # the recorded PPR records


async def test_openalex_works(stub: StubAPI, client: httpx.AsyncClient) -> None:
    items = await _source("openalex", stub, client).search(QUERY, 10)

    assert len(items) == 5
    assert items[0].citation.doi == NEJM_DOI
    assert items[0].citation.pmid is None  # only the DOI links it to PubMed
    assert any(e.citation.pmid == "38799228" for e in items)
    call = stub.requests_for("openalex")[0]
    assert call.params["search"] == QUERY
    assert "abstract_inverted_index" in call.params["select"]
    assert len(stub.requests_for("openalex")) == 1  # a short page ends the paging


async def test_web_search_through_ddgs_api_and_pages(
    stub: StubAPI, client: httpx.AsyncClient
) -> None:
    source = _source("web", stub, client)
    items = await source.search(QUERY, 5)

    assert len(items) == 3
    first_title, _ = stub.data.web_pages[stub.data.web_results[0]["href"]]
    assert items[0].citation.title == first_title
    assert len(items[0].content) > 300  # the page's main text, not the snippet
    assert "Cookie settings" not in items[0].content  # boilerplate removed
    second_path = stub.data.web_redirects["/web/redirect/second"]
    assert len(items[1].content) > 300  # the redirect was followed through the guard
    assert items[2].content.startswith("Snippet of a page that is gone")  # 404: snippet kept
    fetched = [r.path for r in stub.requests_for("webpage")]
    assert second_path in fetched
    assert "/web/missing.html" in fetched


async def test_web_default_guard_refuses_the_loopback_stub(
    stub: StubAPI, client: httpx.AsyncClient
) -> None:
    (source,) = build_stub_sources(
        stub, client, timeout_seconds=5, tries=1, names=["web"], web_guard=False
    )
    assert await source.search(QUERY, 5) == []
    assert stub.requests_for("websearch")  # searched...
    assert stub.requests_for("webpage") == []  # ...but no page on 127.0.0.1 was fetched


async def test_web_api_no_results_is_an_empty_list(
    stub: StubAPI, client: httpx.AsyncClient
) -> None:
    assert await _source("web", stub, client).search(f"{NO_HITS} query", 5) == []
    assert len(stub.requests_for("websearch")) == 1


# --------------------------------------------------------------------------- faults


async def test_429_then_success_waits_retry_after(stub: StubAPI, client: httpx.AsyncClient) -> None:
    stub.add_fault("europepmc", Fault.rate_limited(times=2, retry_after="1"))
    source = _source("europepmc", stub, client)
    started = time.monotonic()
    items = await source.search(QUERY, 10)
    elapsed = time.monotonic() - started

    assert len(items) == 10
    calls = stub.requests_for("europepmc")
    assert [c.status for c in calls] == [429, 429, 200]
    gaps = [b.arrived - a.arrived for a, b in itertools.pairwise(calls)]
    # The backoff is 1 ms, so only Retry-After explains waits of a second.
    assert all(0.98 <= g < 3.0 for g in gaps), gaps
    assert elapsed < 5.0


async def test_pubmed_429_with_ncbi_body_then_success(
    stub: StubAPI, client: httpx.AsyncClient
) -> None:
    stub.add_fault("esearch", Fault.rate_limited(times=1, retry_after="1"))
    items = await _source("pubmed", stub, client).search(QUERY, 10)

    assert len(items) == 7
    calls = stub.requests_for("esearch")
    assert [c.status for c in calls] == [429, 200]
    assert 0.98 <= calls[1].arrived - calls[0].arrived < 3.0


async def test_pubmed_rate_limit_body_with_http_200_is_retried(
    stub: StubAPI, client: httpx.AsyncClient
) -> None:
    stub.add_fault("efetch", Fault.rate_limit_body(times=2))
    items = await _source("pubmed", stub, client).search(QUERY, 10)
    assert len(items) == 7
    assert len(stub.requests_for("efetch")) == 3


async def test_pubmed_rate_limit_body_every_time_is_a_source_error(
    stub: StubAPI, client: httpx.AsyncClient
) -> None:
    stub.add_fault("esearch", Fault.rate_limit_body(times=10))
    with pytest.raises(SourceError, match="NCBI API rate limit exceeded after 3 tries"):
        await _source("pubmed", stub, client).search(QUERY, 10)


SEARCH_ROUTES: list[tuple[str, Route]] = [
    ("pubmed", "esearch"),
    ("pubmed", "efetch"),
    ("trials", "trials"),
    ("europepmc", "europepmc"),
    ("openalex", "openalex"),
    ("web", "websearch"),
]


@pytest.mark.parametrize(("name", "route"), SEARCH_ROUTES)
async def test_persistent_500_is_a_source_error_after_all_tries(
    stub: StubAPI, client: httpx.AsyncClient, name: str, route: Route
) -> None:
    stub.add_fault(route, Fault.server_error(500))
    with pytest.raises(SourceError, match="HTTP 500 after 3 tries") as info:
        await _source(name, stub, client, tries=3).search(QUERY, 10)
    assert info.value.source == name
    assert len(stub.requests_for(route)) == 3


@pytest.mark.parametrize(("name", "route"), SEARCH_ROUTES)
async def test_hanging_endpoint_times_out_within_configured_seconds(
    stub: StubAPI, name: str, route: Route
) -> None:
    settings = Settings(_env_file=None, http_timeout_seconds=0.3, http_retries=2)
    stub.add_fault(route, Fault.hang(30))
    async with new_http_client(settings.http_timeout_seconds) as client:
        source = _source(
            name,
            stub,
            client,
            timeout_seconds=settings.http_timeout_seconds,
            tries=settings.http_retries,
        )
        started = time.monotonic()
        with pytest.raises(SourceError, match=r"timed out after 0\.3 s \(2 tries\)"):
            await source.search(QUERY, 10)
        elapsed = time.monotonic() - started
    # Two tries of 0.3 s each (plus, for efetch, the esearch and a rate-limit slot before
    # them); the stub would have hung for 30 s.
    assert 2 * 0.3 <= elapsed < 2 * 0.3 + 1.0, elapsed
    assert len(stub.requests_for(route)) == 2


async def test_hanging_web_page_keeps_the_snippet(stub: StubAPI) -> None:
    stub.add_fault("webpage", Fault.hang(30))
    async with new_http_client(0.3) as client:
        source = _source("web", stub, client, timeout_seconds=0.3, tries=1)
        started = time.monotonic()
        items = await source.search(QUERY, 5)
        elapsed = time.monotonic() - started
    assert [e.content for e in items] == [r["body"] for r in stub.data.web_results]
    assert elapsed < 2.5, elapsed  # 3 page fetches at 2/s, each cut at 0.3 s


MALFORMED: list[tuple[str, Route, str]] = [
    ("pubmed", "esearch", r"^esearch: malformed esearch JSON|^malformed esearch JSON"),
    ("pubmed", "efetch", r"^malformed efetch XML: not well-formed XML"),
    ("trials", "trials", r"^malformed JSON from ClinicalTrials\.gov"),
    ("europepmc", "europepmc", r"^malformed JSON from Europe PMC"),
    ("openalex", "openalex", r"^response is not JSON \(application/json, HTTP 200\)"),
    ("web", "websearch", r"^web search failed: search server sent no JSON"),
]


@pytest.mark.parametrize(("name", "route", "message"), MALFORMED)
async def test_malformed_body_is_a_clear_source_error(
    stub: StubAPI, client: httpx.AsyncClient, name: str, route: Route, message: str
) -> None:
    stub.add_fault(route, Fault.malformed())
    with pytest.raises(SourceError, match=message) as info:
        await _source(name, stub, client).search(QUERY, 10)
    assert info.value.source == name
    assert len(stub.requests_for(route)) == 1  # a bad body is not retried


@pytest.mark.parametrize(("name", "route"), SEARCH_ROUTES)
async def test_html_404_is_a_source_error_without_retry(
    stub: StubAPI, client: httpx.AsyncClient, name: str, route: Route
) -> None:
    stub.add_fault(route, Fault.html_404())
    with pytest.raises(SourceError, match=r"HTTP 404 from 127\.0\.0\.1") as info:
        await _source(name, stub, client).search(QUERY, 10)
    assert "<" not in str(info.value)  # no HTML in the reason
    assert len(stub.requests_for(route)) == 1


HTML_WITH_200: list[tuple[str, Route, str]] = [
    ("pubmed", "esearch", r"malformed esearch JSON: '<!doctype html>"),
    ("pubmed", "efetch", r"malformed efetch XML"),
    ("trials", "trials", r"malformed JSON from ClinicalTrials\.gov: got text/html"),
    ("europepmc", "europepmc", r"malformed JSON from Europe PMC: got text/html"),
    ("openalex", "openalex", r"response is not JSON \(text/html, HTTP 200\)"),
    ("web", "websearch", r"web search failed: search server sent no JSON"),
]


@pytest.mark.parametrize(("name", "route", "message"), HTML_WITH_200)
async def test_html_page_with_http_200_is_a_source_error(
    stub: StubAPI, client: httpx.AsyncClient, name: str, route: Route, message: str
) -> None:
    """A captive portal or maintenance page answering 200 instead of the API."""
    stub.add_fault(route, Fault(status=200, body_kind="html_404", content_type="text/html"))
    with pytest.raises(SourceError, match=message):
        await _source(name, stub, client).search(QUERY, 10)


# --------------------------------------------------------------------------- research runs


def _settings(tmp_path: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "llm": "none",
        "max_rounds": 1,
        "results_per_query": 10,
        "max_queries_per_round": 4,
        "http_timeout_seconds": 5.0,
        "http_retries": 3,
        "data_dir": tmp_path,
        "sources": list(ALL_SOURCES),
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[arg-type]


FAST_WEB = {"web": 50.0}
"""Web page rate for runs whose subject is another source: the default 2 pages/s (shared by all
hosts) would make each run take 8 s (4 queries x 4 page fetches; see the benchmark notes)."""


async def _research(
    settings: Settings, sources: Sequence[SearchSource], embedder: Embedder
) -> tuple[list[ResearchEvent], RunResult]:
    from deepcritical.api import research

    events = [e async for e in research(QUESTION, settings, sources=sources, embedder=embedder)]
    assert events, "no events"
    last = events[-1]
    assert last.type == "done", f"run ended with {last.type}: {last.message}"
    assert last.result is not None
    return events, last.result


def _one(evidence: Sequence[Evidence], key: str) -> Evidence:
    found = [e for e in evidence if key in identifier_keys(e.citation)]
    assert len(found) == 1, f"{key}: {len(found)} items"
    return found[0]


def _assert_one_item_per_document(evidence: Sequence[Evidence]) -> None:
    ids = [e.id for e in evidence]
    assert len(ids) == len(set(ids))
    owner: dict[str, str] = {}
    for item in evidence:
        for key in identifier_keys(item.citation):
            assert key not in owner, f"{key} in {owner[key]} and {item.id}"
            owner[key] = item.id


def _assert_report_is_grounded(result: RunResult) -> None:
    report = result.report
    evidence_ids = {e.id for e in result.evidence}
    assert report.references, "the report has no references"
    assert {r.evidence_id for r in report.references} <= evidence_ids
    assert set(report.cited_ids()) <= evidence_ids
    assert report.executive_summary.strip()
    assert report.to_markdown().startswith(f"# {report.title}")


async def test_research_through_all_sources_merges_one_evidence_list(
    stub: StubAPI, hashing_embedder: Embedder, tmp_path: Path
) -> None:
    settings = _settings(tmp_path)
    async with new_http_client(settings.http_timeout_seconds) as client:
        sources = build_stub_sources(
            stub,
            client,
            timeout_seconds=settings.http_timeout_seconds,
            tries=settings.http_retries,
        )
        events, result = await _research(settings, sources, hashing_embedder)

    assert not [e.message for e in events if e.type == "warning"]
    routes = {r.route for r in stub.requests}
    assert routes >= {"esearch", "efetch", "trials", "europepmc", "openalex", "websearch"}
    assert "webpage" in routes

    evidence = result.evidence
    _assert_one_item_per_document(evidence)
    assert {s for e in evidence for s in e.sources} == set(ALL_SOURCES)
    # PubMed 7 + Europe PMC 10 - 2 shared with PubMed + trials 10 + OpenAlex 5 - 1 shared
    # + web 3: every query returns the same records, so later queries add nothing new.
    assert len(evidence) == 32

    nejm = _one(evidence, f"pmid:{PMID_ALL_SOURCES}")
    assert nejm is _one(evidence, f"doi:{NEJM_DOI}")
    assert set(nejm.sources) == {"pubmed", "europepmc", "openalex"}
    assert nejm.content.startswith("BACKGROUND:")
    physiol = _one(evidence, f"doi:{FRONT_PHYSIOL_DOI}")
    assert physiol is _one(evidence, f"pmcid:{FRONT_PHYSIOL_PMCID}")
    assert physiol.citation.pmid == PMID_BY_DOI
    assert set(physiol.sources) == {"pubmed", "europepmc"}

    report = result.report
    _assert_report_is_grounded(result)
    for name in ALL_SOURCES:
        assert SOURCE_LABELS[name] in report.methodology
    meta = report.metadata
    assert meta.sources_searched == list(ALL_SOURCES)
    assert meta.source_failures == {}
    assert meta.papers_reviewed == len(evidence)
    assert meta.iterations == 1
    assert meta.llm == "none"


async def test_research_with_a_failing_source_completes_without_it(
    stub: StubAPI, hashing_embedder: Embedder, tmp_path: Path
) -> None:
    stub.add_fault("europepmc", Fault.server_error(500))
    settings = _settings(tmp_path)
    async with new_http_client(settings.http_timeout_seconds) as client:
        sources = build_stub_sources(
            stub,
            client,
            timeout_seconds=settings.http_timeout_seconds,
            tries=settings.http_retries,
            requests_per_second=FAST_WEB,
        )
        events, result = await _research(settings, sources, hashing_embedder)

    reason = "HTTP 500 after 3 tries"
    report = result.report
    assert report.metadata.source_failures == {"europepmc": reason}
    assert f"Europe PMC unavailable: {reason}." in report.methodology
    assert f"Europe PMC: {reason}" in report.to_markdown()
    assert any(e.type == "warning" and "Europe PMC unavailable" in e.message for e in events)
    queries = report.metadata.queries
    assert len(stub.requests_for("europepmc")) == 3 * len(queries)
    assert all("europepmc" not in e.sources for e in result.evidence)
    _assert_one_item_per_document(result.evidence)
    assert set(_one(result.evidence, f"pmid:{PMID_ALL_SOURCES}").sources) == {
        "pubmed",
        "openalex",
    }
    _assert_report_is_grounded(result)


async def test_research_with_a_source_failing_on_one_query_keeps_its_other_answers(
    stub: StubAPI, hashing_embedder: Embedder, tmp_path: Path
) -> None:
    stub.add_fault("europepmc", Fault.server_error(503, match="adverse"))
    settings = _settings(tmp_path)
    async with new_http_client(settings.http_timeout_seconds) as client:
        sources = build_stub_sources(
            stub,
            client,
            timeout_seconds=settings.http_timeout_seconds,
            tries=settings.http_retries,
            requests_per_second=FAST_WEB,
        )
        events, result = await _research(settings, sources, hashing_embedder)

    failed = [r for r in stub.requests_for("europepmc") if r.status == 503]
    assert len(failed) == 3  # one query, three tries
    assert all("adverse" in r.params["query"] for r in failed)
    assert "europepmc" not in result.report.metadata.source_failures
    assert any("europepmc" in e.sources for e in result.evidence)
    assert any(
        e.type == "warning" and e.message.startswith("Europe PMC") and "1 of" in e.message
        for e in events
    ), [e.message for e in events if e.type == "warning"]
    _assert_report_is_grounded(result)


async def test_research_with_a_hanging_source_finishes_in_time(
    stub: StubAPI, hashing_embedder: Embedder, tmp_path: Path
) -> None:
    stub.add_fault("trials", Fault.hang(30))
    settings = _settings(tmp_path, http_timeout_seconds=0.5, http_retries=2)
    started = time.monotonic()
    async with new_http_client(settings.http_timeout_seconds) as client:
        sources = build_stub_sources(
            stub,
            client,
            timeout_seconds=settings.http_timeout_seconds,
            tries=settings.http_retries,
            requests_per_second=FAST_WEB,
        )
        _, result = await _research(settings, sources, hashing_embedder)
    elapsed = time.monotonic() - started

    assert result.report.metadata.source_failures == {"trials": "timed out after 0.5 s (2 tries)"}
    assert "ClinicalTrials.gov unavailable: timed out after 0.5 s (2 tries)." in (
        result.report.methodology
    )
    assert not any(e.citation.nct_id for e in result.evidence)
    _assert_report_is_grounded(result)
    assert elapsed < 15, elapsed  # not the 30 s the stub would hang


async def test_research_with_malformed_bodies_reports_and_goes_on(
    stub: StubAPI, hashing_embedder: Embedder, tmp_path: Path
) -> None:
    stub.add_fault("efetch", Fault.malformed())
    stub.add_fault("openalex", Fault.html_404())
    settings = _settings(tmp_path)
    async with new_http_client(settings.http_timeout_seconds) as client:
        sources = build_stub_sources(
            stub,
            client,
            timeout_seconds=settings.http_timeout_seconds,
            tries=settings.http_retries,
            requests_per_second=FAST_WEB,
        )
        _, result = await _research(settings, sources, hashing_embedder)

    failures = result.report.metadata.source_failures
    assert set(failures) == {"pubmed", "openalex"}
    assert failures["pubmed"].startswith("malformed efetch XML: not well-formed XML")
    assert failures["openalex"] == "HTTP 404 from 127.0.0.1"
    assert "PubMed unavailable: malformed efetch XML" in result.report.methodology
    assert {s for e in result.evidence for s in e.sources} == {"trials", "europepmc", "web"}
    _assert_report_is_grounded(result)


async def test_sources_built_by_hand_match_the_factory_classes(
    stub: StubAPI, client: httpx.AsyncClient
) -> None:
    """The helper wires the same classes ``build_sources`` would, only re-pointed."""
    sources = build_stub_sources(stub, client, timeout_seconds=1, tries=1)
    kinds = [type(s) for s in sources]
    assert kinds == [
        PubMedSource, ClinicalTrialsSource, EuropePMCSource, OpenAlexSource, WebSearchSource,
    ]  # fmt: skip
    assert [s.name for s in sources] == list(ALL_SOURCES)
    guard = stub_only_guard(stub)
    await guard(stub.url("/web/x"))
    with pytest.raises(ValueError, match="not the stub server"):
        await guard("http://127.0.0.1:1/")
