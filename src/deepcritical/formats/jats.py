"""Parse JATS (NLM) full-text article XML: PubMed Central and Europe PMC open-access articles.

PMC and Europe PMC serve the same article XML (NCBI ``efetch db=pmc``, Europe PMC
``/{PMCID}/fullTextXML``, the ``.nxml`` files of the PMC open-access subset), following the
JATS / NLM Journal Archiving DTDs (v2.3 to 1.x). :func:`parse_jats` reads one ``<article>``
into a :class:`JatsArticle`; :meth:`JatsArticle.passages` cuts its text into the
:class:`~deepcritical.models.Passage` list of its one evidence item, and
:func:`jats_to_evidence` builds that item.

We parse with lxml rather than a PyPI JATS package (``pubmed_parser`` also sits on lxml, but
returns flat dictionaries, pulls in extra dependencies and leaves the parser's entity settings
to lxml's defaults): the parser never loads a DTD, never resolves an entity, never touches the
network, keeps lxml's size limits (``huge_tree=False``), and a document whose DOCTYPE declares
entities (XXE, billion laughs) is refused before it is parsed.

Text is reduced to plain text: inline markup (``<italic>``, ``<sup>``, ``<sub>``...) is
dropped without adding spaces, MathML becomes the concatenation of its tokens
(:func:`~deepcritical.formats.mathml.math_text`), LaTeX alternatives (``<tex-math>``) are
skipped, bibliographic cross-references (``<xref ref-type="bibr">``) are dropped with the
brackets and separators left around them, and runs of whitespace become one space.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol, cast

from lxml import etree
from pydantic import BaseModel, Field

from deepcritical.formats.mathml import local_name, math_text
from deepcritical.formats.pubmed_xml import PUBMED_URL, normalize_doi, normalize_pmcid
from deepcritical.formats.safe_xml import safe_iterparse, safe_parser
from deepcritical.models import (
    Citation,
    Evidence,
    IntegrityFlag,
    IntegrityKind,
    Passage,
    PassageKind,
    union_flags,
)

__all__ = [
    "JatsArticle",
    "JatsError",
    "JatsFigure",
    "JatsReference",
    "JatsSection",
    "JatsTable",
    "is_jats_file",
    "jats_to_evidence",
    "parse_jats",
    "read_jats",
]

_Element = etree._Element

PMC_URL = "https://pmc.ncbi.nlm.nih.gov/articles/{pmcid}/"
PASSAGE_SEPARATOR = "\n\n"
"""What joins the passages' texts into the full text their offsets point into."""

_XLINK_HREF = "{http://www.w3.org/1999/xlink}href"
_ENTITY_DECLARATION = re.compile(rb"<!ENTITY", re.IGNORECASE)
_ROOT_START = re.compile(rb"<(?![?!])")
# Inline elements whose text is not part of the sentence they sit in.
_SKIPPED_INLINE = frozenset({"tex-math", "graphic", "inline-graphic", "media", "object-id"})
# Blocks read separately (tables, figures) or not at all inside a paragraph.
_FLOATS = frozenset({"table-wrap", "fig", "supplementary-material", "fn", "table-wrap-group"})
# What is left of "[1], [2]" or "(3-5)" once the cross-references inside are dropped.
_EMPTY_BRACKETS = re.compile(r"\s*[\[(][\s,;\u2013\u2014\-]*[\])]")
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([.,;:)\]])")


class _EntityTable(Protocol):
    """The part of :class:`lxml.etree.DTD` that lxml-stubs leave out."""

    def iterentities(self) -> Iterator[object]: ...


class JatsError(ValueError):
    """A document that cannot be read as a JATS article: empty, truncated or malformed XML (the
    message gives lxml's reason with line and column), a DOCTYPE that declares entities, or a
    root element other than ``<article>``."""


class JatsTable(BaseModel):
    """One ``<table-wrap>``: ``label`` (``"Table 1"``), ``caption`` (its title and paragraphs),
    ``rows`` (each ``<tr>`` as its cells' texts, header rows first), ``footer``
    (``<table-wrap-foot>`` text) and ``section`` (the path of section titles it sits in; empty
    for tables in ``<floats-group>``)."""

    label: str = ""
    caption: str = ""
    rows: list[list[str]] = Field(default_factory=list)
    footer: str = ""
    section: list[str] = Field(default_factory=list)

    def text(self) -> str:
        """Caption, then one line per row with cells joined by ``" | "``, then the footer."""
        lines = [self.caption] if self.caption else []
        lines += [" | ".join(row) for row in self.rows]
        if self.footer:
            lines.append(self.footer)
        return "\n".join(lines)


