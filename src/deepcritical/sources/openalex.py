"""OpenAlex works search (https://api.openalex.org, CC0 data).

``GET {base_url}/works?search=<query>&per_page=<n>&page=<p>&select=<fields>`` returns works in
relevance order; each becomes one :class:`~deepcritical.models.Evidence` whose content is the
abstract rebuilt from ``abstract_inverted_index`` (or the title when OpenAlex has no abstract).

Paging is basic ``page`` paging, not ``cursor``: OpenAlex documents ``per_page`` up to 100 on
its current API and has started refusing cursor paging to clients without an API key; a
search never needs more than the first 10,000 hits (``page * per_page <= 10000``).

The parse functions (:func:`rebuild_abstract`, :func:`parse_work`, :func:`parse_works_page`)
are pure and take the decoded JSON.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from deepcritical.evidence.identifiers import normalize_doi, normalize_pmcid, normalize_pmid
from deepcritical.models import (
    Citation,
    Evidence,
    IntegrityFlag,
    IntegrityKind,
    SearchFilters,
    SourceName,
)
from deepcritical.sources.base import SourceError, rank_in_order
from deepcritical.sources.filter_syntax import openalex_filters
from deepcritical.sources.html_text import html_to_text, strip_tags
from deepcritical.sources.http import HttpOptions, SourceHttp
from deepcritical.sources.payload import as_list, as_mapping, json_object

SOURCE = SourceName.OPENALEX.value
DEFAULT_BASE_URL = "https://api.openalex.org"
DEFAULT_REQUESTS_PER_SECOND = 10.0
"""OpenAlex allows 10 requests per second (polite pool or not)."""
MAX_PER_PAGE = 100
MAX_RESULTS = 10_000
SELECT_FIELDS = (
    "id",
    "doi",
    "title",
    "display_name",
    "publication_year",
    "publication_date",
    "ids",
    "primary_location",
    "best_oa_location",
    "open_access",
    "authorships",
    "type",
    "type_crossref",
    "cited_by_count",
    "is_retracted",
    "mesh",
    "abstract_inverted_index",
)
"""Root-level fields asked for with ``select`` (OpenAlex only selects root-level fields)."""

PREPRINT_TYPES = frozenset({"preprint", "posted-content"})
_ABSTRACT_LABEL = re.compile(r"^(?i:abstract)\s*[:.]?\s+(?=[A-Z0-9(\[])")
_OPENALEX_ID = re.compile(r"(W\d+)$", re.IGNORECASE)


@dataclass(frozen=True)
class OpenAlexWork:
    """One parsed OpenAlex work.

    ``evidence`` is what the source returns (``relevance`` still 0, ``query`` unset: the search
    fills both). ``cited_by_count`` (API field ``cited_by_count``; None when absent) and
    ``openalex_id`` (``W`` + digits, from ``id``) have no place in :class:`Evidence` and are
    kept here for callers that rank or display by citations.
    """

    evidence: Evidence
    openalex_id: str | None
    cited_by_count: int | None
    has_abstract: bool


@dataclass(frozen=True)
class OpenAlexPage:
    """One ``/works`` response: parsed works (unparsable ones skipped) and ``meta.count``."""

    works: list[OpenAlexWork]
    total: int | None
    raw_count: int


def rebuild_abstract(index: Mapping[str, Any] | None) -> str:
    """The abstract text from an ``abstract_inverted_index`` (word -> list of positions).

    Words are placed at their positions and joined with single spaces; positions that no word
    claims are skipped. Returns ``""`` for None, an empty index, or an index of the wrong
    shape (non-list positions and non-integer positions are ignored).
    """
    if not isinstance(index, Mapping):
        return ""
    placed: dict[int, str] = {}
    for word, positions in index.items():
        if not isinstance(word, str) or not isinstance(positions, list):
            continue
        for pos in positions:
            if isinstance(pos, int) and not isinstance(pos, bool) and pos >= 0:
                placed[pos] = word
    return " ".join(placed[p] for p in sorted(placed))


def clean_abstract(text: str) -> str:
    """Tidy a rebuilt abstract: markup and entities resolved (:func:`html_to_text`), a leading
    ``Abstract`` label dropped.

    The label is dropped only when a capitalised word follows (``"Abstract Large language
    models..."``), so an abstract opening with ``"Abstract reasoning..."`` is kept whole.
    """
    text = html_to_text(text)
    stripped = _ABSTRACT_LABEL.sub("", text, count=1)
    return stripped if stripped else text


def openalex_short_id(value: object) -> str | None:
    """``https://openalex.org/W2033425827`` -> ``W2033425827``, or None."""
    if not isinstance(value, str):
        return None
    m = _OPENALEX_ID.search(value.strip())
    return m.group(1).upper() if m else None


def _str(value: object) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _int(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def _best_url(work: Mapping[str, Any], doi: str | None, openalex_id: str | None) -> str | None:
    oa = as_mapping(work.get("open_access"))
    best = as_mapping(work.get("best_oa_location"))
    for candidate in (
        oa.get("oa_url"),
        best.get("landing_page_url"),
        best.get("pdf_url"),
    ):
        url = _str(candidate)
        if url:
            return url
    if doi:
        return f"https://doi.org/{doi}"
    if openalex_id:
        return f"https://openalex.org/{openalex_id}"
    return None


def _publication_types(work: Mapping[str, Any]) -> list[str]:
    types: list[str] = []
    kind = _str(work.get("type"))
    if kind:
        types.append(kind.replace("-", " ").title())
    if work.get("is_retracted") is True:
        types.append("Retracted Publication")
    return types


def _mesh_terms(work: Mapping[str, Any]) -> list[str]:
    names = (_str(as_mapping(m).get("descriptor_name")) for m in as_list(work.get("mesh")))
    return list(dict.fromkeys(n for n in names if n))


def _authors(work: Mapping[str, Any]) -> list[str]:
    names: list[str] = []
    for authorship in as_list(work.get("authorships")):
        a = as_mapping(authorship)
        author = as_mapping(a.get("author"))
        name = _str(author.get("display_name")) or _str(a.get("raw_author_name"))
        if name:
            names.append(name)
    return names


def _integrity_flags(work: Mapping[str, Any]) -> list[IntegrityFlag]:
    """A ``retracted`` flag when the work's ``is_retracted`` is ``true``, else none."""
    if work.get("is_retracted") is not True:
        return []
    return [
        IntegrityFlag(
            kind=IntegrityKind.RETRACTED,
            notice="OpenAlex marks this work as retracted",
            source="OpenAlex is_retracted",
        )
    ]


def parse_work(work: Mapping[str, Any]) -> OpenAlexWork | None:
    """Map one OpenAlex work object to :class:`OpenAlexWork`; None if it has no text at all.

    Field mapping (API field -> model):

    * content: ``abstract_inverted_index`` rebuilt (:func:`rebuild_abstract`, then
      :func:`clean_abstract`); the title when there is no abstract;
    * ``Citation.id``: the OpenAlex id (``W...``, from ``id``), else the DOI;
    * ``title``: ``title``, else ``display_name``; ``authors``:
      ``authorships[].author.display_name``; ``journal``:
      ``primary_location.source.display_name``; ``year``: ``publication_year``; ``date``:
      ``publication_date``;
    * ``doi``: ``doi`` (else ``ids.doi``) lower-cased without ``https://doi.org/``; ``pmid``:
      ``ids.pmid``; ``pmcid``: ``ids.pmcid``;
    * ``url``: ``open_access.oa_url``, else ``best_oa_location.landing_page_url`` / ``pdf_url``,
      else the DOI URL, else ``https://openalex.org/W...``;
    * ``is_preprint``: ``type`` or ``type_crossref`` is ``preprint``/``posted-content``;
    * ``publication_types``: ``type`` title-cased (``"Review"``), plus
      ``"Retracted Publication"`` when ``is_retracted``; ``mesh_terms``:
      ``mesh[].descriptor_name``;
    * ``integrity_flags``: a ``retracted`` flag when ``is_retracted`` is true;
      ``cited_by_count``: ``cited_by_count`` (shown, never used to rank).
    """
    ids = as_mapping(work.get("ids"))
    openalex_id = openalex_short_id(work.get("id")) or openalex_short_id(ids.get("openalex"))
    doi = normalize_doi(_str(work.get("doi"))) or normalize_doi(_str(ids.get("doi")))
    title = _str(work.get("title")) or _str(work.get("display_name")) or ""
    title = strip_tags(title)
    abstract = clean_abstract(rebuild_abstract(work.get("abstract_inverted_index")))
    content = abstract or title
    native_id = openalex_id or doi
    if not content or not native_id:
        return None
    source = as_mapping(as_mapping(work.get("primary_location")).get("source"))
    kinds = {_str(work.get("type")), _str(work.get("type_crossref"))}
    citation = Citation(
        source=SOURCE,
        id=native_id,
        title=title,
        authors=_authors(work),
        journal=_str(source.get("display_name")),
        year=_int(work.get("publication_year")),
        date=_str(work.get("publication_date")),
        url=_best_url(work, doi, openalex_id),
        doi=doi,
        pmid=normalize_pmid(_str(ids.get("pmid")) or _int(ids.get("pmid"))),
        pmcid=normalize_pmcid(_str(ids.get("pmcid"))),
        integrity_flags=_integrity_flags(work),
        cited_by_count=_int(work.get("cited_by_count")),
    )
    evidence = Evidence(
        content=content,
        citation=citation,
        mesh_terms=_mesh_terms(work),
        publication_types=_publication_types(work),
        is_preprint=bool(kinds & PREPRINT_TYPES),
    )
    return OpenAlexWork(
        evidence=evidence,
        openalex_id=openalex_id,
        cited_by_count=_int(work.get("cited_by_count")),
        has_abstract=bool(abstract),
    )


def parse_works_page(payload: object) -> OpenAlexPage:
    """Parse a decoded ``/works`` list response (``{"meta": {...}, "results": [...]}``).

    Works without any text or id are skipped (``raw_count`` still counts them).

    Raises:
        SourceError: the payload is not an object with a ``results`` list (an OpenAlex error
            object's ``error``/``message`` is quoted in the reason).
    """
    payload = json_object(payload, SOURCE)
    results = payload.get("results")
    if not isinstance(results, list):
        message = _str(payload.get("message")) or _str(payload.get("error"))
        detail = f": {message[:200]}" if message else ""
        raise SourceError(SOURCE, f"unexpected response: no 'results' list{detail}")
    works = [w for w in (parse_work(r) for r in results if isinstance(r, Mapping)) if w]
    total = _int(as_mapping(payload.get("meta")).get("count"))
    return OpenAlexPage(works=works, total=total, raw_count=len(results))


class OpenAlexSource:
    """OpenAlex works search behind the :class:`~deepcritical.sources.base.SearchSource` protocol.

    Args:
        client: the run's shared :class:`httpx.AsyncClient`.
        base_url: API root (default ``https://api.openalex.org``); tests and stub servers
            point it elsewhere.
        mailto: e-mail address sent as ``mailto`` (OpenAlex's "polite pool").
        api_key: OpenAlex API key sent as ``api_key`` (optional; never appears in errors).
        http: timeout, tries (429/5xx/timeouts are retried, honouring Retry-After), backoff
            and rate limit (:class:`~deepcritical.sources.http.HttpOptions`; the rate
            defaults to 10 requests/s, OpenAlex's documented limit).
    """

    name: str = SOURCE

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        base_url: str = DEFAULT_BASE_URL,
        mailto: str | None = None,
        api_key: str | None = None,
        http: HttpOptions | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.mailto = mailto
        self._api_key = api_key
        self.http = SourceHttp(client, SOURCE, http, default_rate=DEFAULT_REQUESTS_PER_SECOND)

    def _params(
        self, query: str, per_page: int, page: int, filters: SearchFilters | None = None
    ) -> dict[str, str | int]:
        params: dict[str, str | int] = {
            "search": query,
            "per_page": per_page,
            "page": page,
            "select": ",".join(SELECT_FIELDS),
        }
        parts = openalex_filters(filters)
        if parts:
            params["filter"] = ",".join(parts)
        if self.mailto:
            params["mailto"] = self.mailto
        if self._api_key:
            params["api_key"] = self._api_key
        return params

    async def search_works(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[OpenAlexWork]:
        """Up to ``limit`` parsed works for ``query``, in OpenAlex relevance order.

        ``filters`` become the ``filter=`` parameter
        (:func:`~deepcritical.sources.filter_syntax.openalex_filters`: publication dates,
        ``language``, ``type:review``, ``from_created_date``, which OpenAlex documents as a
        premium-key filter); trial phases and statuses do not apply.

        Pages of ``min(limit, 100)`` are fetched until ``limit`` works are collected, a page
        comes back short, ``meta.count`` is reached, or 10,000 results have been read.
        Duplicate works (same ``W`` id across pages) are dropped. ``relevance`` is the rank
        mapped onto 0..1 (first = 1.0, falling linearly to ``1/n`` for the n-th of n).

        Raises:
            SourceError: HTTP failure after retries, a timeout, a non-JSON body (an HTML 404
                page) or JSON without a ``results`` list.
        """
        query = query.strip()
        if limit <= 0 or not query:
            return []
        per_page = min(limit, MAX_PER_PAGE)
        collected: dict[str, OpenAlexWork] = {}
        page = 1
        while len(collected) < limit and page * per_page <= MAX_RESULTS:
            payload = await self.http.get_json(
                f"{self.base_url}/works", self._params(query, per_page, page, filters)
            )
            parsed = parse_works_page(payload)
            for work in parsed.works:
                collected.setdefault(work.evidence.citation.id, work)
            if parsed.raw_count < per_page:
                break
            if parsed.total is not None and page * per_page >= parsed.total:
                break
            page += 1
        works = list(collected.values())[:limit]
        rank_in_order([work.evidence for work in works], query)
        return works

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        """Search OpenAlex works within ``filters``; at most ``limit`` evidence items, best
        first.

        See :meth:`search_works` for the filters, paging, relevance and the errors raised
        (:class:`SourceError` only).
        """
        return [w.evidence for w in await self.search_works(query, limit, filters)]
