"""A cache of search and LLM calls keyed by the request, so a resumed or repeated run does not
pay twice.

- :class:`CallCache`: ``key -> JSON payload`` rows in the run database (``call_cache``).
  An entry older than ``ttl_seconds`` (``Settings.cache_ttl_seconds``) is a miss and is
  replaced. Writes are insert-or-replace, so parallel runs asking the same thing do not fail.
- :class:`CachedSource`: a :class:`~deepcritical.sources.base.SearchSource` wrapper keyed by
  source name + query + limit + API root + the search filters that are set (a filtered
  search is never answered by an unfiltered answer; an unfiltered search keeps the key it had
  before filters existed, so older caches still replay). Only answers are cached; a
  :class:`~deepcritical.sources.base.SourceError` is not (the next call tries again).
- :class:`CachedFullText`: the same for full texts (a
  :class:`~deepcritical.sources.fulltext.FullTextReader`), keyed by PMCID + API roots, so a
  resumed run does not fetch them again.
- :class:`CachedCitations`: the same for citation tracking (a
  :class:`~deepcritical.sources.citation_graph.CitationLinker`), keyed by seed + direction +
  limit + API roots; an answer in which a service failed is not cached.
- The model and chat-client wrappers that use it live with the models:
  :class:`~deepcritical.llm.model_cache.CachedModel` and
  :class:`~deepcritical.llm.chat_cache.CachedChatClient` (:class:`CallCache` is their
  :class:`~deepcritical.llm.model_cache.CallStore`).

What a cache hit means for replay: the extractive (``--llm none``) path is deterministic given
the same search answers and the same embedder, so a resumed run replays its completed steps
exactly from the search cache; with an LLM, replay is exact as long as every request is the
same as before (it is when the earlier answers came from the cache). The Magentic manager's
chat calls are cached too (when its client was built from the settings), so a resumed Magentic
run replays the manager's decisions as long as its requests are the same as before.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from pydantic import TypeAdapter
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from deepcritical.llm.model_cache import request_key
from deepcritical.models import Evidence, SearchFilters, utc_now
from deepcritical.sources.base import SearchSource
from deepcritical.sources.citation_graph import (
    CitationLinker,
    CitationLinks,
    CitationSeed,
    Direction,
)
from deepcritical.sources.fulltext import FullText, FullTextReader
from deepcritical.state.run_store import RunStore
from deepcritical.state.schema import CacheRow, aware

__all__ = ["CachedCitations", "CachedFullText", "CachedSource", "CallCache"]

_EVIDENCE_LIST = TypeAdapter(list[Evidence])


class CallCache:
    """Request-keyed answers in the run database.

    Args:
        runs: the run database.
        ttl_seconds: entries older than this are misses (0: never hit).

    ``hits`` and ``misses`` count lookups since creation (per kind: ``stats``).
    """

    def __init__(self, runs: RunStore, ttl_seconds: float = 86400.0) -> None:
        self.runs = runs
        self.ttl_seconds = ttl_seconds
        self.stats: dict[str, dict[str, int]] = {}

    def _count(self, kind: str, what: str) -> None:
        entry = self.stats.setdefault(kind, {"hits": 0, "misses": 0})
        entry[what] += 1

    def get(self, kind: str, key: str) -> str | None:
        """The payload stored under ``key``, or ``None`` (absent or older than the TTL)."""
        row = self.runs.transact(lambda s: self._get(s, key))
        self._count(kind, "hits" if row is not None else "misses")
        return row

    def _get(self, session: Session, key: str) -> str | None:
        row = session.scalar(select(CacheRow).where(CacheRow.key == key))
        if row is None:
            return None
        if utc_now() - aware(row.created_at) > timedelta(seconds=self.ttl_seconds):
            return None
        return row.payload

    def put(self, kind: str, key: str, payload: str, label: str = "") -> None:
        """Store ``payload`` under ``key`` (replacing an older entry)."""

        def work(session: Session) -> None:
            session.execute(delete(CacheRow).where(CacheRow.key == key))
            session.add(
                CacheRow(
                    key=key, kind=kind, label=label[:200], payload=payload, created_at=utc_now()
                )
            )

        try:
            self.runs.transact(work)
        except Exception as exc:  # another run stored the same answer at the same moment
            if self.runs.transact(lambda s: self._get(s, key)) is None:
                raise exc


class CachedSource:
    """``source`` with its answers cached in ``cache`` (see the module docstring).

    ``name`` is the wrapped source's; ``live_calls`` counts the calls that reached it.
    """

    def __init__(self, source: SearchSource, cache: CallCache) -> None:
        self.source = source
        self.cache = cache
        self.name = source.name
        self.live_calls = 0

    def key(self, query: str, limit: int, filters: SearchFilters | None = None) -> str:
        """The cache key of ``search(query, limit, filters)``: the filters that are set
        (:meth:`SearchFilters.key`) are part of it; with none set it is the key of an
        unfiltered search."""
        root = getattr(self.source, "base_url", None)
        request: dict[str, object] = {
            "source": self.name,
            "query": query,
            "limit": limit,
            "root": root,
        }
        if filters is not None and not filters.is_empty():
            request["filters"] = filters.key()
        return request_key("search", request)

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        """The cached answer, or the wrapped source's (then cached); ``filters`` are passed
        on only when some are set.

        Raises:
            SourceError: from the wrapped source (not cached).
        """
        key = self.key(query, limit, filters)
        payload = await asyncio.to_thread(self.cache.get, "search", key)
        if payload is not None:
            return _EVIDENCE_LIST.validate_json(payload)
        self.live_calls += 1
        if filters is None or filters.is_empty():
            items = list(await self.source.search(query, limit))
        else:
            items = list(await self.source.search(query, limit, filters=filters))
        data = _EVIDENCE_LIST.dump_json(items).decode("utf-8")
        await asyncio.to_thread(self.cache.put, "search", key, data, f"{self.name}: {query}")
        return items


class CachedFullText:
    """``reader`` with its full texts cached in ``cache`` (see the module docstring);
    ``live_calls`` counts the fetches that reached it."""

    def __init__(self, reader: FullTextReader, cache: CallCache) -> None:
        self.reader = reader
        self.cache = cache
        self.live_calls = 0

    def key(self, pmcid: str) -> str:
        """The cache key of ``fetch(pmcid)``."""
        roots = getattr(self.reader, "roots", None)
        return request_key("fulltext", {"pmcid": pmcid, "roots": roots})

    async def fetch(self, pmcid: str) -> FullText:
        """The cached full text, or the wrapped reader's (then cached).

        Raises:
            SourceError: from the wrapped reader (not cached).
        """
        key = self.key(pmcid)
        payload = await asyncio.to_thread(self.cache.get, "fulltext", key)
        if payload is not None:
            return FullText.model_validate_json(payload)
        self.live_calls += 1
        text = await self.reader.fetch(pmcid)
        await asyncio.to_thread(
            self.cache.put, "fulltext", key, text.model_dump_json(), f"full text {pmcid}"
        )
        return text


class CachedCitations:
    """``linker`` with its answers cached in ``cache`` (see the module docstring), so a resumed
    run does not follow the same citations again; ``live_calls`` counts the lookups that
    reached it."""

    def __init__(self, linker: CitationLinker, cache: CallCache) -> None:
        self.linker = linker
        self.cache = cache
        self.live_calls = 0

    def key(self, seed: CitationSeed, direction: Direction, limit: int) -> str:
        """The cache key of ``links(seed, direction, limit)``."""
        roots = getattr(self.linker, "roots", None)
        return request_key(
            "citations",
            {
                "seed": seed.model_dump(mode="json"),
                "direction": direction,
                "limit": limit,
                "roots": roots,
            },
        )

    async def links(self, seed: CitationSeed, direction: Direction, limit: int) -> CitationLinks:
        """The cached answer, or the wrapped linker's (then cached when no service failed)."""
        key = self.key(seed, direction, limit)
        payload = await asyncio.to_thread(self.cache.get, "citations", key)
        if payload is not None:
            return CitationLinks.model_validate_json(payload)
        self.live_calls += 1
        links = await self.linker.links(seed, direction, limit)
        if not links.failures:
            label = f"citations {direction} {seed.label}"
            await asyncio.to_thread(
                self.cache.put, "citations", key, links.model_dump_json(), label
            )
        return links
