"""Request-keyed caching of model calls, so a resumed or repeated run does not pay twice.

- :class:`CallStore`: where answers are kept, ``(kind, key) -> JSON payload``; the run database
  implements it (:class:`deepcritical.state.CallCache`).
- :func:`request_key`: SHA-256 of a request's canonical JSON. :func:`stable_prompt_text` and
  :func:`strip_volatile` take out of a request what changes between two runs of the same
  request: the random nonce of source fences (:data:`deepcritical.llm.fencing.NONCE_ATTRIBUTE`)
  and the date line every structured call starts with
  (:data:`deepcritical.llm.runner.TODAY_LINE`), plus timestamps, provider response ids and
  run ids.
- :class:`CachedModel`: a pydantic-ai ``WrapperModel`` keyed by a hash of model name, system,
  messages (without volatile fields), model settings and request parameters (tool
  definitions, output schema). Streaming requests (``request_stream``) pass through
  uncached. It counts live and cached requests and tokens.
- :class:`~deepcritical.llm.chat_cache.CachedChatClient`: the same for the Magentic manager's
  agent-framework chat client.

With an LLM, replay is exact as long as every request is the same as before (it is when the
earlier answers came from the cache).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import re
from typing import Any, Protocol

from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from deepcritical.config import redact_url
from deepcritical.llm.fencing import NONCE_ATTRIBUTE
from deepcritical.llm.runner import TODAY_LINE

__all__ = ["CachedModel", "CallStore", "request_key", "stable_prompt_text", "strip_volatile"]

_VOLATILE = frozenset({"timestamp", "provider_response_id", "run_id", "conversation_id"})


class CallStore(Protocol):
    """Where cached answers live: ``kind`` is ``"llm"``, ``"chat"`` or ``"search"``; ``key`` a
    :func:`request_key`; ``payload`` JSON text. Both methods block (call them in a thread)."""

    def get(self, kind: str, key: str) -> str | None:
        """The payload stored under ``key``, or ``None`` (absent or expired)."""
        ...

    def put(self, kind: str, key: str, payload: str, label: str = "") -> None:
        """Store ``payload`` under ``key`` (replacing an older entry); ``label`` is a short
        human-readable description (model or source name and query)."""
        ...


def request_key(kind: str, request: Any) -> str:
    """SHA-256 hex of ``kind`` and the canonical JSON of ``request`` (sorted keys)."""
    text = json.dumps([kind, request], sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_TODAY = re.compile(
    "^" + re.escape(TODAY_LINE).replace(re.escape("{date}"), r"\d{4}-\d{2}-\d{2}") + r"\n*"
)


def stable_prompt_text(text: str) -> str:
    """``text`` without what changes between two runs of the same request: the random nonce of
    source fences (every occurrence becomes ``NONCE``) and the "Today's date is ..." line the
    structured calls put first, so a resumed run, even on another day, finds the answers of
    the first one."""
    for nonce in set(NONCE_ATTRIBUTE.findall(text)):
        text = re.sub(re.escape(nonce), "NONCE", text, flags=re.IGNORECASE)
    return _TODAY.sub("", text)


def strip_volatile(value: Any) -> Any:
    """JSON data ``value`` without volatile keys (timestamps, response and run ids) and with
    every string through :func:`stable_prompt_text`."""
    if isinstance(value, dict):
        return {k: strip_volatile(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [strip_volatile(v) for v in value]
    if isinstance(value, str):
        return stable_prompt_text(value)
    return value


def _public_response(response: ModelResponse) -> ModelResponse:
    """``response`` with its ``provider_url`` through :func:`~deepcritical.config.redact_url`
    (a base URL may carry credentials; the cached answer is stored). Returned live and
    cached alike, so the next request's messages are the same either way."""
    if not response.provider_url:
        return response
    return dataclasses.replace(response, provider_url=redact_url(response.provider_url))


class CachedModel(WrapperModel):
    """``wrapped`` with non-streaming requests cached in ``cache`` (see the module docstring).

    Counters: ``live_requests``, ``cached_requests``, ``input_tokens``/``output_tokens`` of
    live requests.
    """

    def __init__(self, wrapped: Model, cache: CallStore) -> None:
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
                "messages": strip_volatile(dumped),
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
        """The cached response to this request, or the wrapped model's (then cached, unless
        it was cut at its token bound: ``finish_reason == "length"``)."""
        key = self.key(messages, model_settings, model_request_parameters)
        payload = await asyncio.to_thread(self.cache.get, "llm", key)
        if payload is not None:
            cached = ModelMessagesTypeAdapter.validate_json(payload)
            if cached and isinstance(cached[0], ModelResponse):
                self.cached_requests += 1
                return cached[0]
        response = _public_response(
            await self.wrapped.request(messages, model_settings, model_request_parameters)
        )
        self.live_requests += 1
        self.input_tokens += response.usage.input_tokens
        self.output_tokens += response.usage.output_tokens
        if response.finish_reason == "length":
            return response  # cut at max_tokens: not an answer to replay (a retry asks live)
        data = ModelMessagesTypeAdapter.dump_json([response]).decode("utf-8")
        await asyncio.to_thread(self.cache.put, "llm", key, data, self.model_name)
        return response
