"""Open-access full texts of evidence items, as JATS from Europe PMC and PubMed Central.

For an item with a PMCID, :class:`FullTextFetcher` asks:

1. Europe PMC: ``GET {europepmc}/{PMCID}/fullTextXML`` (the article XML of the open-access
   subset; HTTP 404 when Europe PMC holds no full text);
2. else NCBI E-utilities: ``GET {eutils}/efetch.fcgi?db=pmc&id=<PMCID digits>&retmode=xml``
   (``tool``, ``email`` and ``api_key`` as the PubMed source sends them). For an article
   outside the open-access subset, PMC answers with its front matter only (no body).

The answer is parsed by :func:`deepcritical.formats.jats.parse_jats` (hardened lxml: no DTD,
no entities, no network) and cut into passages, bounded to ``max_chars`` characters of text
(:func:`deepcritical.corpus.records.bound_passages`). Both routes go through
:class:`~deepcritical.sources.http.SourceHttp`: per-host rate limits (NCBI 3 requests/s, 10
with a key; Europe PMC 10/s), retries with backoff honouring ``Retry-After``, per-call
timeouts and the 32 MiB answer cap. The run reads full texts in a step of its own, after a
round's searches, so the NCBI limit here is not shared with the PubMed source's at the same
moment.
"""

from __future__ import annotations

from typing import Protocol

import httpx
from pydantic import BaseModel, Field

from deepcritical.corpus.records import bound_passages
from deepcritical.evidence.identifiers import normalize_pmcid
from deepcritical.formats.jats import JatsError, JatsReference, parse_jats
from deepcritical.models import Passage
from deepcritical.sources.base import SourceError
from deepcritical.sources.europepmc import DEFAULT_BASE_URL as EUROPEPMC_URL
from deepcritical.sources.http import HttpOptions, SourceHttp
from deepcritical.sources.pubmed import DEFAULT_BASE_URL as EUTILS_URL
from deepcritical.sources.pubmed import RATE_WITH_KEY, RATE_WITHOUT_KEY

__all__ = [
    "EUROPEPMC_REQUESTS_PER_SECOND",
    "FULL_TEXT_SOURCE",
    "FullText",
    "FullTextFetcher",
    "FullTextReader",
]

FULL_TEXT_SOURCE = "fulltext"
"""The source name in a full-text :class:`~deepcritical.sources.base.SourceError`."""

EUROPEPMC_REQUESTS_PER_SECOND = 10.0
"""Europe PMC asks for at most 10 requests per second per client."""


class FullText(BaseModel):
    """The full text of one article.

    Attributes:
        pmcid: the PMCID asked for (``"PMC3166277"``).
        via: ``"europepmc"`` or ``"pmc"``: which service answered.
        passages: its body paragraphs, tables and figure captions, in order, at most
            ``max_chars`` characters of text together.
        abstract: its abstract (``""`` when the XML has none).
        license: its licence text or URL, when the XML states one.
        dropped: passages left out to stay within ``max_chars``.
        references: the article's reference list (``back/ref-list``) as identifiers, in
            order, each once: ``"pmid:<digits>"`` for a reference with a PMID, else
            ``"doi:<doi>"``; references with neither are left out (citation tracking follows
            them; empty in full texts cached before).
    """

    pmcid: str
    via: str
    passages: list[Passage] = Field(default_factory=list)
    abstract: str = ""
    license: str | None = None
    dropped: int = 0
    references: list[str] = Field(default_factory=list)


class FullTextReader(Protocol):
    """Anything that fetches the full text of a PMCID (:class:`FullTextFetcher`, or the call
    cache's wrapper of one)."""

    async def fetch(self, pmcid: str) -> FullText:
        """The full text of ``pmcid``.

        Raises:
            SourceError: no full text could be read; the message says why.
        """
        ...


