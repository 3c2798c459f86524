"""Web search: DuckDuckGo & co. through ``ddgs``, then the top pages fetched and reduced to
their main text with trafilatura.

Flow of :meth:`WebSearchSource.search`:

1. ``ddgs`` text search (``DDGS().text(query, max_results=limit)``, synchronous, so it runs in
   :func:`asyncio.to_thread`); the callable is injectable (``search_fn``) and a ddgs API
   server (``ddgs api``, ``GET {base_url}/search/text``) can stand in for the library.
2. Every result URL goes through the SSRF guard
   (:func:`~deepcritical.sources.netguard.check_public_url_async`); a result whose URL is not
   public is dropped and never fetched.
3. The top ``fetch_pages`` results are fetched with the run's shared httpx client, rate
   limited by this source's :class:`~deepcritical.sources.http.SourceHttp` limiter. Redirects
   are followed by hand, at most ``max_redirects`` hops, and every ``Location`` is checked by
   the guard before it is requested (the client's own ``follow_redirects`` is disabled per
   request), so a public page redirecting to ``http://127.0.0.1/`` is refused. Only
   ``text/html``, ``application/xhtml+xml`` and ``text/plain`` bodies are read, streamed and cut
   at ``max_page_bytes``. Pages are not retried: a page that cannot be fetched keeps the search
   snippet as content.
4. Content = the page's main text (trafilatura, run in a thread) unless it is shorter than the
   snippet (cookie walls, script-only pages), cut at a word boundary to ``max_content_chars``.

Evidence: ``Citation(source="web", id=<normalised URL>, url=<result URL>, title=<result
title>)``, a result with no title getting one derived from its content
(``derived_title``, :mod:`deepcritical.evidence.titles`); ``relevance`` from rank
(``1 - rank / n``). Search failures (rate limit, timeout, no
network) raise ``SourceError("web search failed: ...")``; "no results" is an empty list.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import httpx
import trafilatura
from ddgs.exceptions import DDGSException

from deepcritical.evidence.identifiers import normalize_url
from deepcritical.evidence.titles import with_derived_title
from deepcritical.logs import get_logger
from deepcritical.models import Citation, Evidence, SearchFilters, SourceName
from deepcritical.sources.base import SourceError, rank_in_order
from deepcritical.sources.http import HttpOptions, SourceHttp, decode_json, json_or_none
from deepcritical.sources.netguard import Resolver, UnsafeURLError, check_public_url_async

log = get_logger(__name__)

SOURCE = SourceName.WEB.value
DEFAULT_REQUESTS_PER_SECOND = 2.0
"""Page fetches per second (all hosts together): polite to the sites search results name."""
DEFAULT_FETCH_PAGES = 5
"""How many of the top results have their page fetched; the rest keep their snippet."""
DEFAULT_MAX_PAGE_BYTES = 2_000_000
"""Bytes read from one page body (2 MB); the rest is not downloaded."""
DEFAULT_MAX_CONTENT_CHARS = 4000
"""Characters of page text kept as evidence content."""
DEFAULT_MAX_REDIRECTS = 3
DDGS_NO_RESULTS = "No results found."
"""The message ``ddgs`` raises :class:`DDGSException` with when every engine found nothing."""

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset({"text/plain"})
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
ACCEPT = "text/html,application/xhtml+xml;q=0.9,text/plain;q=0.8"

SearchFn = Callable[[str, int], Sequence[Mapping[str, Any]]]
"""``search_fn(query, max_results)`` -> result dicts with ``title``, ``href``, ``body``
(ddgs's text result shape). Synchronous; may raise anything (ddgs raises
:class:`ddgs.exceptions.DDGSException` and subclasses)."""

UrlGuard = Callable[[str], Awaitable[None]]
"""``await guard(url)`` raises :class:`UnsafeURLError` for a URL that must not be fetched."""


@dataclass(frozen=True)
class SearchHit:
    """One web search result: ``title``, ``url`` (http/https) and the engine's ``snippet``."""

    title: str
    url: str
    snippet: str


