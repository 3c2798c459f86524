"""Parse PubMed XML (E-utilities ``efetch`` output and the annual baseline / daily update files).

Both formats are a ``<PubmedArticleSet>`` holding ``<PubmedArticle>`` (journal articles) and
``<PubmedBookArticle>`` (NCBI Bookshelf chapters) elements, following NLM's ``pubmed_*.dtd``.
:func:`parse_pubmed_xml` reads one whole document held in memory (an ``efetch`` reply);
:func:`iter_pubmed_xml` streams a file of any size (a 30,000-record baseline file), keeping
one record in memory at a time. :func:`article_to_evidence` turns a parsed record into the
:class:`~deepcritical.models.Evidence` every source returns.

Text fields are reduced to plain text: inline markup (``<i>``, ``<b>``, ``<u>``, ``<sup>``,
``<sub>``) is dropped without adding spaces (``CO<sub>2</sub>`` -> ``CO2``), MathML is
flattened to the concatenation of its tokens (see :func:`_math_text`), and runs of
whitespace become one space.

Dates are ISO-8601 prefixes. From ``Journal/JournalIssue/PubDate``:

* ``Year``/``Month``/``Day`` -> ``2019-03-14`` (``Month`` may be ``Mar``, ``March``, ``3``, ``03``);
* ``Year`` + ``Season`` (``Spring``, ``Winter``...) -> year only (``1990``): seasons are
  hemisphere-dependent and ``Winter`` spans two years, so no month is invented;
* ``MedlineDate`` (free text such as ``1998 Dec-1999 Jan``) -> the first year, plus the month
  when a month name follows it directly (``1998-12``); days in a range are not kept.

When ``PubDate`` has no year, ``Article/ArticleDate`` (the electronic publication date) is
used, then the PubMed record's ``History`` date (``PubStatus="pubmed"`` / ``"entrez"``).
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, BinaryIO, cast

from lxml import etree
from pydantic import BaseModel, Field

from deepcritical.formats.mathml import local_name, math_text
from deepcritical.formats.safe_xml import safe_iterparse, safe_parser
from deepcritical.logs import get_logger
from deepcritical.models import (
    DOI_PREFIX,
    PMCID,
    Citation,
    Evidence,
    IntegrityFlag,
    IntegrityKind,
    flags_from_publication_types,
    union_flags,
)

log = get_logger(__name__)

_Element = etree._Element

PUBMED_URL = "https://pubmed.ncbi.nlm.nih.gov/{pmid}/"
_RECORD_TAGS = ("PubmedArticle", "PubmedBookArticle")

_MONTHS: dict[str, int] = {
    name: i
    for i, names in enumerate(
        [
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ],
        start=1,
    )
    for name in names
}

_DOI_PREFIX = re.compile(rf"^{DOI_PREFIX}", re.IGNORECASE)
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")


class PubmedXMLError(ValueError):
    """A PubMed XML document that cannot be parsed (not XML, truncated, or not PubMed XML).

    ``str(err)`` says what was wrong and, for syntax errors, where (line and column).
    """


class AbstractSection(BaseModel):
    """One ``<AbstractText>`` element: ``label`` from its ``Label`` attribute (falling back to
    ``NlmCategory`` unless that is ``UNASSIGNED``), ``None`` for unstructured abstracts;
    ``text`` is the plain text of the section."""

    label: str | None = None
    text: str


class PubmedArticle(BaseModel):
    """One PubMed record, reduced to what DeepCritical uses.

    Fields and their XML origin (paths below ``MedlineCitation/Article`` unless stated):

    * ``pmid``: ``MedlineCitation/PMID`` (digits).
    * ``title``: ``ArticleTitle`` (``VernacularTitle`` when empty; for book records
      ``BookDocument/ArticleTitle`` or ``Book/BookTitle``).
    * ``abstract_sections``: ``Abstract/AbstractText`` in order (``OtherAbstract`` in English
      when there is no ``Abstract``); ``CopyrightInformation`` is not included.
    * ``authors``: ``AuthorList/Author`` as ``"Lastname Initials"`` (``"Smith JA"``, with a
      ``Suffix`` appended), ``CollectiveName`` kept as the group's name; authors marked
      ``ValidYN="N"`` are skipped; ``InvestigatorList`` is not included.
    * ``journal``: ``Journal/Title``, else ``Journal/ISOAbbreviation``, else
      ``MedlineJournalInfo/MedlineTA``.
    * ``year``/``date``: see the module docstring; ``date`` is ``"2019"``, ``"2019-03"`` or
      ``"2019-03-14"``.
    * ``doi``: ``ELocationID[@EIdType="doi"]``, else ``PubmedData/ArticleIdList/
      ArticleId[@IdType="doi"]``; lower-cased, without ``https://doi.org/``.
    * ``pmcid``: ``PubmedData/ArticleIdList/ArticleId[@IdType="pmc"]`` (``"PMC1234567"``).
    * ``mesh_terms``: ``MeshHeadingList/MeshHeading/DescriptorName`` texts.
    * ``publication_types``: ``PublicationTypeList/PublicationType`` texts.
    * ``keywords``: ``KeywordList/Keyword`` texts (every list, duplicates removed).
    * ``integrity_flags``: ``MedlineCitation/CommentsCorrectionsList/CommentsCorrections``
      with a ``RefType`` of :data:`COMMENTS_CORRECTIONS_FLAGS` (``RetractionIn``,
      ``ExpressionOfConcernIn``, ``ErratumIn``...), the notice being ``"<RefType in words>:
      <RefSource>. PMID: <PMID>"`` (see :func:`comments_corrections_flags`). Flags stated by
      publication types (``Retracted Publication``...) are added by
      :func:`article_to_evidence`, so records stored without this field (older corpora,
      JSONL) are flagged too.
    """

    pmid: str
    title: str = ""
    abstract_sections: list[AbstractSection] = Field(default_factory=list)
    authors: list[str] = Field(default_factory=list)
    journal: str | None = None
    year: int | None = None
    date: str | None = None
    doi: str | None = None
    pmcid: str | None = None
    mesh_terms: list[str] = Field(default_factory=list)
    publication_types: list[str] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)
    integrity_flags: list[IntegrityFlag] = Field(default_factory=list)

    def abstract_text(self) -> str:
        """The abstract as plain text: one paragraph per section, ``"LABEL: text"`` for
        labelled sections and just ``text`` otherwise, paragraphs separated by a blank line.
        ``""`` when the record has no abstract."""
        return "\n\n".join(
            f"{s.label}: {s.text}" if s.label else s.text for s in self.abstract_sections
        )

    @property
    def is_preprint(self) -> bool:
        """True when a publication type is ``Preprint``."""
        return any(t.strip().lower() == "preprint" for t in self.publication_types)


# --------------------------------------------------------------------------- text helpers


def _squash(text: str) -> str:
    return " ".join(text.split())


def _inline_text(el: _Element) -> str:
    """Text of an element with inline markup, unnormalised (whitespace kept as in the XML)."""
    parts: list[str] = [el.text or ""]
    for child in el:
        name = local_name(child)
        if name == "math":
            parts.append(math_text(child))
        elif name:
            parts.append(_inline_text(child))
        parts.append(child.tail or "")
    return "".join(parts)


def _text(el: _Element | None) -> str:
    """Plain text of ``el`` (inline markup and MathML flattened, whitespace squashed)."""
    if el is None:
        return ""
    return _squash(_inline_text(el))


def _texts(elements: Iterable[_Element]) -> list[str]:
    """Non-empty plain texts, in order, duplicates removed."""
    seen: dict[str, None] = {}
    for el in elements:
        t = _text(el)
        if t:
            seen.setdefault(t, None)
    return list(seen)


# --------------------------------------------------------------------------- field parsers


def normalize_doi(value: str | None) -> str | None:
    """``"https://doi.org/10.1056/NEJMoa1203421"`` -> ``"10.1056/nejmoa1203421"``; None if
    ``value`` is empty or does not look like a DOI (no ``10.`` prefix)."""
    if not value:
        return None
    doi = _DOI_PREFIX.sub("", value.strip()).strip().lower()
    return doi if doi.startswith("10.") and "/" in doi else None


def normalize_pmcid(value: str | None) -> str | None:
    """``"3166277"`` or ``"pmc3166277"`` -> ``"PMC3166277"``; None if ``value`` is empty or is
    not ``PMC`` + digits."""
    if not value:
        return None
    v = value.strip().upper()
    if v.isdigit():
        v = "PMC" + v
    return v if re.fullmatch(PMCID, v) else None


def _month_number(value: str | None) -> int | None:
    if not value:
        return None
    v = value.strip().lower().rstrip(".")
    if v.isdigit():
        n = int(v)
        return n if 1 <= n <= 12 else None
    return _MONTHS.get(v)


def _year_number(value: str | None) -> int | None:
    if value and re.fullmatch(r"\s*\d{4}\s*", value):
        return int(value)
    return None


def _iso(year: int, month: int | None = None, day: int | None = None) -> str:
    if month is None:
        return f"{year:04d}"
    if day is None or not 1 <= day <= 31:
        return f"{year:04d}-{month:02d}"
    return f"{year:04d}-{month:02d}-{day:02d}"


def _ymd_date(el: _Element | None) -> tuple[int, str] | None:
    """A ``Year``/``Month``/``Day`` (or ``Season``) date element -> (year, ISO prefix)."""
    if el is None:
        return None
    year = _year_number(el.findtext("Year"))
    if year is None:
        return None
    month = _month_number(el.findtext("Month"))
    day_text = (el.findtext("Day") or "").strip()
    day = int(day_text) if day_text.isdigit() and month is not None else None
    return year, _iso(year, month, day)


def _medline_date(text: str | None) -> tuple[int, str] | None:
    """``"1998 Dec-1999 Jan"`` -> (1998, ``"1998-12"``); ``"2000 Spring"`` -> (2000, ``"2000"``)."""
    if not text:
        return None
    m = re.search(r"\b(\d{4})\b(?:\s+([A-Za-z]+))?", text)
    if m is None:
        return None
    year = int(m.group(1))
    month = _month_number(m.group(2)) if m.group(2) and not m.group(2).isdigit() else None
    return year, _iso(year, month)


def _pub_date(pub_date: _Element | None) -> tuple[int, str] | None:
    if pub_date is None:
        return None
    return _ymd_date(pub_date) or _medline_date(pub_date.findtext("MedlineDate"))


def _history_date(record: _Element) -> tuple[int, str] | None:
    for status in ("pubmed", "entrez"):
        for el in record.iterfind("PubmedData/History/PubMedPubDate"):
            if el.get("PubStatus") == status:
                found = _ymd_date(el)
                if found:
                    return found
    return None


def _authors(author_list: _Element | None) -> list[str]:
    if author_list is None:
        return []
    out: list[str] = []
    for author in author_list.iterfind("Author"):
        if author.get("ValidYN", "Y").upper() == "N":
            continue
        collective = _text(author.find("CollectiveName"))
        if collective:
            out.append(collective)
            continue
        last = _text(author.find("LastName"))
        if not last:
            continue
        initials = _text(author.find("Initials")).replace(" ", "").replace(".", "")
        if not initials:
            fore = _text(author.find("ForeName"))
            initials = "".join(p[0] for p in re.split(r"[\s\-.]+", fore) if p).upper()
        name = f"{last} {initials}" if initials else last
        suffix = _text(author.find("Suffix"))
        out.append(f"{name} {suffix}" if suffix else name)
    return out


def _abstract(abstract: _Element | None) -> list[AbstractSection]:
    if abstract is None:
        return []
    sections: list[AbstractSection] = []
    for el in abstract.iterfind("AbstractText"):
        text = _text(el)
        if not text:
            continue
        label = _squash(el.get("Label") or "")
        if not label:
            category = (el.get("NlmCategory") or "").strip()
            label = category if category and category.upper() != "UNASSIGNED" else ""
        sections.append(AbstractSection(label=label or None, text=text))
    return sections


def _other_abstract(parent: _Element) -> list[AbstractSection]:
    for el in parent.iterfind("OtherAbstract"):
        if (el.get("Language") or "eng").lower() == "eng":
            sections = _abstract(el)
            if sections:
                return sections
    return []


def _article_ids(id_lists: Iterable[_Element]) -> tuple[str | None, str | None]:
    """(doi, pmcid) from ``ArticleIdList`` elements (first valid value of each kind)."""
    doi: str | None = None
    pmcid: str | None = None
    for id_list in id_lists:
        for el in id_list.iterfind("ArticleId"):
            kind = (el.get("IdType") or "").lower()
            if kind == "doi" and doi is None:
                doi = normalize_doi(el.text)
            elif kind == "pmc" and pmcid is None:
                pmcid = normalize_pmcid(el.text)
    return doi, pmcid


def _eloc_doi(parent: _Element) -> str | None:
    for el in parent.iterfind("ELocationID"):
        if (el.get("EIdType") or "").lower() == "doi" and el.get("ValidYN", "Y").upper() != "N":
            doi = normalize_doi(el.text)
            if doi:
                return doi
    return None


COMMENTS_CORRECTIONS_FLAGS: dict[str, tuple[IntegrityKind, str]] = {
    "RetractionIn": (IntegrityKind.RETRACTED, "Retraction in"),
    "RetractionOf": (IntegrityKind.RETRACTION_NOTICE, "Retraction of"),
    "ExpressionOfConcernIn": (IntegrityKind.EXPRESSION_OF_CONCERN, "Expression of concern in"),
    "ExpressionOfConcernFor": (IntegrityKind.EXPRESSION_OF_CONCERN, "Expression of concern for"),
    "ErratumIn": (IntegrityKind.ERRATUM, "Erratum in"),
    "ErratumFor": (IntegrityKind.CORRECTION, "Erratum for"),
    "CorrectedandRepublishedIn": (IntegrityKind.CORRECTION, "Corrected and republished in"),
    "CorrectedandRepublishedFrom": (IntegrityKind.CORRECTION, "Corrected and republished from"),
}
"""``CommentsCorrections/@RefType`` -> (flag kind, words the notice starts with), after NLM's
``pubmed_*.dtd``; other types (``Cites``, ``CommentIn``...) give no flag."""


def comments_corrections_flags(parent: _Element | None) -> list[IntegrityFlag]:
    """The integrity flags of a ``CommentsCorrectionsList``'s entries (see
    :data:`COMMENTS_CORRECTIONS_FLAGS`): ``<CommentsCorrections RefType="RetractionIn">
    <RefSource>J X. 2020;1:2.</RefSource><PMID>123</PMID>`` gives a ``retracted`` flag with the
    notice ``"Retraction in: J X. 2020;1:2. PMID: 123"`` and the source ``"PubMed
    CommentsCorrections RetractionIn"``. ``[]`` for ``None``."""
    if parent is None:
        return []
    flags: list[IntegrityFlag] = []
    for el in parent.iterfind("CommentsCorrections"):
        ref_type = (el.get("RefType") or "").strip()
        if ref_type not in COMMENTS_CORRECTIONS_FLAGS:
            continue
        kind, words = COMMENTS_CORRECTIONS_FLAGS[ref_type]
        ref_source = _text(el.find("RefSource")).rstrip(".")
        pmid = _text(el.find("PMID"))
        notice = (
            words + (f": {ref_source}." if ref_source else "") + (f" PMID: {pmid}" if pmid else "")
        )
        flags.append(
            IntegrityFlag(
                kind=kind, notice=notice.strip(), source=f"PubMed CommentsCorrections {ref_type}"
            )
        )
    return union_flags(flags)


