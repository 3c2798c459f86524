"""Europe PMC (REST ``search``) as a search source.

One search is ``GET {base_url}/search`` with ``query=<query>``, ``format=json``,
``resultType=core`` (abstracts, MeSH headings, full author list; ``lite`` has none of these),
``pageSize`` (at most 1000) and ``cursorMark`` (``*`` first, then the previous page's
``nextCursorMark``). Pages are fetched until ``limit`` records are collected, the reply has no
``nextCursorMark`` or the same one it was asked with (Europe PMC's end-of-results signal), or
a page brings nothing new.

Europe PMC indexes PubMed (``source="MED"``), PMC-only articles (``"PMC"``), preprints
(``"PPR"``: bioRxiv, medRxiv, Research Square...) and more (patents, Agricola, ...). Each
record becomes one :class:`~deepcritical.models.Evidence` (see :func:`result_to_evidence`);
preprints are flagged ``is_preprint`` and typed ``"Preprint (not peer-reviewed)"``.

Rate: the source defaults to 10 requests/s (Europe PMC asks for reasonable use and publishes
no per-second limit); 429/5xx replies are retried honouring ``Retry-After``
(:class:`~deepcritical.sources.http.SourceHttp`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

import httpx

from deepcritical.evidence.identifiers import normalize_doi, normalize_pmcid, normalize_pmid
from deepcritical.logs import get_logger
from deepcritical.models import (
    Citation,
    Evidence,
    SearchFilters,
    SourceName,
    flags_from_publication_types,
)
from deepcritical.sources.base import SourceError, rank_in_order
from deepcritical.sources.filter_syntax import europepmc_query
from deepcritical.sources.html_text import collapse_whitespace, html_to_text, strip_tags
from deepcritical.sources.http import HttpOptions, SourceHttp
from deepcritical.sources.paging import collect_token_pages, page_token
from deepcritical.sources.payload import as_list, as_mapping, json_object, parse_each

log = get_logger(__name__)

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_REQUESTS_PER_SECOND",
    "MAX_PAGE_SIZE",
    "PREPRINT_TYPE",
    "EuropePMCSource",
    "parse_search",
    "result_to_evidence",
]

SOURCE = SourceName.EUROPEPMC.value
LABEL = "Europe PMC"
DEFAULT_BASE_URL = "https://www.ebi.ac.uk/europepmc/webservices/rest"
DEFAULT_REQUESTS_PER_SECOND = 10.0
MAX_PAGE_SIZE = 1000
ARTICLE_URL = "https://europepmc.org/article/{source}/{id}"
PREPRINT_TYPE = "Preprint (not peer-reviewed)"
"""Publication type given to preprints (replacing Europe PMC's own ``"preprint"``)."""
NOT_JSON = f"malformed JSON from {LABEL}: got {{content_type}} starting {{start}} ({{error}})"
"""How a body that is not JSON is reported (:func:`~deepcritical.sources.http.decode_json`)."""

_ISO_DATE = re.compile(r"^\d{4}(?:-\d{2}(?:-\d{2})?)?$")
_YEAR = re.compile(r"^\d{4}$")


def _str(value: Any) -> str | None:
    if isinstance(value, str):
        text = collapse_whitespace(value)
        return text or None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _unique(values: list[str]) -> list[str]:
    """``values`` without empties and case-insensitive repeats, first spelling kept."""
    seen: dict[str, str] = {}
    for v in values:
        if v and v.lower() not in seen:
            seen[v.lower()] = v
    return list(seen.values())


def _authors(record: Mapping[str, Any]) -> list[str]:
    """``authorList.author[]``: ``fullName`` (``"Smith JA"``), else ``collectiveName``, else
    ``lastName`` + ``initials``; when there is no list, ``authorString`` split on commas."""
    names: list[str] = []
    for author in as_list(as_mapping(record.get("authorList")).get("author")):
        a = as_mapping(author)
        name = _str(a.get("fullName")) or _str(a.get("collectiveName"))
        if not name:
            name = " ".join(p for p in (_str(a.get("lastName")), _str(a.get("initials"))) if p)
        if name:
            names.append(strip_tags(name))
    if names:
        return _unique(names)
    author_string = _str(record.get("authorString")) or ""
    return _unique([n.strip().rstrip(".").strip() for n in author_string.split(",")])


def _publication_types(record: Mapping[str, Any]) -> list[str]:
    """``pubTypeList.pubType[]`` (core), else ``pubType`` split on ``;`` (lite)."""
    listed = as_list(as_mapping(record.get("pubTypeList")).get("pubType"))
    found = [t for t in (_str(v) for v in listed) if t]
    if not found:
        found = [t.strip() for t in (_str(record.get("pubType")) or "").split(";")]
    return _unique(found)


def _mesh_terms(record: Mapping[str, Any]) -> list[str]:
    """``meshHeadingList.meshHeading[].descriptorName`` (qualifiers not included)."""
    headings = as_list(as_mapping(record.get("meshHeadingList")).get("meshHeading"))
    return _unique([_str(as_mapping(h).get("descriptorName")) or "" for h in headings])


def _journal(record: Mapping[str, Any]) -> str | None:
    """``journalInfo.journal.title`` (core), else ``journalTitle`` (lite), else the preprint
    server / publisher ``bookOrReportDetails.publisher``."""
    journal = as_mapping(as_mapping(record.get("journalInfo")).get("journal"))
    title = _str(journal.get("title")) or _str(record.get("journalTitle"))
    title = title or _str(as_mapping(record.get("bookOrReportDetails")).get("publisher"))
    return strip_tags(title) or None


def _year_and_date(record: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The year (``pubYear``, else that of ``firstPublicationDate``, else
    ``bookOrReportDetails.yearOfPublication``) and the ISO date (``firstPublicationDate``)
    of a result, each ``None`` when absent or malformed."""
    year_text = _str(record.get("pubYear"))
    date = _str(record.get("firstPublicationDate"))
    date = date if date and _ISO_DATE.match(date) else None
    if not (year_text and _YEAR.match(year_text)):
        year_text = date[:4] if date else None
    if year_text is None:
        report_year = _str(as_mapping(record.get("bookOrReportDetails")).get("yearOfPublication"))
        year_text = report_year if report_year and _YEAR.match(report_year) else None
    return year_text, date


def result_to_evidence(record: Mapping[str, Any]) -> Evidence | None:
    """One Europe PMC search result (core or lite) -> an evidence item, or ``None`` when it has
    no identifier at all.

    Citation (``source="europepmc"``):

    * ``pmid`` from ``pmid`` (or ``id`` when ``source == "MED"``), ``pmcid`` from ``pmcid``
      (or ``id`` when ``source == "PMC"``), ``doi`` from ``doi`` lower-cased, without resolver
      prefix; ``id`` is the PMID, else the PMCID, else the DOI, else Europe PMC's ``id``
      (``"PPR1031776"``);
    * ``title``: ``title`` with markup removed; ``authors``: see :func:`_authors`;
      ``journal``: see :func:`_journal`;
    * ``year``: ``pubYear``, else the year of ``firstPublicationDate``, else
      ``bookOrReportDetails.yearOfPublication``; ``date``: ``firstPublicationDate``
      (``"2025-06-05"``);
    * ``url``: ``https://europepmc.org/article/<source>/<id>`` (``.../MED/39709209``);
    * ``open_access``: ``isOpenAccess`` (``"Y"``: True, ``"N"``: False, absent: None).
    * ``integrity_flags``: from the publication types (``"Retracted Publication"``,
      ``"Retraction of Publication"``, ``"Expression of Concern"``, ``"Published Erratum"``;
      :func:`~deepcritical.models.flags_from_publication_types`).

    ``content`` is ``abstractText`` as plain text with structured-abstract headings kept as
    ``"LABEL: "`` paragraphs (:func:`~deepcritical.sources.html_text.html_to_text`), or the title
    when there is no abstract (lite results never have one). ``mesh_terms`` from
    ``meshHeadingList``, ``publication_types`` from ``pubTypeList`` / ``pubType``.
    ``is_preprint`` when ``source == "PPR"`` or a publication type says preprint; preprints get
    :data:`PREPRINT_TYPE` in place of Europe PMC's ``"preprint"``. ``relevance`` is 0 and
    ``query`` ``None`` (the caller ranks).
    """
    epmc_source = _str(record.get("source"))
    epmc_id = _str(record.get("id"))
    pmid = normalize_pmid(_str(record.get("pmid")))
    pmcid = normalize_pmcid(_str(record.get("pmcid")))
    if pmid is None and epmc_source == "MED":
        pmid = normalize_pmid(epmc_id)
    if pmcid is None and epmc_source == "PMC":
        pmcid = normalize_pmcid(epmc_id)
    doi = normalize_doi(_str(record.get("doi")))
    native_id = pmid or pmcid or doi or epmc_id
    if not native_id:
        return None

    title = strip_tags(_str(record.get("title")))
    year_text, date = _year_and_date(record)
    types = _publication_types(record)
    is_preprint = epmc_source == "PPR" or any("preprint" in t.lower() for t in types)
    if is_preprint:
        types = [t for t in types if t.lower() != "preprint"]
        types.append(PREPRINT_TYPE)

    url = ARTICLE_URL.format(source=epmc_source, id=epmc_id) if epmc_source and epmc_id else None
    citation = Citation(
        source=SOURCE,
        id=native_id,
        pmid=pmid,
        pmcid=pmcid,
        doi=doi,
        title=title,
        authors=_authors(record),
        journal=_journal(record),
        year=int(year_text) if year_text else None,
        date=date,
        url=url,
        open_access={"Y": True, "N": False}.get(_str(record.get("isOpenAccess")) or ""),
        integrity_flags=flags_from_publication_types(types, "Europe PMC pubTypeList"),
    )
    abstract_html = record.get("abstractText")
    abstract = html_to_text(abstract_html) if isinstance(abstract_html, str) else ""
    return Evidence(
        content=abstract or title or citation.display_title(),
        citation=citation,
        mesh_terms=_mesh_terms(record),
        publication_types=_unique(types),
        is_preprint=is_preprint,
    )


def parse_search(payload: Any) -> tuple[list[Evidence], str | None]:
    """Parse one ``GET /search?format=json`` reply.

    Args:
        payload: the decoded JSON body: ``{"hitCount": n, "nextCursorMark": "...",
            "resultList": {"result": [...]}, "request": {...}}``.

    Returns:
        ``(items, next_cursor_mark)``: one evidence item per result in API order (see
        :func:`result_to_evidence`; results without any identifier are skipped and logged),
        and ``nextCursorMark`` or ``None`` when the reply has none.

    Raises:
        SourceError: the body is not an object with ``resultList.result`` as a list (Europe
            PMC's own error objects, ``{"errCode": ..., "errMsg": ...}``, are reported with
            their message).
    """
    payload = json_object(payload, SOURCE, f"unexpected response from {LABEL}: a JSON {{type}}")
    results = as_mapping(payload.get("resultList")).get("result")
    if not isinstance(results, list):
        message = _str(payload.get("errMsg")) or _str(payload.get("message"))
        if message:
            raise SourceError(SOURCE, f"{LABEL} error: {message[:200]}")
        raise SourceError(SOURCE, f"unexpected response from {LABEL}: no 'resultList.result'")
    skipped = f"skipping a {LABEL} result without any identifier"
    items = parse_each(results, result_to_evidence, log, skipped)
    return items, page_token(payload.get("nextCursorMark"))


class EuropePMCSource:
    """Europe PMC REST search behind the :class:`~deepcritical.sources.base.SearchSource`
    protocol (``name = "europepmc"``).

    Args:
        client: the run's shared :class:`httpx.AsyncClient`.
        base_url: REST root without trailing slash (tests and stub servers redirect it);
            requests go to ``{base_url}/search``.
        http: timeout, tries, backoff and rate limit (:class:`~deepcritical.sources.http.
            HttpOptions`; the rate defaults to 10 requests/s).
        result_type: ``"core"`` (default: abstracts, MeSH, author list) or ``"lite"``
            (no abstracts: content falls back to titles).
    """

    name: str = SOURCE

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        base_url: str = DEFAULT_BASE_URL,
        http: HttpOptions | None = None,
        result_type: Literal["core", "lite"] = "core",
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.result_type = result_type
        self.http = SourceHttp(client, SOURCE, http, default_rate=DEFAULT_REQUESTS_PER_SECOND)

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        """Up to ``limit`` records matching ``query``, in Europe PMC's relevance order.

        Args:
            query: Europe PMC query syntax (free text, ``AND``/``OR``, fields such as
                ``TITLE:"metformin"``, ``SRC:PPR``). A blank query returns ``[]`` without a
                request.
            limit: maximum number of items; ``<= 0`` returns ``[]`` without a request.
            filters: ANDed into the query (:func:`~deepcritical.sources.filter_syntax.
                europepmc_query`: ``FIRST_PDATE``, ``LANG``, ``PUB_TYPE``,
                ``CREATION_DATE``); trial phases and statuses do not apply.

        Returns:
            Evidence items with ``query`` set and ``relevance`` from rank: ``1 - rank / n``
            for ``n`` items (the first 1.0, the last ``1/n``). A record repeated on a later
            page is kept once.

        Raises:
            SourceError: HTTP failure after retries, timeout, a body that is not JSON, JSON
                without ``resultList.result``, or a Europe PMC error object.
        """
        if limit <= 0 or not query.strip():
            return []
        params: dict[str, str | int] = {
            "query": europepmc_query(query.strip(), filters),
            "format": "json",
            "resultType": self.result_type,
            "pageSize": min(limit, MAX_PAGE_SIZE),
        }

        async def fetch_page(cursor: str) -> tuple[list[Evidence], str | None]:
            payload = await self.http.get_json(
                f"{self.base_url}/search", {**params, "cursorMark": cursor}, reason=NOT_JSON
            )
            return parse_search(payload)

        items = await collect_token_pages(fetch_page, limit, first_token="*")
        rank_in_order(items, query)
        return items
