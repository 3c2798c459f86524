"""Integrity flags: what the bibliographic APIs say about a record's retraction, expression of
concern, erratum or correction (:class:`IntegrityFlag`, on ``Citation.integrity_flags``).

Read from PubMed XML (``PublicationType`` and ``CommentsCorrectionsList``, in
:mod:`deepcritical.formats.pubmed_xml`), Europe PMC (``pubTypeList.pubType``) and OpenAlex
(``is_retracted``). Only what those APIs say is known: there is no offline copy of the
Retraction Watch database, and a record retracted after it was imported into the local corpus
keeps the flags it was imported with.

A record flagged :attr:`IntegrityKind.RETRACTED` is never cited as support and never reaches
the checklist, hypotheses, judge, writer or verdict; records with any other flag are cited
normally with the flag shown next to them.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from pydantic import BaseModel

__all__ = [
    "INTEGRITY_LABELS",
    "IntegrityFlag",
    "IntegrityKind",
    "flag_labels",
    "flags_from_publication_types",
    "is_retracted",
    "union_flags",
]


class IntegrityKind(StrEnum):
    """What a flag says about its record.

    - ``retracted``: the record itself was retracted (PubMed ``Retracted Publication`` or a
      ``RetractionIn`` relation, Europe PMC ``Retracted Publication``, OpenAlex
      ``is_retracted``);
    - ``retraction_notice``: the record is the notice retracting another (``Retraction of
      Publication``, ``RetractionOf``);
    - ``expression_of_concern``: an expression of concern was published about the record, or
      the record is one (``ExpressionOfConcernIn``/``ExpressionOfConcernFor``, ``Expression of
      Concern``);
    - ``erratum``: an erratum to the record was published (``ErratumIn``);
    - ``correction``: the record is a correction notice (``Published Erratum``,
      ``ErratumFor``), or was corrected and republished (``CorrectedandRepublishedIn``/
      ``From``).
    """

    RETRACTED = "retracted"
    RETRACTION_NOTICE = "retraction_notice"
    EXPRESSION_OF_CONCERN = "expression_of_concern"
    ERRATUM = "erratum"
    CORRECTION = "correction"


INTEGRITY_LABELS: dict[IntegrityKind, str] = {
    IntegrityKind.RETRACTED: "RETRACTED",
    IntegrityKind.RETRACTION_NOTICE: "Retraction notice",
    IntegrityKind.EXPRESSION_OF_CONCERN: "Expression of concern",
    IntegrityKind.ERRATUM: "Erratum",
    IntegrityKind.CORRECTION: "Correction notice",
}
"""The short label every display shows for a kind (the report, the evidence table, exports)."""


class IntegrityFlag(BaseModel):
    """One integrity flag of a record.

    ``notice`` identifies the notice when the API names it (``"Retraction in: J Clin Oncol.
    2020;38:1. PMID: 31234567"``), else the publication type or field that said so;
    ``source`` names the API and field it came from (``"PubMed CommentsCorrections
    RetractionIn"``, ``"Europe PMC pubTypeList"``, ``"OpenAlex is_retracted"``).
    """

    kind: IntegrityKind
    notice: str = ""
    source: str = ""


_PUBLICATION_TYPES: dict[str, IntegrityKind] = {
    "retracted publication": IntegrityKind.RETRACTED,
    "retraction of publication": IntegrityKind.RETRACTION_NOTICE,
    "expression of concern": IntegrityKind.EXPRESSION_OF_CONCERN,
    "published erratum": IntegrityKind.CORRECTION,
    "correction": IntegrityKind.CORRECTION,
    "erratum": IntegrityKind.CORRECTION,
}


def flags_from_publication_types(types: Iterable[str], source: str) -> list[IntegrityFlag]:
    """The flags stated by publication types (PubMed ``PublicationType``, Europe PMC
    ``pubType``; matched case-insensitively: ``"Retracted Publication"``, ``"retraction of
    publication"``, ``"Expression of Concern"``, ``"Published Erratum"``), each with the type
    as its notice and ``source`` (e.g. ``"PubMed PublicationType"``) as its source."""
    flags = []
    for value in types:
        kind = _PUBLICATION_TYPES.get(" ".join(value.split()).lower())
        if kind is not None:
            flags.append(IntegrityFlag(kind=kind, notice=value.strip(), source=source))
    return union_flags(flags)


def union_flags(*groups: Iterable[IntegrityFlag]) -> list[IntegrityFlag]:
    """Every flag of ``groups`` once (equal kind, notice and source), in first-seen order;
    what merging two records of one paper keeps (flags are never lost)."""
    seen: dict[tuple[str, str, str], IntegrityFlag] = {}
    for group in groups:
        for flag in group:
            seen.setdefault((flag.kind, flag.notice, flag.source), flag)
    return list(seen.values())


def is_retracted(flags: Iterable[IntegrityFlag]) -> bool:
    """Whether any flag says the record itself was retracted."""
    return any(f.kind is IntegrityKind.RETRACTED for f in flags)


def flag_labels(flags: Iterable[IntegrityFlag]) -> list[str]:
    """One label per kind, retracted first, its notices joined: ``["RETRACTED: Retracted
    Publication; Retraction in: N Engl J Med. 2013;368:99. PMID: 99663012", "Erratum:
    Erratum in: ..."]`` (what the reference list and the evidence table show)."""
    notices: dict[IntegrityKind, list[str]] = {}
    for flag in flags:
        listed = notices.setdefault(flag.kind, [])
        if flag.notice and flag.notice not in listed:
            listed.append(flag.notice)
    order = list(IntegrityKind)
    out = []
    for kind in sorted(notices, key=order.index):
        head = INTEGRITY_LABELS[kind]
        out.append(f"{head}: {'; '.join(notices[kind])}" if notices[kind] else head)
    return out
