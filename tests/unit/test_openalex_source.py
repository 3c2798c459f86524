"""OpenAlex source: parsing real API responses, errors, paging and retries (respx, no network)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from deepcritical.sources.base import SearchSource, SourceError
from deepcritical.sources.http import HttpOptions
from deepcritical.sources.openalex import (
    OpenAlexSource,
    clean_abstract,
    parse_work,
    parse_works_page,
    rebuild_abstract,
)

BASE = "https://openalex.test"
WORKS = f"{BASE}/works"
WITH_ABSTRACT = "work_by_doi_10.1016_j.addr.2015.01.008.json"
NO_ABSTRACT = "work_by_doi_10.1016_j.xgen.2025.100814_no_abstract.json"
SEARCH_2 = "works_filter_title_search_2_results.json"
HTML_404 = "work_by_doi_not_found_404.html"


@pytest.fixture
def oa_dir(api_fixtures: Path) -> Path:
    return api_fixtures / "openalex"


def _load(oa_dir: Path, name: str) -> Any:
    return json.loads((oa_dir / name).read_text(encoding="utf-8"))


def _source(client: httpx.AsyncClient, **kw: Any) -> OpenAlexSource:
    http: dict[str, Any] = {
        "requests_per_second": 1000.0,
        "timeout_seconds": 2.0,
        "tries": 3,
        "backoff_seconds": 0.01,
    }
    http.update({k: kw.pop(k) for k in list(kw) if k in HttpOptions.__dataclass_fields__})
    return OpenAlexSource(client, **{"base_url": BASE, **kw}, http=HttpOptions(**http))


def _invert(text: str) -> dict[str, list[int]]:
    index: dict[str, list[int]] = {}
    for pos, word in enumerate(text.split(" ")):
        index.setdefault(word, []).append(pos)
    return index


# --- pure parsing --------------------------------------------------------------------------


def test_rebuild_abstract_round_trips_real_index(oa_dir: Path) -> None:
    index = _load(oa_dir, WITH_ABSTRACT)["abstract_inverted_index"]
    text = rebuild_abstract(index)
    assert text.startswith(
        "Pharmacokinetic properties of oligonucleotides are largely driven by chemistry of the"
        " backbone and thus are sequence independent within a chemical class."
    )
    # every word sits exactly at the positions the index gives it, and no position is lost
    assert _invert(text) == index
    assert len(text.split(" ")) == 1 + max(p for ps in index.values() for p in ps)


def test_rebuild_abstract_orders_by_position_not_dict_order() -> None:
    index = {"world": [1, 3], "hello": [0], "again": [4], "big": [2]}
    assert rebuild_abstract(index) == "hello world big world again"


@pytest.mark.parametrize("bad", [None, {}, [], "text", {"a": None}, {"a": ["x", True]}])
def test_rebuild_abstract_tolerates_missing_or_malformed(bad: Any) -> None:
    assert rebuild_abstract(bad) == ""


def test_rebuild_abstract_skips_gaps_and_bad_positions() -> None:
    assert rebuild_abstract({"b": [5], "a": [0, -1, "2"], "c": [9]}) == "a b c"


def test_clean_abstract_drops_label_and_markup() -> None:
    assert clean_abstract("Abstract Large language models") == "Large language models"
    assert clean_abstract("Abstract reasoning is hard") == "Abstract reasoning is hard"
    assert clean_abstract("Metformin  <i>lowers</i> HbA1c (p<0.05) &amp; weight") == (
        "Metformin lowers HbA1c (p<0.05) & weight"
    )


@pytest.mark.parametrize(
    ("ids", "expected"),
    [
        (
            {
                "doi": "https://doi.org/10.1016/J.ADDR.2015.01.008",
                "pmid": "https://pubmed.ncbi.nlm.nih.gov/25666165/",
                "pmcid": "https://www.ncbi.nlm.nih.gov/pmc/articles/pmc4369454",
            },
            ("10.1016/j.addr.2015.01.008", "25666165", "PMC4369454"),
        ),
        ({"doi": "not a doi", "pmid": 123, "pmcid": ""}, (None, "123", None)),
        ({}, (None, None, None)),
    ],
)
def test_identifiers_from_ids_are_normalised(
    ids: dict[str, Any], expected: tuple[str | None, ...]
) -> None:
    work = parse_work({"id": "https://openalex.org/W5", "title": "T", "ids": ids})
    assert work is not None
    cit = work.evidence.citation
    assert (cit.doi, cit.pmid, cit.pmcid) == expected
    assert cit.id == "W5"


def test_parse_work_with_abstract(oa_dir: Path) -> None:
    work = parse_work(_load(oa_dir, WITH_ABSTRACT))
    assert work is not None
    ev, cit = work.evidence, work.evidence.citation
    assert work.openalex_id == "W2033425827"
    assert work.cited_by_count == 750
    assert work.has_abstract
    assert cit.source == "openalex"
    assert cit.id == "W2033425827"
    assert cit.doi == "10.1016/j.addr.2015.01.008"
    assert cit.pmid == "25666165"
    assert cit.pmcid is None
    assert cit.title == (
        "Pharmacokinetics, biodistribution and cell uptake of antisense oligonucleotides"
    )
    assert cit.authors[0] == "Richard S. Geary"
    assert len(cit.authors) == 4
    assert cit.journal == "Advanced Drug Delivery Reviews"
    assert (cit.year, cit.date) == (2015, "2015-02-07")
    assert cit.url == "https://doi.org/10.1016/j.addr.2015.01.008"  # open_access.oa_url
    assert ev.content.startswith("Pharmacokinetic properties of oligonucleotides")
    assert "Cited by" not in ev.content
    assert ev.publication_types == ["Review"]
    assert "Oligonucleotides, Antisense" in ev.mesh_terms
    assert len(ev.mesh_terms) == len(set(ev.mesh_terms))
    assert not ev.is_preprint
    assert ev.sources == ["openalex"]


def test_parse_work_without_abstract_falls_back_to_title(oa_dir: Path) -> None:
    raw = _load(oa_dir, NO_ABSTRACT)
    assert raw["abstract_inverted_index"] is None
    work = parse_work(raw)
    assert work is not None
    assert not work.has_abstract
    assert work.evidence.content == (
        "High-throughput screening of human genetic variants by pooled prime editing"
    )
    assert work.evidence.citation.pmid == "40120586"
    assert work.evidence.citation.doi == "10.1016/j.xgen.2025.100814"


def test_parse_search_page_preprint_label_and_urls(oa_dir: Path) -> None:
    page = parse_works_page(_load(oa_dir, SEARCH_2))
    assert page.total == 2
    assert page.raw_count == 2
    article, preprint = page.works
    # the journal article: "Abstract" label dropped, OA PDF preferred as URL
    assert article.evidence.content.startswith("Large language models (LLMs) have shown")
    assert article.evidence.citation.url == "https://www.nature.com/articles/s42256-024-00832-8.pdf"
    assert not article.evidence.is_preprint
    # the arXiv preprint (type "preprint", type_crossref "posted-content")
    assert preprint.evidence.is_preprint
    assert preprint.evidence.citation.doi == "10.48550/arxiv.2304.05376"
    assert preprint.evidence.citation.journal == "arXiv (Cornell University)"
    assert preprint.evidence.citation.url == "https://arxiv.org/abs/2304.05376"
    assert preprint.evidence.citation.pmid is None


def test_parse_work_variants() -> None:
    minimal = {
        "id": None,
        "doi": "https://doi.org/10.5555/ABC",
        "display_name": "Only a display name",
        "type": "posted-content",
        "is_retracted": True,
        "ids": {"pmcid": "https://www.ncbi.nlm.nih.gov/pmc/articles/PMC123"},
        "authorships": [{"author": {}, "raw_author_name": "Doe, J"}, "junk"],
    }
    work = parse_work(minimal)
    assert work is not None
    cit = work.evidence.citation
    assert cit.id == "10.5555/abc"  # no OpenAlex id -> DOI
    assert cit.title == "Only a display name" == work.evidence.content
    assert cit.url == "https://doi.org/10.5555/abc"  # no OA location -> DOI URL
    assert cit.pmcid == "PMC123"
    assert cit.authors == ["Doe, J"]
    assert work.evidence.is_preprint
    assert work.evidence.publication_types == ["Posted Content", "Retracted Publication"]
    assert work.cited_by_count is None
    # OpenAlex id only -> URL on openalex.org
    only_id = parse_work({"id": "https://openalex.org/W1", "title": "T"})
    assert only_id is not None
    assert only_id.evidence.citation.url == "https://openalex.org/W1"
    # no text, or no identifier at all -> skipped
    assert parse_work({"id": "https://openalex.org/W2"}) is None
    assert parse_work({"title": "No id"}) is None


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ([], "a JSON list"),
        ({"meta": {}}, "no 'results' list"),
        ({"error": "Invalid query parameters", "message": "per_page must be <= 200"}, "per_page"),
    ],
)
def test_parse_works_page_rejects_wrong_shapes(payload: Any, reason: str) -> None:
    with pytest.raises(SourceError, match=reason) as info:
        parse_works_page(payload)
    assert info.value.source == "openalex"


# --- HTTP ----------------------------------------------------------------------------------


def _fake_work(n: int) -> dict[str, Any]:
    return {
        "id": f"https://openalex.org/W{1000 + n}",
        "title": f"Work {n}",
        "abstract_inverted_index": {"Abstract": [0], "Number": [1], str(n): [2]},
    }


@respx.mock
async def test_search_sends_params_and_ranks(oa_dir: Path) -> None:
    route = respx.get(WORKS).mock(return_value=httpx.Response(200, json=_load(oa_dir, SEARCH_2)))
    async with httpx.AsyncClient() as client:
        src = _source(client, mailto="team@example.org")
        assert isinstance(src, SearchSource)
        assert src.name == "openalex"
        items = await src.search("  chemistry tools LLM ", 10)
    assert route.call_count == 1
    params = route.calls[0].request.url.params
    assert params["search"] == "chemistry tools LLM"
    assert params["per_page"] == "10"
    assert params["page"] == "1"
    assert params["mailto"] == "team@example.org"
    assert "api_key" not in params
    selected = params["select"].split(",")
    assert {"abstract_inverted_index", "ids", "authorships", "open_access"} <= set(selected)
    assert [e.citation.id for e in items] == ["W4396723768", "W4365597205"]
    assert [e.relevance for e in items] == [1.0, 0.5]
    assert all(e.query == "chemistry tools LLM" for e in items)


@respx.mock
async def test_paging_until_limit_and_dedup() -> None:
    page1 = {"meta": {"count": 250}, "results": [_fake_work(i) for i in range(100)]}
    # page 2 repeats one work from page 1: it is dropped, not counted twice
    page2 = {
        "meta": {"count": 250},
        "results": [_fake_work(99)] + [_fake_work(i) for i in range(100, 199)],
    }
    route = respx.get(WORKS).mock(
        side_effect=[httpx.Response(200, json=page1), httpx.Response(200, json=page2)]
    )
    async with httpx.AsyncClient() as client:
        items = await _source(client).search("q", 150)
    assert [c.request.url.params["page"] for c in route.calls] == ["1", "2"]
    assert {c.request.url.params["per_page"] for c in route.calls} == {"100"}
    assert len(items) == 150
    assert len({e.citation.id for e in items}) == 150
    assert items[0].citation.id == "W1000"
    assert items[0].content == "Number 0"
    assert items[0].relevance == 1.0
    assert items[-1].relevance == pytest.approx(1 / 150)


@respx.mock
async def test_paging_stops_on_short_page() -> None:
    short = {"meta": {"count": 999}, "results": [_fake_work(i) for i in range(3)]}
    route = respx.get(WORKS).mock(return_value=httpx.Response(200, json=short))
    async with httpx.AsyncClient() as client:
        items = await _source(client).search("q", 50)
    assert route.call_count == 1
    assert route.calls[0].request.url.params["per_page"] == "50"
    assert len(items) == 3


@respx.mock
async def test_paging_stops_when_meta_count_is_reached() -> None:
    # a full page whose last work has no text: 4 usable of 5, but meta.count says 5 hits in
    # all, so there is no page 2 to ask for
    results = [_fake_work(i) for i in range(4)] + [{"id": "https://openalex.org/W77"}]
    route = respx.get(WORKS).mock(
        return_value=httpx.Response(200, json={"meta": {"count": 5}, "results": results})
    )
    async with httpx.AsyncClient() as client:
        items = await _source(client).search("q", 5)
    assert route.call_count == 1
    assert len(items) == 4


@respx.mock
async def test_429_then_success(oa_dir: Path) -> None:
    route = respx.get(WORKS).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "0"}, json={"error": "rate limit"}),
            httpx.Response(200, json=_load(oa_dir, SEARCH_2)),
        ]
    )
    async with httpx.AsyncClient() as client:
        items = await _source(client).search("chemistry", 5)
    assert route.call_count == 2
    assert len(items) == 2


@respx.mock
async def test_html_404_is_source_error(oa_dir: Path) -> None:
    body = (oa_dir / HTML_404).read_bytes()
    respx.get(WORKS).mock(
        return_value=httpx.Response(404, content=body, headers={"content-type": "text/html"})
    )
    async with httpx.AsyncClient() as client:
        with pytest.raises(SourceError, match="HTTP 404") as info:
            await _source(client).search("x", 5)
    assert info.value.source == "openalex"


@respx.mock
async def test_html_body_with_200_is_source_error(oa_dir: Path) -> None:
    body = (oa_dir / HTML_404).read_bytes()
    respx.get(WORKS).mock(
        return_value=httpx.Response(200, content=body, headers={"content-type": "text/html"})
    )
    async with httpx.AsyncClient() as client:
        with pytest.raises(SourceError, match=r"not JSON \(text/html, HTTP 200\)") as info:
            await _source(client).search("x", 5)
    assert "404 Not Found" in str(info.value)


@respx.mock
async def test_truncated_json_is_source_error(oa_dir: Path) -> None:
    body = (oa_dir / SEARCH_2).read_bytes()[:5000]
    respx.get(WORKS).mock(
        return_value=httpx.Response(200, content=body, headers={"content-type": "application/json"})
    )
    async with httpx.AsyncClient() as client:
        with pytest.raises(SourceError, match="not JSON"):
            await _source(client).search("x", 5)


@respx.mock
async def test_persistent_503_names_tries_and_hides_api_key() -> None:
    route = respx.get(WORKS).mock(return_value=httpx.Response(503, text="busy"))
    async with httpx.AsyncClient() as client:
        with pytest.raises(SourceError) as info:
            await _source(client, api_key="sekrit-key-123", tries=2).search("x", 5)
    assert route.call_count == 2
    assert route.calls[0].request.url.params["api_key"] == "sekrit-key-123"
    assert "503" in str(info.value)
    assert "sekrit" not in str(info.value)


@respx.mock
async def test_no_request_for_empty_query_or_zero_limit() -> None:
    route = respx.get(WORKS).mock(return_value=httpx.Response(500))
    async with httpx.AsyncClient() as client:
        src = _source(client)
        assert await src.search("x", 0) == []
        assert await src.search("   ", 5) == []
    assert route.call_count == 0


@respx.mock
async def test_results_that_are_not_objects_are_skipped(oa_dir: Path) -> None:
    payload = copy.deepcopy(_load(oa_dir, SEARCH_2))
    payload["results"].insert(0, "garbage")
    payload["results"].append({"id": "https://openalex.org/W9"})  # no text
    respx.get(WORKS).mock(return_value=httpx.Response(200, json=payload))
    async with httpx.AsyncClient() as client:
        items = await _source(client).search("x", 10)
    assert [e.citation.id for e in items] == ["W4396723768", "W4365597205"]


@pytest.mark.live
async def test_live_openalex_search() -> None:
    async with httpx.AsyncClient(timeout=30, follow_redirects=True) as client:
        src = OpenAlexSource(client)
        items = await src.search("metformin Alzheimer disease", 5)
    assert items
    assert all(e.citation.source == "openalex" and e.content for e in items)
    assert any(e.citation.doi for e in items)
