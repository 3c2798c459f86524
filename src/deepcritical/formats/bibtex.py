"""Citations as a BibTeX file (:func:`to_bibtex`), written by ``bibtexparser`` v2.

Per record (:class:`~deepcritical.formats.citation_records.CitationRecord`): entry type
``@article`` (journal article, with ``journal``), ``@techreport`` (trial registration:
``institution = {ClinicalTrials.gov}``, ``type``, ``number`` = NCT ID) or ``@misc`` (web page,
``howpublished``); the record's key; ``author`` (names joined by ``and``: ``Family, Suffix,
Given``, a literal name braced, so it is one name), ``title``, ``year``, ``date`` (biblatex,
ISO), ``doi``, ``url``, ``pmid``, ``pmcid`` and ``note`` (the notes joined with ``"; "``).

Values are escaped for LaTeX and for BibTeX's brace counting (:func:`escape_bibtex`: ``{`` ->
``\\textbraceleft{}``, ``}`` -> ``\\textbraceright{}``, ``\\`` -> ``\\textbackslash{}``,
``% & _ # $`` -> ``\\% \\& \\_ \\# \\$``, ``~ ^`` -> ``\\textasciitilde{}
\\textasciicircum{}``), so every brace in the file is one the writer put there and no title
can close its field or add one; URLs and DOIs are written verbatim except braces, backslashes
and double quotes, which are percent-encoded. Non-ASCII text stays UTF-8 (biber, bibtex8 and
the reference managers read it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bibtexparser import model as bib
from bibtexparser.entrypoint import write_string
from bibtexparser.library import Library

from deepcritical.formats.author_names import Name
from deepcritical.formats.citation_records import (
    TRIAL_REGISTRY,
    CitationRecord,
    RecordKind,
    citation_records,
)
from deepcritical.models import Citation

__all__ = ["escape_bibtex", "to_bibtex"]

_BIB_TYPES: dict[RecordKind, str] = {"article": "article", "trial": "techreport", "webpage": "misc"}

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
    """``text`` (already clean, see
    :func:`~deepcritical.formats.export_text.clean_text`) as the content of a braced BibTeX
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


def _bib_entry(record: CitationRecord) -> bib.Entry:
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
        (:func:`~deepcritical.formats.citation_records.citation_keys`).

    Raises:
        ValueError: ``labels`` is not one per citation.
    """
    library = Library()
    for record in citation_records(citations, labels):
        library.add(_bib_entry(record))
    return write_string(library) if citations else ""
