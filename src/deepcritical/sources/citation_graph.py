"""The citation graph around a study: its references (backward) and the papers citing it
(forward), from OpenAlex and PubMed E-utilities, for citation tracking ("snowballing").

For one seed study (:class:`CitationSeed`: its PMID and/or DOI, and the identifiers of its
JATS reference list when its full text was read) and one direction, :meth:`CitationGraph.links`
asks every service the run searches:

* OpenAlex (backward and forward): the seed's work by DOI (else PMID),
  ``GET {openalex}/works/doi:<DOI>`` (``works/pmid:<PMID>``; HTTP 404: OpenAlex does not hold
  it) with ``select=id,referenced_works``, asked once per seed; then its
  ``referenced_works`` fetched in batches of at most :data:`OPENALEX_IDS_PER_FILTER` with
  ``filter=ids.openalex:W1|W2|...``, or the works citing it, ``filter=cites:W...`` sorted by
  ``cited_by_count`` (most cited first). The DOIs of the JATS reference list are fetched with
  ``filter=doi:...|...``.
* PubMed (backward and forward): ``elink.fcgi?dbfrom=pubmed&db=pubmed&linkname=
  pubmed_pubmed_refs`` (references) or ``pubmed_pubmed_citedin`` (citing records) for the
  seed's PMID; the PMIDs found (with those of the JATS reference list, backward) are fetched
  with the PubMed source's ``efetch`` and parsed as its search results are.

Every request goes through the sources' :class:`~deepcritical.sources.http.SourceHttp`
(rate limits, retries with backoff honouring ``Retry-After``, timeouts). The records come back
as :class:`~deepcritical.models.Evidence` whose ``found_by`` says how (``"cited by PMID
22663011"``: in that seed's references; ``"cites PMID 22663011"``: citing it). A service that
fails is named in :attr:`CitationLinks.failures` and the others still answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Literal, Protocol
from urllib.parse import quote

from pydantic import BaseModel, Field

from deepcritical.formats.pubmed_xml import article_to_evidence
from deepcritical.models import Evidence
from deepcritical.sources.base import SourceError, relevance_from_rank
from deepcritical.sources.http import decode_json
from deepcritical.sources.openalex import (
    MAX_PER_PAGE,
    SELECT_FIELDS,
    OpenAlexSource,
    openalex_short_id,
    parse_works_page,
)
from deepcritical.sources.payload import as_list, json_object
from deepcritical.sources.pubmed import PubMedSource

__all__ = [
    "ELINK_CITED_IN",
    "ELINK_REFERENCES",
    "OPENALEX_IDS_PER_FILTER",
    "CitationGraph",
    "CitationLinker",
    "CitationLinks",
    "CitationSeed",
    "Direction",
]

Direction = Literal["references", "citing"]
"""``references``: the works the seed cites (backward); ``citing``: the works citing it."""

ELINK_REFERENCES = "pubmed_pubmed_refs"
ELINK_CITED_IN = "pubmed_pubmed_citedin"
OPENALEX_IDS_PER_FILTER = 50
"""OpenAlex ids (or DOIs) OR-ed in one ``filter`` value (OpenAlex accepts up to 100)."""


class CitationSeed(BaseModel):
    """A study whose references and citing papers are followed.

    Attributes:
        evidence_id: its id in the run's evidence store.
        pmid: its PMID (for elink and the OpenAlex lookup), when known.
        doi: its DOI (normalised; for the OpenAlex lookup), when known.
        references: the identifiers of its JATS reference list (``"pmid:<digits>"`` or
            ``"doi:<doi>"``) when its full text was read, else empty.
    """

    evidence_id: str
    pmid: str | None = None
    doi: str | None = None
    references: list[str] = Field(default_factory=list)

    @property
    def label(self) -> str:
        """How the seed is named in notes: ``"PMID 22663011"``, else ``"doi:10.1/x"``."""
        return f"PMID {self.pmid}" if self.pmid else f"doi:{self.doi}"


class CitationLinks(BaseModel):
    """What one lookup found: the linked records (``items``, each service's in its order,
    ``found_by`` set) and ``"<service>: <reason>"`` for each service that failed."""

    items: list[Evidence] = Field(default_factory=list)
    failures: list[str] = Field(default_factory=list)


class CitationLinker(Protocol):
    """Anything that follows citations (:class:`CitationGraph`, or the call cache's wrapper
    of one)."""

    async def links(self, seed: CitationSeed, direction: Direction, limit: int) -> CitationLinks:
        """At most ``limit`` linked records per service for ``seed`` in ``direction``; never
        raises for a service failure (it is listed in the answer's ``failures``)."""
        ...


def _note(seed: CitationSeed, direction: Direction) -> str:
    return f"{'cited by' if direction == 'references' else 'cites'} {seed.label}"


def _ranked(items: Sequence[Evidence], note: str) -> list[Evidence]:
    """Copies of ``items`` with ``found_by`` = ``note`` and a rank relevance (first 1.0)."""
    n = len(items)
    return [
        item.model_copy(
            update={"found_by": note, "query": None, "relevance": relevance_from_rank(rank, n)}
        )
        for rank, item in enumerate(items)
    ]


class _OpenAlexLinks:
    """The OpenAlex side of :class:`CitationGraph` (the seed's work asked once per seed)."""

    def __init__(self, source: OpenAlexSource) -> None:
        self.source = source
        self._works: dict[str, tuple[str, list[str]] | None] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def _params(self, **params: str | int) -> dict[str, str | int]:
        if self.source.mailto:
            params["mailto"] = self.source.mailto
        return params

    async def work(self, seed: CitationSeed) -> tuple[str, list[str]] | None:
        """``(W id, referenced W ids)`` of the seed's work (asked once per seed, by DOI, else
        PMID), ``None`` when OpenAlex does not hold it (HTTP 404).

        Raises:
            SourceError: from the HTTP layer, or an answer without a work id.
        """
        key = "doi:" + quote(seed.doi, safe="/:;()._-") if seed.doi else f"pmid:{seed.pmid}"
        async with self._locks.setdefault(key, asyncio.Lock()):  # both directions ask at once
            if key not in self._works:
                self._works[key] = await self._lookup(key)
        return self._works[key]

    async def _lookup(self, key: str) -> tuple[str, list[str]] | None:
        response = await self.source.http.get(
            f"{self.source.base_url}/works/{key}",
            self._params(select="id,referenced_works"),
            accept=lambda r: r.status_code == 404,
        )
        if response.status_code == 404:
            return None
        work = json_object(decode_json(response, "openalex"), "openalex")
        work_id = openalex_short_id(work.get("id"))
        if work_id is None:
            raise SourceError("openalex", f"the work lookup {key} gave no work id")
        refs = [openalex_short_id(r) for r in as_list(work.get("referenced_works"))]
        return work_id, [r for r in refs if r]

    async def _filter(self, filter_: str, limit: int, sort: str | None = None) -> list[Evidence]:
        params = self._params(
            filter=filter_, per_page=min(limit, MAX_PER_PAGE), select=",".join(SELECT_FIELDS)
        )
        if sort:
            params["sort"] = sort
        payload = await self.source.http.get_json(f"{self.source.base_url}/works", params)
        return [w.evidence for w in parse_works_page(payload).works][:limit]

    async def _batches(self, field: str, values: Sequence[str]) -> list[Evidence]:
        items: list[Evidence] = []
        for start in range(0, len(values), OPENALEX_IDS_PER_FILTER):
            batch = values[start : start + OPENALEX_IDS_PER_FILTER]
            items += await self._filter(f"{field}:{'|'.join(batch)}", len(batch))
        return items

    async def links(self, seed: CitationSeed, direction: Direction, limit: int) -> list[Evidence]:
        """The works citing the seed (``cites:``, most cited first), or its
        ``referenced_works`` and then the DOIs of its JATS reference list; at most ``limit``.

        Raises:
            SourceError: from the HTTP layer or a malformed answer.
        """
        work = await self.work(seed) if seed.doi or seed.pmid else None
        if direction == "citing":
            if work is None:
                return []
            return await self._filter(f"cites:{work[0]}", limit, "cited_by_count:desc")
        items = await self._batches("ids.openalex", work[1][:limit] if work else [])
        dois = [
            r[4:] for r in seed.references if r.startswith("doi:") and not any(c in r for c in "|,")
        ]
        room = limit - len(items)
        if room > 0 and dois:
            items += await self._batches("doi", dois[:room])
        return items


async def _pubmed_links(
    pubmed: PubMedSource, seed: CitationSeed, direction: Direction, limit: int
) -> list[Evidence]:
    """The PubMed records linked to the seed by elink (and, backward, the PMIDs of its JATS
    reference list), fetched with efetch; at most ``limit``.

    Raises:
        SourceError: from elink or efetch.
    """
    pmids: list[str] = []
    if seed.pmid:
        linkname = ELINK_REFERENCES if direction == "references" else ELINK_CITED_IN
        pmids = await pubmed.elink(seed.pmid, linkname)
    if direction == "references":
        pmids += [r[5:] for r in seed.references if r.startswith("pmid:")]
    pmids = [p for p in dict.fromkeys(pmids) if p != seed.pmid][:limit]
    if not pmids:
        return []
    articles = {a.pmid: a for a in await pubmed.efetch(pmids)}
    return [article_to_evidence(articles[p]) for p in pmids if p in articles]


class CitationGraph:
    """Follows citations through the sources given (see the module docstring).

    Args:
        pubmed: the E-utilities client (its own rate limiter: 3 requests/s, 10 with a key);
            ``None``: PubMed is not asked.
        openalex: the OpenAlex client (10 requests/s); ``None``: OpenAlex is not asked.
    """

    def __init__(self, *, pubmed: PubMedSource | None, openalex: OpenAlexSource | None) -> None:
        self.pubmed = pubmed
        self.openalex = openalex
        self._openalex = _OpenAlexLinks(openalex) if openalex is not None else None

    @property
    def roots(self) -> tuple[str | None, str | None]:
        """The API roots asked (part of the call cache's key)."""
        return (
            self.pubmed.base_url if self.pubmed else None,
            self.openalex.base_url if self.openalex else None,
        )

    async def links(self, seed: CitationSeed, direction: Direction, limit: int) -> CitationLinks:
        """At most ``limit`` records per service linked to ``seed`` in ``direction``
        (``references``: OpenAlex ``referenced_works``, the JATS reference list's DOIs through
        OpenAlex, elink ``pubmed_pubmed_refs`` and the JATS PMIDs through efetch; ``citing``:
        OpenAlex ``cites:``, elink ``pubmed_pubmed_citedin``). Never raises a
        :class:`SourceError`: a failing service is listed in ``failures``."""
        out = CitationLinks()
        if limit <= 0:
            return out
        note = _note(seed, direction)
        if self._openalex is not None:
            try:
                out.items += _ranked(await self._openalex.links(seed, direction, limit), note)
            except SourceError as exc:
                out.failures.append(f"OpenAlex: {exc.reason}")
        if self.pubmed is not None:
            try:
                out.items += _ranked(await _pubmed_links(self.pubmed, seed, direction, limit), note)
            except SourceError as exc:
                out.failures.append(f"PubMed: {exc.reason}")
        return out