class JatsFigure(BaseModel):
    """One ``<fig>``: ``label`` (``"Figure 2"``), ``caption`` text and ``section`` (as for
    :class:`JatsTable`)."""

    label: str = ""
    caption: str = ""
    section: list[str] = Field(default_factory=list)


class JatsSection(BaseModel):
    """One ``<sec>`` (or ``<ack>``): ``title`` (``""`` when it has none), ``paragraphs`` (the
    plain text of each ``<p>`` and ``<list>`` directly in it, in order) and its nested
    ``sections``."""

    title: str = ""
    paragraphs: list[str] = Field(default_factory=list)
    sections: list[JatsSection] = Field(default_factory=list)

    def walk(self, parent: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], JatsSection]]:
        """This section and every nested one, depth first, each with its path of titles."""
        path = (*parent, self.title) if self.title else parent
        out = [(path, self)]
        for sub in self.sections:
            out += sub.walk(path)
        return out


class JatsReference(BaseModel):
    """One ``<ref>`` of the reference list: ``label``, ``text`` (the citation as plain text),
    ``title`` (``<article-title>``) and its pub-ids (``pmid`` digits, ``doi`` normalised,
    ``pmcid`` ``"PMC..."``), ``None`` when absent."""

    id: str = ""
    label: str = ""
    text: str = ""
    title: str = ""
    pmid: str | None = None
    doi: str | None = None
    pmcid: str | None = None


class JatsArticle(BaseModel):
    """One JATS article, reduced to what DeepCritical reads.

    Fields and their XML origin (below ``front/article-meta`` unless stated):

    * ``pmid``, ``pmcid`` (``"PMC3166277"``), ``doi`` (normalised): ``article-id`` by
      ``pub-id-type`` (``pmid``, ``pmc``, ``doi``).
    * ``title``: ``title-group/article-title``; ``journal``: ``journal-meta`` title;
      ``year``: the first ``pub-date`` with a year; ``authors``: ``contrib[@contrib-type=
      "author"]`` as ``"Surname Initials"`` or the collaboration's name.
    * ``abstract``: the first ``abstract`` without an ``abstract-type`` (an author summary is
      not the abstract), its sections' paragraphs as ``"Title: text"`` separated by blank lines.
    * ``license``: ``permissions/license`` (its ``xlink:href``, else its ``license-type``, else
      its text), else ``copyright-statement``; ``None`` when the article states none.
    * ``sections``: ``body`` paragraphs outside any section (as one untitled section), the
      ``body/sec`` tree, then ``back/sec`` and ``back/ack`` (titled "Acknowledgments" when
      untitled).
    * ``tables``, ``figures``: every ``table-wrap`` and ``fig`` of the article, in order.
    * ``references``: ``back/ref-list/ref``.
    * ``integrity_flags``: the root's ``article-type`` (``retraction``, ``correction``,
      ``expression-of-concern``: the article is such a notice) and ``front``'s
      ``related-article`` elements of :data:`RELATED_ARTICLE_FLAGS`
      (``retraction-forward``: the article was retracted; ``correction-forward``: it was
      corrected...), the related article's text or link as the notice
      (:func:`jats_integrity_flags`).
    """

    title: str = ""
    abstract: str = ""
    pmid: str | None = None
    pmcid: str | None = None
    doi: str | None = None
    license: str | None = None
    journal: str | None = None
    year: int | None = None
    authors: list[str] = Field(default_factory=list)
    sections: list[JatsSection] = Field(default_factory=list)
    tables: list[JatsTable] = Field(default_factory=list)
    figures: list[JatsFigure] = Field(default_factory=list)
    references: list[JatsReference] = Field(default_factory=list)
    integrity_flags: list[IntegrityFlag] = Field(default_factory=list)

    def passages(self) -> list[Passage]:
        """The full text as passages: every section's paragraphs (section path, index within
        the section), then each table (caption and rows) and figure caption. Offsets point into
        the passages' texts joined by :data:`PASSAGE_SEPARATOR`."""
        pieces: list[tuple[PassageKind, list[str], int, str, str]] = []
        for top in self.sections:
            for titles, section in top.walk():
                pieces += [
                    (PassageKind.PARAGRAPH, list(titles), i, text, "")
                    for i, text in enumerate(section.paragraphs)
                ]
        pieces += [
            (PassageKind.TABLE, t.section, i, t.text(), t.label)
            for i, t in enumerate(self.tables)
            if t.text()
        ]
        pieces += [
            (PassageKind.FIGURE, f.section, i, f.caption, f.label)
            for i, f in enumerate(self.figures)
            if f.caption
        ]
        out: list[Passage] = []
        offset = 0
        for kind, path, index, text, label in pieces:
            end = offset + len(text)
            out.append(
                Passage(
                    kind=kind,
                    section=path,
                    index=index,
                    start=offset,
                    end=end,
                    text=text,
                    label=label,
                )
            )
            offset = end + len(PASSAGE_SEPARATOR)
        return out


