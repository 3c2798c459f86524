"""A local HTTP stub of the literature search APIs, serving recorded responses.

:class:`StubAPI` is a real HTTP/1.1 server (:class:`http.server.ThreadingHTTPServer`, one
thread per connection, keep-alive) on ``127.0.0.1`` and an ephemeral port. The real source
clients are pointed at it through their ``base_url``:

=====================  ===========================================  ============================
route name             path                                         client ``base_url``
=====================  ===========================================  ============================
``esearch``            ``/entrez/eutils/esearch.fcgi`` (JSON)       :attr:`StubAPI.eutils_url`
``efetch``             ``/entrez/eutils/efetch.fcgi`` (XML)         :attr:`StubAPI.eutils_url`
``trials``             ``/api/v2/studies`` (``pageToken`` paging)   :attr:`StubAPI.trials_url`
``europepmc``          ``/europepmc/webservices/rest/search``       :attr:`StubAPI.europepmc_url`
                       (``cursorMark`` paging)
``openalex``           ``/works`` (``page``/``per_page``)           :attr:`StubAPI.openalex_url`
``websearch``          ``/ddgs/search/text`` (a ``ddgs api``        :attr:`StubAPI.ddgs_url`
                       server's JSON)
``webpage``            ``/web/...`` (HTML pages, a redirect and a   (result URLs)
                       404 page)
``fulltext``           ``/europepmc/webservices/rest/{PMCID}/       :attr:`StubAPI.europepmc_url`
                       fullTextXML`` (JATS; only with ``full_texts``)
``efetch_pmc``         ``/entrez/eutils/efetch.fcgi?db=pmc`` (JATS  :attr:`StubAPI.eutils_url`
                       in ``<pmc-articleset>``; only with
                       ``full_texts``)
``elink``              ``/entrez/eutils/elink.fcgi`` (JSON,          :attr:`StubAPI.eutils_url`
                       ``pubmed_pubmed_refs`` / ``_citedin``)
``openalex_work``      ``/works/doi:<DOI>``, ``/works/pmid:<PMID>``  :attr:`StubAPI.openalex_url`
                       (one work; 404 page when unknown)
=====================  ===========================================  ============================

Citation graph (synthetic links between recorded records, in the real answer formats; see
:meth:`StubData._load_citations`): ``elink`` answers NCBI's JSON (``linksets[].linksetdbs[]
.links``) for the seed :data:`PMID_ALL_SOURCES`; the OpenAlex copy of that paper lists
``referenced_works``; ``/works?filter=`` answers ``ids.openalex:W1|W2``, ``doi:...|...`` and
``cites:W...`` over the recorded works plus one synthetic work citing the seed
(:data:`CITING_WORK_ID`, on the seed's topic). Searches (``search=``) never return it.

Search filters (:mod:`deepcritical.testing.stub_filters`): the search routes honour the
date filters the sources send, in each API's own form: esearch ``[dp]`` ranges in ``term`` and
``datetype=edat&mindate&maxdate`` (the recorded Entrez dates); Europe PMC ``FIRST_PDATE`` and
``CREATION_DATE`` in ``query``; ClinicalTrials.gov ``filter.overallStatus`` and the
``StartDate`` / ``LastUpdatePostDate`` ranges of ``filter.advanced``; OpenAlex
``from_publication_date``, ``to_publication_date`` and ``from_created_date`` in ``filter``.
Records outside are left out (with their paging and counts); the request log
(:meth:`StubAPI.requests`) keeps every parameter as sent, so a test can check that a run's
queries were date-bounded.

Every response is built from the real API responses recorded in ``../shared/fixtures/api``
(see :class:`StubData`); the fixtures are read when :class:`StubData` is built and are never
copied into the repository. Where the recordings do not line up (they come from unrelated
queries), ids are adjusted so that the same paper reaches a run through several sources, as it
does live; each adjustment is described where it is made.

Full texts (optional): ``StubData(fixtures_dir, full_texts=DIR)`` adds a collection of JATS
articles (``*.nxml`` / ``*.xml``, e.g. ``../shared/fixtures/fulltext/pmc_oa_jats``; read in
place, never copied), keyed by the PMCID each file states. Then:

* ``fulltext``: ``GET {europepmc_url}/{PMCID}/fullTextXML`` answers the article file's bytes
  (``application/xml``), HTTP 404 (Europe PMC's plain-text "not found") for a PMCID not in the
  collection;
* ``efetch_pmc``: ``efetch.fcgi`` with ``db=pmc`` answers the articles of ``id`` (PMCIDs with
  or without ``PMC``, comma-separated) wrapped in ``<pmc-articleset>`` as NCBI does, each with
  its XML declaration and DOCTYPE removed; unknown ids give an empty ``<pmc-articleset/>``.
  ``db=pubmed`` (or no ``db``) stays the ``efetch`` route;
* ``europepmc`` search: the articles sharing at least two content words (:data:`STOP_WORDS`
  aside, three letters or more) with ``query`` come first, most shared words first (ties in
  file-name order), AHEAD of the recorded results (which follow unchanged, so paging and the
  recorded cursor still work). Each is a copy of a recorded core record of an open-access paper
  (:meth:`StubData._epmc_article_copy`) with the article's PMID, PMCID, DOI, title, authors,
  journal, year and abstract, ``isOpenAccess``/``inEPMC``/``inPMC`` ``"Y"``.

Without ``full_texts`` every route behaves as before: a ``fullTextXML`` path is an unknown path
(HTML 404) and ``db=pmc`` is answered by the PubMed ``efetch`` route (an empty set).

Faults are programmable per route (:meth:`StubAPI.add_fault`): ``N`` x 429 with
``Retry-After`` and NCBI's JSON rate-limit body then success, persistent 5xx, hangs longer
than the client timeout, malformed XML/JSON bodies (the normal body cut in half), an HTML 404
page; a fault may be limited to a number of requests and to requests whose parameters contain
some text (one query of several). The full-text routes take faults under their own names
(``fulltext``, ``efetch_pmc``), so a fault on ``efetch`` leaves ``db=pmc`` requests alone and the
other way round; a ``fulltext`` request's parameters include ``pmcid`` (from its path), so
``match="PMC3585041"`` limits a fault to one article. A fixed per-request latency
(``latency_seconds``) simulates a distant server. Every request is logged
(:attr:`StubAPI.requests`) with its arrival time, for tests that measure retry waits and rate
limits.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import html
import json
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self
from urllib.parse import parse_qs, urlsplit

import httpx
from lxml import etree

from deepcritical.formats.jats import JatsArticle, read_jats
from deepcritical.formats.pubmed_xml import PubmedArticle, parse_pubmed_xml
from deepcritical.models._markers import PMCID
from deepcritical.sources.base import SearchSource
from deepcritical.sources.clinicaltrials import ClinicalTrialsSource
from deepcritical.sources.europepmc import EuropePMCSource
from deepcritical.sources.http import HttpOptions
from deepcritical.sources.netguard import UnsafeURLError
from deepcritical.sources.openalex import OpenAlexSource
from deepcritical.sources.pubmed import PubMedSource
from deepcritical.sources.web import UrlGuard, WebSearchSource
from deepcritical.testing.stub_filters import (
    OPENALEX_SEARCH_FILTERS,
    europepmc_ranges,
    openalex_ranges,
    pubmed_ranges,
    trials_ranges,
    trials_statuses,
)

__all__ = [
    "CITED_BY_SEED",
    "CITING_SEED",
    "CITING_WORK_ID",
    "NO_HITS",
    "PMID_ALL_SOURCES",
    "PMID_BY_DOI",
    "ROUTES",
    "SEED_WORK_ID",
    "STOP_WORDS",
    "Fault",
    "RequestRecord",
    "Route",
    "StubAPI",
    "StubData",
    "build_stub_sources",
    "stub_only_guard",
]

Route = Literal[
    "esearch",
    "efetch",
    "trials",
    "europepmc",
    "openalex",
    "websearch",
    "webpage",
    "fulltext",
    "efetch_pmc",
    "elink",
    "openalex_work",
]

ROUTES: dict[str, Route] = {
    "/entrez/eutils/esearch.fcgi": "esearch",
    "/entrez/eutils/efetch.fcgi": "efetch",
    "/api/v2/studies": "trials",
    "/europepmc/webservices/rest/search": "europepmc",
    "/works": "openalex",
    "/entrez/eutils/elink.fcgi": "elink",
    "/ddgs/search/text": "websearch",
}
"""Exact path -> route name; any path under ``/web/`` is the ``webpage`` route. With a
full-text collection, :data:`FULLTEXT_PATH` is the ``fulltext`` route and ``efetch`` with
``db=pmc`` the ``efetch_pmc`` route."""

FULLTEXT_ROUTES: tuple[Route, ...] = ("fulltext", "efetch_pmc")
OPENALEX_WORK_PATH = re.compile(r"^/works/((?:doi|pmid):.+)$", re.IGNORECASE)
"""``/works/doi:<DOI>`` or ``/works/pmid:<PMID>``: the ``openalex_work`` route."""
FULLTEXT_PATH = re.compile(rf"^/europepmc/webservices/rest/({PMCID})/fullTextXML$", re.IGNORECASE)

_DOCTYPE = re.compile(rb"<!DOCTYPE[^>]*>")
_XML_DECLARATION = re.compile(rb"^\s*<\?xml[^>]*\?>\s*")
_WORD = re.compile(r"[a-z0-9]+")

_STOP_TEXT = """
    a an and are as at be been but by can could did do does for from had has have how in into is
    it its may might not of on or than that the their there these this those to was were what
    when where which who whom why will with within without would about after before between
    during over under per than then they them via vs versus among any all each other more most
    less such same some should both also only very
