"""PubMed through NCBI E-utilities: ``esearch`` (PMIDs by relevance) then ``efetch`` (records).

Every request goes through :class:`~deepcritical.sources.http.SourceHttp` (rate limit, retries
on 429/5xx with Retry-After, timeouts). NCBI allows 3 requests/s without an API key and 10 with
one. NCBI sometimes answers a throttled request with HTTP 200 and the JSON body
``{"error":"API rate limit exceeded", ...}`` instead of a 429; that body is retried here with
the same backoff. The API key is sent as a query parameter and never appears in errors or logs.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

import httpx

from deepcritical.formats.pubmed_xml import (
    PubmedArticle,
    PubmedXMLError,
    article_to_evidence,
    parse_pubmed_xml,
)
from deepcritical.logs import get_logger
from deepcritical.models import Evidence, SearchFilters
from deepcritical.sources.base import SourceError, relevance_from_rank
from deepcritical.sources.filter_syntax import pubmed_added_params, pubmed_term
from deepcritical.sources.http import HttpOptions, SourceHttp, decode_json, json_or_none
from deepcritical.sources.payload import json_object

log = get_logger(__name__)

DEFAULT_BASE_URL = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils"
EFETCH_BATCH_SIZE = 200
"""Most PMIDs per ``efetch`` request (NCBI asks for POST above 200 ids; we split instead)."""
ESEARCH_MAX_RETMAX = 10_000
"""``esearch`` refuses ``retmax`` above 10,000."""
RATE_WITHOUT_KEY = 3.0
RATE_WITH_KEY = 10.0


class PubMedSource:
    """The PubMed search source (:class:`~deepcritical.sources.base.SearchSource`).

    Args:
        client: the run's shared :class:`httpx.AsyncClient`.
        api_key: NCBI API key (raises the rate limit to 10 requests/s); sent as ``api_key``.
        email: contact address sent as ``email`` (NCBI's etiquette).
        tool: tool name sent as ``tool``.
        base_url: E-utilities base URL (no trailing ``/``), overridable for tests and mirrors.
        http: timeout, tries, backoff and rate limit (:class:`~deepcritical.sources.http.
            HttpOptions`); the rate defaults to 3 requests/s without ``api_key`` and 10 with
            one, and ``tries`` also bounds the retries of rate-limit bodies sent with HTTP 200.
    """

    name = "pubmed"

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        api_key: str | None = None,
        email: str | None = None,
        tool: str = "deepcritical",
        base_url: str = DEFAULT_BASE_URL,
        http: HttpOptions | None = None,
    ) -> None:
        self._api_key = api_key or None
        self.email = email
        self.tool = tool
        self.base_url = base_url.rstrip("/")
        default_rate = RATE_WITH_KEY if self._api_key else RATE_WITHOUT_KEY
        self.http = SourceHttp(client, self.name, http, default_rate=default_rate)

    @property
    def requests_per_second(self) -> float:
        """The rate limit in force: the one given, else NCBI's (3/s without a key, 10 with)."""
        return self.http.requests_per_second

    def __repr__(self) -> str:
        key = "set" if self._api_key else "none"
        return (
            f"PubMedSource(base_url={self.base_url!r}, api_key={key}, "
            f"requests_per_second={self.requests_per_second:g})"
        )

    # ------------------------------------------------------------------ public

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        """Search PubMed for ``query``; return up to ``limit`` items in relevance order.

        ``filters`` go into the esearch request (:mod:`deepcritical.sources.filter_syntax`):
        publication dates ``[dp]``, languages ``[la]`` and designs ``[pt]`` in the term, and
        ``added_since`` as ``datetype=edat&mindate=...&maxdate=...``; trial phases and
        statuses do not apply to PubMed.

        ``esearch.fcgi`` (``sort=relevance``, ``retmax=limit``) gives the PMIDs; ``efetch.fcgi``
        (XML, batches of at most 200 ids) gives the records, parsed by
        :func:`~deepcritical.formats.pubmed_xml.parse_pubmed_xml`. Items keep the esearch order;
        ``relevance`` is ``1 - rank / n`` (1.0 for the first of ``n`` PMIDs), ``query`` is set.
        PMIDs that efetch does not return are left out.

        Returns:
            ``[]`` when ``limit <= 0``, the query is blank, or PubMed finds nothing (efetch is
            then not called).

        Raises:
            SourceError: HTTP failure after retries, NCBI rate limit still exceeded after
                ``tries`` attempts, an NCBI error message, or malformed JSON/XML (the reason
                says which, e.g. ``"malformed efetch XML: ..."``). Never contains the API key.
        """
        if limit <= 0 or not query.strip():
            return []
        pmids = await self.esearch(
            pubmed_term(query, filters),
            min(limit, ESEARCH_MAX_RETMAX),
            pubmed_added_params(filters),
        )
        if not pmids:
            return []
        pmids = pmids[:limit]
        articles = await self.efetch(pmids)
        by_pmid = {a.pmid: a for a in articles}
        n = len(pmids)
        out: list[Evidence] = []
        for rank, pmid in enumerate(pmids):
            article = by_pmid.get(pmid)
            if article is None:
                log.debug("efetch returned no record", pmid=pmid)
                continue
            out.append(
                article_to_evidence(article, query=query, relevance=relevance_from_rank(rank, n))
            )
        return out

    async def esearch(
        self, term: str, retmax: int, extra: dict[str, str] | None = None
    ) -> list[str]:
        """PMIDs for ``term`` from ``esearch.fcgi`` (JSON), best first; at most ``retmax``.

        ``extra``: more esearch parameters (``datetype``, ``mindate``, ``maxdate``).

        Reads ``esearchresult.idlist``. ``esearchresult.errorlist`` (``phrasesnotfound``,
        ``fieldsnotfound``) and ``warninglist`` are logged at debug level and otherwise ignored:
        PubMed still searches the remaining terms (``[]`` if nothing is left).

        Raises:
            SourceError: see :meth:`search`; ``esearchresult.ERROR`` becomes
                ``"esearch error: <message>"``.
        """
        params = self._params(
            db="pubmed",
            term=term,
            retmode="json",
            sort="relevance",
            retmax=str(retmax),
            **(extra or {}),
        )
        response = await self._get("esearch.fcgi", params, "esearch")
        try:
            decoded = decode_json(response, self.name, "malformed esearch JSON: {start}")
        except SourceError as exc:  # the body may echo the request, hence the key
            raise SourceError(self.name, self._scrub(exc.reason)) from exc
        payload = json_object(
            decoded, self.name, "malformed esearch JSON: top level is not an object"
        )
        if "error" in payload:
            raise SourceError(self.name, f"esearch error: {self._scrub(str(payload.get('error')))}")
        result = payload.get("esearchresult")
        if not isinstance(result, dict):
            raise SourceError(self.name, "malformed esearch JSON: no esearchresult object")
        idlist = result.get("idlist", [])
        if not isinstance(idlist, list):
            raise SourceError(self.name, "malformed esearch JSON: idlist is not a list")
        pmids = [str(i).strip() for i in idlist if str(i).strip().isdigit()]
        error = result.get("ERROR")
        if error and not pmids:
            raise SourceError(self.name, f"esearch error: {self._scrub(str(error))}")
        for key in ("errorlist", "warninglist"):
            notes = result.get(key)
            if isinstance(notes, dict) and any(notes.values()):
                log.debug("esearch notes", kind=key, notes=self._scrub(json.dumps(notes)))
        return pmids

    async def efetch(self, pmids: Sequence[str]) -> list[PubmedArticle]:
        """Records for ``pmids`` from ``efetch.fcgi`` (``retmode=xml``, ``rettype=abstract``).

        Sends batches of at most :data:`EFETCH_BATCH_SIZE` ids, one after another (the rate
        limiter spaces them). Returns the records in the order NCBI sends them.

        Raises:
            SourceError: see :meth:`search`; unparsable XML gives
                ``"malformed efetch XML: <parser message>"``.
        """
        articles: list[PubmedArticle] = []
        for start in range(0, len(pmids), EFETCH_BATCH_SIZE):
            batch = pmids[start : start + EFETCH_BATCH_SIZE]
            params = self._params(
                db="pubmed", id=",".join(batch), retmode="xml", rettype="abstract"
            )
            response = await self._get("efetch.fcgi", params, "efetch")
            payload = json_or_none(response)
            if isinstance(payload, dict) and "error" in payload:
                raise SourceError(
                    self.name, f"efetch error: {self._scrub(str(payload.get('error')))}"
                )
            try:
                articles.extend(parse_pubmed_xml(response.content))
            except PubmedXMLError as exc:
                raise SourceError(
                    self.name, f"malformed efetch XML: {self._scrub(str(exc))}"
                ) from exc
        return articles

    async def elink(self, pmid: str, linkname: str) -> list[str]:
        """PMIDs linked to ``pmid`` by ``linkname`` from ``elink.fcgi`` (``dbfrom=pubmed``,
        ``db=pubmed``, ``retmode=json``), in NCBI's order: ``pubmed_pubmed_refs`` (the
        references of ``pmid`` that PubMed holds) or ``pubmed_pubmed_citedin`` (the PubMed
        records citing it, from PMC's reference lists). ``[]`` when NCBI knows no such link.

        Raises:
            SourceError: see :meth:`search`; an unreadable answer gives ``"malformed elink
                JSON: ..."``, an NCBI error ``"elink error: <message>"``.
        """
        params = self._params(
            dbfrom="pubmed", db="pubmed", linkname=linkname, id=pmid, retmode="json"
        )
        response = await self._get("elink.fcgi", params, "elink")
        try:
            decoded = decode_json(response, self.name, "malformed elink JSON: {start}")
        except SourceError as exc:
            raise SourceError(self.name, self._scrub(exc.reason)) from exc
        try:
            return parse_elink(decoded, linkname)
        except SourceError as exc:
            raise SourceError(self.name, self._scrub(exc.reason)) from exc

    # ------------------------------------------------------------------ internals

    def _params(self, **params: str) -> dict[str, str]:
        if self.tool:
            params["tool"] = self.tool
        if self.email:
            params["email"] = self.email
        if self._api_key:
            params["api_key"] = self._api_key
        return params

    def _scrub(self, text: str) -> str:
        """``text`` with the API key (if any) masked, for error messages and logs."""
        if self._api_key:
            text = text.replace(self._api_key, "***")
        return text

    async def _get(self, endpoint: str, params: dict[str, str], what: str) -> httpx.Response:
        """GET ``base_url/endpoint`` through SourceHttp, retrying NCBI rate-limit bodies.

        A 2xx response whose body is NCBI's ``{"error": "API rate limit exceeded"}`` is retried
        up to ``tries`` attempts in all, with exponential backoff from ``backoff_seconds``.
        """
        url = f"{self.base_url}/{endpoint}"
        for attempt in range(1, self.http.tries + 1):
            try:
                response = await self.http.get(url, params=params)
            except SourceError as exc:
                raise SourceError(self.name, f"{what}: {self._scrub(exc.reason)}") from exc
            except httpx.HTTPError as exc:  # e.g. a body that cannot be decoded
                # str(exc) may quote the URL, hence the key: give the type only.
                raise SourceError(self.name, f"{what}: {type(exc).__name__}") from exc
            if not _is_rate_limit_body(response):
                return response
            log.debug("NCBI rate limit body", request=what, attempt=attempt)
            if attempt < self.http.tries:
                await asyncio.sleep(self.http.backoff_seconds * 2 ** (attempt - 1))
        raise SourceError(
            self.name, f"{what}: NCBI API rate limit exceeded after {self.http.tries} tries"
        )


def _is_rate_limit_body(response: httpx.Response) -> bool:
    payload = json_or_none(response)
    if not isinstance(payload, dict):
        return False
    error = payload.get("error")
    return isinstance(error, str) and "rate limit" in error.lower()


def parse_elink(payload: object, linkname: str) -> list[str]:
    """The PMIDs of ``linkname`` in a decoded ``elink.fcgi`` JSON answer (``retmode=json``):
    ``linksets[].linksetdbs[]`` whose ``linkname`` is ``linkname``, their ``links`` (digit
    strings), in order, each once. A linkset without ``linksetdbs`` (NCBI's answer for a
    record with no such link) gives ``[]``.

    Raises:
        SourceError: not a JSON object, an ``ERROR`` / ``error`` member (NCBI's error answer,
            e.g. an unknown ``linkname``), or ``linksets`` that is not a list.
    """
    data = json_object(payload, "pubmed", "malformed elink JSON: top level is not an object")
    error = data.get("ERROR") or data.get("error")
    if error:
        raise SourceError("pubmed", f"elink error: {str(error)[:200]}")
    linksets = data.get("linksets", [])
    if not isinstance(linksets, list):
        raise SourceError("pubmed", "malformed elink JSON: linksets is not a list")
    pmids: list[str] = []
    for linkset in linksets:
        if not isinstance(linkset, dict):
            continue
        for db in linkset.get("linksetdbs") or []:
            if not isinstance(db, dict) or db.get("linkname") != linkname:
                continue
            links = db.get("links") or []
            pmids.extend(str(p).strip() for p in links if str(p).strip().isdigit())
    return list(dict.fromkeys(pmids))
