"""Reading the open-access full texts of a run's on-topic evidence, within the run's budget.

After each search round, the on-topic items that have a PMCID, no full text yet, and no record
saying they are closed access (``Citation.open_access`` False) are candidates, the most relevant
first. Up to ``Settings.max_full_texts`` full texts are read per run (fetched in parallel; the
fetcher's rate limits space the requests); at most twice that many are tried, so a run whose
candidates keep failing stops asking. A fetched full text becomes the item's passages
(:attr:`Evidence.passages`, stored by the caller); a failure leaves the item on its abstract,
with the reason kept.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from deepcritical.models import Evidence
from deepcritical.sources.base import SourceError
from deepcritical.sources.fulltext import FullTextReader

__all__ = ["FullTextLog", "FullTextRound", "full_text_candidates", "read_full_texts"]


@dataclass
class FullTextLog:
    """What a run has read so far: evidence id -> the service that gave its full text
    (``read``), evidence id -> why it could not be read (``failed``), evidence id -> the
    identifiers of its reference list (``references``, ``"pmid:..."`` / ``"doi:..."``, for
    citation tracking)."""

    read: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    references: dict[str, list[str]] = field(default_factory=dict)

    @property
    def tried(self) -> int:
        """Full texts asked for, read or not."""
        return len(self.read) + len(self.failed)


@dataclass(frozen=True)
class FullTextRound:
    """One round of reading: the items read (copies with their passages, for the store) and
    ``(id, PMCID, reason)`` of those that failed."""

    read: list[Evidence]
    failed: list[tuple[str, str, str]]


def full_text_candidates(
    items: Sequence[Evidence], log: FullTextLog, budget: int
) -> list[Evidence]:
    """The items to read now: on-topic ``items`` (the caller's) with a PMCID, no passages,
    not closed access and not tried before, by relevance (best first; ties in store order),
    as many as the budget has left (``budget`` full texts read, ``2 * budget`` tried)."""
    left = min(budget - len(log.read), 2 * budget - log.tried)
    if left <= 0:
        return []
    fresh = [
        e
        for e in items
        if e.citation.pmcid
        and not e.passages
        and e.citation.open_access is not False
        and e.id not in log.read
        and e.id not in log.failed
    ]
    return sorted(fresh, key=lambda e: -e.relevance)[:left]


async def _read_one(
    reader: FullTextReader, item: Evidence
) -> tuple[Evidence, str, str | None, list[str]]:
    """``(item, service that answered, None, reference ids)`` or ``(item, "", reason it
    failed, [])``."""
    try:
        text = await reader.fetch(item.citation.pmcid or "")
    except SourceError as exc:
        return item, "", exc.reason, []
    update: dict[str, object] = {"passages": list(text.passages)}
    if not item.content.strip() and text.abstract:
        update["content"] = text.abstract
    return item.model_copy(update=update), text.via, None, list(text.references)


async def read_full_texts(
    items: Sequence[Evidence], reader: FullTextReader, log: FullTextLog
) -> FullTextRound:
    """Fetch the full texts of ``items`` (from :func:`full_text_candidates`) in parallel and
    record the outcome in ``log``; the items read come back as copies holding their
    ``passages`` (and the article's abstract when the item had no text), for the caller's
    evidence store.

    A failure (:class:`~deepcritical.sources.base.SourceError`) leaves that item on its
    abstract; it is not tried again in this run. Nothing else is raised, except cancellation.
    """
    outcomes = await asyncio.gather(*(_read_one(reader, item) for item in items))
    read: list[Evidence] = []
    failed: list[tuple[str, str, str]] = []
    for item, via, reason, references in outcomes:
        if reason is None:
            log.read[item.id] = via
            if references:
                log.references[item.id] = references
            read.append(item)
        else:
            log.failed[item.id] = reason
            failed.append((item.id, item.citation.pmcid or "", reason))
    return FullTextRound(read, failed)
