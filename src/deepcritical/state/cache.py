"""A cache of search and LLM calls keyed by the request, so a resumed or repeated run does not
pay twice.

- :class:`CallCache`: ``key -> JSON payload`` rows in the run database (``call_cache``).
  An entry older than ``ttl_seconds`` (``Settings.cache_ttl_seconds``) is a miss and is
  replaced. Writes are insert-or-replace, so parallel runs asking the same thing do not fail.
- :class:`CachedSource`: a :class:`~deepcritical.sources.base.SearchSource` wrapper keyed by
  source name + query + limit + API root. Only answers are cached; a
  :class:`~deepcritical.sources.base.SourceError` is not (the next call tries again).
- :class:`CachedModel`: a pydantic-ai ``WrapperModel`` keyed by a hash of model name, system,
  messages (without volatile fields: timestamps, provider response ids, run ids; with source
  fence nonces and the "Today's date" line normalised, see :func:`stable_prompt_text`), model
  settings and request parameters (tool definitions, output schema). Streaming requests
  (``request_stream``) pass through uncached. It counts live and cached requests and tokens.
- :class:`~deepcritical.state.chat_cache.CachedChatClient` (in :mod:`.chat_cache`): the same
  for the Magentic manager's agent-framework chat client (non-streaming ``get_response``).

What a cache hit means for replay: the extractive (``--llm none``) path is deterministic given
the same search answers and the same embedder, so a resumed run replays its completed steps
exactly from the search cache; with an LLM, replay is exact as long as every request is the
same as before (it is when the earlier answers came from the cache). The Magentic manager's
chat calls are cached too (when its client was built from the settings), so a resumed Magentic
run replays the manager's decisions as long as its requests are the same as before.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import re
from datetime import timedelta
from typing import Any

from pydantic import TypeAdapter
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from deepcritical.models import Evidence, utc_now
from deepcritical.sources.base import SearchSource
from deepcritical.state.runs import RunStore
from deepcritical.state.schema import CacheRow, aware

__all__ = ["CachedModel", "CachedSource", "CallCache", "request_key"]

_EVIDENCE_LIST = TypeAdapter(list[Evidence])
_VOLATILE = frozenset({"timestamp", "provider_response_id", "run_id", "conversation_id"})


def request_key(kind: str, request: Any) -> str:
    """SHA-256 hex of ``kind`` and the canonical JSON of ``request`` (sorted keys)."""
    text = json.dumps([kind, request], sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_FENCE_NONCE = re.compile(r'nonce="([0-9a-fA-F]{8,64})"')
_TODAY = re.compile(r"^Today's date is \d{4}-\d{2}-\d{2}\.\n*")


def stable_prompt_text(text: str) -> str:
    """``text`` without what changes between two runs of the same request: the random nonce of
    source fences (:mod:`deepcritical.agents.fencing`; every occurrence becomes ``NONCE``) and
    the "Today's date is ..." line the agents put first (:mod:`deepcritical.agents.runner`),
    so a resumed run, even on another day, finds the answers of the first one."""
    for nonce in set(_FENCE_NONCE.findall(text)):
        text = re.sub(re.escape(nonce), "NONCE", text, flags=re.IGNORECASE)
    return _TODAY.sub("", text)


def _strip_volatile(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_volatile(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_strip_volatile(v) for v in value]
    if isinstance(value, str):
        return stable_prompt_text(value)
    return value


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

    def key(self, query: str, limit: int) -> str:
        """The cache key of ``search(query, limit)``."""
        root = getattr(self.source, "base_url", None)
        return request_key(
            "search", {"source": self.name, "query": query, "limit": limit, "root": root}
        )

    async def search(self, query: str, limit: int) -> list[Evidence]:
        """The cached answer, or the wrapped source's (then cached).

        Raises:
            SourceError: from the wrapped source (not cached).
        """
        key = self.key(query, limit)
        payload = await asyncio.to_thread(self.cache.get, "search", key)
        if payload is not None:
            return _EVIDENCE_LIST.validate_json(payload)
        self.live_calls += 1
        items = list(await self.source.search(query, limit))
        data = _EVIDENCE_LIST.dump_json(items).decode("utf-8")
        await asyncio.to_thread(self.cache.put, "search", key, data, f"{self.name}: {query}")
        return items


class CachedModel(WrapperModel):
    """``wrapped`` with non-streaming requests cached in ``cache`` (see the module docstring).

    Counters: ``live_requests``, ``cached_requests``, ``input_tokens``/``output_tokens`` of
    live requests.
    """

    def __init__(self, wrapped: Model, cache: CallCache) -> None:
        super().__init__(wrapped)
        self.cache = cache
        self.live_requests = 0
        self.cached_requests = 0
        self.input_tokens = 0
        self.output_tokens = 0

    def key(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        params: ModelRequestParameters,
    ) -> str:
        """The cache key of one request."""
        dumped = ModelMessagesTypeAdapter.dump_python(messages, mode="json")
        return request_key(
            "llm",
            {
                "model": self.model_name,
                "system": self.system,
                "messages": _strip_volatile(dumped),
                "settings": dict(model_settings or {}),
                "params": dataclasses.asdict(params),
            },
        )

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        """The cached response to this request, or the wrapped model's (then cached)."""
        key = self.key(messages, model_settings, model_request_parameters)
        payload = await asyncio.to_thread(self.cache.get, "llm", key)
        if payload is not None:
            cached = ModelMessagesTypeAdapter.validate_json(payload)
            if cached and isinstance(cached[0], ModelResponse):
                self.cached_requests += 1
                return cached[0]
        response = await self.wrapped.request(messages, model_settings, model_request_parameters)
        self.live_requests += 1
        self.input_tokens += response.usage.input_tokens
        self.output_tokens += response.usage.output_tokens
        data = ModelMessagesTypeAdapter.dump_json([response]).decode("utf-8")
        await asyncio.to_thread(self.cache.put, "llm", key, data, self.model_name)
        return response
