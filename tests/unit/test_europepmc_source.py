"""Europe PMC REST search source: parsing real replies, cursor paging, preprints, failures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from deepcritical.sources.base import SearchSource, SourceError
from deepcritical.sources.europepmc import (
    PREPRINT_TYPE,
    EuropePMCSource,
    parse_search,
    result_to_evidence,
)
from deepcritical.sources.http import HttpOptions

BASE = "https://epmc.test/rest"
URL = f"{BASE}/search"
CORE_FIRST_IDS = ["39709209", "39709208", "40468710", "40464630", "40493882"]
PPR_IDS = [
    "PPR1031776",
    "PPR1037228",
    "PPR1034939",
    "PPR1033905",
    "PPR1031283",
    "PPR1038209",
    "PPR1034227",
    "PPR1037716",
]


def _fixture(api_fixtures: Path, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((api_fixtures / "europepmc" / name).read_text())
    return data


def _source(client: httpx.AsyncClient, **kw: Any) -> EuropePMCSource:
    return EuropePMCSource(
        client,
        base_url=BASE,
        **kw,
        http=HttpOptions(
            requests_per_second=1000.0, timeout_seconds=5.0, tries=3, backoff_seconds=0.001
        ),
    )


# --------------------------------------------------------------------------- parsing


def test_core_results_parse(api_fixtures: Path) -> None:
    payload = _fixture(api_fixtures, "search_cancer_core_25.json")
    items, cursor = parse_search(payload)
    assert len(items) == 25
    assert [e.citation.id for e in items][:5] == CORE_FIRST_IDS
    assert cursor == "AoIIP4ZawSg1MzEyODI1MA=="
    assert all(e.citation.source == "europepmc" for e in items)
    assert all(e.citation.id == e.citation.pmid for e in items)  # all MED records
    assert not any(e.is_preprint for e in items)

    first = items[0].citation
    assert first.doi == "10.1016/s0140-6736(24)02600-x"
    assert first.pmcid is None
    assert first.authors == ["Schoenfeld JD", "Haas-Kogan DA", "O'Neill AF"]
    assert first.journal == "Lancet (London, England)"
    assert (first.year, first.date) == (2025, "2025-12-01")
    assert first.url == "https://europepmc.org/article/MED/39709209"
    # no abstract: content falls back to the title
    assert items[0].content == first.title
    assert items[0].publication_types == ["Journal Article"]

    erratum = items[1]
    assert erratum.citation.pmcid == "PMC12124214"
    assert erratum.citation.authors == []
    assert erratum.publication_types == ["Published Erratum", "correction"]

    flex = items[2]
    assert flex.content.startswith(
        "OBJECTIVE: This study investigated whether psychological flexibility"
    )
    assert "\n\nDESIGN: This was an online, prospective" in flex.content
    assert "<h4>" not in flex.content
    assert flex.mesh_terms[:3] == ["Humans", "Neoplasms", "Fatigue"]
    assert "psychology" not in flex.mesh_terms  # qualifiers are not descriptors

    by_id = {e.citation.id: e for e in items}
    no_doi = by_id["39038316"]
    assert no_doi.citation.doi is None
    assert no_doi.citation.id == "39038316"
    assert by_id["39212676"].publication_types == [
        "Systematic Review",
        "review-article",
        "Journal Article",
    ]
    h2s = by_id["40511629"].content
    assert h2s.startswith("BACKGROUND: Paclitaxel is a potent agent")
    assert "Hydrogen sulfide (H2S)" in h2s
    assert "<sub>" not in h2s


def test_lite_results_with_preprints(api_fixtures: Path) -> None:
    payload = _fixture(api_fixtures, "search_cancer_lite_cursor_page10_with_PPR.json")
    items, cursor = parse_search(payload)
    assert len(items) == 100
    assert cursor == payload["nextCursorMark"]

    preprints = [e for e in items if e.is_preprint]
    assert [e.citation.url.rsplit("/", 1)[-1] for e in preprints if e.citation.url] == PPR_IDS
    for e in preprints:
        assert PREPRINT_TYPE in e.publication_types
        assert "preprint" not in e.publication_types
        assert e.citation.pmid is None
        assert e.citation.id == e.citation.doi  # no PMID/PMCID: DOI is the id
        assert e.citation.url is not None
        assert e.citation.url.startswith("https://europepmc.org/article/PPR/PPR")
        assert e.content == e.citation.title  # lite: no abstract

    biorxiv = preprints[0].citation
    assert biorxiv.doi == "10.1101/2025.06.02.657315"
    assert biorxiv.journal == "bioRxiv"
    assert biorxiv.authors == ["Lin C", "Liu C", "Chao T", "Huang C", "Tsai Y", "Tseng L", "Lai J"]
    assert (biorxiv.year, biorxiv.date) == (2025, "2025-06-05")

    by_url = {e.citation.url: e for e in items}
    pmc_only = by_url["https://europepmc.org/article/PMC/PMC12129453"]
    assert pmc_only.citation.id == pmc_only.citation.pmcid == "PMC12129453"
    assert pmc_only.citation.pmid is None
    assert pmc_only.citation.journal == "Elife"
    assert pmc_only.citation.year == 2025  # no pubYear: from firstPublicationDate
    assert pmc_only.publication_types == ["research-article", "journal article"]
    assert not pmc_only.is_preprint

    first = items[0]
    assert first.citation.authors == ["Turan N", "Anafarta Şendağ M"]
    assert first.citation.journal == "Scand J Caring Sci"


def test_single_lite_record(api_fixtures: Path) -> None:
    items, cursor = parse_search(_fixture(api_fixtures, "search_ext_id_20516115_lite.json"))
    assert cursor is None
    [item] = items
    c = item.citation
    assert (c.id, c.pmid, c.pmcid) == ("20516115", "20516115", "PMC3040717")
    assert c.doi == "10.1158/0008-5472.can-09-4563"
    assert len(c.authors) == 11
    assert c.authors[-1] == "Glover JN"
    assert (c.journal, c.year) == ("Cancer Res", 2010)


def test_no_results_fixture(api_fixtures: Path) -> None:
    assert parse_search(_fixture(api_fixtures, "search_no_results.json")) == ([], None)


def test_identifier_fallbacks_and_normalisation() -> None:
    item = result_to_evidence(
        {
            "id": "123",
            "source": "MED",
            "doi": "https://doi.org/10.1000/ABC.Def",
            "title": "Effect of <i>Helicobacter pylori</i> on X",
            "authorList": {
                "author": [
                    {"collectiveName": "The STROKE Trial Group"},
                    {"lastName": "Doe", "initials": "J"},
                ]
            },
            "pubYear": "2019",
            "firstPublicationDate": "2019-03-14",
            "abstractText": "<h4>Aims</h4>To test.<h4>Results</h4>It worked (P<0.05).",
            "pubTypeList": {"pubType": ["Preprint", "Journal Article"]},
            "journalInfo": {"journal": {"title": "J <i>Test</i>"}},
        }
    )
    assert item is not None
    c = item.citation
    assert (c.id, c.pmid) == ("123", "123")
    assert c.doi == "10.1000/abc.def"
    assert c.title == "Effect of Helicobacter pylori on X"
    assert c.authors == ["The STROKE Trial Group", "Doe J"]
    assert c.journal == "J Test"
    assert item.content == "AIMS: To test.\n\nRESULTS: It worked (P<0.05)."
    assert item.is_preprint  # flagged by publication type, not only by source PPR
    assert item.publication_types == ["Journal Article", PREPRINT_TYPE]

    only_epmc_id = result_to_evidence({"id": "PAT123", "source": "PAT", "title": "A patent"})
    assert only_epmc_id is not None
    assert only_epmc_id.citation.id == "PAT123"
    assert result_to_evidence({"title": "nothing to cite"}) is None


def test_result_without_identifier_is_skipped() -> None:
    items, cursor = parse_search(
        {
            "nextCursorMark": "abc",
            "resultList": {"result": [{"title": "x"}, 7, {"id": "1", "source": "MED"}]},
        }
    )
    assert [e.citation.id for e in items] == ["1"]
    assert items[0].content == "PubMed record 1"  # no title, no abstract
    assert cursor == "abc"


@pytest.mark.parametrize("payload", [[], "x", {"hitCount": 0}, {"resultList": {"result": 3}}])
def test_unexpected_shape_raises_source_error(payload: Any) -> None:
    with pytest.raises(SourceError, match="unexpected response from Europe PMC") as info:
        parse_search(payload)
    assert info.value.source == "europepmc"


def test_error_object_is_reported() -> None:
    with pytest.raises(SourceError, match="Europe PMC error: Invalid query syntax"):
        parse_search({"errCode": 400, "errMsg": "Invalid query syntax"})


# --------------------------------------------------------------------------- search over HTTP


async def test_is_a_search_source() -> None:
    async with httpx.AsyncClient() as client:
        src = EuropePMCSource(client)
        assert isinstance(src, SearchSource)
        assert src.name == "europepmc"
        assert src.base_url == "https://www.ebi.ac.uk/europepmc/webservices/rest"


@respx.mock
async def test_cursor_paging(api_fixtures: Path) -> None:
    core = _fixture(api_fixtures, "search_cancer_core_25.json")
    lite = _fixture(api_fixtures, "search_cancer_lite_cursor_page10_with_PPR.json")

    def reply(request: httpx.Request) -> httpx.Response:
        cursor = request.url.params["cursorMark"]
        if cursor == "*":
            return httpx.Response(200, json=core)
        assert cursor == core["nextCursorMark"]
        return httpx.Response(200, json=lite)

    route = respx.get(URL).mock(side_effect=reply)
    async with httpx.AsyncClient() as client:
        items = await _source(client).search("cancer", 30)
    assert route.call_count == 2
    assert len(items) == 30
    assert [e.citation.id for e in items][:5] == CORE_FIRST_IDS
    assert items[25].citation.id == "40503739"  # first record of the second page
    first = route.calls[0].request.url.params
    assert first["query"] == "cancer"
    assert first["format"] == "json"
    assert first["resultType"] == "core"
    assert first["pageSize"] == "30"
    assert first["cursorMark"] == "*"
    assert route.calls[1].request.url.params["cursorMark"] == "AoIIP4ZawSg1MzEyODI1MA=="
    assert route.calls[1].request.url.params["pageSize"] == "30"
    assert items[0].relevance == 1.0
    assert [e.relevance for e in items] == sorted((e.relevance for e in items), reverse=True)
    assert items[-1].relevance == pytest.approx(1 / 30)
    assert all(e.query == "cancer" for e in items)


@respx.mock
async def test_same_cursor_means_end_of_results(api_fixtures: Path) -> None:
    last = _fixture(api_fixtures, "search_ext_id_20516115_lite.json")
    last["nextCursorMark"] = "*"
    route = respx.get(URL).mock(return_value=httpx.Response(200, json=last))
    async with httpx.AsyncClient() as client:
        items = await _source(client).search("EXT_ID:20516115 AND SRC:MED", 100)
    assert route.call_count == 1
    assert [e.citation.id for e in items] == ["20516115"]


@respx.mock
async def test_repeated_page_stops_paging(api_fixtures: Path) -> None:
    core = _fixture(api_fixtures, "search_cancer_core_25.json")
    route = respx.get(URL).mock(return_value=httpx.Response(200, json=core))
    async with httpx.AsyncClient() as client:
        items = await _source(client).search("cancer", 100)
    assert route.call_count == 2
    assert len(items) == 25  # the repeated records are kept once


@respx.mock
async def test_limit_respected(api_fixtures: Path) -> None:
    core = _fixture(api_fixtures, "search_cancer_core_25.json")
    route = respx.get(URL).mock(return_value=httpx.Response(200, json=core))
    async with httpx.AsyncClient() as client:
        items = await _source(client, result_type="lite").search("cancer", 4)
    assert [e.citation.id for e in items] == CORE_FIRST_IDS[:4]
    assert route.call_count == 1
    params = route.calls[0].request.url.params
    assert params["pageSize"] == "4"
    assert params["resultType"] == "lite"


@respx.mock
async def test_empty_results(api_fixtures: Path) -> None:
    empty = _fixture(api_fixtures, "search_no_results.json")
    route = respx.get(URL).mock(return_value=httpx.Response(200, json=empty))
    async with httpx.AsyncClient() as client:
        assert await _source(client).search("asdkfjhasdkfjhasdfasdasdasdfgsagsd", 10) == []
        assert await _source(client).search("  ", 10) == []
        assert await _source(client).search("cancer", 0) == []
    assert route.call_count == 1


@respx.mock
async def test_429_json_body_then_success_is_retried(api_fixtures: Path) -> None:
    core = _fixture(api_fixtures, "search_cancer_core_25.json")
    route = respx.get(URL).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "0"}, json={"message": "Too many"}),
            httpx.Response(200, json=core),
        ]
    )
    async with httpx.AsyncClient() as client:
        items = await _source(client).search("cancer", 25)
    assert route.call_count == 2
    assert len(items) == 25


@respx.mock
async def test_persistent_500_raises_source_error() -> None:
    route = respx.get(URL).mock(return_value=httpx.Response(500, json={"error": "down"}))
    async with httpx.AsyncClient() as client:
        with pytest.raises(SourceError, match="HTTP 500 after 3 tries") as info:
            await _source(client).search("cancer", 5)
    assert route.call_count == 3
    assert info.value.source == "europepmc"


@respx.mock
async def test_html_page_instead_of_json_raises_source_error() -> None:
    page = "<html><head><title>502 Proxy Error</title></head><body>Proxy Error</body></html>"
    respx.get(URL).mock(
        return_value=httpx.Response(200, text=page, headers={"content-type": "text/html"})
    )
    async with httpx.AsyncClient() as client:
        with pytest.raises(SourceError, match="malformed JSON from Europe PMC") as info:
            await _source(client).search("cancer", 5)
    assert "text/html" in str(info.value)
    assert info.value.source == "europepmc"


@pytest.mark.live
async def test_live_search() -> None:
    """The real API answers our request shape (skipped unless DEEPCRITICAL_LIVE=1)."""
    from deepcritical.sources.http import new_http_client

    async with new_http_client() as client:
        items = await EuropePMCSource(client).search("metformin AND alzheimer", 3)
    assert len(items) == 3
    assert all(item.citation.url for item in items)
