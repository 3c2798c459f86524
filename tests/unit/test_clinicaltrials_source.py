"""ClinicalTrials.gov API v2 source: parsing real replies, paging, filters, HTTP failures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from deepcritical.sources.base import SearchSource, SourceError
from deepcritical.sources.clinicaltrials import (
    DEFAULT_FIELDS,
    ClinicalTrialsSource,
    normalize_phase,
    normalize_status,
    parse_studies,
    phase_filter,
    study_to_evidence,
)
from deepcritical.sources.http import HttpOptions

BASE = "https://ct.test/api/v2"
URL = f"{BASE}/studies"
PAGE1_IDS = ["NCT02710084", "NCT05105685", "NCT01525901", "NCT03493607", "NCT07119606"]
PAGE2_IDS = ["NCT05187377", "NCT03836300", "NCT07014020", "NCT05025241", "NCT07281079"]
PAGE1_TOKEN = "ZVt07cGHkvI2wRk2CJf6_LLq14bEL8swd7KrgP4dnDeTsPkw"


def _fixture(api_fixtures: Path, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((api_fixtures / "clinicaltrials_v2" / name).read_text())
    return data


def _source(client: httpx.AsyncClient, **kw: Any) -> ClinicalTrialsSource:
    return ClinicalTrialsSource(
        client,
        base_url=BASE,
        **kw,
        http=HttpOptions(
            requests_per_second=1000.0, timeout_seconds=5.0, tries=3, backoff_seconds=0.001
        ),
    )


# --------------------------------------------------------------------------- parsing


def test_search_pages_parse(api_fixtures: Path) -> None:
    page1 = _fixture(api_fixtures, "studies_search_phelan_page1_pageSize5.json")
    items, token = parse_studies(page1)
    assert [e.citation.id for e in items] == PAGE1_IDS
    assert token == PAGE1_TOKEN
    first = items[0]
    assert first.citation.nct_id == "NCT02710084"
    assert first.citation.source == "trials"
    assert first.citation.title.startswith("Piloting Treatment With Intranasal Oxytocin")
    assert first.citation.url == "https://clinicaltrials.gov/study/NCT02710084"
    assert first.citation.authors == ["Alexander Kolevzon"]
    assert first.citation.journal is None
    assert (first.citation.year, first.citation.date) == (2016, "2016-04-29")
    assert first.content.splitlines()[0].startswith("Brief summary: This is a pilot study")
    assert "Status: COMPLETED" in first.content
    assert "Phase: PHASE2" in first.content
    assert "Interventions: Oxytocin; Saline" in first.content
    assert "Enrollment: 18" in first.content
    assert "Start: 2016-04-29; Completion: 2020-07-29" in first.content
    assert "Results posted" not in first.content  # the reply did not say
    assert first.publication_types == ["Clinical Trial", "Phase 2"]
    assert all(e.citation.nct_id == e.citation.id for e in items)

    page2 = _fixture(api_fixtures, "studies_search_phelan_page2_pageToken.json")
    items2, token2 = parse_studies(page2)
    assert [e.citation.id for e in items2] == PAGE2_IDS
    assert token2 == page2["nextPageToken"]


def test_study_with_results(api_fixtures: Path) -> None:
    item = study_to_evidence(_fixture(api_fixtures, "study_NCT00763412_with_results.json"))
    assert item is not None
    c = item.citation
    assert c.id == c.nct_id == "NCT00763412"
    assert c.title == (
        "Pilot and Feasibility Study for the Treatment of Pre-diabetes in Patients With Cystic "
        "Fibrosis"
    )
    assert (c.year, c.date) == (2006, "2006-11")
    assert c.authors == ["Arbelaez, Ana Maria"]
    lines = item.content.splitlines()
    assert "Results posted: yes" in lines
    assert "Enrollment: 31 (ACTUAL)" in lines
    assert "Interventions: DRUG: placebo; DRUG: repaglinide" in lines
    assert "Phase: NA (not applicable)" in lines
    assert "Conditions: Cystic Fibrosis Related Diabetes; Pancreatic Insufficiency" in lines
    assert "Primary outcomes: BMI (2 year/end of study); Body Composition" in item.content
    assert "Start: 2006-11; Primary completion: 2013-01 (actual); Completion: 2013-01 (actual)" in (
        lines
    )
    assert item.publication_types == ["Clinical Trial"]  # phase NA adds no phase label


def test_withdrawn_study(api_fixtures: Path) -> None:
    item = study_to_evidence(_fixture(api_fixtures, "study_NCT00973089_withdrawn.json"))
    assert item is not None
    assert item.citation.id == "NCT00973089"
    assert (
        "Status: WITHDRAWN (why stopped: recruiting or enrolling participants has halted "
        "prematurely and will not resume)"
    ) in item.content.splitlines()
    assert "Enrollment: 0 (ACTUAL)" in item.content.splitlines()
    assert "Results posted: no" in item.content.splitlines()


def test_unknown_status_observational_study(api_fixtures: Path) -> None:
    item = study_to_evidence(
        _fixture(api_fixtures, "study_NCT03475563_full_protocol_unknown_status.json")
    )
    assert item is not None
    assert item.citation.title == "BiOSS LIM C Stent Registry in Bifurcated Lesions"
    lines = item.content.splitlines()
    assert "Status: UNKNOWN (last known: RECRUITING)" in lines
    assert "Study type: OBSERVATIONAL" in lines
    assert not any(line.startswith("Phase:") for line in lines)
    assert "Enrollment: 100 (ESTIMATED)" in lines
    assert "Primary outcomes: Successful angioplasty (1 day); MACE (30 days); MACE (1 year)" in (
        lines
    )
    assert item.publication_types == ["Observational Study"]
    assert item.citation.date == "2018-08-16"


def test_markdown_escapes_and_first_post_date_fallback() -> None:
    study = {
        "protocolSection": {
            "identificationModule": {"nctId": "nct01234567", "briefTitle": "Brief only"},
            "statusModule": {
                "overallStatus": "RECRUITING",
                "studyFirstPostDateStruct": {"date": "2020-02-03", "type": "ACTUAL"},
            },
            "descriptionModule": {"briefSummary": "Stenosis \\> 30%\n\n and \\*not\\* less."},
            "designModule": {"phases": ["PHASE2", "PHASE3"], "studyType": "INTERVENTIONAL"},
        },
        "hasResults": False,
    }
    item = study_to_evidence(study)
    assert item is not None
    assert item.citation.id == "NCT01234567"
    assert item.citation.title == "Brief only"
    assert (item.citation.year, item.citation.date) == (2020, "2020-02-03")
    assert item.content.splitlines()[0] == "Brief summary: Stenosis > 30% and *not* less."
    assert "Phase: PHASE2, PHASE3" in item.content
    assert item.publication_types == ["Clinical Trial", "Phase 2", "Phase 3"]


def test_study_without_nct_id_is_skipped() -> None:
    good = {"protocolSection": {"identificationModule": {"nctId": "NCT00000001"}}}
    bad = {"protocolSection": {"identificationModule": {"briefTitle": "no id"}}}
    items, token = parse_studies({"studies": [bad, good, "junk"]})
    assert [e.citation.id for e in items] == ["NCT00000001"]
    assert items[0].content == "Trial NCT00000001"
    assert token is None


@pytest.mark.parametrize("payload", [[], "x", {"studies": {"a": 1}}, {"error": "bad"}])
def test_unexpected_shape_raises_source_error(payload: Any) -> None:
    with pytest.raises(SourceError, match=r"unexpected response from ClinicalTrials\.gov") as info:
        parse_studies(payload)
    assert info.value.source == "trials"


def test_filters() -> None:
    assert normalize_status("Active, not recruiting") == "ACTIVE_NOT_RECRUITING"
    assert normalize_status(" recruiting ") == "RECRUITING"
    assert [normalize_phase(p) for p in (2, "phase 3", "Phase II", "early phase 1", "N/A")] == [
        "PHASE2",
        "PHASE3",
        "PHASE2",
        "EARLY_PHASE1",
        "NA",
    ]
    assert phase_filter(["PHASE2", "phase 3", 2]) == "AREA[Phase](PHASE2 OR PHASE3)"
    with pytest.raises(ValueError, match=r"unknown ClinicalTrials\.gov status"):
        normalize_status("ongoing")
    with pytest.raises(ValueError, match=r"unknown ClinicalTrials\.gov phase"):
        normalize_phase("phase 5")
    with pytest.raises(ValueError, match="at least one phase"):
        phase_filter([])


# --------------------------------------------------------------------------- search over HTTP


async def test_is_a_search_source() -> None:
    async with httpx.AsyncClient() as client:
        src = ClinicalTrialsSource(client)
        assert isinstance(src, SearchSource)
        assert src.name == "trials"
        assert src.base_url == "https://clinicaltrials.gov/api/v2"
        with pytest.raises(ValueError, match="status"):
            ClinicalTrialsSource(client, statuses=["nope"])


@respx.mock
async def test_paging_with_page_token(api_fixtures: Path) -> None:
    page1 = _fixture(api_fixtures, "studies_search_phelan_page1_pageSize5.json")
    page2 = _fixture(api_fixtures, "studies_search_phelan_page2_pageToken.json")

    def reply(request: httpx.Request) -> httpx.Response:
        token = request.url.params.get("pageToken")
        if token is None:
            return httpx.Response(200, json=page1)
        assert token == PAGE1_TOKEN
        return httpx.Response(200, json=page2)

    route = respx.get(URL).mock(side_effect=reply)
    async with httpx.AsyncClient() as client:
        items = await _source(client).search("Phelan-McDermid Syndrome", 10)
    assert route.call_count == 2
    assert [e.citation.id for e in items] == PAGE1_IDS + PAGE2_IDS
    first = route.calls[0].request.url.params
    assert first["query.term"] == "Phelan-McDermid Syndrome"
    assert first["pageSize"] == "10"
    assert first["format"] == "json"
    assert first["fields"] == ",".join(DEFAULT_FIELDS)
    assert "pageToken" not in first
    assert "filter.overallStatus" not in first
    assert route.calls[1].request.url.params["pageToken"] == PAGE1_TOKEN
    assert [e.relevance for e in items] == pytest.approx([1.0 - i / 10 for i in range(10)])
    assert all(e.query == "Phelan-McDermid Syndrome" for e in items)


@respx.mock
async def test_limit_respected_in_one_request(api_fixtures: Path) -> None:
    page1 = _fixture(api_fixtures, "studies_search_phelan_page1_pageSize5.json")
    route = respx.get(URL).mock(return_value=httpx.Response(200, json=page1))
    async with httpx.AsyncClient() as client:
        items = await _source(client).search("pms", 3)
    assert [e.citation.id for e in items] == PAGE1_IDS[:3]
    assert route.call_count == 1
    assert route.calls[0].request.url.params["pageSize"] == "3"


@respx.mock
async def test_page_size_capped_at_1000() -> None:
    route = respx.get(URL).mock(return_value=httpx.Response(200, json={"studies": []}))
    async with httpx.AsyncClient() as client:
        assert await _source(client).search("x", 5000) == []
    assert route.calls[0].request.url.params["pageSize"] == "1000"


@respx.mock
async def test_repeated_token_without_new_studies_stops(api_fixtures: Path) -> None:
    page1 = _fixture(api_fixtures, "studies_search_phelan_page1_pageSize5.json")
    route = respx.get(URL).mock(return_value=httpx.Response(200, json=page1))
    async with httpx.AsyncClient() as client:
        items = await _source(client).search("pms", 50)
    assert len(items) == 5
    assert route.call_count == 2


@respx.mock
async def test_status_and_phase_filters_are_sent() -> None:
    route = respx.get(URL).mock(return_value=httpx.Response(200, json={"studies": []}))
    async with httpx.AsyncClient() as client:
        src = _source(client, statuses=["recruiting", "COMPLETED"], phases=[2, "PHASE3"])
        await src.search("metformin", 5)
        await src.search("metformin", 5, statuses=["withdrawn"], phases=["phase 4"])
        await _source(client, fields=None).search("metformin", 5)
    first = route.calls[0].request.url.params
    assert first["filter.overallStatus"] == "RECRUITING,COMPLETED"
    assert first["filter.advanced"] == "AREA[Phase](PHASE2 OR PHASE3)"
    second = route.calls[1].request.url.params
    assert second["filter.overallStatus"] == "WITHDRAWN"
    assert second["filter.advanced"] == "AREA[Phase](PHASE4)"
    assert "fields" not in route.calls[2].request.url.params


@respx.mock
async def test_empty_results() -> None:
    route = respx.get(URL).mock(return_value=httpx.Response(200, json={"studies": []}))
    async with httpx.AsyncClient() as client:
        assert await _source(client).search("asdkfjhasdkfj", 10) == []
    assert route.call_count == 1


@respx.mock
async def test_blank_query_or_zero_limit_makes_no_request() -> None:
    route = respx.get(URL).mock(return_value=httpx.Response(200, json={"studies": []}))
    async with httpx.AsyncClient() as client:
        assert await _source(client).search("   ", 10) == []
        assert await _source(client).search("x", 0) == []
    assert route.call_count == 0


@respx.mock
async def test_429_json_body_then_success_is_retried(api_fixtures: Path) -> None:
    page1 = _fixture(api_fixtures, "studies_search_phelan_page1_pageSize5.json")
    route = respx.get(URL).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "0"}, json={"error": "Too Many Requests"}),
            httpx.Response(200, json=page1),
        ]
    )
    async with httpx.AsyncClient() as client:
        items = await _source(client).search("pms", 5)
    assert route.call_count == 2
    assert [e.citation.id for e in items] == PAGE1_IDS


@respx.mock
async def test_persistent_500_raises_source_error() -> None:
    route = respx.get(URL).mock(return_value=httpx.Response(500, text="oops"))
    async with httpx.AsyncClient() as client:
        with pytest.raises(SourceError, match="HTTP 500 after 3 tries") as info:
            await _source(client).search("pms", 5)
    assert route.call_count == 3
    assert info.value.source == "trials"


@respx.mock
async def test_html_page_instead_of_json_raises_source_error() -> None:
    page = "<!DOCTYPE html><html><body><h1>Service maintenance</h1></body></html>"
    respx.get(URL).mock(
        return_value=httpx.Response(200, text=page, headers={"content-type": "text/html"})
    )
    async with httpx.AsyncClient() as client:
        with pytest.raises(SourceError, match=r"malformed JSON from ClinicalTrials\.gov") as info:
            await _source(client).search("pms", 5)
    assert "text/html" in str(info.value)
    assert "<!DOCTYPE html>" in str(info.value)
    assert info.value.source == "trials"


@respx.mock
async def test_json_of_the_wrong_shape_raises_source_error() -> None:
    respx.get(URL).mock(return_value=httpx.Response(200, json=["not", "an", "object"]))
    async with httpx.AsyncClient() as client:
        with pytest.raises(SourceError, match="unexpected response"):
            await _source(client).search("pms", 5)


@pytest.mark.live
async def test_live_search_with_default_fields_and_filters() -> None:
    """The real API accepts our field names and filters (skipped unless DEEPCRITICAL_LIVE=1)."""
    from deepcritical.sources.http import new_http_client

    async with new_http_client() as client:
        src = ClinicalTrialsSource(client, statuses=["completed"], phases=[2, 3])
        items = await src.search("metformin Alzheimer", 3)
    assert 1 <= len(items) <= 3
    for item in items:
        assert item.citation.nct_id is not None
        assert "Status: COMPLETED" in item.content
        assert {"Phase 2", "Phase 3"} & set(item.publication_types)
