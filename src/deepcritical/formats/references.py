"""Bibliographic export of a run's references for reference managers: RIS, BibTeX, CSL-JSON.

:func:`export_references` (``deepcritical.export_references``, the entry point of the CLI,
the web app and the Python API) writes a run's references (the report's, in the report's
order and numbering) or every evidence item of the run in one of three formats, each record
labelled with what it is in the run. The writers take any list of
:class:`~deepcritical.models.Citation` and return the whole file as one ``str`` (UTF-8 text;
write it with ``encoding="utf-8"``); each is a maintained library:

* :func:`~deepcritical.formats.ris.to_ris` (``rispy``),
* :func:`~deepcritical.formats.bibtex.to_bibtex` (``bibtexparser`` v2),
* :func:`~deepcritical.formats.csl_json.to_csl_json` (the standard library's ``json``).

What a record holds in every format (type, title, authors, dates, identifiers, notes) is
:mod:`deepcritical.formats.citation_records`; authors' names are parsed by
:mod:`deepcritical.formats.author_names`, keys made by :mod:`deepcritical.formats.record_keys`
(``muller2020effect``, unique within the list), and every value is one clean line of data
(:mod:`deepcritical.formats.export_text`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, get_args

from deepcritical.formats.bibtex import to_bibtex
from deepcritical.formats.csl_json import to_csl_json
from deepcritical.formats.ris import to_ris
from deepcritical.models import Citation, Reference, RunResult

__all__ = [
    "EXPORT_FORMATS",
    "EXPORT_SUFFIXES",
    "ExportFormat",
    "ExportScope",
    "export_references",
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
