"""An update's search: only the records added to the sources since the watch's last update,
the records the watch already knows skipped before screening, the rest screened and appraised
like a run's (:func:`find_new`).

Every source is searched with the watch's queries and the update's window (the
:class:`~deepcritical.models.SearchFilters` ``added_since`` bound, which each source turns into
its API's date of entry: PubMed ``datetype=edat``, Europe PMC ``CREATION_DATE``,
ClinicalTrials.gov ``LastUpdatePostDate``, OpenAlex ``from_created_date``, the local corpus's
date of import). A returned record sharing an identifier (PMID, DOI, PMCID, NCT, URL) with a
record the watch holds is counted as already known and dropped; the others are
de-duplicated among themselves (the evidence store's rules), screened against the refined
question with the calibrated screening, and appraised by the rules.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from deepcritical.agents.search import SearchAgent
from deepcritical.evidence.embeddings import Embedder
from deepcritical.evidence.identifiers import identifier_keys
from deepcritical.evidence.screening import default_calibration, screen_items
from deepcritical.evidence.store import EvidenceStore
from deepcritical.evidence.study_extraction import appraise_items
from deepcritical.models import (
    ChangedRecord,
    Evidence,
    Screening,
    SearchFilters,
    UpdateFlow,
    union_flags,
)
from deepcritical.sources.base import SearchSource

__all__ = [
    "CHANGED_SOURCES",
    "KnownRecords",
    "NewRecords",
    "find_new",
    "refresh_changed",
    "renumber",
]

_NUMBER = re.compile(r"^E(\d+)$")


class KnownRecords:
    """The identifier keys of the records a watch holds (every record its run and its
    updates screened, off-topic ones included)."""

    def __init__(self, items: Iterable[Evidence]) -> None:
        self.keys: set[str] = set()
        self.last_number = 0
        for item in items:
            self.keys.update(identifier_keys(item.citation))
            found = _NUMBER.match(item.id)
            if found:
                self.last_number = max(self.last_number, int(found.group(1)))

    def knows(self, item: Evidence) -> bool:
        """Whether ``item`` shares an identifier with a known record."""
        return any(key in self.keys for key in identifier_keys(item.citation))


CHANGED_SOURCES = frozenset({"trials"})
"""Sources whose window returns records that changed, not only new ones (ClinicalTrials.gov's
``LastUpdatePostDate``): a known record they return is kept as changed."""


class _SkipKnown:
    """``inner`` with the records ``known`` holds dropped from its answers, counted per
    source in ``skipped`` (those of a :data:`CHANGED_SOURCES` source kept in ``changed``);
    every argument of ``search`` (the filters too) is passed on."""

    def __init__(
        self,
        inner: SearchSource,
        known: KnownRecords,
        skipped: dict[str, int],
        changed: list[Evidence],
    ) -> None:
        self.inner = inner
        self.known = known
        self.skipped = skipped
        self.changed = changed
        self.name = inner.name

    async def search(self, query: str, limit: int, *args: Any, **kwargs: Any) -> list[Evidence]:
        items = await self.inner.search(query, limit, *args, **kwargs)
        fresh = [item for item in items if not self.known.knows(item)]
        if self.name in CHANGED_SOURCES:
            self.changed.extend(item for item in items if self.known.knows(item))
        self.skipped[self.name] = self.skipped.get(self.name, 0) + len(items) - len(fresh)
        return fresh


@dataclass
class NewRecords:
    """What :func:`find_new` found: ``items`` (the new records, screened and appraised, ids
    continuing the watch's numbering), ``changed`` (known records a source returned because
    they changed: ClinicalTrials.gov registrations updated in the window, as returned),
    ``flow`` (the update's flow of records) and ``failures`` (source -> reason, for sources
    that failed on every query: their window is not covered)."""

    items: list[Evidence] = field(default_factory=list)
    changed: list[Evidence] = field(default_factory=list)
    flow: UpdateFlow = field(default_factory=UpdateFlow)
    failures: dict[str, str] = field(default_factory=dict)


def renumber(items: Sequence[Evidence], after: int) -> list[Evidence]:
    """Copies of ``items`` with ids ``E<after + 1>``, ``E<after + 2>``... in order."""
    return [
        item.model_copy(update={"id": f"E{after + n}"}, deep=True)
        for n, item in enumerate(items, start=1)
    ]


async def find_new(
    sources: Sequence[SearchSource],
    known: KnownRecords,
    queries: Sequence[str],
    question: str,
    embedder: Embedder,
    *,
    filters: SearchFilters | None = None,
    results_per_query: int = 10,
    near_duplicate_threshold: float = 0.97,
    **search_options: Any,
) -> NewRecords:
    """Search ``queries`` on ``sources`` for new records (see the module docstring).

    Args:
        sources: the sources (``search_options`` are passed to the
            :class:`~deepcritical.agents.search.SearchAgent`, e.g. ``pubmed_date_from``).
        known: the records the watch holds.
        queries: the watch's searches.
        question: the refined question the new records are screened against.
        filters: the plan's filters with the window's ``added_since``: every source is
            asked only for what was added since.
        embedder: the run embedder (screening is calibrated for all-MiniLM-L6-v2; with
            another embedder records are not screened and count as included).
        results_per_query: records asked of each source per query.
        near_duplicate_threshold: the evidence store's near-duplicate threshold.

    Raises:
        Exception: the embedder failed (source failures are reported in ``failures``).
    """
    skipped: dict[str, int] = {}
    changed: list[Evidence] = []
    wrapped = [_SkipKnown(s, known, skipped, changed) for s in sources]
    store = EvidenceStore(embedder, near_duplicate_threshold)
    agent = SearchAgent(wrapped, store, results_per_query, **search_options)
    found = await agent.run(queries, relevance_to=[question], filters=filters)
    ids = list(found.added_ids)
    calibration = default_calibration()
    if ids and calibration.fits(embedder):
        await asyncio.to_thread(screen_items, store, question, ids, calibration)
    items = renumber([store.require(i) for i in ids], known.last_number)
    on_topic = [e for e in items if e.screening != Screening.OFF_TOPIC]
    appraise_items([e for e in on_topic if not e.citation.retracted])
    identified = {name: hits + skipped.get(name, 0) for name, hits in found.hits_per_source.items()}
    flow = UpdateFlow(
        identified_per_source=identified,
        already_known=sum(skipped.values()),
        duplicates=found.identifier_copies + found.near_duplicate_copies,
        new=len(items),
        excluded=len(items) - len(on_topic),
        included=sum(not e.citation.retracted for e in on_topic),
        retracted_new=sum(e.citation.retracted for e in on_topic),
    )
    return NewRecords(items=items, changed=changed, flow=flow, failures=dict(found.failures))


def refresh_changed(
    items: Sequence[Evidence], changed: Sequence[Evidence]
) -> tuple[list[Evidence], list[ChangedRecord]]:
    """``items`` (the known records) with each record of ``changed`` that matches one by
    identifier refreshed: its content, title and dates from the source now, its id,
    screening, relevance and integrity flags (unioned) kept; and the on-topic ones refreshed,
    as :class:`~deepcritical.models.ChangedRecord` lines (``"registration updated"``)."""
    out = [e.model_copy(deep=True) for e in items]
    by_key: dict[str, int] = {}
    for position, item in enumerate(out):
        for key in identifier_keys(item.citation):
            by_key.setdefault(key, position)
    lines: dict[str, ChangedRecord] = {}
    for fresh in changed:
        index = next((by_key[k] for k in identifier_keys(fresh.citation) if k in by_key), None)
        if index is None:
            continue
        old = out[index]
        citation = fresh.citation.model_copy(
            update={"integrity_flags": union_flags(old.citation.integrity_flags,
                                                   fresh.citation.integrity_flags)}
        )  # fmt: skip
        out[index] = old.model_copy(update={"content": fresh.content, "citation": citation})
        if old.screening != Screening.OFF_TOPIC and not citation.retracted:
            lines[old.id] = ChangedRecord.of(out[index], "registration updated")
    return out, list(lines.values())