# --------------------------------------------------------------------------- text


def _squash(text: str) -> str:
    return " ".join(text.split())


def _inline(el: _Element, parts: list[str]) -> None:
    """Append the text of ``el``'s content (not its tail) to ``parts``."""
    parts.append(el.text or "")
    for child in el:
        name = local_name(child)
        if name == "math":
            parts.append(math_text(child))
        elif name == "xref" and child.get("ref-type") == "bibr":
            pass
        elif name in ("ext-link", "uri") and not _text(child):
            parts.append(child.get(_XLINK_HREF, ""))  # a bare link: its address is its text
        elif name and name not in _SKIPPED_INLINE and name not in _FLOATS:
            _inline(child, parts)
        parts.append(child.tail or "")


def _text(el: _Element | None) -> str:
    """Plain text of ``el``: inline markup and MathML flattened, citations dropped, whitespace
    squashed; ``""`` for ``None``."""
    if el is None:
        return ""
    parts: list[str] = []
    _inline(el, parts)
    text = _EMPTY_BRACKETS.sub("", _squash("".join(parts)))
    return _SPACE_BEFORE_PUNCT.sub(r"\1", text).strip()


def _own_text(el: _Element) -> list[str]:
    """The text pieces of ``el`` in document order, leaving out ``pub-id`` and ``comment``
    elements (their tails kept), for joining with spaces."""
    out = [el.text or ""]
    for child in el:
        if local_name(child) not in ("pub-id", "comment"):
            out += _own_text(child)
        out.append(child.tail or "")
    return out


def _child(el: _Element, name: str) -> _Element | None:
    return next((c for c in el if local_name(c) == name), None)


def _children(el: _Element, name: str) -> list[_Element]:
    return [c for c in el if local_name(c) == name]


def _descendants(el: _Element, name: str) -> list[_Element]:
    return [d for d in el.iter() if local_name(d) == name]


def _first(el: _Element, name: str) -> _Element | None:
    return next((d for d in el.iter() if local_name(d) == name), None)


def _caption(el: _Element) -> str:
    caption = _child(el, "caption")
    if caption is None:
        return ""
    parts = [_text(c) for c in caption if local_name(c) in ("title", "p")]
    return " ".join(p for p in parts if p)


# --------------------------------------------------------------------------- parts


def _pub_ids(el: _Element, tag: str) -> dict[str, str]:
    """``pub-id-type`` -> the id, for the ``tag`` elements (``article-id``, ``pub-id``) below
    ``el``, normalised (``pmc`` -> ``PMC...``, DOI lower-cased); unparseable ids are left out."""
    out: dict[str, str] = {}
    for node in _descendants(el, tag):
        kind, value = node.get("pub-id-type", ""), _text(node)
        normal: str | None
        if kind == "pmid":
            normal = value if value.isdigit() else None
        elif kind in ("pmc", "pmcid"):
            kind, normal = "pmc", normalize_pmcid(value)
        elif kind == "doi":
            normal = normalize_doi(value)
        else:
            continue
        if normal and kind not in out:
            out[kind] = normal
    return out


def _license(meta: _Element) -> str | None:
    permissions = _first(meta, "permissions")
    scope = permissions if permissions is not None else meta
    lic = _first(scope, "license")
    if lic is not None:
        value = lic.get(_XLINK_HREF) or lic.get("license-type") or _text(lic)
        if value:
            return value.strip()
    statement = _text(_first(scope, "copyright-statement"))
    return statement or None