def _parse_journal_article(record: _Element) -> PubmedArticle | None:
    citation = record.find("MedlineCitation")
    if citation is None:
        return None
    pmid = (citation.findtext("PMID") or "").strip()
    if not pmid:
        return None
    article = citation.find("Article")
    if article is None:
        return PubmedArticle(pmid=pmid)

    title = _text(article.find("ArticleTitle")) or _text(article.find("VernacularTitle"))
    sections = _abstract(article.find("Abstract")) or _other_abstract(citation)
    journal_el = article.find("Journal")
    journal = None
    if journal_el is not None:
        journal = _text(journal_el.find("Title")) or _text(journal_el.find("ISOAbbreviation"))
    journal = journal or _text(citation.find("MedlineJournalInfo/MedlineTA")) or None

    when = (
        _pub_date(article.find("Journal/JournalIssue/PubDate"))
        or next(filter(None, (_ymd_date(d) for d in article.iterfind("ArticleDate"))), None)
        or _history_date(record)
    )
    doi_ids, pmcid = _article_ids(record.iterfind("PubmedData/ArticleIdList"))
    return PubmedArticle(
        pmid=pmid,
        title=title,
        abstract_sections=sections,
        authors=_authors(article.find("AuthorList")),
        journal=journal,
        year=when[0] if when else None,
        date=when[1] if when else None,
        doi=_eloc_doi(article) or doi_ids,
        pmcid=pmcid,
        mesh_terms=_texts(citation.iterfind("MeshHeadingList/MeshHeading/DescriptorName")),
        publication_types=_texts(article.iterfind("PublicationTypeList/PublicationType")),
        keywords=_texts(citation.iterfind("KeywordList/Keyword")),
        integrity_flags=comments_corrections_flags(citation.find("CommentsCorrectionsList")),
    )