@dataclass(frozen=True)
class FetchedPage:
    """A fetched page body.

    ``url`` is the final URL (after redirects); ``content_type`` the media type without
    parameters (``"text/html"``); ``encoding`` the header's charset or None; ``body`` at most
    ``max_page_bytes`` bytes; ``truncated`` True when the body was cut there.
    """

    url: str
    content_type: str
    encoding: str | None
    body: bytes
    truncated: bool


class PageFetchError(Exception):
    """A page could not be fetched (HTTP status, content type, connection, too many
    redirects, timeout); ``str(err)`` says which."""


def ddgs_text_search(
    query: str, max_results: int, *, timeout_seconds: int = 10
) -> list[dict[str, Any]]:
    """The default search callable: ``DDGS(timeout=...).text(query, max_results=...)``.

    Returns ddgs text results (dicts with ``title``, ``href``, ``body``). Blocking: call it in
    a thread.

    Raises:
        ddgs.exceptions.DDGSException: no results (message ``"No results found."``), rate limit
            (:class:`~ddgs.exceptions.RatelimitException`), timeout
            (:class:`~ddgs.exceptions.TimeoutException`) or any engine error.
    """
    from ddgs import DDGS

    return DDGS(timeout=timeout_seconds).text(query, max_results=max_results)


def parse_search_results(raw: object) -> list[SearchHit]:
    """ddgs result dicts -> :class:`SearchHit` list, in order, deduplicated by normalised URL.

    Reads ``href`` (or ``url``), ``title`` and ``body`` (or ``snippet``). Entries that are not
    mappings, or whose URL is not http(s), are skipped. Never raises.
    """
    if not isinstance(raw, Sequence) or isinstance(raw, str | bytes):
        return []
    hits: list[SearchHit] = []
    seen: set[str] = set()
    for item in raw:
        if not isinstance(item, Mapping):
            continue
        url = _text(item.get("href")) or _text(item.get("url"))
        key = normalize_url(url)
        if not url or key is None or key in seen:
            continue
        seen.add(key)
        snippet = _text(item.get("body")) or _text(item.get("snippet"))
        hits.append(SearchHit(title=_text(item.get("title")), url=url, snippet=snippet))
    return hits


def _text(value: object) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def truncate_text(text: str, max_chars: int) -> str:
    """``text`` cut to at most ``max_chars`` characters at a word boundary, ending ``"…"``
    when cut. Line breaks are kept; trailing whitespace is dropped."""
    text = text.strip()
    if len(text) <= max_chars:
        return text
    if max_chars <= 1:
        return text[:max_chars]
    cut = text[: max_chars - 1]
    if not text[max_chars - 1].isspace():  # mid-word: back up to the last space
        head, sep, _ = cut.rpartition(" ")
        if sep and len(head) >= max_chars // 2:
            cut = head
    return cut.rstrip() + "…"


def _tidy_lines(text: str) -> str:
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def extract_main_text(page: FetchedPage) -> str:
    """The main text of a fetched page ("" when nothing could be extracted).

    HTML goes through ``trafilatura.extract`` (comments, links and images left out; tables
    kept); a header charset decodes the bytes first, otherwise trafilatura detects the
    encoding. ``text/plain`` is decoded as is. Lines are whitespace-collapsed, blank lines
    dropped. Never raises: extraction errors give "".
    """
    try:
        if page.content_type in TEXT_TYPES:
            return _tidy_lines(page.body.decode(page.encoding or "utf-8", errors="replace"))
        html: str | bytes = (
            page.body.decode(page.encoding, errors="replace") if page.encoding else page.body
        )
        extracted = trafilatura.extract(
            html,
            url=page.url,
            include_comments=False,
            include_links=False,
            include_images=False,
            include_tables=True,
            deduplicate=False,  # True keeps a process-wide cache: a page seen twice loses text
        )
    except Exception:  # trafilatura/lxml on hostile input: treat as "no text"
        log.debug("extraction failed", url=page.url, exc_info=True)
        return ""
    return _tidy_lines(extracted) if isinstance(extracted, str) else ""


