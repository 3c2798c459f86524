"""Bibliographic export of citations for reference managers: RIS, BibTeX and CSL-JSON.

:func:`export_references` writes a run's references (the report's, in the report's order and
numbering) or every evidence item of the run in one of three formats; :func:`to_ris`,
:func:`to_bibtex` and :func:`to_csl_json` write any list of
:class:`~deepcritical.models.Citation`. Each returns the whole file as one ``str`` (UTF-8 text;
write it with ``encoding="utf-8"``). The writers are maintained libraries: ``rispy`` for RIS,
``bibtexparser`` (v2) for BibTeX, the standard library's ``json`` for CSL-JSON.

What is written, per record:

* **type**: a journal article by default (RIS ``JOUR``, BibTeX ``@article``, CSL
  ``article-journal``); a ClinicalTrials.gov registration (from the trials source, or a record
  whose only identifier is an NCT ID) as a report (RIS ``RPRT``, BibTeX ``@techreport`` with
  ``institution = {ClinicalTrials.gov}``, ``number`` = NCT ID, CSL ``report`` with
  ``publisher``, ``number`` and ``genre``); a web page (the web source, with no PMID, DOI or
  journal) as a web page (RIS ``ELEC``, BibTeX ``@misc``, CSL ``webpage``).
* **title**: the record's own title; an untitled record (every PubMedQA corpus record) is
  exported without a title and with a note saying it has none: the title the web app derives
  from its text is display data, cut to a sentence, never exported.
* **authors**: PubMed's ``"Surname Initials"`` (``"van der Berg JA Jr"``) becomes family
  ``van der Berg``, given ``J. A.``, suffix ``Jr``; ``"Family, Given"`` is split at its comma;
  every other name, organisations included (and every author of a trial record, the trial's
  sponsor), is kept whole as a literal name (RIS: the name without commas; BibTeX: braced, so
  it is one name; CSL: ``{"literal": ...}``). A name is never guessed into parts.
* **venue, dates**: journal (RIS ``T2``, the RIS specification's secondary title of a journal
  article; BibTeX ``journal``; CSL ``container-title``), year (RIS ``PY``, BibTeX ``year``),
  the ISO date prefix (RIS ``DA`` as ``YYYY/MM/DD/``, BibTeX ``date`` (biblatex), CSL
  ``issued`` date parts).
* **identifiers**: DOI (RIS ``DO``, BibTeX ``doi``, CSL ``DOI``), URL (RIS ``UR``, BibTeX
  ``url``, CSL ``URL``), PMID (RIS ``AN``, the accession number, as EndNote and PubMed-derived
  RIS files carry it; BibTeX ``pmid``; CSL ``PMID``), PMCID (RIS ``C2``, EndNote's "Custom 2 =
  PMCID" convention for journal articles; BibTeX ``pmcid``; CSL ``PMCID``), NCT ID (RIS ``AN``
  of a trial record; in every format a note ``ClinicalTrials.gov: NCT...``). RIS repeats PMID
  and PMCID as ``N1`` notes too, since ``AN`` and ``C2`` are conventions, not the
  specification's names. RIS ``DB`` names the source database (``PubMed``...), CSL ``source``
  likewise; RIS ``ID`` is the record's BibTeX key, as is the CSL ``id``.
* **notes**: RIS ``N1`` (one line each), BibTeX ``note`` and CSL ``note`` (joined with
  ``"; "``): the caller's label (``export_references`` says which report reference or evidence
  item it is, with its study design), the title note, the NCT ID and one note per kind of
  integrity flag (``Integrity flag: RETRACTED: Retraction in: ... PMID: 123``).

Keys (BibTeX key, CSL ``id``, RIS ``ID``) are ``<first author><year><first title word>`` in
lower-case ASCII (``muller2020effect``; ``anon`` and ``nd`` stand in for a missing author or
year); keys shared by several records get ``a``, ``b``... suffixes in order, so the keys of a
list are unique and the same for the same list.

Text is data: every value is cleaned of control characters (C0/C1, lone surrogates, bidi
overrides) and its white space, line breaks included, collapsed to single spaces, so no value
can start a new RIS line. BibTeX values are escaped for LaTeX and for BibTeX's brace counting
(``{`` -> ``\\textbraceleft{}``, ``}`` -> ``\\textbraceright{}``, ``\\`` ->
``\\textbackslash{}``, ``% & _ # $`` -> ``\\% \\& \\_ \\# \\$``, ``~ ^`` ->
``\\textasciitilde{} \\textasciicircum{}``), so every brace in the file is one the writer put
there and no title can close its field or add one; URLs and DOIs are written verbatim except
braces, backslashes and double quotes, which are percent-encoded. Non-ASCII text stays UTF-8
(biber, bibtex8 and the reference managers read it). CSL-JSON is ``json.dumps`` output.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

import rispy
from bibtexparser import model as bib
from bibtexparser.entrypoint import write_string
from bibtexparser.library import Library

from deepcritical.models import (
    SOURCE_LABELS,
    Citation,
    Reference,
    RunResult,
    SourceName,
    flag_labels,
)

__all__ = [
    "EXPORT_FORMATS",
    "EXPORT_SUFFIXES",
    "ExportFormat",
    "ExportScope",
    "Name",
    "citation_keys",
    "export_references",
    "parse_author",
    "record_kind",
    "to_bibtex",
    "to_csl_json",
    "to_ris",
]

ExportFormat = Literal["ris", "bibtex", "csljson"]
"""A reference-manager format: RIS, BibTeX or CSL-JSON."""
ExportScope = Literal["references", "evidence"]
"""What is exported of a run: the report's references, or every evidence item."""
EXPORT_FORMATS: tuple[ExportFormat, ...] = get_args(ExportFormat)
EXPORT_SUFFIXES: dict[ExportFormat, str] = {
    "ris": ".ris",
    "bibtex": ".bib",
    "csljson": ".csl.json",
}
"""The file suffix of each format (``report.ris``, ``report.bib``, ``report.csl.json``)."""