def _parse_book_article(record: _Element) -> PubmedArticle | None:
    doc = record.find("BookDocument")
    if doc is None:
        return None
    pmid = (doc.findtext("PMID") or "").strip()
    if not pmid:
        return None
    book_title = _text(doc.find("Book/BookTitle"))
    article_title = _text(doc.find("ArticleTitle"))
    title = article_title or book_title
    journal = book_title if article_title and book_title else None
    author_lists = list(doc.iterfind("AuthorList"))
    authors = next(
        (_authors(a) for a in author_lists if (a.get("Type") or "authors") == "authors"), []
    )
    if not authors:
        authors = next((_authors(a) for a in doc.iterfind("Book/AuthorList")), [])
    when = _pub_date(doc.find("Book/PubDate")) or _history_date(record)
    doi_ids, pmcid = _article_ids(
        [*doc.iterfind("ArticleIdList"), *record.iterfind("PubmedBookData/ArticleIdList")]
    )
    return PubmedArticle(
        pmid=pmid,
        title=title,
        abstract_sections=_abstract(doc.find("Abstract")) or _other_abstract(doc),
        authors=authors,
        journal=journal,
        year=when[0] if when else None,
        date=when[1] if when else None,
        doi=_eloc_doi(doc) or doi_ids,
        pmcid=pmcid,
        publication_types=_texts(doc.iterfind("PublicationType")),
        keywords=_texts(doc.iterfind("KeywordList/Keyword")),
    )


