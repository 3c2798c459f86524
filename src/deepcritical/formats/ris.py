"""Citations as an RIS file (:func:`to_ris`), written by ``rispy``.

Per record (:class:`~deepcritical.formats.citation_records.CitationRecord`): ``TY`` ``JOUR``
(journal article), ``RPRT`` (trial registration, ``PB`` ``ClinicalTrials.gov``) or ``ELEC``
(web page); ``ID`` the record's key; ``TI`` title; ``AU`` one per author (family, given,
suffix joined by commas; a literal name without its commas); ``T2`` the journal (the RIS
specification's secondary title of a journal article); ``PY`` year; ``DA`` the date as
``YYYY/MM/DD/``; ``DO`` DOI; ``UR`` URL; ``AN`` the PMID (the accession number, as EndNote and
PubMed-derived RIS files carry it), or the NCT ID of a trial record; ``C2`` the PMCID
(EndNote's "Custom 2 = PMCID" convention for journal articles); ``DB`` the source database
(``PubMed``...); ``N1`` one line per note, then ``PMID: ...`` and ``PMCID: ...`` again, since
``AN`` and ``C2`` are conventions, not the specification's names. Every value is one clean line
(:func:`~deepcritical.formats.export_text.clean_text`), so no value can start a new RIS line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import rispy

from deepcritical.formats.author_names import Name
from deepcritical.formats.citation_records import (
    TRIAL_REGISTRY,
    CitationRecord,
    RecordKind,
    citation_records,
)
from deepcritical.models import Citation

__all__ = ["to_ris"]

_RIS_TYPES: dict[RecordKind, str] = {"article": "JOUR", "trial": "RPRT", "webpage": "ELEC"}


class _RisWriter(rispy.RisWriter):  # type: ignore[misc]  # rispy ships no type hints
    """rispy's RIS writer without its ``1.``, ``2.`` header line before each record (the
    documented extension point: an empty header is not written)."""

    def set_header(self, count: int) -> str:
        return ""


def _ris_name(name: Name) -> str:
    if name.literal:
        return " ".join(name.literal.replace(",", " ").split())
    return ", ".join(p for p in (name.family, name.given, name.suffix) if p)


def _ris_entry(record: CitationRecord) -> dict[str, Any]:
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
    entries = [_ris_entry(r) for r in citation_records(citations, labels)]
    return str(_RisWriter().formats(entries)) if entries else ""