"""
STOP_WORDS = frozenset(_STOP_TEXT.split())
"""Words that count for nothing in a full-text article's match with a Europe PMC query (and
the query syntax words ``AND``/``OR``/``NOT``)."""


def content_words(text: str) -> set[str]:
    """Lower-cased words of ``text`` of three characters or more, with a letter, not in
    :data:`STOP_WORDS`."""
    return {
        w
        for w in _WORD.findall(text.lower())
        if len(w) >= 3 and not w.isdigit() and w not in STOP_WORDS
    }


NO_HITS = "zzznohits"
"""A query containing this word finds nothing on every search route (empty result shapes)."""

JSON = "application/json;charset=UTF-8"
XML = "text/xml; charset=UTF-8"
HTML = "text/html; charset=utf-8"

# Page sizes of the recordings. The real APIs allow larger pages (ClinicalTrials.gov and Europe
# PMC 1000, OpenAlex 100); capping at the recorded size makes the clients page with the
# recorded tokens and cursors.
TRIALS_PAGE_CAP = 5
EUROPEPMC_PAGE_CAP = 25
OPENALEX_PAGE_CAP = 100

# PubMed records of the efetch fixtures that other sources are made to return too.
PMID_ALL_SOURCES = "22663011"
"""NEJM MEK-inhibition trial: in PubMed, in Europe PMC (by PMID and DOI) and in OpenAlex (by DOI
only, no PMID): three records of one paper."""
PMID_BY_DOI = "30108519"
"""Front Physiol 2018: in PubMed and in Europe PMC as a PMC-only record (PMCID and DOI, no PMID):
the PubMed/DOI case of DESIGN trap 11."""

CITED_BY_SEED = ("27797938", PMID_BY_DOI, "11748933")
"""PMIDs elink lists as references of :data:`PMID_ALL_SOURCES` (``pubmed_pubmed_refs``): two
records no search of the stub returns first and one every PubMed search returns second."""
CITING_SEED = ("12091962", "9997")
"""PMIDs elink lists as citing :data:`PMID_ALL_SOURCES` (``pubmed_pubmed_citedin``)."""
SEED_WORK_ID = f"W9{PMID_ALL_SOURCES}"
"""The OpenAlex id of the seed's OpenAlex copy (see :meth:`StubData._load_openalex`)."""
CITING_WORK_ID = "W9000000001"
"""The synthetic OpenAlex work citing the seed: a later trial of a MEK inhibitor in BRAF-mutated
melanoma (on the seed's topic, a different study)."""
CITING_WORK_DOI = "10.5555/deepcritical.citing.1"
CITING_WORK_ABSTRACT = (
    "Combined BRAF and MEK inhibition with dabrafenib plus trametinib was compared with "
    "vemurafenib monotherapy in 704 previously untreated patients with unresectable or "
    "metastatic melanoma carrying BRAF V600E or V600K mutations. Overall survival at 12 months "
    "was 72% with the combination and 65% with vemurafenib alone. Adding a MEK inhibitor to "
    "BRAF inhibition improved overall survival without increased overall toxicity."
)


# --------------------------------------------------------------------------- faults


BodyKind = Literal["given", "normal", "truncated", "ncbi_rate_limit", "html_404"]


@dataclass(frozen=True)
class Fault:
    """A programmed misbehaviour of one route.

    Attributes:
        status: HTTP status to answer with (``None``: the normal status).
        body_kind: what body to send: ``"normal"`` (the route's normal body), ``"truncated"``
            (the normal body cut to half its length: malformed XML or JSON), ``"ncbi_rate_limit"``
            (NCBI's recorded JSON rate-limit reply), ``"html_404"`` (the recorded OpenAlex HTML
            404 page) or ``"given"`` (``body``).
        body: the body for ``body_kind="given"``.
        content_type: ``Content-Type`` to send (``None``: the normal one).
        headers: extra response headers (``Retry-After``...).
        delay_seconds: wait this long before answering (a hang when longer than the client's
            timeout); the wait ends early when the stub stops.
        times: how many requests the fault applies to; ``None`` for every request.
        match: apply only to requests with a query parameter whose value contains this text
            (case-insensitive), e.g. one search query among several; others pass untouched and
            do not use up ``times``.
    """

    status: int | None = None
    body_kind: BodyKind = "normal"
    body: bytes = b""
    content_type: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_seconds: float = 0.0
    times: int | None = None
    match: str | None = None

    def applies_to(self, params: Mapping[str, str]) -> bool:
        """Whether a request with these query parameters is hit by the fault."""
        if self.match is None:
            return True
        needle = self.match.lower()
        return any(needle in value.lower() for value in params.values())

    @classmethod
    def rate_limited(cls, times: int, retry_after: str = "1", match: str | None = None) -> Fault:
        """``times`` x HTTP 429 with ``Retry-After`` (seconds or an HTTP date) and NCBI's JSON
        rate-limit body, then the normal answer."""
        return cls(
            status=429, body_kind="ncbi_rate_limit", content_type=JSON,
            headers={"Retry-After": retry_after}, times=times, match=match,
        )  # fmt: skip

    @classmethod
    def rate_limit_body(cls, times: int, match: str | None = None) -> Fault:
        """``times`` x HTTP 200 carrying NCBI's rate-limit JSON (how NCBI sometimes throttles)."""
        return cls(
            status=200, body_kind="ncbi_rate_limit", content_type=JSON, times=times, match=match
        )

    @classmethod
    def server_error(
        cls, status: int = 500, times: int | None = None, match: str | None = None
    ) -> Fault:
        """HTTP ``status`` with a short plain-text body; persistent unless ``times`` is set."""
        return cls(
            status=status, body_kind="given", body=b"Internal Server Error\n",
            content_type="text/plain; charset=utf-8", times=times, match=match,
        )  # fmt: skip

    @classmethod
    def hang(
        cls, seconds: float = 30.0, times: int | None = None, match: str | None = None
    ) -> Fault:
        """Wait ``seconds`` before answering normally (longer than any test's timeout)."""
        return cls(delay_seconds=seconds, times=times, match=match)

    @classmethod
    def malformed(cls, times: int | None = None, match: str | None = None) -> Fault:
        """The normal body cut in half (unterminated XML or JSON), status 200."""
        return cls(body_kind="truncated", times=times, match=match)

    @classmethod
    def html_404(cls, times: int | None = None, match: str | None = None) -> Fault:
        """HTTP 404 with an HTML error page (the recorded OpenAlex 404 body)."""
        return cls(status=404, body_kind="html_404", content_type=HTML, times=times, match=match)