def parse_article_element(record: _Element) -> PubmedArticle | None:
    """Parse one ``<PubmedArticle>`` or ``<PubmedBookArticle>`` element.

    Returns None for records without a PMID and for other elements (e.g. ``DeleteCitation``).
    """
    name = local_name(record)
    if name == "PubmedArticle":
        return _parse_journal_article(record)
    if name == "PubmedBookArticle":
        return _parse_book_article(record)
    return None


# --------------------------------------------------------------------------- documents


def parse_pubmed_xml(data: bytes | str) -> list[PubmedArticle]:
    """Parse a whole ``<PubmedArticleSet>`` document (an ``efetch`` reply) held in memory.

    Args:
        data: the XML, as bytes (encoding taken from the XML declaration, UTF-8 by default) or
            text. A lone ``<PubmedArticle>`` root is accepted too.

    Returns:
        The records in document order (``PubmedArticle`` and ``PubmedBookArticle``); records
        without a PMID are skipped. An empty ``<PubmedArticleSet/>`` gives ``[]``.

    Raises:
        PubmedXMLError: empty input, malformed XML (message gives line and column), or a root
            element that is not PubMed XML (e.g. ``<eFetchResult><ERROR>``; its text is quoted).
    """
    if isinstance(data, str):
        data = _XML_DECLARATION.sub("", data, count=1).encode("utf-8")
    if not data.strip():
        raise PubmedXMLError("empty document (expected a PubmedArticleSet)")
    try:
        root = etree.fromstring(data, parser=safe_parser(huge_tree=True))
    except etree.XMLSyntaxError as exc:
        raise PubmedXMLError(f"not well-formed XML: {exc}") from exc
    name = local_name(root)
    if name in _RECORD_TAGS:
        records: list[_Element] = [root]
    elif name == "PubmedArticleSet":
        records = [el for el in root if local_name(el) in _RECORD_TAGS]
    else:
        detail = _text(root)[:200]
        raise PubmedXMLError(
            f"root element <{name or root.tag}> is not a PubmedArticleSet"
            + (f": {detail}" if detail else "")
        )
    out: list[PubmedArticle] = []
    for el in records:
        parsed = parse_article_element(el)
        if parsed is None:
            log.warning("skipping a PubMed record without a PMID")
            continue
        out.append(parsed)
    return out