RecordKind = Literal["article", "trial", "webpage"]

TRIAL_REGISTRY = "ClinicalTrials.gov"
NO_TITLE_NOTE = "The record has no title of its own (none is exported)"

_RIS_TYPES: dict[RecordKind, str] = {"article": "JOUR", "trial": "RPRT", "webpage": "ELEC"}
_BIB_TYPES: dict[RecordKind, str] = {"article": "article", "trial": "techreport", "webpage": "misc"}
_CSL_TYPES: dict[RecordKind, str] = {
    "article": "article-journal",
    "trial": "report",
    "webpage": "webpage",
}

# ---------------------------------------------------------------------------------- text


_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def clean_text(text: str | None) -> str:
    """``text`` as one line of data: control characters (C0, C1), lone surrogates and bidi
    embedding/override/isolate characters removed, every run of white space (tabs, line
    feeds, ``U+2028``... included) one space, stripped; ``""`` for ``None``."""
    if not text:
        return ""
    kept = "".join(
        ch
        for ch in text
        if ch.isspace()
        or (unicodedata.category(ch) not in {"Cc", "Cs"} and ch not in _BIDI_CONTROLS)
    )
    return " ".join(kept.split())


def _ascii_word(text: str) -> str:
    """``text`` folded to lower-case ASCII letters and digits (``Müller`` -> ``muller``)."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]", "", folded.lower())


# ------------------------------------------------------------------------------- records


def record_kind(citation: Citation) -> RecordKind:
    """What the record is: ``"trial"`` for a ClinicalTrials.gov registration (the trials
    source, or an NCT ID with no PMID, PMCID, DOI or journal), ``"webpage"`` for a page of the
    web source with none of those, else ``"article"``."""
    published = bool(citation.pmid or citation.pmcid or citation.doi or citation.journal)
    if citation.source == SourceName.CLINICALTRIALS or (citation.nct_id and not published):
        return "trial"
    if citation.source == SourceName.WEB and not published:
        return "webpage"
    return "article"


@dataclass(frozen=True)
class Name:
    """An author's name: ``family``, ``given`` (initials as ``"J. A."`` or given names) and
    ``suffix`` (``"Jr"``), or ``literal`` alone for a name kept whole (an organisation)."""

    family: str = ""
    given: str = ""
    suffix: str = ""
    literal: str = ""


_PUBMED_NAME = re.compile(
    r"^(?P<family>[^\W\d_][\w'’.\- ]*?)\s+(?P<initials>[A-Z]{1,4})"
    r"(?:\s+(?P<suffix>Jr|Sr|[IVX]{1,4}|2nd|3rd|[4-9]th))?$"
)
_ORGANISATION_WORDS = frozenset(
    {
        "ag",
        "agency",
        "alliance",
        "association",
        "board",
        "center",
        "centre",
        "collaboration",
        "collaborative",
        "committee",
        "company",
        "consortium",
        "corp",
        "corporation",
        "council",
        "department",
        "federation",
        "foundation",
        "gmbh",
        "group",
        "health",
        "hospital",
        "inc",
        "institut",
        "institute",
        "institutes",
        "investigators",
        "laboratories",
        "limited",
        "llc",
        "ltd",
        "ministry",
        "network",
        "organisation",
        "organization",
        "pharma",
        "pharmaceutical",
        "pharmaceuticals",
        "plc",
        "school",
        "service",
        "services",
        "society",
        "srl",
        "study",
        "team",
        "trialists",
        "trust",
        "universidad",
        "university",
        "universität",
        "université",
        "working",
        "and",
        "&",
        "of",
        "for",
        "the",
    }
)


def _is_organisation(name: str) -> bool:
    words = {w.strip(".,()").lower() for w in name.split()}
    return bool(words & _ORGANISATION_WORDS)


def _initials(letters: str) -> str:
    return " ".join(f"{letter}." for letter in letters)


def parse_author(name: str, *, organisation: bool = False) -> Name:
    """An author string of a record as a :class:`Name`.

    PubMed's ``"Surname Initials [Suffix]"`` (``"Smith JA"``, ``"van der Berg A Jr"``) gives
    family, initials (``"J. A."``) and suffix; ``"Family, Given"`` is split at its one comma;
    anything else (one word, ``"Given Family"`` of OpenAlex or the web, an organisation:
    a name with a word such as *group*, *consortium*, *university*, *Inc*, *of*) is kept whole
    as ``literal``, as is every name when ``organisation`` is true. Control characters and
    runs of white space are cleaned first.
    """
    text = clean_text(name)
    if organisation or not text or _is_organisation(text):
        return Name(literal=text)
    match = _PUBMED_NAME.match(text)
    if match and len(match["family"].split()) <= 4:
        return Name(
            family=match["family"].strip(),
            given=_initials(match["initials"]),
            suffix=match["suffix"] or "",
        )
    if text.count(",") == 1:
        family, given = (part.strip() for part in text.split(","))
        if family and given:
            return Name(family=family, given=given)
    return Name(literal=text)


@dataclass(frozen=True)
class _Record:
    """A citation read once for every format: cleaned text, parsed names, kind, notes."""

    citation: Citation
    kind: RecordKind
    key: str
    title: str
    names: tuple[Name, ...]
    journal: str
    year: int | None
    date_parts: tuple[int, ...]
    doi: str
    url: str
    pmid: str
    pmcid: str
    nct_id: str
    database: str
    notes: tuple[str, ...]


_ISO_DATE = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?")


def _date_parts(citation: Citation) -> tuple[int, ...]:
    """``(year, month, day)`` as far as the record's ISO date prefix gives them (checked:
    month 1-12, day 1-31), else ``(year,)``, else ``()``."""
    match = _ISO_DATE.match(citation.date or "")
    if match:
        parts = [int(p) for p in match.groups() if p is not None]
        if len(parts) > 1 and not 1 <= parts[1] <= 12:
            parts = parts[:1]
        if len(parts) > 2 and not 1 <= parts[2] <= 31:
            parts = parts[:2]
        return tuple(parts)
    return (citation.year,) if citation.year else ()


def _title(citation: Citation) -> tuple[str, str | None]:
    """The title to export and the note it needs (``None`` for the record's own title): a
    record without a title of its own is exported without one, with a note, never with a
    title made up or cut from its text."""
    own = clean_text(citation.title)
    if own:
        return own, None
    return "", NO_TITLE_NOTE


_STOPWORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "as",
        "at",
        "by",
        "for",
        "from",
        "in",
        "into",
        "is",
        "of",
        "on",
        "or",
        "the",
        "to",
        "with",
        "does",
        "do",
        "are",
        "was",
        "were",
    }
)


def _base_key(record_names: Sequence[Name], year: int | None, title: str) -> str:
    first = record_names[0] if record_names else Name()
    author = _ascii_word(first.family) or _ascii_word((first.literal.split() or [""])[0])
    words = [_ascii_word(w) for w in title.split()]
    word = next((w for w in words if w and w not in _STOPWORDS), "")
    return f"{(author or 'anon')[:24]}{year or 'nd'}{word[:24]}"


def _letters(n: int) -> str:
    """1 -> ``a``, 26 -> ``z``, 27 -> ``aa``..."""
    out = ""
    while n > 0:
        n, rest = divmod(n - 1, 26)
        out = chr(ord("a") + rest) + out
    return out


def _unique_keys(bases: Sequence[str]) -> list[str]:
    counts = Counter(bases)
    used = {b for b in bases if counts[b] == 1}
    suffix: Counter[str] = Counter()
    keys: list[str] = []
    for base in bases:
        if counts[base] == 1:
            keys.append(base)
            continue
        while True:
            suffix[base] += 1
            key = base + _letters(suffix[base])
            if key not in used:
                break
        used.add(key)
        keys.append(key)
    return keys


def citation_keys(citations: Sequence[Citation]) -> list[str]:
    """The keys of ``citations`` (BibTeX key, CSL ``id``, RIS ``ID``), in order: unique,
    ``[a-z0-9]`` only, the same for the same list (see the module docstring)."""
    return [r.key for r in _records(citations, None)]


def _records(citations: Sequence[Citation], labels: Sequence[str] | None) -> list[_Record]:
    if labels is not None and len(labels) != len(citations):
        raise ValueError(f"{len(labels)} labels for {len(citations)} citations")
    drafts: list[tuple[Citation, RecordKind, str, tuple[Name, ...], list[str]]] = []
    for i, citation in enumerate(citations):
        kind = record_kind(citation)
        title, title_note = _title(citation)
        names = tuple(
            parse_author(a, organisation=kind == "trial") for a in citation.authors if clean_text(a)
        )
        notes = [clean_text(labels[i])] if labels is not None and clean_text(labels[i]) else []
        if title_note:
            notes.append(title_note)
        drafts.append((citation, kind, title, names, notes))
    keys = _unique_keys(
        [_base_key(names, _date_year(c), title) for c, _, title, names, _ in drafts]
    )
    records: list[_Record] = []
    for (citation, kind, title, names, notes), key in zip(drafts, keys, strict=True):
        nct = clean_text(citation.nct_id)
        if nct:
            notes.append(f"{TRIAL_REGISTRY}: {nct}")
        notes += [
            clean_text(f"Integrity flag: {label}")
            for label in flag_labels(citation.integrity_flags)
        ]
        records.append(
            _Record(
                citation=citation,
                kind=kind,
                key=key,
                title=title,
                names=names,
                journal=clean_text(citation.journal),
                year=_date_year(citation),
                date_parts=_date_parts(citation),
                doi=clean_text(citation.doi).replace(" ", ""),
                url=clean_text(citation.url).replace(" ", "%20"),
                pmid=clean_text(citation.pmid),
                pmcid=clean_text(citation.pmcid),
                nct_id=nct,
                database=clean_text(SOURCE_LABELS.get(citation.source, citation.source)),
                notes=tuple(notes),
            )
        )
    return records


def _date_year(citation: Citation) -> int | None:
    return citation.year or (_date_parts(citation) or (None,))[0]


# ------------------------------------------------------------------------------------ RIS


class _RisWriter(rispy.RisWriter):  # type: ignore[misc]  # rispy ships no type hints
    """rispy's RIS writer without its ``1.``, ``2.`` header line before each record (the
    documented extension point: an empty header is not written)."""

    def set_header(self, count: int) -> str:
        return ""


def _ris_name(name: Name) -> str:
    if name.literal:
        return " ".join(name.literal.replace(",", " ").split())
    return ", ".join(p for p in (name.family, name.given, name.suffix) if p)


def _ris_entry(record: _Record) -> dict[str, Any]:
    entry: dict[str, Any] = {"type_of_reference": _RIS_TYPES[record.kind], "id": record.key}
    if record.title:
        entry["title"] = record.title
    if record.names:
        entry["authors"] = [_ris_name(n) for n in record.names]
    if record.journal:
        entry["secondary_title"] = record.journal
    if record.year:
        entry["year"] = str(record.year)
    if record.date_parts:
        parts = [f"{record.date_parts[0]:04d}", *(f"{p:02d}" for p in record.date_parts[1:])]
        entry["date"] = "/".join([*parts, "", ""][:3]) + "/"
    if record.doi:
        entry["doi"] = record.doi
    if record.url:
        entry["urls"] = [record.url]
    accession = record.pmid or (record.nct_id if record.kind == "trial" else "")
    if accession:
        entry["accession_number"] = accession
    if record.pmcid:
        entry["custom2"] = record.pmcid
    if record.database:
        entry["name_of_database"] = record.database
    if record.kind == "trial":
        entry["publisher"] = TRIAL_REGISTRY
    ids = [f"PMID: {record.pmid}"] if record.pmid else []
    ids += [f"PMCID: {record.pmcid}"] if record.pmcid else []
    notes = [*record.notes, *ids]
    if notes:
        entry["notes"] = notes
    return entry


def to_ris(citations: Sequence[Citation], *, labels: Sequence[str] | None = None) -> str:
    """``citations`` as an RIS file (``TY  - JOUR`` ... ``ER  - `` per record, in order).

    Args:
        citations: the records, in the order they are written.
        labels: one note per citation (``N1``), e.g. which report reference it is; optional.

    Returns:
        The file's text: ``TAG  - value`` lines, records separated by a blank line. Tags:
        ``TY ID TI AU T2 PY DA DO UR AN C2 DB PB N1`` (see the module docstring).

    Raises:
        ValueError: ``labels`` is not one per citation.
    """
    entries = [_ris_entry(r) for r in _records(citations, labels)]
    return str(_RisWriter().formats(entries)) if entries else ""


# --------------------------------------------------------------------------------- BibTeX

_LATEX_ESCAPES = {
    "\\": r"\textbackslash{}",
    "{": r"\textbraceleft{}",
    "}": r"\textbraceright{}",
    "%": r"\%",
    "&": r"\&",
    "_": r"\_",
    "#": r"\#",
    "$": r"\$",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
_LATEX_SPECIALS = re.compile("[" + re.escape("".join(_LATEX_ESCAPES)) + "]")
_NAME_SEPARATORS = re.compile(r"(?i)(?:^|\s)and(?:\s|$)|,")


def escape_bibtex(text: str) -> str:
    """``text`` (already clean, see :func:`clean_text`) as the content of a braced BibTeX
    value: LaTeX specials escaped, braces and backslashes written as text commands, so the
    result holds only balanced braces the escaping made (``"50% {x}"`` ->
    ``"50\\% \\textbraceleft{}x\\textbraceright{}"``)."""
    return _LATEX_SPECIALS.sub(lambda m: _LATEX_ESCAPES[m.group()], text)


def _bib_verbatim(text: str) -> str:
    """A URL or DOI for a verbatim BibTeX field: braces, backslashes and double quotes
    percent-encoded, nothing else changed."""
    return text.replace("{", "%7B").replace("}", "%7D").replace("\\", "%5C").replace('"', "%22")


def _bib_part(text: str) -> str:
    escaped = escape_bibtex(text)
    return "{" + escaped + "}" if _NAME_SEPARATORS.search(text) else escaped


def _bib_name(name: Name) -> str:
    if name.literal:
        return "{" + escape_bibtex(name.literal) + "}"
    parts = [_bib_part(name.family)]
    if name.suffix:
        parts.append(_bib_part(name.suffix))
    if name.given:
        parts.append(_bib_part(name.given))
    return ", ".join(parts)


def _bib_entry(record: _Record) -> bib.Entry:
    fields: list[tuple[str, str]] = []
    if record.names:
        fields.append(("author", " and ".join(_bib_name(n) for n in record.names)))
    if record.title:
        fields.append(("title", escape_bibtex(record.title)))
    if record.kind == "article" and record.journal:
        fields.append(("journal", escape_bibtex(record.journal)))
    if record.kind == "trial":
        fields.append(("institution", TRIAL_REGISTRY))
        fields.append(("type", "Clinical trial registration"))
        if record.nct_id:
            fields.append(("number", escape_bibtex(record.nct_id)))
    if record.kind == "webpage":
        fields.append(("howpublished", "Web page"))
    if record.year:
        fields.append(("year", str(record.year)))
    if record.date_parts:
        year, *rest = record.date_parts
        fields.append(("date", "-".join([f"{year:04d}", *(f"{p:02d}" for p in rest)])))
    if record.doi:
        fields.append(("doi", _bib_verbatim(record.doi)))
    if record.url:
        fields.append(("url", _bib_verbatim(record.url)))
    if record.pmid:
        fields.append(("pmid", escape_bibtex(record.pmid)))
    if record.pmcid:
        fields.append(("pmcid", escape_bibtex(record.pmcid)))
    if record.notes:
        fields.append(("note", escape_bibtex("; ".join(record.notes))))
    return bib.Entry(_BIB_TYPES[record.kind], record.key, [bib.Field(k, v) for k, v in fields])


def to_bibtex(citations: Sequence[Citation], *, labels: Sequence[str] | None = None) -> str:
    """``citations`` as a BibTeX file (one ``@article{key, ...}`` entry per record, in order).

    Args:
        citations: the records, in the order they are written.
        labels: one note per citation (in ``note``), e.g. which report reference it is.

    Returns:
        The file's text (UTF-8), written by bibtexparser v2: entry types ``article``,
        ``techreport`` (trial registrations) and ``misc`` (web pages); fields ``author title
        journal institution type number howpublished year date doi url pmid pmcid note``,
        every value braced and escaped (see the module docstring); unique keys
        (:func:`citation_keys`).

    Raises:
        ValueError: ``labels`` is not one per citation.
    """
    library = Library()
    for record in _records(citations, labels):
        library.add(_bib_entry(record))
    return write_string(library) if citations else ""


# ------------------------------------------------------------------------------- CSL-JSON


def _csl_name(name: Name) -> dict[str, str]:
    if name.literal:
        return {"literal": name.literal}
    out = {"family": name.family}
    if name.given:
        out["given"] = name.given
    if name.suffix:
        out["suffix"] = name.suffix
    return out


def _csl_item(record: _Record) -> dict[str, Any]:
    item: dict[str, Any] = {"id": record.key, "type": _CSL_TYPES[record.kind]}
    if record.title:
        item["title"] = record.title
    if record.names:
        item["author"] = [_csl_name(n) for n in record.names]
    if record.journal and record.kind != "trial":
        item["container-title"] = record.journal
    if record.kind == "trial":
        item["publisher"] = TRIAL_REGISTRY
        item["genre"] = "Clinical trial registration"
        if record.nct_id:
            item["number"] = record.nct_id
    if record.date_parts:
        item["issued"] = {"date-parts": [list(record.date_parts)]}
    elif record.year:
        item["issued"] = {"date-parts": [[record.year]]}
    for variable, value in (
        ("DOI", record.doi),
        ("URL", record.url),
        ("PMID", record.pmid),
        ("PMCID", record.pmcid),
        ("source", record.database),
    ):
        if value:
            item[variable] = value
    if record.notes:
        item["note"] = "; ".join(record.notes)
    return item


def to_csl_json(citations: Sequence[Citation], *, labels: Sequence[str] | None = None) -> str:
    """``citations`` as CSL-JSON: a JSON array of CSL items, in order.

    Args:
        citations: the records, in the order they are written.
        labels: one note per citation (in ``note``), e.g. which report reference it is.

    Returns:
        ``[{"id": key, "type": "article-journal" | "report" | "webpage", "title", "author":
        [{"family", "given", "suffix"} | {"literal"}], "container-title", "issued":
        {"date-parts": [[y, m, d]]}, "DOI", "URL", "PMID", "PMCID", "source", "publisher",
        "number", "genre", "note"}, ...]`` (absent values left out), indented, UTF-8.

    Raises:
        ValueError: ``labels`` is not one per citation.
    """
    items = [_csl_item(r) for r in _records(citations, labels)]
    return json.dumps(items, indent=2, ensure_ascii=False) + "\n"


# ----------------------------------------------------------------------------------- runs

_WRITERS: dict[str, Callable[..., str]] = {
    "ris": to_ris,
    "bibtex": to_bibtex,
    "csljson": to_csl_json,
}


def _entries(result: RunResult, scope: str) -> list[tuple[Citation, str]]:
    """The citations of ``scope`` with their labels, in export order."""
    if scope == "references":
        report = result.report
        first: dict[str, Reference] = {}
        for ref in report.references:
            first.setdefault(ref.evidence_id, ref)
        numbers = report.reference_numbers()
        out: list[tuple[Citation, str]] = []
        for eid, n in sorted(numbers.items(), key=lambda kv: kv[1]):
            ref = first[eid]
            design = f", study design: {ref.study_design}" if ref.study_design else ""
            study = ref.study.summary() if ref.study is not None else ""
            design += f", {study}" if study else ""
            out.append(
                (ref.citation, f"DeepCritical report reference [{n}] (evidence {eid}{design})")
            )
        return out
    if scope == "evidence":
        entries: list[tuple[Citation, str]] = []
        for ev in result.evidence:
            extra = [f"study design: {ev.study_design}"] if ev.study_design else []
            extra += [f"screening: {ev.screening.value.replace('_', '-')}"] if ev.screening else []
            extra += [ev.study.summary()] if ev.study is not None and ev.study.summary() else []
            detail = f" ({', '.join(extra)})" if extra else ""
            entries.append((ev.citation, f"DeepCritical evidence {ev.id}{detail}"))
        return entries
    raise ValueError(f"unknown scope {scope!r}: choose references or evidence")


def export_references(
    result: RunResult, fmt: ExportFormat, scope: ExportScope = "references"
) -> str:
    """A run's references in a reference-manager format, as the file's text.

    Args:
        result: the run's result.
        fmt: ``"ris"`` (:func:`to_ris`), ``"bibtex"`` (:func:`to_bibtex`) or ``"csljson"``
            (:func:`to_csl_json`).
        scope: ``"references"``: the report's references in the report's order (reference
            ``[1]`` first), each noted ``DeepCritical report reference [1] (evidence E3,
            study design: ..., n = 248; OR 2.4 (95% CI 1.3 to 4.6))`` (the study record's
            sample size and primary effect as written, when read); ``"evidence"``: every
            evidence item of the run (off-topic ones included) in store order, each noted
            ``DeepCritical evidence E3 (...)``.

    Returns:
        The file's text (``""`` for RIS and BibTeX with no record, ``[]`` for CSL-JSON).

    Raises:
        ValueError: an unknown format or scope.
    """
    writer = _WRITERS.get(fmt)
    if writer is None:
        raise ValueError(f"unknown format {fmt!r}: choose {', '.join(EXPORT_FORMATS)}")
    entries = _entries(result, scope)
    return writer([c for c, _ in entries], labels=[label for _, label in entries])
