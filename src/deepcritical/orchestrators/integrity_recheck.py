"""Retractions and corrections of a watch's known records, checked again at every update
(:func:`recheck_integrity`).

The records with a PMID (not off-topic) are fetched again from PubMed's ``efetch`` (by id: no
search), and the integrity flags PubMed states now (``Retracted Publication``,
``RetractionIn``, ``ErratumIn``...) are added to those the record had. A record retracted since
the last version loses its support (it is listed, never cited); one that gained another flag
stays cited with the flag shown. Records without a PMID keep the flags they were found with:
only PubMed is asked (Europe PMC and OpenAlex state the same retractions for the records they
share with it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from deepcritical.formats.pubmed_xml import PubmedArticle, article_to_evidence
from deepcritical.logs import get_logger
from deepcritical.models import (
    ChangedRecord,
    Evidence,
    Screening,
    flag_labels,
    union_flags,
)
from deepcritical.sources.base import SourceError

__all__ = ["IntegrityRecheck", "RecordFetcher", "recheck_integrity"]

log = get_logger(__name__)


class RecordFetcher(Protocol):
    """Fetches PubMed records by PMID (:meth:`deepcritical.sources.pubmed.PubMedSource.
    efetch`), raising :class:`~deepcritical.sources.base.SourceError` when it cannot."""

    async def efetch(self, pmids: Sequence[str]) -> list[PubmedArticle]:
        """The records of ``pmids`` that exist."""
        ...


@dataclass
class IntegrityRecheck:
    """What :func:`recheck_integrity` found: ``items`` (every known record, flags updated, in
    the given order), ``removed`` (records retracted since), ``corrected`` (records that
    gained another flag), ``checked`` (records asked about) and ``failure`` (why PubMed could
    not answer, ``None`` when it did)."""

    items: list[Evidence] = field(default_factory=list)
    removed: list[ChangedRecord] = field(default_factory=list)
    corrected: list[ChangedRecord] = field(default_factory=list)
    checked: int = 0
    failure: str | None = None


async def recheck_integrity(
    known: Sequence[Evidence], pubmed: RecordFetcher | None
) -> IntegrityRecheck:
    """Check the integrity flags of ``known`` again on ``pubmed`` (see the module docstring);
    nothing is asked without a PubMed source. Never raises for a PubMed failure (it is in
    ``failure``; the flags stay as they were)."""
    out = IntegrityRecheck(items=[e.model_copy(deep=True) for e in known])
    asked = {
        e.citation.pmid: e
        for e in out.items
        if e.citation.pmid and e.screening != Screening.OFF_TOPIC
    }
    if pubmed is None or not asked:
        return out
    try:
        articles = await pubmed.efetch(list(asked))
    except SourceError as exc:
        log.warning("integrity re-check failed", reason=exc.reason)
        out.failure = exc.reason
        return out
    out.checked = len(asked)
    for article in articles:
        item = asked.get(article.pmid)
        if item is None:
            continue
        before = list(item.citation.integrity_flags)
        was_retracted = item.citation.retracted
        fresh = article_to_evidence(article).citation.integrity_flags
        item.citation.integrity_flags = union_flags(before, fresh)
        gained = [f for f in item.citation.integrity_flags if f not in before]
        if not gained:
            continue
        if item.citation.retracted and not was_retracted:
            notice = next((f.notice for f in gained if f.notice), "")
            reason = "retracted" + (f" ({notice})" if notice else "")
            out.removed.append(ChangedRecord.of(item, reason))
        elif not item.citation.retracted:
            out.corrected.append(ChangedRecord.of(item, ", ".join(flag_labels(gained))))
    return out