def _open_source(source: str | Path | BinaryIO) -> tuple[IO[bytes], bool, str]:
    """(binary stream, whether we opened it, name for messages)."""
    if isinstance(source, str | Path):
        path = Path(source)
        if path.name.lower().endswith(".gz"):
            return cast(IO[bytes], gzip.open(path, "rb")), True, str(path)
        return path.open("rb"), True, str(path)
    return source, False, str(getattr(source, "name", "<stream>"))


def iter_pubmed_xml(source: str | Path | BinaryIO) -> Iterator[PubmedArticle]:
    """Stream the records of a PubMed XML file without loading it whole.

    Uses ``lxml.etree.iterparse``; each record element is cleared once parsed, so memory
    stays at one record whatever the file size (a baseline file is ~30,000 records).

    Args:
        source: a file path (``str`` or :class:`~pathlib.Path`; a name ending ``.gz`` is
            gunzipped on the fly) or an open binary stream of (already decompressed) XML.
            A stream passed in is not closed; a file opened here is closed when the iterator
            is exhausted or closed.

    Yields:
        :class:`PubmedArticle` in document order; records without a PMID and
        ``DeleteCitation`` blocks are skipped.

    Raises:
        PubmedXMLError: malformed or truncated XML, or a corrupt gzip file (the message names
            the file). lxml reads in chunks, so records before the fault may or may not have
            been yielded already.
        OSError: the file cannot be opened.
    """
    for item in iter_pubmed_updates(source):
        if isinstance(item, VersionedArticle):
            yield item.article