@dataclass(frozen=True)
class RequestRecord:
    """One request the stub received: route, path, query parameters (last value of each),
    arrival time (:func:`time.monotonic`) and the status it is answered with (0 until the
    answer is ready, e.g. while a hang fault waits)."""

    route: str
    path: str
    params: dict[str, str]
    arrived: float
    status: int = 0


@dataclass
class _Reply:
    status: int
    body: bytes
    content_type: str
    headers: dict[str, str] = field(default_factory=dict)


# --------------------------------------------------------------------------- data


def _read_json(path: Path) -> Any:
    return json.loads(path.read_bytes())


def _b64_token(prefix: str, offset: int) -> str:
    """An opaque paging token in the style of the real ones (base64 text)."""
    return base64.urlsafe_b64encode(f"{prefix}:{offset}".encode()).decode().rstrip("=")


def _abstract_html(article: PubmedArticle) -> str:
    """A PubMed abstract as Europe PMC writes ``abstractText`` (``<h4>`` section labels)."""
    parts = []
    for section in article.abstract_sections:
        label = f"<h4>{html.escape(section.label)}</h4>" if section.label else ""
        parts.append(f"{label}{html.escape(section.text)}")
    return "".join(parts)


class StubData:
    """The records the stub serves, built from ``../shared/fixtures/api`` once (treat as
    read-only after construction).

    Args:
        fixtures_dir: the ``fixtures/api`` directory (``ncbi_eutils/``, ``clinicaltrials_v2/``,
            ``europepmc/``, ``openalex/``).
        full_texts: a directory of JATS articles (``*.nxml``, ``*.xml``) to serve as open-access
            full texts (see the module docstring); ``None`` (the default): no full texts.

    Attributes:
        pubmed_order: the PMIDs esearch lists, in its (relevance) order: every record of the
            efetch fixtures.
        efetch_records: PMID -> the ``<PubmedArticle>`` element of the recording, serialised.
        pubmed_articles: PMID -> the parsed record (for building the other sources' copies).
        studies: ClinicalTrials.gov study objects, in page order.
        trial_tokens: offset -> ``nextPageToken`` (the recorded tokens first).
        europepmc_records: Europe PMC results, in page order.
        europepmc_cursors: offset -> ``cursorMark`` (``*`` for 0, recorded mark for 25).
        openalex_works: OpenAlex work objects, in relevance order.
        web_pages: path under ``/web/`` -> (title, HTML) of the stub-served web pages.
        web_results: the ``ddgs`` text results (``title``, ``href`` path, ``body``).
        full_text_files: PMCID -> the article file's bytes (empty without ``full_texts``).
        full_text_articles: PMCID -> the parsed article.
        full_text_records: PMCID -> the article's Europe PMC search record.
    """

    def __init__(self, fixtures_dir: Path, *, full_texts: Path | None = None) -> None:
        self.dir = fixtures_dir
        self.full_texts_dir = full_texts
        self._load_pubmed()
        self._load_trials()
        self._load_europepmc()
        self._load_full_texts()
        self._load_openalex()
        self._load_citations()
        self._build_web()
        ncbi = fixtures_dir / "ncbi_eutils"
        # Recorded NCBI throttle reply (an esummary call, HTTP 429); the body is the same JSON
        # for every E-utility.
        self.rate_limit_body = (ncbi / "esummary_pubmed_json_rate_limit_error.json").read_bytes()
        self.html_404_body = (
            fixtures_dir / "openalex" / "work_by_doi_not_found_404.html"
        ).read_bytes()

    # ---------------------------------------------------------------- PubMed
    def _load_pubmed(self) -> None:
        ncbi = self.dir / "ncbi_eutils"
        parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
        self.efetch_records: dict[str, bytes] = {}
        self.entrez_dates: dict[str, str | None] = {}
        self.pubmed_articles: dict[str, PubmedArticle] = {}
        self.efetch_doctype = b""
        for path in sorted(ncbi.glob("efetch_pubmed_*.xml")):
            data = path.read_bytes()
            root = etree.fromstring(data, parser=parser)
            doctype = _DOCTYPE.search(data)
            if not self.efetch_doctype and doctype:
                self.efetch_doctype = doctype.group(0)
            for el in root:
                pmid = el.findtext("MedlineCitation/PMID")
                if pmid:
                    self.efetch_records[pmid.strip()] = etree.tostring(el)
                    self.entrez_dates[pmid.strip()] = _entrez_date(el)
            for article in parse_pubmed_xml(data):
                self.pubmed_articles[article.pmid] = article
        # The recorded esearch replies list PMIDs (PTEN D326N, APC p.E1317Q) whose records were
        # never fetched; the stub's esearch lists the PMIDs the efetch recordings hold instead,
        # the two that other sources share first. Shape and header are the recorded ones.
        shared = [PMID_ALL_SOURCES, PMID_BY_DOI]
        self.pubmed_order = shared + [p for p in self.efetch_records if p not in shared]
        self.esearch_template = _read_json(ncbi / "esearch_pubmed_json_3_hits.json")
        # The 40362-hit recording carries the errorlist shape NCBI sends for unknown phrases.
        self.esearch_no_hits_template = _read_json(
            ncbi / "esearch_pubmed_json_40362_hits_phrasesnotfound.json"
        )

    def pubmed_pool(self, term: str, params: Mapping[str, str]) -> list[str]:
        """The PMIDs esearch finds for ``term``: every record (:attr:`pubmed_order`), less
        those outside the term's ``[dp]`` range (the record's date or year) and the
        ``datetype=edat`` range of ``params`` (the recorded Entrez date)."""
        published, added = pubmed_ranges(term, params)
        pool = list(self.pubmed_order)
        if published is not None:
            pool = [p for p in pool if published.contains(_article_date(self.pubmed_articles[p]))]
        if added is not None:
            pool = [p for p in pool if added.contains(self.entrez_dates.get(p))]
        return pool

    def esearch(
        self, term: str, retmax: int, retstart: int, params: Mapping[str, str] | None = None
    ) -> bytes:
        """The esearch JSON reply for ``term`` (every query finds the same records, within
        its date filters: :meth:`pubmed_pool`)."""
        if NO_HITS in term.lower():
            reply = copy.deepcopy(self.esearch_no_hits_template)
            result = reply["esearchresult"]
            result.update(count="0", retmax="0", retstart="0", idlist=[], translationset=[])
            result["querytranslation"] = ""
            result["errorlist"] = {"phrasesnotfound": [term], "fieldsnotfound": []}
            result["warninglist"] = {
                "phrasesignored": [], "quotedphrasesnotfound": [],
                "outputmessages": ["No items found."],
            }  # fmt: skip
            return json.dumps(reply).encode()
        pool = self.pubmed_pool(term, params or {})
        ids = pool[retstart : retstart + retmax]
        reply = copy.deepcopy(self.esearch_template)
        result = reply["esearchresult"]
        result.update(
            count=str(len(pool)),
            retmax=str(len(ids)),
            retstart=str(retstart),
            idlist=ids,
            querytranslation=f"{term}[All Fields]",
        )
        return json.dumps(reply).encode()

    def efetch(self, ids: Sequence[str]) -> bytes:
        """The efetch XML reply: the recorded records of ``ids`` that exist, in ``ids`` order."""
        records = [self.efetch_records[i] for i in ids if i in self.efetch_records]
        head = b'<?xml version="1.0" ?>\n' + self.efetch_doctype + b"\n<PubmedArticleSet>\n"
        return head + b"\n".join(records) + b"\n</PubmedArticleSet>\n"

    # ---------------------------------------------------------------- ClinicalTrials.gov
    def _load_trials(self) -> None:
        ct = self.dir / "clinicaltrials_v2"
        page1 = _read_json(ct / "studies_search_phelan_page1_pageSize5.json")
        page2 = _read_json(ct / "studies_search_phelan_page2_pageToken.json")
        # Pages 1 and 2 are the recorded search pages, with their recorded nextPageTokens. The
        # recording stops there (page 2 still has a token); the stub's last page holds the three
        # single-study recordings, reduced to what a search with `fields=` sends (protocol
        # section and hasResults; no resultsSection/derivedSection), and has no token.
        singles = []
        for name in (
            "study_NCT00763412_with_results.json",
            "study_NCT00973089_withdrawn.json",
            "study_NCT03475563_full_protocol_unknown_status.json",
        ):
            study = _read_json(ct / name)
            singles.append(
                {k: v for k, v in study.items() if k in ("protocolSection", "hasResults")}
            )
        self.studies: list[dict[str, Any]] = [*page1["studies"], *page2["studies"], *singles]
        self.trial_tokens: dict[int, str] = {
            len(page1["studies"]): page1["nextPageToken"],
            len(page1["studies"]) + len(page2["studies"]): page2["nextPageToken"],
        }

    def trial_token(self, offset: int) -> str:
        """The ``pageToken`` that asks for the page starting at ``offset``."""
        return self.trial_tokens.get(offset) or _b64_token("ctgov", offset)

    def trial_pool(self, params: Mapping[str, str]) -> list[dict[str, Any]]:
        """The studies a search finds: every study, less those whose ``overallStatus`` is not
        in ``filter.overallStatus`` and those outside the ``StartDate`` and
        ``LastUpdatePostDate`` ranges of ``filter.advanced`` (a study without that date is
        outside, as on the real API)."""
        statuses = trials_statuses(params.get("filter.overallStatus", ""))
        started, updated = trials_ranges(params.get("filter.advanced", ""))
        pool = []
        for study in self.studies:
            status = study.get("protocolSection", {}).get("statusModule", {})
            if statuses and str(status.get("overallStatus", "")).upper() not in statuses:
                continue
            start = status.get("startDateStruct", {}).get("date")
            if started is not None and not started.contains(start):
                continue
            update = status.get("lastUpdatePostDateStruct", {}).get("date")
            if updated is not None and not updated.contains(update):
                continue
            pool.append(study)
        return pool

    def trials(
        self,
        term: str,
        page_size: int,
        token: str | None,
        count_total: bool,
        params: Mapping[str, str] | None = None,
    ) -> _Reply:
        """One ``/studies`` page of the studies within the filters of ``params``
        (:meth:`trial_pool`); an unknown ``pageToken`` gets HTTP 400 as on the real API."""
        if token:
            offset = next(
                (o for o in range(len(self.studies) + 1) if self.trial_token(o) == token), None
            )
            if offset is None:
                msg = {"message": f"invalid pageToken {token!r}"}
                return _Reply(400, json.dumps(msg).encode(), JSON)
        else:
            offset = 0
        pool = [] if NO_HITS in term.lower() else self.trial_pool(params or {})
        size = max(1, min(page_size, TRIALS_PAGE_CAP))
        page = pool[offset : offset + size]
        reply: dict[str, Any] = {"studies": page}
        if offset + size < len(pool):
            reply["nextPageToken"] = self.trial_token(offset + size)
        if count_total and offset == 0:
            reply["totalCount"] = len(pool)
        return _Reply(200, json.dumps(reply).encode(), JSON)

    # ---------------------------------------------------------------- Europe PMC
    def _load_europepmc(self) -> None:
        ep = self.dir / "europepmc"
        core = _read_json(ep / "search_cancer_core_25.json")
        lite = _read_json(ep / "search_cancer_lite_cursor_page10_with_PPR.json")
        self.europepmc_template = {k: v for k, v in core.items() if k != "resultList"}
        records: list[dict[str, Any]] = list(core["resultList"]["result"])
        # Two records of the recorded core page are re-identified as PubMed papers of the efetch
        # recordings (the recordings share no paper). Record 1 ("Department of Error", no
        # abstract) becomes the NEJM trial: same PMID and DOI as PubMed, bibliographic fields
        # copied from the PubMed record as Europe PMC would send them, core shape kept. Record 3
        # becomes the Front Physiol paper as a PMC-only record in the lite shape (PMCID and DOI,
        # no PMID), built on the recorded lite PMC record.
        lite_pmc = next(r for r in lite["resultList"]["result"] if r.get("source") == "PMC")
        # The template of the full-text articles' records: the first recorded core record of an
        # open-access paper with an abstract (record 5), taken before any change.
        self.europepmc_oa_template = copy.deepcopy(
            next(
                r
                for r in records
                if r.get("isOpenAccess") == "Y" and r.get("pmcid") and r.get("abstractText")
            )
        )
        records[1] = self._epmc_core_copy(records[1], self.pubmed_articles[PMID_ALL_SOURCES])
        records[3] = self._epmc_pmc_copy(lite_pmc, self.pubmed_articles[PMID_BY_DOI])
        # Then the recorded lite page (100 records, 8 preprints), as later pages.
        records += lite["resultList"]["result"]
        self.europepmc_records = records
        self.europepmc_cursors: dict[int, str] = {
            0: "*",
            len(core["resultList"]["result"]): core["nextCursorMark"],
        }

    @staticmethod
    def _epmc_core_copy(template: dict[str, Any], article: PubmedArticle) -> dict[str, Any]:
        record = copy.deepcopy(template)
        record.update(
            id=article.pmid,
            source="MED",
            pmid=article.pmid,
            doi=article.doi,
            title=article.title,
            authorString=", ".join(article.authors) + ".",
            authorList={"author": [{"fullName": a} for a in article.authors]},
            abstractText=_abstract_html(article),
            pubYear=str(article.year),
            pubTypeList={"pubType": list(article.publication_types)},
        )
        record.pop("pmcid", None)
        record["fullTextIdList"] = {"fullTextId": []}
        record["journalInfo"] = {
            **record.get("journalInfo", {}),
            "journal": {"title": article.journal},
        }
        if article.date:
            record["firstPublicationDate"] = article.date
        return record

    @staticmethod
    def _epmc_pmc_copy(template: dict[str, Any], article: PubmedArticle) -> dict[str, Any]:
        assert article.pmcid, "the PMC-only copy needs a PMCID"
        assert article.doi, "the PMC-only copy needs a DOI"
        record = copy.deepcopy(template)
        record.update(
            id=article.pmcid,
            source="PMC",
            pmcid=article.pmcid,
            doi=article.doi.upper(),  # spelt differently from PubMed: dedup must normalise
            title=article.title,
            authorString=", ".join(article.authors) + ".",
            journalTitle=article.journal,
            pubYear=str(article.year),
            fullTextIdList={"fullTextId": [article.pmcid]},
        )
        record.pop("pmid", None)
        if article.date:
            record["firstPublicationDate"] = article.date
        return record

    def europepmc_cursor(self, offset: int) -> str:
        """The ``cursorMark`` that asks for the page starting at ``offset``."""
        return self.europepmc_cursors.get(offset) or _b64_token("epmc", offset)

    @staticmethod
    def europepmc_filtered(query: str, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``records`` within the ``FIRST_PDATE`` (``firstPublicationDate``, else
        ``pubYear``) and ``CREATION_DATE`` (``dateOfCreation``) ranges of ``query``."""
        published, created = europepmc_ranges(query)
        if published is not None:
            records = [
                r
                for r in records
                if published.contains(r.get("firstPublicationDate") or r.get("pubYear"))
            ]
        if created is not None:
            records = [r for r in records if created.contains(r.get("dateOfCreation"))]
        return records

    def europepmc(self, query: str, page_size: int, cursor: str, result_type: str) -> _Reply:
        """One search page. At the end ``nextCursorMark`` repeats the cursor asked with (Europe
        PMC's end-of-results signal); an unknown cursor gets Europe PMC's error object."""
        pool = (
            []
            if NO_HITS in query.lower()
            else self.europepmc_filtered(query, self.full_text_hits(query) + self.europepmc_records)
        )
        offset = next(
            (
                o
                for o in range(max(len(pool), len(self.europepmc_records)) + 1)
                if self.europepmc_cursor(o) == cursor
            ),
            None,
        )
        if offset is None:
            err = {"errCode": 400, "errMsg": f"invalid cursorMark {cursor!r}"}
            return _Reply(400, json.dumps(err).encode(), JSON)
        size = max(1, min(page_size, EUROPEPMC_PAGE_CAP))
        page = pool[offset : offset + size]
        end = offset + size >= len(pool)
        reply: dict[str, Any] = copy.deepcopy(self.europepmc_template)
        reply.pop("nextPageUrl", None)
        reply["hitCount"] = len(pool)
        reply["nextCursorMark"] = cursor if end else self.europepmc_cursor(offset + size)
        reply["request"] = {
            **reply.get("request", {}),
            "queryString": query,
            "resultType": result_type,
            "cursorMark": cursor,
            "pageSize": size,
        }
        reply["resultList"] = {"result": page}
        return _Reply(200, json.dumps(reply, ensure_ascii=False).encode(), JSON)

    # ---------------------------------------------------------------- full texts
    def _load_full_texts(self) -> None:
        self.full_text_files: dict[str, bytes] = {}
        self.full_text_articles: dict[str, JatsArticle] = {}
        self.full_text_records: dict[str, dict[str, Any]] = {}
        self._full_text_words: dict[str, set[str]] = {}
        if self.full_texts_dir is None:
            return
        paths = sorted(
            p for p in self.full_texts_dir.iterdir() if p.suffix.lower() in (".nxml", ".xml")
        )
        for path in paths:
            article = read_jats(path)
            if not article.pmcid:
                raise ValueError(f"{path}: the article states no PMCID")
            pmcid = "PMC" + article.pmcid.upper().removeprefix("PMC")
            self.full_text_files[pmcid] = path.read_bytes()
            self.full_text_articles[pmcid] = article
            self.full_text_records[pmcid] = self._epmc_article_copy(
                self.europepmc_oa_template, article, pmcid
            )
            self._full_text_words[pmcid] = content_words(f"{article.title} {article.abstract}")

    @staticmethod
    def _epmc_article_copy(
        template: dict[str, Any], article: JatsArticle, pmcid: str
    ) -> dict[str, Any]:
        """A Europe PMC core record of ``article``: the recorded open-access core record with
        the article's identifiers, bibliographic fields and abstract; fields about the recorded
        paper that the article does not give (MeSH, keywords, grants, ORCIDs, licence, dates)
        are dropped."""
        record = copy.deepcopy(template)
        for key in (
            "meshHeadingList", "keywordList", "grantsList", "authorIdList", "affiliation",
            "license", "dateOfCompletion", "dateOfCreation", "firstIndexDate",
            "fullTextReceivedDate", "dateOfRevision", "firstPublicationDate", "pageInfo",
            "fullTextUrlList",
        ):  # fmt: skip
            record.pop(key, None)
        record.update(
            pmcid=pmcid,
            fullTextIdList={"fullTextId": [pmcid]},
            doi=article.doi,
            title=article.title,
            authorString=", ".join(article.authors) + ("." if article.authors else ""),
            authorList={"author": [{"fullName": a} for a in article.authors]},
            abstractText=html.escape(article.abstract),
            pubTypeList={"pubType": ["research-article", "Journal Article"]},
            isOpenAccess="Y",
            inEPMC="Y",
            inPMC="Y",
        )
        if article.pmid:
            record.update(id=article.pmid, source="MED", pmid=article.pmid)
        else:
            record.update(id=pmcid, source="PMC")
            record.pop("pmid", None)
        if article.year:
            record["pubYear"] = str(article.year)
        else:
            record.pop("pubYear", None)
        record["journalInfo"] = {"journal": {"title": article.journal or ""}}
        if article.year:
            record["journalInfo"]["yearOfPublication"] = article.year
        return record

    def full_text_hits(self, query: str) -> list[dict[str, Any]]:
        """The Europe PMC records of the full-text articles sharing at least two content words
        with ``query``, most shared words first (ties in file-name order)."""
        wanted = content_words(query)
        scored = [
            (len(wanted & words), position, pmcid)
            for position, (pmcid, words) in enumerate(self._full_text_words.items())
        ]
        ranked = sorted((s for s in scored if s[0] >= 2), key=lambda s: (-s[0], s[1]))
        return [self.full_text_records[pmcid] for _, _, pmcid in ranked]

    def full_text_xml(self, pmcid: str) -> bytes | None:
        """The article file of ``pmcid`` (``PMC`` prefix in any case), or ``None``."""
        return self.full_text_files.get("PMC" + pmcid.upper().removeprefix("PMC"))

    def efetch_pmc(self, ids: Sequence[str]) -> bytes:
        """NCBI efetch ``db=pmc``: the articles of ``ids`` (with or without ``PMC``) that the
        collection holds, in ``ids`` order, in one ``<pmc-articleset>`` (each without its XML
        declaration and DOCTYPE); an empty ``<pmc-articleset/>`` when none is known."""
        articles = []
        for raw in ids:
            data = self.full_text_xml(raw if raw.upper().startswith("PMC") else f"PMC{raw}")
            if data is not None:
                data = _DOCTYPE.sub(b"", _XML_DECLARATION.sub(b"", data, count=1), count=1)
                articles.append(data.strip())
        head = b'<?xml version="1.0" ?>\n'
        if not articles:
            return head + b"<pmc-articleset/>\n"
        return head + b"<pmc-articleset>" + b"\n".join(articles) + b"</pmc-articleset>\n"

    # ---------------------------------------------------------------- OpenAlex
    def _load_openalex(self) -> None:
        oa = self.dir / "openalex"
        search = _read_json(oa / "works_filter_title_search_2_results.json")
        addr = _read_json(oa / "work_by_doi_10.1016_j.addr.2015.01.008.json")
        xgen = _read_json(oa / "work_by_doi_10.1016_j.xgen.2025.100814_no_abstract.json")
        self.openalex_meta = dict(search["meta"])
        # The recorded works, plus one copy of the no-abstract work re-identified as the NEJM
        # trial of the PubMed recordings: its DOI (in upper case, as a resolver URL), title,
        # authors, venue and year, no PMID (so it can only be matched by DOI) and a synthetic
        # OpenAlex id, W9 + the PMID (real W ids are 10 digits and start W1-W4).
        nejm = self._openalex_copy(xgen, self.pubmed_articles[PMID_ALL_SOURCES])
        self.openalex_works: list[dict[str, Any]] = [nejm, *search["results"], addr, xgen]

    @staticmethod
    def _openalex_copy(template: dict[str, Any], article: PubmedArticle) -> dict[str, Any]:
        assert article.doi, "the OpenAlex copy needs a DOI"
        work = copy.deepcopy(template)
        work_id = f"https://openalex.org/W9{article.pmid}"
        doi_url = f"https://doi.org/{article.doi.upper()}"
        work.update(
            id=work_id,
            doi=doi_url,
            title=article.title,
            display_name=article.title,
            publication_year=article.year,
            publication_date=article.date,
            ids={"openalex": work_id, "doi": doi_url},
            authorships=[
                {"author_position": "middle", "author": {"display_name": a}, "raw_author_name": a}
                for a in article.authors
            ],
            abstract_inverted_index=None,
            open_access={"is_oa": False, "oa_status": "closed", "oa_url": None},
            best_oa_location=None,
            mesh=[],
        )
        work["primary_location"] = {
            "is_oa": False,
            "landing_page_url": doi_url,
            "source": {"display_name": article.journal, "type": "journal"},
        }
        return work

    def openalex(
        self, search: str, per_page: int, page: int, select: str | None, filter_: str = ""
    ) -> _Reply:
        """One ``/works`` page (``select`` honoured: only those root fields are sent), within
        the ``from_publication_date``/``to_publication_date`` (``publication_date``) and
        ``from_created_date`` (``created_date``) ranges of ``filter_``."""
        pool = [] if NO_HITS in search.lower() else self.openalex_works
        published, created = openalex_ranges(filter_)
        if published is not None:
            pool = [w for w in pool if published.contains(w.get("publication_date"))]
        if created is not None:
            pool = [w for w in pool if created.contains(w.get("created_date"))]
        size = max(1, min(per_page, OPENALEX_PAGE_CAP))
        start = (max(page, 1) - 1) * size
        works = pool[start : start + size]
        if select:
            wanted = {f.strip() for f in select.split(",") if f.strip()}
            works = [{k: v for k, v in w.items() if k in wanted} for w in works]
        meta = {**self.openalex_meta, "count": len(pool), "page": page, "per_page": size}
        body = {"meta": meta, "results": works, "group_by": []}
        return _Reply(200, json.dumps(body, ensure_ascii=False).encode(), JSON)

    # ---------------------------------------------------------------- citation graph
    def _load_citations(self) -> None:
        """The synthetic citation graph around the seed :data:`PMID_ALL_SOURCES`.

        PubMed: ``elink`` lists :data:`CITED_BY_SEED` as its references and
        :data:`CITING_SEED` as the records citing it (every other PMID: no links). OpenAlex:
        the seed's copy references the first search result (W4396723768, found by any
        OpenAlex search) and the drug-delivery review (W2033425827); the works citing it are a
        synthetic follow-up of the trial (:data:`CITING_WORK_ID`, built on the review's record
        with its own title, DOI and abstract) and the prime-editing work (W4408732759, whose
        copy lists the seed among its references).
        """
        self.elink_links: dict[tuple[str, str], list[str]] = {
            (PMID_ALL_SOURCES, "pubmed_pubmed_refs"): list(CITED_BY_SEED),
            (PMID_ALL_SOURCES, "pubmed_pubmed_citedin"): list(CITING_SEED),
        }
        seed_url = f"https://openalex.org/{SEED_WORK_ID}"
        seed, search_first = self.openalex_works[0], self.openalex_works[1]
        addr, xgen = self.openalex_works[-2], self.openalex_works[-1]
        seed["referenced_works"] = [search_first["id"], addr["id"]]
        citing = copy.deepcopy(addr)
        citing_url = f"https://openalex.org/{CITING_WORK_ID}"
        words = CITING_WORK_ABSTRACT.split()
        index: dict[str, list[int]] = {}
        for position, word in enumerate(words):
            index.setdefault(word, []).append(position)
        title = "Improved overall survival in melanoma with combined dabrafenib and trametinib"
        citing.update(
            id=citing_url,
            doi=f"https://doi.org/{CITING_WORK_DOI}",
            title=title,
            display_name=title,
            ids={"openalex": citing_url, "doi": f"https://doi.org/{CITING_WORK_DOI}"},
            abstract_inverted_index=index,
            referenced_works=[seed_url],
            cited_by_count=3,
            # the review's locations would give it the review's URL (an identifier)
            open_access={"is_oa": False, "oa_status": "closed", "oa_url": None},
            best_oa_location=None,
            primary_location=None,
            locations=[],
        )
        xgen_citing = copy.deepcopy(xgen)
        xgen_citing["referenced_works"] = [*xgen.get("referenced_works", []), seed_url]
        self.openalex_graph: list[dict[str, Any]] = [
            *self.openalex_works[:-1],
            xgen_citing,
            citing,
        ]

    def elink(self, pmid: str, linkname: str) -> bytes:
        """NCBI's ``elink`` JSON answer (``retmode=json``) for one PMID and link name."""
        links = self.elink_links.get((pmid, linkname), [])
        linkset: dict[str, Any] = {"dbfrom": "pubmed", "ids": [pmid]}
        if links:
            linkset["linksetdbs"] = [{"dbto": "pubmed", "linkname": linkname, "links": links}]
        body = {"header": {"type": "elink", "version": "0.3"}, "linksets": [linkset]}
        return json.dumps(body).encode()

    def openalex_work(self, key: str, select: str | None) -> _Reply:
        """``/works/doi:<DOI>`` or ``/works/pmid:<PMID>``: the work, or OpenAlex's 404."""
        kind, _, value = key.partition(":")
        for work in self.openalex_graph:
            ids = work.get("ids") or {}
            if kind.lower() == "doi":
                found = str(work.get("doi") or "").lower().endswith(value.lower())
            else:
                found = str(ids.get("pmid") or "").rstrip("/").endswith(f"/{value}")
            if found:
                return _Reply(200, json.dumps(_selected(work, select)).encode(), JSON)
        return _Reply(404, self.html_404_body, HTML)

    def openalex_filter(self, filter_: str, per_page: int, select: str | None) -> _Reply:
        """``/works?filter=`` over the citation graph: ``ids.openalex`` (or ``openalex``),
        ``doi`` and ``cites`` (one filter, values OR-ed with ``|``); other filters get
        OpenAlex's 403 error object."""
        field_name, _, values = filter_.partition(":")
        wanted = {v.strip().lower() for v in values.split("|") if v.strip()}

        def short(url: object) -> str:
            return str(url or "").rsplit("/", 1)[-1].lower()

        def matches(work: dict[str, Any]) -> bool:
            if field_name in ("ids.openalex", "openalex"):
                return short(work.get("id")) in wanted
            if field_name == "doi":
                doi = str(work.get("doi") or "").lower().removeprefix("https://doi.org/")
                return doi in wanted
            return any(short(r) in wanted for r in work.get("referenced_works") or [])

        if field_name not in ("ids.openalex", "openalex", "doi", "cites"):
            error = {"error": "Invalid query parameters error.", "message": f"{field_name}?"}
            return _Reply(403, json.dumps(error).encode(), JSON)
        pool = [w for w in self.openalex_graph if matches(w)]
        works = [_selected(w, select) for w in pool[: max(1, min(per_page, OPENALEX_PAGE_CAP))]]
        meta = {**self.openalex_meta, "count": len(pool), "page": 1, "per_page": per_page}
        body = {"meta": meta, "results": works, "group_by": []}
        return _Reply(200, json.dumps(body, ensure_ascii=False).encode(), JSON)

    # ---------------------------------------------------------------- web
    def _build_web(self) -> None:
        # Pages built from Europe PMC core records 20 and 22 (real abstracts; not among the
        # first ten Europe PMC results, so they do not meet the same text from Europe PMC).
        self.web_pages: dict[str, tuple[str, str]] = {}
        for index in (20, 22):
            record = self.europepmc_records[index]
            title = record["title"]
            body = record.get("abstractText", "")
            page = (
                "<!doctype html><html lang=en><head><meta charset=utf-8>"
                f"<title>{html.escape(title)}</title></head><body>"
                "<nav><a href='/'>Home</a> | <a href='/news'>News</a></nav>"
                f"<main><article><h1>{html.escape(title)}</h1><p>{body}</p></article></main>"
                "<footer>Cookie settings · Privacy</footer></body></html>"
            )
            self.web_pages[f"/web/articles/{record['id']}.html"] = (title, page)
        paths = list(self.web_pages)
        self.web_results: list[dict[str, str]] = [
            {
                "title": self.web_pages[paths[0]][0],
                "href": paths[0],
                "body": self.web_pages[paths[0]][0] + " ...",
            },
            {  # a redirect to the second page: the source follows it through its URL guard
                "title": self.web_pages[paths[1]][0],
                "href": "/web/redirect/second",
                "body": self.web_pages[paths[1]][0] + " ...",
            },
            {  # a dead link: HTML 404 page, the source keeps the snippet
                "title": "Removed page about MEK inhibitors",
                "href": "/web/missing.html",
                "body": "Snippet of a page that is gone: MEK inhibition in melanoma.",
            },
        ]
        self.web_redirects = {"/web/redirect/second": paths[1]}


# --------------------------------------------------------------------------- server


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, stub: StubAPI) -> None:
        self.stub = stub
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__((stub.host, 0), _Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, addr = super().get_request()
        with self.connections_lock:
            self.connections.add(conn)
        return conn, addr

    def shutdown_request(self, request: Any) -> None:
        with self.connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Keep connection resets quiet (clients that time out or close keep-alive
        connections); record anything else in :attr:`StubAPI.errors` instead of printing it."""
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError | TimeoutError):
            return
        self.stub.record_error(f"{type(exc).__name__}: {exc}")

    def close_connections(self) -> None:
        """Shut every open connection so keep-alive handler threads end now."""
        with self.connections_lock:
            conns = list(self.connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    timeout = 30  # idle keep-alive connections are dropped after this

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request stderr log."""

    def do_GET(self) -> None:
        """Answer one GET through :meth:`StubAPI.handle`."""
        try:
            reply, record_index = self.server.stub.handle(self.path)
            # Logged before sending: a client may act on the answer before we return.
            self.server.stub.set_status(record_index, reply.status)
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(reply.body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True  # the client gave up (e.g. a hang timed out)


class StubAPI:
    """The stub server; start with :meth:`start` (or ``with StubAPI(...)``), stop with
    :meth:`stop`.

    Args:
        fixtures: ``../shared/fixtures/api``, or a :class:`StubData` already built from it
            (read-only, so several stubs can share one).
        latency_seconds: fixed delay before every answer (simulates a distant server).
        host: loopback address to bind (an ephemeral port is chosen).
    """

    def __init__(
        self,
        fixtures: Path | StubData,
        *,
        latency_seconds: float = 0.0,
        host: str = "127.0.0.1",
    ) -> None:
        self.data = fixtures if isinstance(fixtures, StubData) else StubData(fixtures)
        self.latency_seconds = latency_seconds
        self.host = host
        self._faults: dict[str, list[list[Any]]] = {}  # route -> [[fault, remaining], ...]
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._records: list[RequestRecord] = []
        self._hold: Callable[[RequestRecord], bool] | None = None
        self._released = threading.Event()
        self.held = 0
        """Requests held unanswered so far by :meth:`hold`."""
        self.errors: list[str] = []
        """Unexpected exceptions raised while answering (a bug in the stub); tests check it."""
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ lifecycle
    def start(self) -> Self:
        """Bind and serve in a background thread; returns ``self``."""
        if self._server is not None:
            return self
        self._stopping.clear()
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
            name="stub-api", daemon=True,
        )  # fmt: skip
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving: hanging answers are released, open connections closed."""
        if self._server is None:
            return
        self._stopping.set()
        self._server.shutdown()
        self._server.close_connections()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ------------------------------------------------------------ addresses
    @property
    def port(self) -> int:
        """The ephemeral port (the stub must be started)."""
        if self._server is None:
            raise RuntimeError("the stub is not running")
        return int(self._server.server_address[1])

    @property
    def root(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://{self.host}:{self.port}"

    @property
    def eutils_url(self) -> str:
        """``base_url`` for :class:`PubMedSource`."""
        return f"{self.root}/entrez/eutils"

    @property
    def trials_url(self) -> str:
        """``base_url`` for :class:`ClinicalTrialsSource`."""
        return f"{self.root}/api/v2"

    @property
    def europepmc_url(self) -> str:
        """``base_url`` for :class:`EuropePMCSource`."""
        return f"{self.root}/europepmc/webservices/rest"

    @property
    def openalex_url(self) -> str:
        """``base_url`` for :class:`OpenAlexSource`."""
        return self.root

    @property
    def ddgs_url(self) -> str:
        """``base_url`` for :class:`WebSearchSource` (a ``ddgs api`` server)."""
        return f"{self.root}/ddgs"

    def url(self, path: str) -> str:
        """Absolute URL of a stub path."""
        return f"{self.root}{path}"

    # ------------------------------------------------------------ faults and log
    def add_fault(self, route: Route, fault: Fault) -> None:
        """Program ``fault`` on ``route``; of a route's faults, the first one added that
        applies to a request (see :attr:`Fault.match`) is used."""
        if route not in (*ROUTES.values(), "webpage", *FULLTEXT_ROUTES):
            raise ValueError(f"unknown route {route!r}")
        if fault.times is not None and fault.times < 1:
            raise ValueError("Fault.times must be at least 1 (or None for every request)")
        with self._lock:
            self._faults.setdefault(route, []).append([fault, fault.times])

    def record_error(self, message: str) -> None:
        """Note an unexpected error of a handler thread (see :attr:`errors`)."""
        with self._lock:
            self.errors.append(message)

    def clear_faults(self) -> None:
        """Remove every programmed fault."""
        with self._lock:
            self._faults.clear()

    @property
    def requests(self) -> list[RequestRecord]:
        """Every request received so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._records)

    def requests_for(self, route: str) -> list[RequestRecord]:
        """The requests of one route, in arrival order."""
        return [r for r in self.requests if r.route == route]

    def reset_log(self) -> None:
        """Forget the requests received so far."""
        with self._lock:
            self._records.clear()

    def hold(self, predicate: Callable[[RequestRecord], bool]) -> None:
        """Leave every later request for which ``predicate`` is true unanswered (its status
        stays 0) until :meth:`release` or :meth:`stop`: a process killed meanwhile never got
        those answers."""
        with self._lock:
            self._released.clear()
            self._hold = predicate

    def release(self) -> None:
        """Answer the held requests and stop holding."""
        with self._lock:
            self._hold = None
            self._released.set()

    def set_status(self, index: int, status: int) -> None:
        """Record the status request ``index`` was answered with."""
        with self._lock:
            if 0 <= index < len(self._records):
                old = self._records[index]
                self._records[index] = RequestRecord(
                    old.route, old.path, old.params, old.arrived, status
                )

    def _take_fault(self, route: str, params: Mapping[str, str]) -> Fault | None:
        with self._lock:
            queue = self._faults.get(route, [])
            for position, entry in enumerate(queue):
                fault: Fault = entry[0]
                if not fault.applies_to(params):
                    continue
                if entry[1] is not None:
                    entry[1] -= 1
                    if entry[1] <= 0:
                        queue.pop(position)
                return fault
            return None

    # ------------------------------------------------------------ answering
    def handle(self, raw_path: str) -> tuple[_Reply, int]:
        """The reply to ``GET raw_path`` and the index of its log record (called by the
        handler threads)."""
        arrived = time.monotonic()
        parts = urlsplit(raw_path)
        params = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        route = ROUTES.get(parts.path) or ("webpage" if parts.path.startswith("/web/") else "")
        if self.data.full_text_files:
            fulltext = FULLTEXT_PATH.match(parts.path)
            if fulltext:
                route = "fulltext"
                params = {**params, "pmcid": fulltext.group(1)}
            elif route == "efetch" and params.get("db", "").lower() == "pmc":
                route = "efetch_pmc"
        work_key = OPENALEX_WORK_PATH.match(parts.path)
        if work_key:
            route = "openalex_work"
            params = {**params, "key": work_key.group(1)}
        with self._lock:
            record = RequestRecord(route or "unknown", parts.path, params, arrived)
            self._records.append(record)
            index = len(self._records) - 1
            hold = self._hold
            if hold is not None and hold(record):
                self.held += 1
            else:
                hold = None
        if hold is not None:
            while not self._released.wait(0.05) and not self._stopping.is_set():
                pass
        if self.latency_seconds > 0:
            self._stopping.wait(self.latency_seconds)
        fault = self._take_fault(route, params) if route else None
        if fault is not None and fault.delay_seconds > 0:
            self._stopping.wait(fault.delay_seconds)
        reply = self._normal_reply(route, parts.path, params)
        if fault is not None:
            reply = self._apply(fault, reply)
        return reply, index

    def _apply(self, fault: Fault, reply: _Reply) -> _Reply:
        bodies = {
            "given": fault.body,
            "normal": reply.body,
            "truncated": reply.body[: len(reply.body) // 2],
            "ncbi_rate_limit": self.data.rate_limit_body,
            "html_404": self.data.html_404_body,
        }
        return _Reply(
            status=fault.status or reply.status,
            body=bodies[fault.body_kind],
            content_type=fault.content_type or reply.content_type,
            headers={**reply.headers, **fault.headers},
        )

    def _normal_reply(self, route: str, path: str, params: dict[str, str]) -> _Reply:
        handler = self._dispatch().get(route)
        if handler is None:
            return _Reply(404, self.data.html_404_body, HTML)
        return handler(path, params)

    def _dispatch(self) -> dict[str, Callable[[str, dict[str, str]], _Reply]]:
        return {
            "esearch": self._esearch,
            "efetch": self._efetch,
            "trials": self._trials,
            "europepmc": self._europepmc,
            "openalex": self._openalex,
            "websearch": self._websearch,
            "webpage": self._webpage,
            "fulltext": self._fulltext,
            "efetch_pmc": self._efetch_pmc,
            "elink": self._elink,
            "openalex_work": self._openalex_work,
        }

    def _esearch(self, _path: str, params: dict[str, str]) -> _Reply:
        if params.get("retmode") != "json":  # the stub has recordings of the JSON form only
            return _Reply(400, b"stub: esearch is served as retmode=json only\n", "text/plain")
        retmax = _int(params.get("retmax"), 20)
        retstart = _int(params.get("retstart"), 0)
        return _Reply(
            200, self.data.esearch(params.get("term", ""), retmax, retstart, params), JSON
        )

    def _efetch(self, _path: str, params: dict[str, str]) -> _Reply:
        ids = [i.strip() for i in params.get("id", "").split(",") if i.strip()]
        if not ids:  # NCBI's answer to an efetch without ids
            body = (
                b'<?xml version="1.0" ?>\n<eFetchResult>\n'
                b"\t<ERROR>Empty id list - nothing todo</ERROR>\n</eFetchResult>\n"
            )
            return _Reply(200, body, XML)
        return _Reply(200, self.data.efetch(ids), XML)

    def _fulltext(self, _path: str, params: dict[str, str]) -> _Reply:
        data = self.data.full_text_xml(params.get("pmcid", ""))
        if data is None:  # Europe PMC: 404 with an empty body for an article it has no XML of
            return _Reply(404, b"", "text/plain;charset=UTF-8")
        return _Reply(200, data, "application/xml")

    def _efetch_pmc(self, _path: str, params: dict[str, str]) -> _Reply:
        ids = [i.strip() for i in params.get("id", "").split(",") if i.strip()]
        return _Reply(200, self.data.efetch_pmc(ids), XML)

    def _trials(self, _path: str, params: dict[str, str]) -> _Reply:
        term = params.get("query.term", "") or params.get("query.cond", "")
        return self.data.trials(
            term,
            _int(params.get("pageSize"), 10),
            params.get("pageToken") or None,
            params.get("countTotal") == "true",
            params,
        )

    def _europepmc(self, _path: str, params: dict[str, str]) -> _Reply:
        return self.data.europepmc(
            params.get("query", ""),
            _int(params.get("pageSize"), 25),
            params.get("cursorMark", "*"),
            params.get("resultType", "lite"),
        )

    def _elink(self, _path: str, params: dict[str, str]) -> _Reply:
        if params.get("retmode") != "json":  # the stub serves the JSON form only
            return _Reply(400, b"stub: elink is served as retmode=json only\n", "text/plain")
        return _Reply(200, self.data.elink(params.get("id", ""), params.get("linkname", "")), JSON)

    def _openalex_work(self, _path: str, params: dict[str, str]) -> _Reply:
        return self.data.openalex_work(params.get("key", ""), params.get("select"))

    def _openalex(self, _path: str, params: dict[str, str]) -> _Reply:
        keys = {p.split(":", 1)[0] for p in params.get("filter", "").split(",") if p}
        if params.get("filter") and not keys <= OPENALEX_SEARCH_FILTERS:
            return self.data.openalex_filter(
                params["filter"],
                _int(params.get("per_page") or params.get("per-page"), 25),
                params.get("select"),
            )
        return self.data.openalex(
            params.get("search", ""),
            _int(params.get("per_page") or params.get("per-page"), 25),
            _int(params.get("page"), 1),
            params.get("select"),
            params.get("filter", ""),
        )

    def _websearch(self, _path: str, params: dict[str, str]) -> _Reply:
        query = params.get("query", "")
        limit = _int(params.get("max_results"), 10)
        if NO_HITS in query.lower():
            # What `ddgs api` (ddgs 9.16, api_server/api.py) answers when DDGS raises "No results
            # found.": FastAPI's HTTPException(500, detail=f"Search failed: {e!s}").
            body = json.dumps({"detail": "Search failed: No results found."}).encode()
            return _Reply(500, body, JSON)
        results = [{**r, "href": self.url(r["href"])} for r in self.data.web_results[:limit]]
        return _Reply(200, json.dumps({"results": results}).encode(), JSON)

    def _webpage(self, path: str, _params: dict[str, str]) -> _Reply:
        if path in self.data.web_redirects:
            target = self.url(self.data.web_redirects[path])
            return _Reply(302, b"", HTML, {"Location": target})
        page = self.data.web_pages.get(path)
        if page is None:
            return _Reply(404, self.data.html_404_body, HTML)
        return _Reply(200, page[1].encode("utf-8"), HTML)


def _entrez_date(element: Any) -> str | None:
    """The Entrez date (``PubMedPubDate PubStatus="entrez"``: when the record was added to
    PubMed) of a ``<PubmedArticle>`` element as ``YYYY-MM-DD``, or ``None``."""
    found = element.find("PubmedData/History/PubMedPubDate[@PubStatus='entrez']")
    if found is None:
        return None
    try:
        parts = [int(found.findtext(tag) or "1") for tag in ("Year", "Month", "Day")]
    except ValueError:
        return None
    return f"{parts[0]:04d}-{parts[1]:02d}-{parts[2]:02d}"


def _article_date(article: PubmedArticle) -> str | None:
    """A PubMed record's publication date (ISO prefix), else its year."""
    return article.date or (str(article.year) if article.year else None)


def _selected(work: dict[str, Any], select: str | None) -> dict[str, Any]:
    """``work`` with only the root fields of ``select`` (all without one), as OpenAlex does."""
    if not select:
        return work
    wanted = {f.strip() for f in select.split(",") if f.strip()}
    return {k: v for k, v in work.items() if k in wanted}


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


# --------------------------------------------------------------------------- wiring


def stub_only_guard(stub: StubAPI) -> UrlGuard:
    """A web ``url_guard`` allowing only the stub's own ``host:port`` (tests only: the default
    SSRF guard refuses 127.0.0.1, rightly)."""

    async def guard(url: str) -> None:
        parsed = httpx.URL(url)
        if parsed.host != stub.host or parsed.port != stub.port:
            raise UnsafeURLError(url, "not the stub server")

    return guard


def build_stub_sources(
    stub: StubAPI,
    client: httpx.AsyncClient,
    *,
    timeout_seconds: float,
    tries: int,
    backoff_seconds: float = 0.001,
    names: Sequence[str] = ("pubmed", "trials", "europepmc", "openalex", "web"),
    web_guard: bool = True,
    requests_per_second: Mapping[str, float] | None = None,
) -> list[SearchSource]:
    """The real source clients, pointed at ``stub`` (default rate limits).

    Args:
        stub: a started stub.
        client: the shared HTTP client.
        timeout_seconds: per-request timeout (``Settings.http_timeout_seconds``).
        tries: attempts per request (``Settings.http_retries``).
        backoff_seconds: first retry backoff (tiny in tests).
        names: which sources, in order.
        web_guard: give the web source :func:`stub_only_guard`; ``False`` keeps the default
            SSRF guard (which refuses the stub's loopback address).
        requests_per_second: source name -> rate limit replacing that source's default
            (e.g. a faster web page rate where a test is not about the web source).
    """
    rates = dict(requests_per_second or {})

    def opts(name: str) -> HttpOptions:
        return HttpOptions(timeout_seconds, tries, backoff_seconds, rates.get(name))

    built: dict[str, Callable[[], SearchSource]] = {
        "pubmed": lambda: PubMedSource(client, base_url=stub.eutils_url, http=opts("pubmed")),
        "trials": lambda: ClinicalTrialsSource(
            client, base_url=stub.trials_url, http=opts("trials")
        ),
        "europepmc": lambda: EuropePMCSource(
            client, base_url=stub.europepmc_url, http=opts("europepmc")
        ),
        "openalex": lambda: OpenAlexSource(
            client, base_url=stub.openalex_url, http=opts("openalex")
        ),
        "web": lambda: WebSearchSource(
            client,
            base_url=stub.ddgs_url,
            url_guard=stub_only_guard(stub) if web_guard else None,
            http=opts("web"),
        ),
    }
    unknown = [n for n in names if n not in built]
    if unknown:
        raise ValueError(f"unknown source(s) {unknown}")
    return [built[n]() for n in names]
