"""A citation read once for every reference-manager format (:class:`CitationRecord`).

What each record holds, whatever the format:

* **kind**: a journal article by default; a ClinicalTrials.gov registration (from the trials
  source, or a record whose only identifier is an NCT ID) as ``"trial"``; a web page (the web
  source, with no PMID, DOI or journal) as ``"webpage"`` (:func:`record_kind`).
* **title**: the record's own title; an untitled record (every PubMedQA corpus record) is
  exported without a title and with a note saying it has none (:data:`NO_TITLE_NOTE`): the
  title the web app derives from its text is display data, cut to a sentence, never exported.
* **authors**: :func:`~deepcritical.formats.author_names.parse_author`, every author of a
  trial record (the trial's sponsor) kept whole.
* **dates**: the year, and the ISO date prefix as ``(year, month, day)`` as far as it goes.
* **identifiers**: DOI, URL, PMID, PMCID, NCT ID; the source database's name.
* **notes**, in order: the caller's label (which report reference or evidence item it is),
  the title note, ``ClinicalTrials.gov: NCT...`` and one note per kind of integrity flag
  (``Integrity flag: RETRACTED: Retraction in: ... PMID: 123``).
* **key**: :mod:`deepcritical.formats.record_keys`, unique within the list.

Every value is cleaned (:func:`~deepcritical.formats.export_text.clean_text`): no control
characters, white space collapsed to single spaces; a DOI holds no space, a URL's spaces are
``%20``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from deepcritical.formats.author_names import Name, parse_author
from deepcritical.formats.export_text import clean_text
from deepcritical.formats.record_keys import base_key, unique_keys
from deepcritical.models import SOURCE_LABELS, Citation, SourceName, flag_labels

__all__ = [
    "NO_TITLE_NOTE",
    "TRIAL_REGISTRY",
    "CitationRecord",
    "RecordKind",
    "citation_keys",
    "citation_records",
    "record_kind",
]

RecordKind = Literal["article", "trial", "webpage"]
"""What a record is: a journal article, a trial registration or a web page."""

TRIAL_REGISTRY = "ClinicalTrials.gov"
NO_TITLE_NOTE = "The record has no title of its own (none is exported)"


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
class CitationRecord:
    """A citation read once for every format: cleaned text, parsed names, kind, key, notes
    (see the module docstring)."""

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


def citation_keys(citations: Sequence[Citation]) -> list[str]:
    """The keys of ``citations`` (BibTeX key, CSL ``id``, RIS ``ID``), in order: unique,
    ``[a-z0-9]`` only, the same for the same list (see the module docstring)."""
    return [r.key for r in citation_records(citations, None)]


def citation_records(
    citations: Sequence[Citation], labels: Sequence[str] | None
) -> list[CitationRecord]:
    """``citations`` read for export, in order, with unique keys; ``labels`` (one per
    citation, or ``None``) become each record's first note.

    Raises:
        ValueError: ``labels`` is not one per citation.
    """
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
    keys = unique_keys([base_key(names, _date_year(c), title) for c, _, title, names, _ in drafts])
    records: list[CitationRecord] = []
    for (citation, kind, title, names, notes), key in zip(drafts, keys, strict=True):
        nct = clean_text(citation.nct_id)
        if nct:
            notes.append(f"{TRIAL_REGISTRY}: {nct}")
        notes += [
            clean_text(f"Integrity flag: {label}")
            for label in flag_labels(citation.integrity_flags)
        ]
        records.append(
            CitationRecord(
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