def choose_content(page_text: str, snippet: str, max_chars: int) -> str:
    """Page text unless it is shorter than the snippet (then the snippet), cut to
    ``max_chars`` (:func:`truncate_text`)."""
    text = page_text if len(page_text) >= len(snippet) else snippet
    return truncate_text(text, max_chars)


def _media_type(response: httpx.Response) -> str:
    value: str = response.headers.get("content-type") or ""
    return value.split(";")[0].strip().lower()


async def _read_capped(response: httpx.Response, max_bytes: int) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        room = max_bytes - size
        if len(chunk) >= room:
            chunks.append(chunk[:room])
            return b"".join(chunks), len(chunk) > room or _more_expected(response, max_bytes)
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), False


def _more_expected(response: httpx.Response, max_bytes: int) -> bool:
    """At exactly ``max_bytes`` read: is the body longer (Content-Length) or unknown?"""
    length = response.headers.get("content-length")
    return not (length and length.isdigit() and int(length) <= max_bytes)


def _is_no_results_answer(response: httpx.Response) -> bool:
    """A ddgs API server answers "no results" as HTTP 500 with
    ``{"detail": "Search failed: No results found."}``; other 500s are real failures."""
    if response.status_code != 500:
        return False
    payload = json_or_none(response)
    detail = str(payload.get("detail", "")) if isinstance(payload, Mapping) else ""
    return detail.rstrip(". ").endswith(DDGS_NO_RESULTS.rstrip(". "))


