"""A stub of the search APIs whose PubMed grows and changes between a living review's
updates: :class:`GrowingStubAPI`.

It is a :class:`~deepcritical.testing.api_stub.StubAPI` (every route as recorded) with two
changes a test makes while it runs, kept in this server only (the shared, read-only
:class:`~deepcritical.testing.api_stub.StubData` is not touched):

- :meth:`GrowingStubAPI.add_pubmed_record`: a new PubMed record (a copy of a recorded
  ``<PubmedArticle>`` with another PMID, title and abstract, no DOI or PMCID), with the day it
  was added (its Entrez date, ``PubMedPubDate PubStatus="entrez"``). ``esearch`` lists it first
  when the request has no Entrez-date range or when its day lies in the
  ``datetype=edat&mindate=&maxdate=`` range (days, inclusive, as NCBI reads them);
  ``efetch`` serves it;
- :meth:`GrowingStubAPI.retract`: a recorded record now carries the marks PubMed gives a
  retracted publication (the publication type ``Retracted Publication`` and a
  ``CommentsCorrections`` entry of RefType ``RetractionIn``) in every ``efetch`` answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from typing import Any

from lxml import etree

from deepcritical.testing.api_stub import JSON, XML, StubAPI, _Reply

__all__ = ["GrowingStubAPI", "edat_range"]

_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)


def _day(text: str) -> date | None:
    parts = [p for p in text.replace("-", "/").split("/") if p]
    if not parts or not all(p.isdigit() for p in parts):
        return None
    year, month, day = (int(p) for p in [*parts, "1", "1"][:3])
    return date(year, month, day)


def edat_range(params: dict[str, str]) -> tuple[date | None, date | None] | None:
    """The Entrez-date range of an esearch request (``datetype=edat``, ``mindate``,
    ``maxdate``), ``None`` when it has none."""
    if params.get("datetype") != "edat" or not params.get("mindate"):
        return None
    return _day(params["mindate"]), _day(params.get("maxdate") or "")


@dataclass
class _Added:
    pmid: str
    xml: bytes
    added: date


class GrowingStubAPI(StubAPI):
    """A :class:`~deepcritical.testing.api_stub.StubAPI` with records added and retracted
    while it runs (see the module docstring)."""

    template_pmid = "22663011"
    """The recorded record new ones are copied from."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._added: list[_Added] = []
        self._retracted: set[str] = set()
        self._notice = ""

    def add_pubmed_record(
        self, pmid: str, title: str, abstract: str, *, added: date | None = None
    ) -> None:
        """Add PubMed record ``pmid`` (digits) with ``title`` and ``abstract``, added to
        PubMed on ``added`` (default: today, UTC)."""
        root = etree.fromstring(self.data.efetch_records[self.template_pmid], parser=_PARSER)
        citation = root.find("MedlineCitation")
        assert citation is not None
        pmid_el = citation.find("PMID")
        assert pmid_el is not None
        pmid_el.text = pmid
        article = citation.find("Article")
        assert article is not None
        title_el = article.find("ArticleTitle")
        assert title_el is not None
        title_el.text = title
        for old in article.findall("Abstract") + article.findall("ELocationID"):
            article.remove(old)
        abstract_el = etree.SubElement(article, "Abstract")
        etree.SubElement(abstract_el, "AbstractText").text = abstract
        day = added or date.today()
        data = root.find("PubmedData")
        if data is not None:
            root.remove(data)
        data = etree.SubElement(root, "PubmedData")
        history = etree.SubElement(data, "History")
        entrez = etree.SubElement(history, "PubMedPubDate", PubStatus="entrez")
        for tag, value in (("Year", day.year), ("Month", day.month), ("Day", day.day)):
            etree.SubElement(entrez, tag).text = str(value)
        ids = etree.SubElement(data, "ArticleIdList")
        etree.SubElement(ids, "ArticleId", IdType="pubmed").text = pmid
        with self._lock:
            self._added.append(_Added(pmid, etree.tostring(root), day))

    def retract(self, pmid: str, notice: str = "N Engl J Med. 2026;1:1.") -> None:
        """Mark recorded record ``pmid`` retracted from now on (``notice``: the retraction
        notice's citation)."""
        with self._lock:
            self._retracted.add(pmid)
            self._notice = notice

    def _esearch(self, path: str, params: dict[str, str]) -> _Reply:
        reply = super()._esearch(path, params)
        if reply.status != 200 or not self._added:
            return reply
        window = edat_range(params)
        extra = [
            a.pmid
            for a in self._added
            if window is None
            or (
                (window[0] is None or a.added >= window[0])
                and (window[1] is None or a.added <= window[1])
            )
        ]
        payload = json.loads(reply.body)
        result = payload["esearchresult"]
        ids = extra + [i for i in result.get("idlist", []) if i not in extra]
        retmax = int(params.get("retmax") or 20)
        result["idlist"] = ids[:retmax]
        result["count"] = str(int(result.get("count", "0")) + len(extra))
        result["retmax"] = str(len(result["idlist"]))
        return _Reply(200, json.dumps(payload).encode(), JSON)

    def _efetch(self, path: str, params: dict[str, str]) -> _Reply:
        ids = [i.strip() for i in params.get("id", "").split(",") if i.strip()]
        if not ids or (not self._added and not self._retracted):
            return super()._efetch(path, params)
        added = {a.pmid: a.xml for a in self._added}
        records = []
        for pmid in ids:
            if pmid in added:
                records.append(added[pmid])
            elif pmid in self.data.efetch_records:
                xml = self.data.efetch_records[pmid]
                records.append(self._retracted_copy(xml) if pmid in self._retracted else xml)
        head = b'<?xml version="1.0" ?>\n' + self.data.efetch_doctype + b"\n<PubmedArticleSet>\n"
        return _Reply(200, head + b"\n".join(records) + b"\n</PubmedArticleSet>\n", XML)

    def _retracted_copy(self, xml: bytes) -> bytes:
        root = etree.fromstring(xml, parser=_PARSER)
        citation = root.find("MedlineCitation")
        assert citation is not None
        types = citation.find("Article/PublicationTypeList")
        if types is not None:
            etree.SubElement(types, "PublicationType").text = "Retracted Publication"
        corrections = citation.find("CommentsCorrectionsList")
        if corrections is None:
            corrections = etree.SubElement(citation, "CommentsCorrectionsList")
        entry = etree.SubElement(corrections, "CommentsCorrections", RefType="RetractionIn")
        etree.SubElement(entry, "RefSource").text = self._notice
        return bytes(etree.tostring(root))
