"""PubMedSource against mocked E-utilities (respx), fed with real NCBI replies where they exist."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from lxml import etree

from deepcritical.sources.base import SearchSource, SourceError
from deepcritical.sources.http import HttpOptions
from deepcritical.sources.pubmed import EFETCH_BATCH_SIZE, PubMedSource

BASE = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils"
ESEARCH = f"{BASE}/esearch.fcgi"
EFETCH = f"{BASE}/efetch.fcgi"
KEY = "s3cr3t-ncbi-key-0123456789"
REAL_EFETCH = [
    "efetch_pubmed_structured_abstract_22663011.xml",
    "efetch_pubmed_structured_abstract_27797938.xml",
    "efetch_pubmed_inline_markup_30108519.xml",
]


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as c:
        yield c


def _source(client: httpx.AsyncClient, **kw: Any) -> PubMedSource:
    """A PubMed source with fast test HTTP options; ``kw``: its arguments and the fields of
    :class:`HttpOptions` to change."""
    http: dict[str, Any] = {"requests_per_second": 1000.0, "backoff_seconds": 0.01}
    http.update({k: kw.pop(k) for k in list(kw) if k in HttpOptions.__dataclass_fields__})
    return PubMedSource(client, http=HttpOptions(**http), **kw)


def _esearch_json(ids: Sequence[str], **extra: object) -> dict[str, object]:
    result: dict[str, object] = {
        "count": str(len(ids)),
        "retmax": str(len(ids)),
        "retstart": "0",
        "idlist": list(ids),
        "translationset": [],
        "querytranslation": "x",
    }
    result.update(extra)
    return {"header": {"type": "esearch", "version": "0.3"}, "esearchresult": result}


@functools.cache
def _real_records(fixture_dir: Path) -> tuple[bytes, ...]:
    """The <PubmedArticle> elements of the real efetch fixtures, serialised."""
    records: list[bytes] = []
    for name in REAL_EFETCH:
        root = etree.fromstring((fixture_dir / "ncbi_eutils" / name).read_bytes())
        records.extend(etree.tostring(el) for el in root.iter("PubmedArticle"))
    return tuple(records)


def _efetch_doc(api_fixtures: Path, pmids: Sequence[str]) -> bytes:
    """A PubmedArticleSet of the real fixture records, relabelled with ``pmids`` (cycled)."""
    records = _real_records(api_fixtures)
    out = etree.Element("PubmedArticleSet")
    for i, pmid in enumerate(pmids):
        rec = etree.fromstring(records[i % len(records)])
        pmid_el = rec.find("MedlineCitation/PMID")
        assert pmid_el is not None
        pmid_el.text = pmid
        out.append(rec)
    return bytes(etree.tostring(out, xml_declaration=True, encoding="UTF-8"))


def _params(route: respx.Route, i: int = 0) -> dict[str, str]:
    return dict(route.calls[i].request.url.params)


# --------------------------------------------------------------------------- success


@respx.mock
async def test_search_success_with_real_replies(
    client: httpx.AsyncClient, api_fixtures: Path
) -> None:
    esearch_body = (api_fixtures / "ncbi_eutils" / "esearch_pubmed_json_3_hits.json").read_bytes()
    ids = ["32150788", "29373119", "17427195"]
    # NCBI does not promise esearch order in efetch: send them back in another order.
    efetch_body = _efetch_doc(api_fixtures, [ids[2], ids[0], ids[1]])
    es = respx.get(ESEARCH).mock(return_value=httpx.Response(200, content=esearch_body))
    ef = respx.get(EFETCH).mock(return_value=httpx.Response(200, content=efetch_body))

    src = _source(client, email="me@example.org")
    items = await src.search("PTEN D326N", 10)

    assert isinstance(src, SearchSource)
    assert _params(es) == {
        "db": "pubmed",
        "term": "PTEN D326N",
        "retmode": "json",
        "sort": "relevance",
        "retmax": "10",
        "tool": "deepcritical",
        "email": "me@example.org",
    }
    assert _params(ef) == {
        "db": "pubmed",
        "id": "32150788,29373119,17427195",
        "retmode": "xml",
        "rettype": "abstract",
        "tool": "deepcritical",
        "email": "me@example.org",
    }
    assert [e.citation.pmid for e in items] == ids  # esearch order
    assert [e.relevance for e in items] == pytest.approx([1.0, 2 / 3, 1 / 3])
    assert all(e.query == "PTEN D326N" for e in items)
    # ids[2] got the first real record (22663011, NEJM trametinib trial).
    trial = items[2]
    assert trial.citation.source == "pubmed"
    assert trial.citation.id == "17427195"
    assert trial.citation.url == "https://pubmed.ncbi.nlm.nih.gov/17427195/"
    assert trial.citation.title == "Improved survival with MEK inhibition in BRAF-mutated melanoma."
    assert trial.citation.doi == "10.1056/nejmoa1203421"
    assert trial.content.startswith("BACKGROUND: Activating mutations")
    assert "Randomized Controlled Trial" in trial.publication_types
    assert items[0].citation.pmcid == "PMC5442267"


@respx.mock
async def test_limit_caps_retmax_and_ids_with_phrasesnotfound(
    client: httpx.AsyncClient, api_fixtures: Path
) -> None:
    path = api_fixtures / "ncbi_eutils" / "esearch_pubmed_json_40362_hits_phrasesnotfound.json"
    body = json.loads(path.read_bytes())
    first5 = body["esearchresult"]["idlist"][:5]
    es = respx.get(ESEARCH).mock(return_value=httpx.Response(200, json=body))
    ef = respx.get(EFETCH).mock(
        return_value=httpx.Response(200, content=_efetch_doc(api_fixtures, first5))
    )
    items = await _source(client).search("APC p.E1317Q", 5)
    assert _params(es)["retmax"] == "5"
    # The fixture ignores retmax (100 ids); only the first 5 are fetched and returned.
    assert _params(ef)["id"] == ",".join(first5)
    assert [e.citation.pmid for e in items] == first5
    assert items[-1].relevance == pytest.approx(0.2)


@respx.mock
async def test_missing_records_are_left_out(client: httpx.AsyncClient, api_fixtures: Path) -> None:
    respx.get(ESEARCH).mock(return_value=httpx.Response(200, json=_esearch_json(["1", "2", "3"])))
    respx.get(EFETCH).mock(
        return_value=httpx.Response(200, content=_efetch_doc(api_fixtures, ["3", "1"]))
    )
    items = await _source(client).search("q", 3)
    assert [e.citation.pmid for e in items] == ["1", "3"]
    assert [e.relevance for e in items] == pytest.approx([1.0, 1 / 3])  # rank kept


@respx.mock
async def test_efetch_is_split_in_batches_of_200(
    client: httpx.AsyncClient, api_fixtures: Path
) -> None:
    ids = [str(1000 + i) for i in range(450)]
    respx.get(ESEARCH).mock(return_value=httpx.Response(200, json=_esearch_json(ids)))

    def reply(request: httpx.Request) -> httpx.Response:
        batch = request.url.params["id"].split(",")
        return httpx.Response(200, content=_efetch_doc(api_fixtures, batch))

    ef = respx.get(EFETCH).mock(side_effect=reply)
    items = await _source(client).search("q", 450)
    sizes = [len(_params(ef, i)["id"].split(",")) for i in range(ef.call_count)]
    assert sizes == [EFETCH_BATCH_SIZE, EFETCH_BATCH_SIZE, 50]
    assert [e.citation.pmid for e in items] == ids


# --------------------------------------------------------------------------- no hits


@respx.mock
async def test_empty_result_does_not_call_efetch(client: httpx.AsyncClient) -> None:
    body = _esearch_json(
        [],
        errorlist={"phrasesnotfound": ["abcXYZ"], "fieldsnotfound": []},
        warninglist={"outputmessages": ["No items found."]},
    )
    respx.get(ESEARCH).mock(return_value=httpx.Response(200, json=body))
    ef = respx.get(EFETCH).mock(return_value=httpx.Response(500))
    assert await _source(client).search("abcXYZ", 10) == []
    assert ef.call_count == 0


@respx.mock
async def test_zero_limit_or_blank_query_makes_no_request(client: httpx.AsyncClient) -> None:
    es = respx.get(ESEARCH).mock(return_value=httpx.Response(200, json=_esearch_json(["1"])))
    src = _source(client)
    assert await src.search("metformin", 0) == []
    assert await src.search("   ", 5) == []
    assert es.call_count == 0


# --------------------------------------------------------------------------- rate limits


@pytest.mark.parametrize("status", [200, 429])
@respx.mock
async def test_rate_limit_body_is_retried(
    client: httpx.AsyncClient, api_fixtures: Path, status: int
) -> None:
    limited = (
        api_fixtures / "ncbi_eutils" / "esummary_pubmed_json_rate_limit_error.json"
    ).read_bytes()
    es = respx.get(ESEARCH).mock(
        side_effect=[
            httpx.Response(status, content=limited),
            httpx.Response(200, json=_esearch_json(["11"])),
        ]
    )
    ef = respx.get(EFETCH).mock(
        side_effect=[
            httpx.Response(status, content=limited),
            httpx.Response(200, content=_efetch_doc(api_fixtures, ["11"])),
        ]
    )
    items = await _source(client).search("q", 1)
    assert [e.citation.pmid for e in items] == ["11"]
    assert es.call_count == 2
    assert ef.call_count == 2


@respx.mock
async def test_persistent_rate_limit_body_gives_source_error(
    client: httpx.AsyncClient, api_fixtures: Path
) -> None:
    limited = (
        api_fixtures / "ncbi_eutils" / "esummary_pubmed_json_rate_limit_error.json"
    ).read_bytes()
    es = respx.get(ESEARCH).mock(return_value=httpx.Response(200, content=limited))
    with pytest.raises(SourceError, match="rate limit exceeded after 2 tries") as info:
        await _source(client, tries=2).search("q", 5)
    assert es.call_count == 2
    assert info.value.source == "pubmed"
    assert "redacted" not in str(info.value)  # the body's api-key/IP echo is not quoted


async def test_default_rate_is_3_without_key_and_10_with_key(client: httpx.AsyncClient) -> None:
    c = client
    without = PubMedSource(c)
    with_key = PubMedSource(c, api_key=KEY)
    explicit = PubMedSource(c, api_key=KEY, http=HttpOptions(requests_per_second=2.0))
    assert without.requests_per_second == 3.0
    assert with_key.requests_per_second == 10.0
    assert explicit.requests_per_second == 2.0
    # The limiter really is set from it: one request per 1/rate seconds.
    assert without.http.limiter.time_period == pytest.approx(1 / 3)
    assert with_key.http.limiter.time_period == pytest.approx(1 / 10)
    assert KEY not in repr(with_key)


@respx.mock
async def test_requests_are_spaced_by_the_rate_limit(
    client: httpx.AsyncClient, api_fixtures: Path
) -> None:
    respx.get(ESEARCH).mock(return_value=httpx.Response(200, json=_esearch_json(["5"])))
    respx.get(EFETCH).mock(
        return_value=httpx.Response(200, content=_efetch_doc(api_fixtures, ["5"]))
    )
    src = _source(client, requests_per_second=5.0)
    t0 = time.monotonic()
    await src.search("q", 1)
    await src.search("q", 1)
    # 4 requests at 5/s: at least 3 gaps of 0.2 s.
    assert time.monotonic() - t0 >= 0.55


# --------------------------------------------------------------------------- failures


@respx.mock
async def test_persistent_500_gives_source_error(client: httpx.AsyncClient) -> None:
    es = respx.get(ESEARCH).mock(return_value=httpx.Response(500, text="Internal error"))
    with pytest.raises(SourceError, match=r"esearch: HTTP 500 after 3 tries"):
        await _source(client, tries=3).search("q", 5)
    assert es.call_count == 3


@respx.mock
async def test_efetch_500_after_esearch_gives_source_error(client: httpx.AsyncClient) -> None:
    respx.get(ESEARCH).mock(return_value=httpx.Response(200, json=_esearch_json(["1"])))
    ef = respx.get(EFETCH).mock(return_value=httpx.Response(503))
    with pytest.raises(SourceError, match=r"efetch: HTTP 503 after 2 tries"):
        await _source(client, tries=2).search("q", 5)
    assert ef.call_count == 2


@respx.mock
async def test_connection_error_gives_source_error(client: httpx.AsyncClient) -> None:
    respx.get(ESEARCH).mock(side_effect=httpx.ConnectError("refused"))
    with pytest.raises(SourceError, match="connection failed"):
        await _source(client, tries=2).search("q", 5)


@pytest.mark.parametrize(
    "body",
    [
        b"<html><body>Bad gateway</body></html>",
        b'{"esearchresult": {"idlist": ["1"',
        b"",
    ],
)
@respx.mock
async def test_malformed_esearch_json(client: httpx.AsyncClient, body: bytes) -> None:
    respx.get(ESEARCH).mock(return_value=httpx.Response(200, content=body))
    with pytest.raises(SourceError, match="malformed esearch JSON"):
        await _source(client).search("q", 5)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"header": {}}, "malformed esearch JSON: no esearchresult"),
        ({"esearchresult": {"idlist": "1,2"}}, "malformed esearch JSON: idlist is not a list"),
        ([1, 2], "malformed esearch JSON: top level is not an object"),
        (
            {"esearchresult": {"ERROR": "Search Backend failed: timeout", "idlist": []}},
            "esearch error: Search Backend failed: timeout",
        ),
        ({"error": "Invalid query"}, "esearch error: Invalid query"),
    ],
)
@respx.mock
async def test_esearch_error_shapes(
    client: httpx.AsyncClient, payload: object, message: str
) -> None:
    respx.get(ESEARCH).mock(return_value=httpx.Response(200, json=payload))
    ef = respx.get(EFETCH).mock(return_value=httpx.Response(500))
    with pytest.raises(SourceError, match=message):
        await _source(client).search("q", 5)
    assert ef.call_count == 0


@respx.mock
async def test_malformed_efetch_xml_gives_source_error(client: httpx.AsyncClient) -> None:
    respx.get(ESEARCH).mock(return_value=httpx.Response(200, json=_esearch_json(["1"])))
    respx.get(EFETCH).mock(
        return_value=httpx.Response(200, content=b"<PubmedArticleSet><PubmedArticle>")
    )
    with pytest.raises(SourceError, match="malformed efetch XML: not well-formed XML"):
        await _source(client).search("q", 5)


# --------------------------------------------------------------------------- API key


@respx.mock
async def test_api_key_is_sent_but_never_in_errors(client: httpx.AsyncClient) -> None:
    es = respx.get(ESEARCH).mock(return_value=httpx.Response(200, json=_esearch_json(["1"])))
    # An error page that echoes the request, key included.
    ef = respx.get(EFETCH).mock(
        side_effect=[
            httpx.Response(
                200, content=f"<eFetchResult><ERROR>bad api_key={KEY}</ERROR></eFetchResult>"
            ),
            httpx.Response(500, text=f"api_key={KEY}"),
        ]
    )
    src = _source(client, api_key=KEY, tries=1)
    with pytest.raises(SourceError) as first:
        await src.search("q", 5)
    assert _params(es)["api_key"] == KEY
    assert _params(ef)["api_key"] == KEY
    assert "malformed efetch XML" in str(first.value)
    assert "***" in str(first.value)
    with pytest.raises(SourceError) as second:
        await src.search("q", 5)
    for err in (first.value, second.value):
        assert KEY not in str(err)
        assert KEY not in err.reason
        assert KEY not in repr(err)


@respx.mock
async def test_no_key_no_email_params_when_unset(client: httpx.AsyncClient) -> None:
    es = respx.get(ESEARCH).mock(return_value=httpx.Response(200, json=_esearch_json([])))
    await _source(client, tool="").search("q", 5)
    params = _params(es)
    assert "api_key" not in params
    assert "email" not in params
    assert "tool" not in params
