"""The search agent: one round of queries against every source, in parallel, into the store.

Each source gets the query in a form it understands
(:func:`~deepcritical.sources.query_syntax.query_for_source`: PubMed the field-tagged query
plus the run's date filter, the others plain keywords). The results of all queries of the
round are fused (reciprocal-rank fusion, :func:`fuse_ranked`) and, when the orchestrator gives
the question and checklist, re-ranked by relevance to them (:func:`rerank`) before they are
kept, so that a cap on new items keeps the most relevant of the whole round, not the first
query's.

Shared by the LLM and the extractive modes. A failing source is recorded and the round goes
on; whatever a source raises (a :class:`SourceError`, or any other exception
from a buggy source) never ends the run. Per-call timeouts and rate limits are the sources'
business (``SourceHttp``); cancelling :meth:`SearchAgent.run` cancels every pending call.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from deepcritical.evidence.embeddings import Embedder
from deepcritical.evidence.fusion import RRF_K, rrf_score
from deepcritical.evidence.grading import grade_evidence
from deepcritical.evidence.identifiers import identifier_keys
from deepcritical.evidence.mmr import unit_rows
from deepcritical.evidence.store import EvidenceStore, embedding_text
from deepcritical.logs import get_logger
from deepcritical.models import Evidence, SearchFilters
from deepcritical.sources.base import SearchSource, SourceError
from deepcritical.sources.query_syntax import query_for_source

__all__ = [
    "RELEVANCE_WEIGHT",
    "RRF_K",
    "SearchAgent",
    "SearchRound",
    "fuse_ranked",
    "rerank",
    "screen_by_filters",
]

log = get_logger(__name__)

RELEVANCE_WEIGHT = 0.5
"""Weight of relevance to the question/checklist against fused rank in :func:`rerank`."""

MAX_REASON_CHARS = 300
_SECRET_PARAM = re.compile(
    r"(?i)\b(api[_-]?key|apikey|access[_-]?token|token|key|secret|password)=([^&\s'\"]+)"
)


@dataclass
class SearchRound:
    """What one search round did.

    Attributes:
        queries: the queries run, in order.
        hits_per_source: source name -> items the source returned over all queries.
        hits_per_query: query -> source name -> items returned (failed calls are absent).
        failures: source name -> reason, for sources that failed on every query of the round
            (``SourceError`` reason text, or ``"<ExceptionType>: <message>"`` for other errors).
        partial_failures: source name -> reason, for sources that failed on some queries but
            answered others (the reason says how many failed).
        added_ids: ids of the new evidence items, in store order (fused rank order).
        merged: ids of stored items that absorbed an identifier duplicate.
        near_duplicates: ids of stored items that absorbed a near duplicate (embedding).
        beyond_limit: items returned but not stored: their documents ranked below the room
            left under ``max_sources`` (``keep``).
        identifier_copies: items folded into another record by a shared identifier (the same
            paper from another source or query, or found again in a later round).
        near_duplicate_copies: items folded into another record as near duplicates.
        excluded_by_filters: cause -> items returned but screened out by the plan's filters
            because their own metadata puts them outside (:meth:`SearchFilters.excludes`:
            ``"publication date outside the range"``, ``"study design not asked for"``).
        duration_seconds: wall-clock time of the round.

    Every item returned is counted once: ``returned == len(added_ids) + beyond_limit +
    identifier_copies + near_duplicate_copies + sum(excluded_by_filters.values())``.
    """

    queries: list[str] = field(default_factory=list)
    hits_per_source: dict[str, int] = field(default_factory=dict)
    hits_per_query: dict[str, dict[str, int]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    partial_failures: dict[str, str] = field(default_factory=dict)
    added_ids: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    near_duplicates: list[str] = field(default_factory=list)
    beyond_limit: int = 0
    identifier_copies: int = 0
    near_duplicate_copies: int = 0
    excluded_by_filters: dict[str, int] = field(default_factory=dict)
    duration_seconds: float = 0.0

    @property
    def returned(self) -> int:
        """Items returned by all sources (before deduplication)."""
        return sum(self.hits_per_source.values())

    def summary(self) -> str:
        """One line (< 500 characters) for events and LLM tools."""
        text = (
            f"{len(self.queries)} queries: {self.returned} hits, {len(self.added_ids)} new items, "
            f"{len(self.merged)} merged, {len(self.near_duplicates)} near duplicates"
        )
        if self.failures:
            text += "; unavailable: " + ", ".join(f"{s} ({r})" for s, r in self.failures.items())
        return text[:500]


@dataclass
class _Call:
    source: str
    query: str
    items: list[Evidence] = field(default_factory=list)
    error: str | None = None
    excluded: dict[str, int] = field(default_factory=dict)


def screen_by_filters(
    items: Sequence[Evidence], filters: SearchFilters | None
) -> tuple[list[Evidence], dict[str, int]]:
    """``items`` split by the plan's filters: those kept (in order) and cause -> count of
    those screened out because their own date or graded design
    (:func:`~deepcritical.evidence.grading.grade_evidence`) is outside
    (:meth:`SearchFilters.excludes`; unknown dates and designs are kept), each logged at
    debug level with its reason. Everything is kept when ``filters`` is ``None`` or empty."""
    if filters is None or filters.is_empty():
        return list(items), {}
    kept: list[Evidence] = []
    excluded: dict[str, int] = {}
    screen_designs = bool(filters.designs)
    for item in items:
        design = grade_evidence(item) if screen_designs else None
        outside = filters.excludes(item.citation, design)
        if outside is None:
            kept.append(item)
        else:
            excluded[outside.cause] = excluded.get(outside.cause, 0) + 1
            log.debug(
                "record outside the plan's search filters",
                source=item.citation.source,
                record=item.citation.id,
                reason=outside.reason,
            )
    return kept, excluded


def _scrub(text: str) -> str:
    """``text`` with ``key=value`` secrets masked, on one line, at most 300 characters."""
    one_line = " ".join(_SECRET_PARAM.sub(r"\1=***", text).split())
    return one_line[:MAX_REASON_CHARS]


def _group_keys(evidence: Evidence) -> list[str]:
    keys = identifier_keys(evidence.citation)
    if keys:
        return keys
    citation = evidence.citation
    return [f"native:{citation.source}:{citation.id}"]


def _document_indices(items: Sequence[Evidence]) -> list[list[int]]:
    """Indices of ``items`` grouped by document (items sharing any identifier are one
    document), documents in first-seen order."""
    group_of_key: dict[str, int] = {}
    groups: list[list[int]] = []
    for index, item in enumerate(items):
        keys = _group_keys(item)
        gid = next((group_of_key[key] for key in keys if key in group_of_key), None)
        if gid is None:
            gid = len(groups)
            groups.append([])
        for key in keys:
            group_of_key.setdefault(key, gid)
        groups[gid].append(index)
    return groups


def _documents(items: Sequence[Evidence]) -> list[list[Evidence]]:
    """``items`` grouped by document (shared identifier), groups in first-seen order."""
    return [[items[i] for i in group] for group in _document_indices(items)]


def fuse_ranked(lists: Sequence[Sequence[Evidence]], k: int = RRF_K) -> list[Evidence]:
    """Every item of ``lists`` (ranked result lists), ordered by reciprocal-rank fusion.

    Items sharing any identifier (PMID, DOI, PMCID, NCT ID, URL) count as one document: its
    score is the sum of ``1 / (k + rank)`` over the lists it appears in (rank from 1;
    :func:`~deepcritical.evidence.fusion.rrf_score`). All copies are kept (so the store can
    merge them), grouped under the document, documents best first; ties keep first-seen order.
    """
    items = [item for ranked in lists for item in ranked]
    ranks = [rank for ranked in lists for rank in range(1, len(ranked) + 1)]
    groups = _document_indices(items)
    scores = [rrf_score((ranks[i] for i in group), k) for group in groups]
    order = sorted(range(len(groups)), key=lambda g: (-scores[g], g))
    return [items[i] for g in order for i in groups[g]]


def rerank(
    fused: Sequence[Evidence],
    targets: Sequence[str],
    embedder: Embedder,
    keep: int | None = None,
    weight: float = RELEVANCE_WEIGHT,
) -> list[Evidence]:
    """The documents of ``fused`` (output of :func:`fuse_ranked`) re-ordered by
    ``(1 - weight) * rank score + weight * relevance``, copies kept together.

    Rank score: ``1 - i / n`` for the ``i``-th of ``n`` documents in fused order. Relevance:
    the best cosine similarity of the document's first copy (title and text) to any of
    ``targets`` (the question, the checklist descriptions), min-max scaled over the round.
    ``keep``: at most this many documents are returned (the best); ``None``: all. One
    embedding batch; CPU-bound (call it in a worker thread).
    """
    groups = _documents(fused)
    if not groups or not targets:
        return [item for group in groups[:keep] for item in group]
    vectors = unit_rows(
        np.asarray(
            embedder.embed([*targets, *(embedding_text(g[0]) for g in groups)]),
            dtype=np.float32,
        )
    )
    sims = (vectors[len(targets) :] @ vectors[: len(targets)].T).max(axis=1)
    low, high = float(sims.min()), float(sims.max())
    relevance = (sims - low) / (high - low) if high > low else np.ones_like(sims)
    n = len(groups)
    scores = [(1 - weight) * (1 - i / n) + weight * float(relevance[i]) for i in range(n)]
    order = sorted(range(n), key=lambda i: (-scores[i], i))
    if keep is not None:
        order = order[: max(keep, 0)]
    return [item for i in order for item in groups[i]]


class SearchAgent:
    """Runs every (query, source) pair of a round in parallel and stores the results.

    Args:
        sources: the run's search sources.
        store: the run's evidence store.
        results_per_query: ``limit`` passed to each ``source.search`` call.
        pubmed_date_from: earliest publication year: PubMed queries get a date filter.
    """

    def __init__(
        self,
        sources: Sequence[SearchSource],
        store: EvidenceStore,
        results_per_query: int,
        *,
        pubmed_date_from: int | None = None,
    ) -> None:
        if results_per_query < 1:
            raise ValueError(f"results_per_query must be >= 1, got {results_per_query}")
        self.sources = list(sources)
        self.store = store
        self.results_per_query = results_per_query
        self.pubmed_date_from = pubmed_date_from

    async def _call(
        self,
        source: SearchSource,
        query: str,
        filters: SearchFilters | None = None,
        *,
        verbatim: bool = False,
    ) -> _Call:
        call = _Call(source.name, query)
        sent = query if verbatim else query_for_source(query, source.name, self.pubmed_date_from)
        if not sent.strip():
            return call
        try:
            if filters is None or filters.is_empty():
                items = list(await source.search(sent, self.results_per_query))
            else:
                items = list(await source.search(sent, self.results_per_query, filters=filters))
        except SourceError as exc:
            call.error = _scrub(exc.reason or str(exc)) or "source error"
            log.warning("source failed", source=source.name, query=query, reason=call.error)
            return call
        except Exception as exc:  # a buggy source must not end the run
            call.error = _scrub(f"{type(exc).__name__}: {exc}")
            log.exception("source raised an unexpected error", source=source.name, query=query)
            return call
        good = [item for item in items if isinstance(item, Evidence)]
        if len(good) != len(items):
            call.error = f"returned {len(items) - len(good)} malformed items"
        kept, call.excluded = screen_by_filters(good[: self.results_per_query], filters)
        call.items = [
            item if item.query else item.model_copy(update={"query": query}) for item in kept
        ]
        return call

    async def run(
        self,
        queries: Sequence[str],
        *,
        relevance_to: Sequence[str] = (),
        keep: int | None = None,
        filters: SearchFilters | None = None,
        source_queries: Mapping[str, Sequence[str]] | None = None,
    ) -> SearchRound:
        """Search every query on every source, fuse the rankings, add the items in one batch.

        With ``relevance_to`` (question and checklist descriptions), the fused results are
        re-ranked by relevance to them (:func:`rerank`) and at most ``keep`` documents are
        kept (``None``: all). ``filters`` (the plan's) go to every source, and what comes back
        outside them by its own metadata is screened out (:func:`screen_by_filters`, counted
        in ``excluded_by_filters``). ``source_queries``: source name -> queries sent to that
        source verbatim instead of ``queries`` translated for it (the plan's per-source
        queries of round 1; a source absent from it gets ``queries``). The store is called in
        a worker thread (embedding is CPU-bound). Never raises for a source failure; raises
        only if the store itself fails (e.g. the embedder cannot load).
        """
        started = time.monotonic()
        queries = list(dict.fromkeys(q for q in queries if q.strip()))
        plan = self._pairs(queries, source_queries or {})
        result = SearchRound(queries=list(dict.fromkeys(q for _, q, _ in plan)))
        if not plan:
            return result
        calls = await asyncio.gather(
            *(self._call(source, q, filters, verbatim=v) for source, q, v in plan)
        )
        self._record(calls, result)
        ranked = [c.items for c in calls if c.items]
        if ranked:
            fused = fuse_ranked(ranked)
            returned = len(fused)
            if relevance_to or keep is not None:
                fused = await asyncio.to_thread(
                    rerank, fused, list(relevance_to), self.store.embedder, keep
                )
            added = await asyncio.to_thread(self.store.add, fused)
            result.added_ids = [e.id for e in added.added]
            result.merged = list(added.merged)
            result.near_duplicates = list(added.near_duplicates)
            result.beyond_limit = returned - len(fused)
            result.identifier_copies = added.identifier_copies
            result.near_duplicate_copies = added.near_duplicate_copies
        result.duration_seconds = round(time.monotonic() - started, 3)
        return result

    def _pairs(
        self, queries: Sequence[str], source_queries: Mapping[str, Sequence[str]]
    ) -> list[tuple[SearchSource, str, bool]]:
        """The (source, query, verbatim) calls of a round, query by query, each source in
        order: a source named in ``source_queries`` gets its own queries verbatim."""
        own = {
            name: list(dict.fromkeys(q for q in qs if q.strip()))
            for name, qs in source_queries.items()
        }
        pairs = [
            (source, q, False) for q in queries for source in self.sources if source.name not in own
        ]
        pairs += [(s, q, True) for s in self.sources for q in own.get(s.name, [])]
        return pairs

    @staticmethod
    def _record(calls: Sequence[_Call], result: SearchRound) -> None:
        total: dict[str, int] = {}
        failed: dict[str, list[str]] = {}  # calls that produced nothing
        warned: dict[str, list[str]] = {}  # calls that answered, with a problem
        for call in calls:
            total[call.source] = total.get(call.source, 0) + 1
            screened_out = sum(call.excluded.values())
            result.hits_per_source[call.source] = (
                result.hits_per_source.get(call.source, 0) + len(call.items) + screened_out
            )
            for cause, n in call.excluded.items():
                result.excluded_by_filters[cause] = result.excluded_by_filters.get(cause, 0) + n
            if call.error is not None and not call.items and not screened_out:
                failed.setdefault(call.source, []).append(call.error)
                continue
            result.hits_per_query.setdefault(call.query, {})[call.source] = (
                len(call.items) + screened_out
            )
            if call.error is not None:
                warned.setdefault(call.source, []).append(call.error)
        for source, n_calls in total.items():
            reasons = failed.get(source, [])
            if len(reasons) == n_calls:
                result.failures[source] = reasons[0]
            elif reasons:
                result.partial_failures[source] = (
                    f"{reasons[0]} ({len(reasons)} of {n_calls} queries failed)"
                )
            elif source in warned:
                result.partial_failures[source] = warned[source][0]
