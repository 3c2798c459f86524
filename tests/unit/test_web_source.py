"""Web source: fake ddgs callable + respx-mocked pages; SSRF guard, redirects, caps, fallbacks."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import httpx
import pytest
import respx
from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

from deepcritical.sources.base import SearchSource, SourceError
from deepcritical.sources.http import HttpOptions, new_http_client
from deepcritical.sources.netguard import UnsafeURLError
from deepcritical.sources.web import (
    FetchedPage,
    PageFetchError,
    SearchHit,
    WebSearchSource,
    choose_content,
    extract_main_text,
    parse_search_results,
    truncate_text,
)

PUBLIC_IP = "93.184.215.14"
PARA1 = (
    "Metformin, a biguanide used as first-line therapy for type 2 diabetes, activates "
    "AMP-activated protein kinase in hepatocytes and lowers hepatic glucose production."
)
PARA2 = (
    "Observational cohorts suggest that people with diabetes taking metformin have a lower "
    "incidence of dementia, but randomised trials in Alzheimer disease remain small."
)
ARTICLE = f"""<!doctype html><html><head><title>Metformin and the brain</title>
<meta charset="utf-8"></head><body>
<nav><a href="/">Home</a> | <a href="/about">About us</a> | <a href="/shop">Shop</a></nav>
<article><h1>Metformin and the brain</h1><p>{PARA1}</p><p>{PARA2}</p></article>
<footer>Copyright 2024 Example Health Media. All rights reserved. Cookie settings.</footer>
</body></html>"""


async def public_resolver(host: str, port: int) -> Sequence[str]:
    """Every name is public except a few that point inside the network."""
    private = {"intranet.example.com": "10.0.0.1", "rebind.example.net": "127.0.0.1"}
    return [private.get(host, PUBLIC_IP)]


class FakeSearch:
    """A ddgs-like search callable returning fixed results (or raising)."""

    def __init__(
        self, results: Sequence[Mapping[str, Any]] = (), error: BaseException | None = None
    ) -> None:
        self.results = list(results)
        self.error = error
        self.calls: list[tuple[str, int]] = []

    def __call__(self, query: str, max_results: int) -> list[Mapping[str, Any]]:
        self.calls.append((query, max_results))
        if self.error is not None:
            raise self.error
        return self.results[:max_results]


def hit(url: str, title: str = "A page", body: str = "A short search snippet.") -> dict[str, str]:
    return {"title": title, "href": url, "body": body}


def html(body: str = ARTICLE, status: int = 200, **headers: str) -> httpx.Response:
    return httpx.Response(
        status,
        content=body.encode("utf-8"),
        headers={"content-type": "text/html; charset=utf-8", **headers},
    )


def source(client: httpx.AsyncClient, search: FakeSearch, **kw: Any) -> WebSearchSource:
    http: dict[str, Any] = {
        "requests_per_second": 1000.0,
        "timeout_seconds": 2.0,
        "tries": 2,
        "backoff_seconds": 0.01,
    }
    http.update({k: kw.pop(k) for k in list(kw) if k in HttpOptions.__dataclass_fields__})
    opts: dict[str, Any] = {"search_fn": search, "resolver": public_resolver, **kw}
    return WebSearchSource(client, **opts, http=HttpOptions(**http))


# --- pure helpers --------------------------------------------------------------------------


def test_parse_search_results_dedups_and_skips_bad_entries() -> None:
    raw = [
        hit("https://Example.org/a/?utm_source=ddg#top", title=" Page  A "),
        hit("https://example.org/a"),  # same page once normalised
        {"title": "no url", "body": "x"},
        hit("ftp://files.example.org/x"),
        "not a dict",
        {"url": "https://other.example.org/b", "snippet": "via url/snippet keys"},
    ]
    hits = parse_search_results(raw)
    assert hits == [
        SearchHit(
            title="Page A",
            url="https://Example.org/a/?utm_source=ddg#top",
            snippet="A short search snippet.",
        ),
        SearchHit(title="", url="https://other.example.org/b", snippet="via url/snippet keys"),
    ]
    assert parse_search_results(None) == []
    assert parse_search_results("https://example.org") == []


def test_truncate_text_cuts_at_word_boundary() -> None:
    assert truncate_text("short", 10) == "short"
    cut = truncate_text("alpha beta gamma delta epsilon", 17)
    assert cut == "alpha beta gamma…"
    assert len(cut) <= 17
    assert truncate_text("alpha beta gamma delta epsilon", 15) == "alpha beta…"
    long_word = "x" * 50
    assert truncate_text(long_word, 10) == "x" * 9 + "…"


def test_choose_content_prefers_longer_page_text() -> None:
    assert choose_content("long page text " * 5, "snippet", 4000).startswith("long page text")
    assert choose_content("Access denied", "A much longer search snippet.", 4000) == (
        "A much longer search snippet."
    )
    assert choose_content("", "", 4000) == ""


def test_extract_main_text_html_plain_and_charset() -> None:
    page = FetchedPage("https://e.org/", "text/html", "utf-8", ARTICLE.encode(), False)
    text = extract_main_text(page)
    assert PARA1 in text
    assert PARA2 in text
    assert "All rights reserved" not in text
    assert "About us" not in text
    plain = FetchedPage("https://e.org/t", "text/plain", None, b"line one\n\n  line   two ", False)
    assert extract_main_text(plain) == "line one\nline two"
    latin = f"<html><body><article><p>{PARA1} Caf\xe9 na\xefve.</p></article></body></html>"
    page = FetchedPage("https://e.org/l", "text/html", "iso-8859-1", latin.encode("latin-1"), False)
    assert "Café naïve." in extract_main_text(page)
    junk = FetchedPage("https://e.org/j", "text/html", None, b"\x00\xff\xfe", False)
    assert extract_main_text(junk) == ""


# --- search + fetch ------------------------------------------------------------------------


@respx.mock
async def test_pages_fetched_and_main_text_extracted() -> None:
    search = FakeSearch(
        [
            hit("https://Health.example.org/metformin/?utm_source=ddg#x", title="Metformin"),
            hit("https://news.example.com/dementia", title="Dementia", body="Dementia snippet."),
        ]
    )
    r1 = respx.get("https://health.example.org/metformin/").mock(return_value=html())
    r2 = respx.get("https://news.example.com/dementia").mock(
        return_value=html(f"<html><body><main><p>{PARA2}</p><p>{PARA1}</p></main></body></html>")
    )
    async with httpx.AsyncClient() as client:
        src = source(client, search)
        assert isinstance(src, SearchSource)
        assert src.name == "web"
        items = await src.search("  metformin dementia ", 5)
    assert search.calls == [("metformin dementia", 5)]
    assert r1.call_count == 1
    assert r2.call_count == 1
    assert [e.citation.id for e in items] == [
        "https://health.example.org/metformin",
        "https://news.example.com/dementia",
    ]
    first = items[0]
    assert first.citation.source == "web"
    assert first.citation.url == "https://Health.example.org/metformin/?utm_source=ddg#x"
    assert first.citation.title == "Metformin"
    assert PARA1 in first.content
    assert "All rights reserved" not in first.content
    assert items[1].content == f"{PARA2}\n{PARA1}"
    assert [e.relevance for e in items] == [1.0, 0.5]
    assert all(e.query == "metformin dementia" for e in items)
    assert r1.calls[0].request.headers["accept"].startswith("text/html")


async def test_private_urls_are_dropped_and_never_fetched() -> None:
    search = FakeSearch(
        [
            hit("http://127.0.0.1:8080/admin"),
            hit("http://2130706433/"),
            hit("http://[::ffff:10.0.0.5]/"),
            hit("http://169.254.169.254/latest/meta-data/"),
            hit("http://intranet.example.com/wiki"),  # resolves to 10.0.0.1
            hit("http://localhost/"),
            hit("https://public.example.org/ok", title="Public"),
        ]
    )
    with respx.mock(assert_all_called=False) as router:
        private_routes = [
            router.get(url__regex=r"^http://(127\.0\.0\.1|2130706433|\[::ffff:10\.0\.0\.5\])"),
            router.get(url__regex=r"^http://169\.254\.169\.254"),
            router.get(url__regex=r"^http://(intranet\.example\.com|localhost)"),
        ]
        for route in private_routes:
            route.mock(return_value=html())
        public = router.get("https://public.example.org/ok").mock(return_value=html())
        async with httpx.AsyncClient() as client:
            items = await source(client, search, fetch_pages=10).search("q", 10)
    assert [r.call_count for r in private_routes] == [0, 0, 0]
    assert public.call_count == 1
    assert [e.citation.title for e in items] == ["Public"]
    assert items[0].relevance == 1.0


async def test_redirect_to_loopback_is_refused_and_snippet_kept() -> None:
    search = FakeSearch([hit("https://short.example.org/r", body="Snippet of the result.")])
    with respx.mock(assert_all_called=False) as router:
        hop = router.get("https://short.example.org/r").mock(
            return_value=httpx.Response(302, headers={"Location": "http://127.0.0.1/secret"})
        )
        secret = router.get("http://127.0.0.1/secret").mock(return_value=html())
        # the shared client follows redirects by default: the source must override that
        async with new_http_client() as client:
            items = await source(client, search).search("q", 3)
    assert hop.call_count == 1
    assert secret.call_count == 0
    assert len(items) == 1
    assert items[0].content == "Snippet of the result."


async def test_redirect_to_name_resolving_private_is_refused() -> None:
    with respx.mock(assert_all_called=False) as router:
        router.get("https://a.example.org/").mock(
            return_value=httpx.Response(301, headers={"Location": "http://rebind.example.net/"})
        )
        inner = router.get("http://rebind.example.net/").mock(return_value=html())
        async with httpx.AsyncClient() as client:
            src = source(client, FakeSearch())
            with pytest.raises(UnsafeURLError, match=r"resolves to 127\.0\.0\.1"):
                await src.fetch_page("https://a.example.org/")
    assert inner.call_count == 0


@respx.mock
async def test_public_redirects_are_followed_hop_by_hop() -> None:
    respx.get("https://a.example.org/start").mock(
        return_value=httpx.Response(301, headers={"Location": "/moved"})
    )
    respx.get("https://a.example.org/moved").mock(
        return_value=httpx.Response(307, headers={"Location": "https://b.example.org/final"})
    )
    final = respx.get("https://b.example.org/final").mock(return_value=html())
    async with httpx.AsyncClient() as client:
        page = await source(client, FakeSearch()).fetch_page("https://a.example.org/start")
    assert final.call_count == 1
    assert page.url == "https://b.example.org/final"
    assert page.content_type == "text/html"
    assert not page.truncated


@respx.mock
async def test_too_many_redirects() -> None:
    loop = respx.get("https://loop.example.org/").mock(
        return_value=httpx.Response(302, headers={"Location": "https://loop.example.org/"})
    )
    async with httpx.AsyncClient() as client:
        src = source(client, FakeSearch(), max_redirects=2)
        with pytest.raises(PageFetchError, match="more than 2 redirects"):
            await src.fetch_page("https://loop.example.org/")
    assert loop.call_count == 3


class CountingStream(httpx.AsyncByteStream):
    """A large body in 64 KiB chunks that counts how many were pulled."""

    def __init__(self, chunks: int, chunk: bytes) -> None:
        self.total = chunks
        self.chunk = chunk
        self.pulled = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for _ in range(self.total):
            self.pulled += 1
            yield self.chunk


@respx.mock
async def test_oversized_page_is_truncated_and_not_fully_downloaded() -> None:
    para = f"<p>{PARA1}</p>\n"
    chunk = (para * (65536 // len(para) + 1)).encode()[:65536]
    stream = CountingStream(chunks=100, chunk=chunk)  # 6.5 MB
    respx.get("https://big.example.org/").mock(
        return_value=httpx.Response(200, headers={"content-type": "text/html"}, stream=stream)
    )
    async with httpx.AsyncClient() as client:
        src = source(client, FakeSearch(), max_page_bytes=200_000)
        page = await src.fetch_page("https://big.example.org/")
    assert page.truncated
    assert len(page.body) == 200_000
    assert stream.pulled <= 4  # stopped reading: 200 kB is ~3 chunks of 64 KiB


@respx.mock
async def test_long_page_text_is_cut_to_max_content_chars() -> None:
    paras = "".join(f"<p>Paragraph {i}: {PARA1}</p>" for i in range(200))
    body = f"<html><body><article>{paras}</article></body></html>"
    respx.get("https://long.example.org/").mock(return_value=html(body))
    async with httpx.AsyncClient() as client:
        src = source(client, FakeSearch([hit("https://long.example.org/")]), max_content_chars=1000)
        items = await src.search("q", 1)
    assert len(items[0].content) <= 1000
    assert items[0].content.endswith("…")
    assert items[0].content.startswith("Paragraph 0: Metformin, a biguanide")


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(500, text="boom"),
        httpx.Response(404, text="<html>not found</html>", headers={"content-type": "text/html"}),
        httpx.Response(200, content=b"%PDF-1.7 ...", headers={"content-type": "application/pdf"}),
        httpx.Response(302),  # redirect without Location
    ],
)
async def test_unfetchable_page_keeps_snippet(response: httpx.Response) -> None:
    search = FakeSearch([hit("https://e.example.org/p", body="The snippet survives.")])
    with respx.mock() as router:
        route = router.get("https://e.example.org/p").mock(return_value=response)
        async with httpx.AsyncClient() as client:
            items = await source(client, search).search("q", 1)
    assert route.call_count == 1  # pages are not retried
    assert len(items) == 1
    assert items[0].content == "The snippet survives."


@respx.mock
async def test_connection_error_and_snippet_only_results() -> None:
    search = FakeSearch(
        [
            hit("https://down.example.org/", body="Down snippet."),
            hit("https://never.example.org/", body="Not fetched: beyond fetch_pages."),
            hit("https://empty.example.org/", title="Only a title", body=""),
        ]
    )
    respx.get("https://down.example.org/").mock(side_effect=httpx.ConnectError("refused"))
    never = respx.get("https://never.example.org/").mock(return_value=html())
    async with httpx.AsyncClient() as client:
        items = await source(client, search, fetch_pages=1).search("q", 3)
    assert never.call_count == 0
    assert [e.content for e in items] == [
        "Down snippet.",
        "Not fetched: beyond fetch_pages.",
        "Only a title",
    ]


@respx.mock
async def test_slow_page_times_out_to_snippet() -> None:
    async def slow(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(5)
        return html()

    respx.get("https://slow.example.org/").mock(side_effect=slow)
    search = FakeSearch([hit("https://slow.example.org/", body="Slow snippet.")])
    async with httpx.AsyncClient() as client:
        t0 = time.monotonic()
        items = await source(client, search, timeout_seconds=0.2).search("q", 1)
    assert time.monotonic() - t0 < 2
    assert items[0].content == "Slow snippet."


# --- search failures -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "fragment"),
    [
        (RatelimitException("https://duckduckgo.com 202 Ratelimit"), "RatelimitException"),
        (TimeoutException("html.duckduckgo.com timed out"), "TimeoutException"),
        (DDGSException("engine broke"), "engine broke"),
        (OSError("Network is unreachable"), "Network is unreachable"),
    ],
)
async def test_search_errors_become_source_error(error: BaseException, fragment: str) -> None:
    async with httpx.AsyncClient() as client:
        with pytest.raises(SourceError, match=r"^web search failed: ") as info:
            await source(client, FakeSearch(error=error)).search("q", 5)
    assert info.value.source == "web"
    assert fragment in str(info.value)


async def test_ddgs_no_results_is_empty_list() -> None:
    async with httpx.AsyncClient() as client:
        src = source(client, FakeSearch(error=DDGSException("No results found.")))
        assert await src.search("q", 5) == []
        assert await src.search("q", 0) == []
        assert await src.search("  ", 5) == []


async def test_search_timeout_is_source_error() -> None:
    def slow_search(query: str, max_results: int) -> list[dict[str, str]]:
        time.sleep(0.6)
        return []

    async with httpx.AsyncClient() as client:
        src = WebSearchSource(client, search_fn=slow_search, http=HttpOptions(timeout_seconds=0.1))
        with pytest.raises(SourceError, match=r"web search failed: timed out after 0\.1 s"):
            await src.search("q", 5)


# --- ddgs API server as search backend ------------------------------------------------------


@respx.mock
async def test_search_through_ddgs_api_server() -> None:
    api = respx.get("https://ddgs.test/search/text").mock(
        return_value=httpx.Response(200, json={"results": [hit("https://p.example.org/x")]})
    )
    respx.get("https://p.example.org/x").mock(return_value=html())
    async with httpx.AsyncClient() as client:
        src = WebSearchSource(
            client,
            base_url="https://ddgs.test/",
            resolver=public_resolver,
            http=HttpOptions(requests_per_second=1000.0, backoff_seconds=0.01),
        )
        items = await src.search("metformin", 4)
    assert api.calls[0].request.url.params["query"] == "metformin"
    assert api.calls[0].request.url.params["max_results"] == "4"
    assert PARA1 in items[0].content


@respx.mock
async def test_ddgs_api_server_failure_is_source_error() -> None:
    respx.get("https://ddgs.test/search/text").mock(
        return_value=httpx.Response(500, json={"detail": "Search failed: Ratelimit"})
    )
    async with httpx.AsyncClient() as client:
        src = WebSearchSource(
            client, base_url="https://ddgs.test", http=HttpOptions(tries=2, backoff_seconds=0.01)
        )
        with pytest.raises(SourceError, match="web search failed: HTTP 500 after 2 tries"):
            await src.search("q", 3)


@pytest.mark.live
async def test_live_ddgs_search_and_fetch() -> None:
    async with new_http_client() as client:
        src = WebSearchSource(client, fetch_pages=2)
        items = await src.search("metformin Alzheimer disease", 3)
    assert items
    assert all(e.citation.source == "web" and e.content for e in items)
    assert all(e.citation.id.startswith("http") for e in items)


@respx.mock
async def test_same_page_for_several_queries_is_fetched_once() -> None:
    """Queries of a run that return the same result share one page fetch."""
    url = "https://example.org/article"
    page = respx.get(url).mock(
        return_value=httpx.Response(
            200,
            headers={"content-type": "text/html"},
            text="<html><body><article><p>"
            + "Metformin lowers glucose. " * 40
            + "</p></article></body></html>",
        )
    )

    def search_fn(query: str, limit: int) -> list[dict[str, str]]:
        return [{"href": url, "title": "Article", "body": "snippet"}]

    async def allow(url: str) -> None:
        return None

    async with httpx.AsyncClient() as client:
        source = WebSearchSource(client, search_fn=search_fn, url_guard=allow)
        results = await asyncio.gather(*(source.search(f"q{i}", 3) for i in range(4)))
    assert page.call_count == 1
    assert source.pages_fetched == 1
    assert all(r[0].content.startswith("Metformin lowers glucose") for r in results)