class VersionedArticle(BaseModel):
    """A record of a PubMed baseline or update file and its version: ``version`` is the
    ``Version`` attribute of its ``PMID`` element (``<PMID Version="2">``), 1 when absent."""

    article: PubmedArticle
    version: int = 1


class DeletedCitations(BaseModel):
    """A ``<DeleteCitation>`` block of a PubMed update file: the PMIDs it withdraws."""

    pmids: list[str]


PubmedUpdate = VersionedArticle | DeletedCitations
"""One item of a PubMed baseline / update file, in document order."""


def _pmid_version(record: _Element) -> int:
    """The ``Version`` attribute of a record's ``PMID`` (1 when absent or not a number)."""
    pmid = record.find("MedlineCitation/PMID")
    if pmid is None:
        pmid = record.find("BookDocument/PMID")
    raw = (pmid.get("Version") if pmid is not None else None) or "1"
    return int(raw) if raw.strip().isdigit() else 1


def _update_item(el: _Element) -> PubmedUpdate | None:
    """The item an element of a PubMed file stands for (``None``: a record without a PMID)."""
    if local_name(el) == "DeleteCitation":
        pmids = [p.strip() for p in el.itertext() if p.strip()]
        return DeletedCitations(pmids=[p for p in pmids if p.isdigit()])
    parsed = parse_article_element(el)
    return None if parsed is None else VersionedArticle(article=parsed, version=_pmid_version(el))


