"""Citations as CSL-JSON (:func:`to_csl_json`), written by the standard library's ``json``.

Per record (:class:`~deepcritical.formats.citation_records.CitationRecord`): ``id`` the
record's key; ``type`` ``article-journal``, ``report`` (trial registration, with
``publisher`` ``ClinicalTrials.gov``, ``genre`` and ``number`` = NCT ID) or ``webpage``;
``title``; ``author`` (``{"family", "given", "suffix"}`` or ``{"literal"}``);
``container-title`` (the journal); ``issued`` date parts; ``DOI``, ``URL``, ``PMID``, ``PMCID``;
``source`` (the source database); ``note`` (the notes joined with ``"; "``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from deepcritical.formats.author_names import Name
from deepcritical.formats.citation_records import (
    TRIAL_REGISTRY,
    CitationRecord,
    RecordKind,
    citation_records,
)
from deepcritical.models import Citation

__all__ = ["to_csl_json"]

_CSL_TYPES: dict[RecordKind, str] = {
    "article": "article-journal",
    "trial": "report",
    "webpage": "webpage",
}


def _csl_name(name: Name) -> dict[str, str]:
    if name.literal:
        return {"literal": name.literal}
    out = {"family": name.family}
    if name.given:
        out["given"] = name.given
    if name.suffix:
        out["suffix"] = name.suffix
    return out


def _csl_item(record: CitationRecord) -> dict[str, Any]:
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
    items = [_csl_item(r) for r in citation_records(citations, labels)]
    return json.dumps(items, indent=2, ensure_ascii=False) + "\n"