def _authors(meta: _Element) -> list[str]:
    out: list[str] = []
    for contrib in _descendants(meta, "contrib"):
        if contrib.get("contrib-type") != "author":
            continue
        name = _child(contrib, "name")
        if name is not None:
            surname = _text(_child(name, "surname"))
            given = _text(_child(name, "given-names"))
            initials = "".join(w[0] for w in re.split(r"[\s.\-]+", given) if w)
            if surname:
                out.append(f"{surname} {initials}".strip())
        else:
            collab = _text(_child(contrib, "collab"))
            if collab:
                out.append(collab)
    return out


def _year(meta: _Element) -> int | None:
    for date in _children(meta, "pub-date"):
        year = _text(_child(date, "year"))
        if year.isdigit():
            return int(year)
    return None


def _abstract(meta: _Element) -> str:
    abstract = next(
        (a for a in _children(meta, "abstract") if a.get("abstract-type") is None), None
    )
    if abstract is None:
        return ""
    paragraphs: list[str] = []
    for path, section in _section(abstract).walk():
        label = path[-1] if path else ""
        paragraphs += [f"{label}: {p}" if label else p for p in section.paragraphs]
    return PASSAGE_SEPARATOR.join(paragraphs)


def _paragraph(el: _Element) -> str:
    if local_name(el) == "list":
        items = [_text(p) for p in _descendants(el, "p")] or [_text(el)]
        return "; ".join(i for i in items if i)
    return _text(el)


def _section(el: _Element, title: str = "") -> JatsSection:
    """A ``sec``-like element: its title, its ``p``/``list`` children and nested ``sec``s."""
    heading = _text(_child(el, "title")) or title
    paragraphs = [t for t in (_paragraph(c) for c in el if local_name(c) in ("p", "list")) if t]
    subs = [_section(c) for c in el if local_name(c) == "sec"]
    return JatsSection(title=heading, paragraphs=paragraphs, sections=subs)


def _body_sections(root: _Element) -> list[JatsSection]:
    out: list[JatsSection] = []
    body = _child(root, "body")
    if body is not None:
        loose = _section(body)
        if loose.paragraphs:
            out.append(JatsSection(paragraphs=loose.paragraphs))
        out += loose.sections
    back = _child(root, "back")
    if back is not None:
        for c in back:
            name = local_name(c)
            if name == "sec":
                out.append(_section(c))
            elif name == "ack":
                out.append(_section(c, "Acknowledgments"))
    return out


def _section_path(el: _Element) -> list[str]:
    path: list[str] = []
    parent = el.getparent()
    while parent is not None:
        if local_name(parent) == "sec":
            title = _text(_child(parent, "title"))
            if title:
                path.insert(0, title)
        parent = parent.getparent()
    return path


def _table(el: _Element) -> JatsTable:
    rows: list[list[str]] = []
    for tr in _descendants(el, "tr"):
        cells = [_text(c) for c in tr if local_name(c) in ("td", "th")]
        if any(cells):
            rows.append(cells)
    foot = _child(el, "table-wrap-foot")
    return JatsTable(
        label=_text(_child(el, "label")),
        caption=_caption(el),
        rows=rows,
        footer=_text(foot) if foot is not None else "",
        section=_section_path(el),
    )


def _reference(el: _Element) -> JatsReference:
    citation = next(
        (c for c in el if local_name(c) in ("mixed-citation", "element-citation", "citation")),
        None,
    )
    if citation is None:
        return JatsReference(id=el.get("id", ""), label=_text(_child(el, "label")))
    ids = _pub_ids(citation, "pub-id")
    # Element citations (and some mixed ones) have no spaces between their parts.
    text = _SPACE_BEFORE_PUNCT.sub(r"\1", _squash(" ".join(_own_text(citation))))
    return JatsReference(
        id=el.get("id", ""),
        label=_text(_child(el, "label")),
        text=text,
        title=_text(_first(citation, "article-title")),
        pmid=ids.get("pmid"),
        doi=ids.get("doi"),
        pmcid=ids.get("pmc"),
    )


# --------------------------------------------------------------------------- documents


def _refuse_entities(data: bytes) -> None:
    """Raise :class:`JatsError` when the prologue (everything before the root element)
    declares an entity: XXE and entity bombs need one, real PMC articles never do."""
    prologue = data
    for match in _ROOT_START.finditer(data):
        # The root starts at the first "<" that opens neither a declaration nor a PI and lies
        # outside the DOCTYPE's internal subset.
        before = data[: match.start()]
        if before.count(b"[") <= before.count(b"]"):
            prologue = before
            break
    if _ENTITY_DECLARATION.search(prologue):
        raise JatsError("the DOCTYPE declares entities (refused: XXE or an entity bomb)")