class WebSearchSource:
    """Web search behind the :class:`~deepcritical.sources.base.SearchSource` protocol.

    Args:
        client: the run's shared :class:`httpx.AsyncClient` (its ``follow_redirects`` setting
            is overridden per page request).
        base_url: a ddgs API server (``ddgs api``) to search through with
            ``GET {base_url}/search/text``; None (default) calls the ddgs library in-process.
        search_fn: replaces the search call (tests, other engines); see :data:`SearchFn`.
            Takes precedence over ``base_url``.
        resolver: name resolution for the SSRF guard (default: the system resolver).
        url_guard: replaces the SSRF guard altogether. Only for tests against a local stub
            server: it decides which URLs may be fetched.
        http: :class:`~deepcritical.sources.http.HttpOptions`: the timeout of the search and
            of each hop of a page fetch (connect + body); the tries and backoff of the ddgs
            API server request (page fetches are not retried); the page fetch rate (default
            2/s), shared by all hosts, the ddgs API server (``base_url``) getting its own
            limiter at the same rate. A ddgs API server answers "no results" with HTTP 500,
            which surfaces as :class:`SourceError`.
        fetch_pages: how many top results have their page fetched (default 5).
        max_page_bytes: body bytes read per page (default 2 MB).
        max_content_chars: content characters kept per item (default 4000).
        max_redirects: redirect hops followed per page (default 3).
    """

    name: str = SOURCE

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        base_url: str | None = None,
        search_fn: SearchFn | None = None,
        resolver: Resolver | None = None,
        url_guard: UrlGuard | None = None,
        http: HttpOptions | None = None,
        fetch_pages: int = DEFAULT_FETCH_PAGES,
        max_page_bytes: int = DEFAULT_MAX_PAGE_BYTES,
        max_content_chars: int = DEFAULT_MAX_CONTENT_CHARS,
        max_redirects: int = DEFAULT_MAX_REDIRECTS,
    ) -> None:
        self.client = client
        self.base_url = base_url.rstrip("/") if base_url else None
        http = http or HttpOptions()
        self.timeout_seconds = http.timeout_seconds
        self.fetch_pages = max(0, fetch_pages)
        self.max_page_bytes = max_page_bytes
        self.max_content_chars = max_content_chars
        self.max_redirects = max_redirects
        self._search_fn: SearchFn = search_fn or partial(
            ddgs_text_search, timeout_seconds=max(1, round(http.timeout_seconds))
        )
        self._use_api = search_fn is None and self.base_url is not None
        # Page text by normalised URL for the life of this source (one run): the same page
        # returned for several queries is fetched once; a lock per URL makes concurrent
        # queries wait for the first fetch instead of repeating it.
        self._page_text: dict[str, str] = {}
        self._page_locks: dict[str, asyncio.Lock] = {}
        self.pages_fetched = 0
        self._guard: UrlGuard = url_guard or partial(check_public_url_async, resolver=resolver)
        new_http = partial(
            SourceHttp, client, SOURCE, http, default_rate=DEFAULT_REQUESTS_PER_SECOND
        )
        self.http = new_http()  # page fetches
        self._api_http = new_http()  # the ddgs API server: a limiter of its own

    # --- search --------------------------------------------------------------------------

    async def search_hits(self, query: str, limit: int) -> list[SearchHit]:
        """Up to ``limit`` search results for ``query`` (pages not fetched, URLs not checked).

        Raises:
            SourceError: ``"web search failed: ..."`` on rate limit, timeout, network or API
                server errors. ddgs's "No results found." gives ``[]``.
        """
        query = query.strip()
        if limit <= 0 or not query:
            return []
        if self._use_api:
            raw = await self._search_api(query, limit)
        else:
            raw = await self._search_library(query, limit)
        return parse_search_results(raw)[:limit]

    async def _search_library(self, query: str, limit: int) -> object:
        try:
            return await asyncio.wait_for(
                asyncio.to_thread(self._search_fn, query, limit), timeout=self.timeout_seconds
            )
        except TimeoutError as exc:
            raise SourceError(
                SOURCE, f"web search failed: timed out after {self.timeout_seconds:g} s"
            ) from exc
        except DDGSException as exc:
            if str(exc) == DDGS_NO_RESULTS:
                return []
            raise SourceError(SOURCE, f"web search failed: {_describe(exc)}") from exc
        except Exception as exc:  # a search backend may raise anything
            raise SourceError(SOURCE, f"web search failed: {_describe(exc)}") from exc

    async def _search_api(self, query: str, limit: int) -> object:
        """Results from a ``ddgs api`` server (``GET {base_url}/search/text``)."""
        try:
            response = await self._api_http.get(
                f"{self.base_url}/search/text",
                params={"query": query, "max_results": limit},
                accept=_is_no_results_answer,
            )
            payload = decode_json(response, SOURCE, "search server sent no JSON")
        except SourceError as exc:
            raise SourceError(SOURCE, f"web search failed: {exc.reason}") from exc
        if response.status_code >= 400:  # only the "no results" answer gets here
            return []
        if not isinstance(payload, Mapping) or not isinstance(payload.get("results"), list):
            raise SourceError(SOURCE, "web search failed: search server sent no 'results' list")
        return payload["results"]

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        """Search the web; at most ``limit`` evidence items, best first.

        ``filters`` are not sent: a web search engine has no publication dates, designs or
        trial registry fields. The run screens what it can after retrieval (a page's year,
        when known) and says in a warning that the web source ignores the filters.

        Results whose URL the SSRF guard refuses are dropped. The top ``fetch_pages`` pages are
        fetched and their main text used as content; others (and failed fetches) keep the
        search snippet. Results with neither text nor snippet nor title are dropped.

        Raises:
            SourceError: the search itself failed (``"web search failed: ..."``). Page fetch
                failures never raise.
        """
        hits = await self.search_hits(query, limit)
        built = await asyncio.gather(
            *(self._evidence_for(hit, rank < self.fetch_pages) for rank, hit in enumerate(hits))
        )
        items = [e for e in built if e is not None]
        rank_in_order(items, query.strip())
        return items

    async def _evidence_for(self, hit: SearchHit, fetch: bool) -> Evidence | None:
        try:
            await self._checked(hit.url)
        except UnsafeURLError as exc:
            log.info("web result dropped", reason=str(exc))
            return None
        key = normalize_url(hit.url)
        page_text = await self._main_text(hit.url, key) if fetch and key else ""
        content = choose_content(page_text, hit.snippet, self.max_content_chars)
        if not content:
            content = hit.title
        if not content or key is None:
            return None
        citation = Citation(source=SOURCE, id=key, title=hit.title, url=hit.url)
        return with_derived_title(Evidence(content=content, citation=citation))

    async def _main_text(self, url: str, key: str) -> str:
        """Main text of the page at ``url`` ("" when it cannot be used), fetched once per run."""
        lock = self._page_locks.setdefault(key, asyncio.Lock())
        async with lock:
            if key not in self._page_text:
                text = ""
                try:
                    page = await self.fetch_page(url, first_hop_checked=True)
                    self.pages_fetched += 1
                    text = await asyncio.to_thread(extract_main_text, page)
                except (UnsafeURLError, PageFetchError) as exc:
                    log.info("page not used, snippet kept", reason=str(exc))
                self._page_text[key] = text
            return self._page_text[key]

    async def _checked(self, url: str) -> None:
        """The guard, bounded by the timeout; any guard failure is an :class:`UnsafeURLError`."""
        try:
            async with asyncio.timeout(self.timeout_seconds):
                await self._guard(url)
        except UnsafeURLError:
            raise
        except TimeoutError as exc:
            raise UnsafeURLError(url, "host lookup timed out") from exc
        except Exception as exc:  # a custom guard or resolver failing: refuse, do not crash
            raise UnsafeURLError(url, f"guard failed ({_describe(exc)})") from exc

    # --- page fetching ---------------------------------------------------------------------

    async def fetch_page(self, url: str, *, first_hop_checked: bool = False) -> FetchedPage:
        """GET ``url`` safely: guard every hop, follow at most ``max_redirects`` redirects,
        accept only HTML/plain text, read at most ``max_page_bytes`` bytes.

        Args:
            url: the page URL.
            first_hop_checked: the caller already ran the guard on ``url``.

        Raises:
            UnsafeURLError: ``url`` or a redirect target is refused by the guard.
            PageFetchError: HTTP status other than 2xx/redirect, a redirect without
                ``Location``, too many redirects, another content type, a connection error
                or a hop taking longer than ``timeout_seconds``.
        """
        current = url
        for hop in range(self.max_redirects + 1):
            if hop > 0 or not first_hop_checked:
                await self._checked(current)
            try:
                async with self.http.limiter:
                    self.http.requests_made += 1
                    async with asyncio.timeout(self.timeout_seconds):
                        next_url, page = await self._get_once(current)
            except TimeoutError as exc:
                raise PageFetchError(
                    f"{current}: timed out after {self.timeout_seconds:g} s"
                ) from exc
            except (httpx.HTTPError, httpx.InvalidURL) as exc:
                raise PageFetchError(f"{current}: {_describe(exc)}") from exc
            if page is not None:
                return page
            current = next_url
        raise PageFetchError(f"{url}: more than {self.max_redirects} redirects")

    async def _get_once(self, url: str) -> tuple[str, FetchedPage | None]:
        """One request, no redirect following: (redirect target, None) or (url, page)."""
        async with self.client.stream(
            "GET", url, follow_redirects=False, headers={"Accept": ACCEPT}
        ) as response:
            status = response.status_code
            if status in REDIRECT_STATUSES:
                location = response.headers.get("location")
                if not location:
                    raise PageFetchError(f"{url}: HTTP {status} without Location")
                return str(response.url.join(location)), None
            if not 200 <= status < 300:
                raise PageFetchError(f"{url}: HTTP {status}")
            media = _media_type(response)
            if media and media not in HTML_TYPES | TEXT_TYPES:
                raise PageFetchError(f"{url}: content type {media} is not HTML or text")
            body, truncated = await _read_capped(response, self.max_page_bytes)
            return url, FetchedPage(
                url=str(response.url),
                content_type=media or "text/html",
                encoding=response.charset_encoding,
                body=body,
                truncated=truncated,
            )


def _describe(exc: BaseException, max_chars: int = 160) -> str:
    """``Type: message`` with the message cut at a word boundary to ``max_chars`` characters;
    DNS failures (the usual offline case) are summarised."""
    text = " ".join(str(exc).split())
    if "dns error" in text.lower() or "name or service not known" in text.lower():
        text = "DNS resolution failed (no network?)"
    elif len(text) > max_chars:
        text = text[:max_chars].rsplit(" ", 1)[0] + " …"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