class FullTextFetcher:
    """Fetches open-access full texts (JATS) by PMCID: Europe PMC first, PMC's efetch next.

    Args:
        client: the run's shared :class:`httpx.AsyncClient`.
        europepmc_url: Europe PMC REST root (``Settings.source_base_urls["europepmc"]``).
        eutils_url: E-utilities root (``Settings.source_base_urls["pubmed"]``).
        api_key: NCBI API key (sent as ``api_key``; raises NCBI's limit to 10 requests/s).
        email: contact address sent to NCBI as ``email``.
        tool: tool name sent to NCBI as ``tool``.
        max_chars: characters of passage text kept per article (``Settings.max_record_chars``).
        http: timeout, tries and backoff of each request (:class:`~deepcritical.sources.http.
            HttpOptions`); each service keeps its own rate limit (Europe PMC's, NCBI's with or
            without a key) unless ``http`` sets one.
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        europepmc_url: str = EUROPEPMC_URL,
        eutils_url: str = EUTILS_URL,
        api_key: str | None = None,
        email: str | None = None,
        tool: str = "deepcritical",
        max_chars: int = 200_000,
        http: HttpOptions | None = None,
    ) -> None:
        self.europepmc_url = europepmc_url.rstrip("/")
        self.eutils_url = eutils_url.rstrip("/")
        self._api_key = api_key or None
        self.email = email
        self.tool = tool
        self.max_chars = max_chars
        self._europepmc = SourceHttp(
            client, FULL_TEXT_SOURCE, http, default_rate=EUROPEPMC_REQUESTS_PER_SECOND
        )
        ncbi_rate = RATE_WITH_KEY if self._api_key else RATE_WITHOUT_KEY
        self._pmc = SourceHttp(client, FULL_TEXT_SOURCE, http, default_rate=ncbi_rate)

    def __repr__(self) -> str:
        key = "set" if self._api_key else "none"
        return (
            f"FullTextFetcher(europepmc_url={self.europepmc_url!r}, "
            f"eutils_url={self.eutils_url!r}, api_key={key})"
        )

    @property
    def roots(self) -> tuple[str, str]:
        """The two API roots asked (part of the call cache's key)."""
        return (self.europepmc_url, self.eutils_url)

    async def fetch(self, pmcid: str) -> FullText:
        """The full text of ``pmcid`` from Europe PMC, else from PMC.

        Raises:
            SourceError: ``pmcid`` is not a PMCID, or neither service gave an article with a
                body (HTTP errors after retries, timeouts, malformed or hostile XML, an
                article outside the open-access subset); the message gives both reasons.
        """
        canonical = normalize_pmcid(pmcid)
        if canonical is None:
            raise SourceError(FULL_TEXT_SOURCE, f"{pmcid!r} is not a PMCID")
        reasons: list[str] = []
        for via, answer in (("europepmc", self._from_europepmc), ("pmc", self._from_pmc)):
            try:
                return self._full_text(canonical, via, await answer(canonical))
            except SourceError as exc:
                reasons.append(f"{'Europe PMC' if via == 'europepmc' else 'PMC'}: {exc.reason}")
        raise SourceError(FULL_TEXT_SOURCE, "; ".join(reasons))

    async def _from_europepmc(self, pmcid: str) -> bytes:
        response = await self._europepmc.get(f"{self.europepmc_url}/{pmcid}/fullTextXML")
        return response.content

    async def _from_pmc(self, pmcid: str) -> bytes:
        params: dict[str, str] = {"db": "pmc", "id": pmcid[3:], "retmode": "xml"}
        params["tool"] = self.tool
        if self.email:
            params["email"] = self.email
        if self._api_key:
            params["api_key"] = self._api_key
        response = await self._pmc.get(f"{self.eutils_url}/efetch.fcgi", params)
        return response.content

    def _full_text(self, pmcid: str, via: str, data: bytes) -> FullText:
        try:
            article = parse_jats(data)
        except JatsError as exc:
            raise SourceError(FULL_TEXT_SOURCE, f"unreadable article XML: {exc}") from exc
        if article.pmcid and normalize_pmcid(article.pmcid) != pmcid:
            raise SourceError(FULL_TEXT_SOURCE, f"the answer is article {article.pmcid}")
        passages, dropped = bound_passages(article.passages(), self.max_chars)
        if not passages:
            raise SourceError(
                FULL_TEXT_SOURCE, "the article XML has no body (not in the open-access subset)"
            )
        return FullText(
            pmcid=pmcid,
            via=via,
            passages=passages,
            abstract=article.abstract,
            license=article.license,
            dropped=dropped,
            references=_reference_ids(article.references),
        )


def _reference_ids(references: list[JatsReference]) -> list[str]:
    """``"pmid:..."`` (else ``"doi:..."``) of each reference that has one, in order, once."""
    keys = [f"pmid:{r.pmid}" if r.pmid else f"doi:{r.doi}" for r in references if r.pmid or r.doi]
    return list(dict.fromkeys(keys))