def iter_pubmed_updates(source: str | Path | BinaryIO) -> Iterator[PubmedUpdate]:
    """Stream the records and ``DeleteCitation`` blocks of a PubMed baseline or update file.

    Same reading as :func:`iter_pubmed_xml` (lxml ``iterparse``, each element cleared once
    parsed: constant memory whatever the file size), but each record comes with its PMID
    version (:class:`VersionedArticle`) and each ``<DeleteCitation>`` block is yielded as a
    :class:`DeletedCitations` (in update files it follows the records).

    Raises:
        PubmedXMLError: malformed or truncated XML, or a corrupt gzip file.
        OSError: the file cannot be opened.
    """
    stream, owned, name = _open_source(source)
    try:
        context = safe_iterparse(
            stream, events=("end",), tag=(*_RECORD_TAGS, "DeleteCitation"), huge_tree=True
        )
        try:
            for _event, el in context:
                item = _update_item(el)
                # Free the record and everything before it (the root keeps references).
                el.clear(keep_tail=True)
                parent = el.getparent()
                if parent is not None:
                    while el.getprevious() is not None:
                        del parent[0]
                if item is None:
                    log.warning("skipping a PubMed record without a PMID", file=name)
                    continue
                yield item
        except etree.XMLSyntaxError as exc:
            raise PubmedXMLError(f"malformed PubMed XML in {name}: {exc}") from exc
        except (gzip.BadGzipFile, EOFError) as exc:
            raise PubmedXMLError(f"corrupt gzip file {name}: {exc}") from exc
    finally:
        if owned:
            stream.close()


# --------------------------------------------------------------------------- evidence


def article_to_evidence(
    article: PubmedArticle,
    *,
    source: str = "pubmed",
    query: str | None = None,
    relevance: float = 0.0,
) -> Evidence:
    """Turn a parsed record into an :class:`~deepcritical.models.Evidence` item.

    The citation has ``source=source``, ``id`` and ``pmid`` = the PMID, the record's DOI,
    PMCID, title, authors, journal, year, date and ``url`` = ``https://pubmed.ncbi.nlm.nih.gov/
    <pmid>/``. ``content`` is :meth:`PubmedArticle.abstract_text`, or the title when the record
    has no abstract. ``is_preprint`` is set when a publication type is ``Preprint``. The
    citation's ``integrity_flags`` are the record's (``CommentsCorrections``) and those its
    publication types state (:func:`~deepcritical.models.flags_from_publication_types`).

    Args:
        article: the parsed record.
        source: the citation's source name (``"pubmed"``; ``"local"`` for the local corpus).
        query: the query that found it, if any.
        relevance: 0..1 (the caller's ranking).

    Raises:
        pydantic.ValidationError: ``relevance`` outside 0..1.
    """
    citation = Citation(
        source=source,
        id=article.pmid,
        pmid=article.pmid,
        doi=article.doi,
        pmcid=article.pmcid,
        title=article.title,
        authors=list(article.authors),
        journal=article.journal,
        year=article.year,
        date=article.date,
        url=PUBMED_URL.format(pmid=article.pmid),
        integrity_flags=union_flags(
            flags_from_publication_types(article.publication_types, "PubMed PublicationType"),
            article.integrity_flags,
        ),
    )
    return Evidence(
        content=article.abstract_text() or article.title,
        citation=citation,
        relevance=relevance,
        query=query,
        mesh_terms=list(article.mesh_terms),
        publication_types=list(article.publication_types),
        is_preprint=article.is_preprint,
    )