def parse_jats(data: bytes | str) -> JatsArticle:
    """Parse one JATS ``<article>`` document held in memory.

    Args:
        data: the XML as bytes (encoding from its declaration, UTF-8 by default) or text: an
            ``<article>``, or NCBI efetch's ``<pmc-articleset>`` holding one.

    Returns:
        The article; fields it lacks are empty or ``None``.

    Raises:
        JatsError: empty input, a DOCTYPE declaring entities, truncated or malformed XML (the
            message says so, with lxml's line and column), a root other than ``<article>``
            (e.g. a PubMed ``<PubmedArticleSet>``), or a ``<pmc-articleset>`` that does not
            hold exactly one article.
    """
    if isinstance(data, str):
        data = re.sub(r"^\s*<\?xml[^>]*\?>", "", data, count=1).encode("utf-8")
    if not data.strip():
        raise JatsError("empty document (expected a JATS <article>)")
    _refuse_entities(data)
    try:
        root = etree.fromstring(data, parser=safe_parser(huge_tree=False))
    except etree.XMLSyntaxError as exc:
        if "amplification" in str(exc):  # libxml2's own guard, for encodings the scan misses
            raise JatsError(f"entity bomb refused: {exc}") from exc
        ended = data.rstrip().endswith(b">") and b"</article>" in data[-256:]
        reason = "malformed" if ended else "truncated (it ends before </article>)"
        raise JatsError(f"{reason} XML: {exc}") from exc
    docinfo = root.getroottree().docinfo
    dtd = docinfo.internalDTD
    if dtd is not None and any(True for _ in cast(_EntityTable, dtd).iterentities()):
        raise JatsError("the DOCTYPE declares entities (refused: XXE or an entity bomb)")
    if local_name(root) == "pmc-articleset":  # NCBI efetch db=pmc wraps the article
        articles = [el for el in root if local_name(el) == "article"]
        if len(articles) != 1:
            raise JatsError(f"the <pmc-articleset> holds {len(articles)} articles (expected 1)")
        root = articles[0]
    if local_name(root) != "article":
        raise JatsError(f"root element <{local_name(root) or root.tag}> is not a JATS <article>")
    return _article(root)


ARTICLE_TYPE_FLAGS: dict[str, IntegrityKind] = {
    "retraction": IntegrityKind.RETRACTION_NOTICE,
    "correction": IntegrityKind.CORRECTION,
    "expression-of-concern": IntegrityKind.EXPRESSION_OF_CONCERN,
}
"""``article/@article-type`` -> the flag of an article that is such a notice."""

RELATED_ARTICLE_FLAGS: dict[str, tuple[IntegrityKind, str]] = {
    "retraction-forward": (IntegrityKind.RETRACTED, "Retraction in"),
    "retracted-article": (IntegrityKind.RETRACTION_NOTICE, "Retraction of"),
    "correction-forward": (IntegrityKind.ERRATUM, "Correction in"),
    "corrected-article": (IntegrityKind.CORRECTION, "Correction of"),
    "object-of-concern": (IntegrityKind.EXPRESSION_OF_CONCERN, "Expression of concern for"),
}
"""``related-article/@related-article-type`` -> (flag kind, words the notice starts with),
after the JATS tag library; other types (``commentary``, ``companion``...) give no flag."""


def jats_integrity_flags(root: _Element) -> list[IntegrityFlag]:
    """The integrity flags of a JATS ``<article>`` (see :attr:`JatsArticle.integrity_flags`):
    ``<related-article related-article-type="retraction-forward" ext-link-type="doi"
    xlink:href="10.1/x">`` gives a ``retracted`` flag with the notice ``"Retraction in: doi
    10.1/x"`` (the element's text when it has one) and the source ``"JATS related-article
    retraction-forward"``."""
    flags: list[IntegrityFlag] = []
    article_type = (root.get("article-type") or "").strip().lower()
    if article_type in ARTICLE_TYPE_FLAGS:
        flags.append(
            IntegrityFlag(
                kind=ARTICLE_TYPE_FLAGS[article_type],
                notice=f"article type: {article_type}",
                source="JATS article-type",
            )
        )
    front = _child(root, "front")
    related = _descendants(front, "related-article") if front is not None else []
    for el in related:
        relation = (el.get("related-article-type") or "").strip().lower()
        if relation not in RELATED_ARTICLE_FLAGS:
            continue
        kind, words = RELATED_ARTICLE_FLAGS[relation]
        target = _text(el) or " ".join(
            p for p in (el.get("ext-link-type", ""), el.get(_XLINK_HREF, "")) if p
        )
        flags.append(
            IntegrityFlag(
                kind=kind,
                notice=f"{words}: {target}" if target else words,
                source=f"JATS related-article {relation}",
            )
        )
    return union_flags(flags)


def _article(root: _Element) -> JatsArticle:
    front = _child(root, "front")
    meta = _child(front, "article-meta") if front is not None else None
    journal_meta = _child(front, "journal-meta") if front is not None else None
    ids = _pub_ids(meta, "article-id") if meta is not None else {}
    title_group = _child(meta, "title-group") if meta is not None else None
    back = _child(root, "back")
    ref_list = _first(back, "ref-list") if back is not None else None
    return JatsArticle(
        title=_text(_child(title_group, "article-title")) if title_group is not None else "",
        abstract=_abstract(meta) if meta is not None else "",
        pmid=ids.get("pmid"),
        pmcid=ids.get("pmc"),
        doi=ids.get("doi"),
        license=_license(meta) if meta is not None else None,
        journal=_text(_first(journal_meta, "journal-title")) or None
        if journal_meta is not None
        else None,
        year=_year(meta) if meta is not None else None,
        authors=_authors(meta) if meta is not None else [],
        sections=_body_sections(root),
        tables=[_table(t) for t in _descendants(root, "table-wrap")],
        figures=[
            JatsFigure(
                label=_text(_child(f, "label")), caption=_caption(f), section=_section_path(f)
            )
            for f in _descendants(root, "fig")
        ],
        references=[_reference(r) for r in _children(ref_list, "ref")]
        if ref_list is not None
        else [],
        integrity_flags=jats_integrity_flags(root),
    )


def read_jats(path: str | Path) -> JatsArticle:
    """Parse the JATS file at ``path`` (``.nxml`` / ``.xml``), as :func:`parse_jats`.

    Raises:
        JatsError: as :func:`parse_jats`, the message naming the file.
        OSError: the file cannot be read.
    """
    try:
        return parse_jats(Path(path).read_bytes())
    except JatsError as exc:
        raise JatsError(f"{path}: {exc}") from exc


def is_jats_file(path: str | Path) -> bool:
    """True when the file's root element is ``<article>`` (JATS), False for anything else
    (PubMed XML's ``<PubmedArticleSet>``, malformed XML). Reads only up to the root's start
    tag, with the same hardened settings (no DTD, entities or network).

    Raises:
        OSError: the file cannot be opened.
    """
    with Path(path).open("rb") as stream:
        context = safe_iterparse(stream, events=("start",), huge_tree=False)
        try:
            for _event, el in context:
                return local_name(el) == "article"
        except etree.XMLSyntaxError:
            return False
    return False


def jats_to_evidence(
    article: JatsArticle,
    *,
    source: str = "local",
    query: str | None = None,
    relevance: float = 0.0,
) -> Evidence:
    """Turn a parsed article into its one :class:`~deepcritical.models.Evidence` item, with the
    full text as its ``passages`` (``full_text`` is then True).

    The citation's ``id`` is the PMID, else the PMCID, else the DOI (else the title); ``url``
    is the PubMed page, else the PMC page, else ``https://doi.org/<doi>``. ``content`` is the
    abstract, or the title when there is none. The citation carries the article's integrity
    flags.

    Args:
        article: the parsed article.
        source: the citation's source name (``"local"`` for the local corpus).
        query: the query that found it, if any.
        relevance: 0..1 (the caller's ranking).

    Raises:
        pydantic.ValidationError: ``relevance`` outside 0..1.
    """
    if article.pmid:
        url: str | None = PUBMED_URL.format(pmid=article.pmid)
    elif article.pmcid:
        url = PMC_URL.format(pmcid=article.pmcid)
    else:
        url = f"https://doi.org/{article.doi}" if article.doi else None
    citation = Citation(
        source=source,
        id=article.pmid or article.pmcid or article.doi or article.title,
        pmid=article.pmid,
        pmcid=article.pmcid,
        doi=article.doi,
        title=article.title,
        authors=list(article.authors),
        journal=article.journal,
        year=article.year,
        url=url,
        integrity_flags=list(article.integrity_flags),
    )
    return Evidence(
        content=article.abstract or article.title,
        citation=citation,
        relevance=relevance,
        query=query,
        passages=article.passages(),
    )
