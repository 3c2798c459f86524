"""The request-keyed call cache (:mod:`deepcritical.llm.model_cache`) for agent-framework chat
clients: :class:`CachedChatClient`, used for the Magentic manager's model
(:func:`deepcritical.llm.providers.build_chat_client`), so a resumed or repeated Magentic run
replays the manager's decisions instead of paying for them again.

What the manager needs from a client (agent-framework 1.23, ``Agent`` behind
``StandardMagenticManager._complete``): ``get_response(messages=..., stream=False,
options=..., compaction_strategy=..., tokenizer=..., function_invocation_kwargs=...,
client_kwargs=...)`` and the ``additional_properties`` attribute (the
``SupportsChatGetResponse`` protocol), plus optional attributes it reads with ``getattr``
(``model``, ``STORES_BY_DEFAULT``, ``service_session_state_keys``,
``_update_agent_name_and_description``), which the wrapper forwards to the wrapped client.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

from agent_framework import (
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    Message,
    ResponseStream,
    SupportsChatGetResponse,
)

from deepcritical.llm.model_cache import CallStore, request_key, stable_prompt_text, strip_volatile
from deepcritical.logs import get_logger

if TYPE_CHECKING:
    from agent_framework import CompactionStrategy, TokenizerProtocol

__all__ = ["CachedChatClient", "chat_request_key"]

log = get_logger(__name__)

KIND = "chat"
"""``call_cache.kind`` of the chat-client entries (and the key of ``CallCache.stats``)."""

_VOLATILE_OPTIONS = frozenset({"conversation_id"})


def _jsonable(value: Any) -> Any:
    """``value`` as stable JSON data for a cache key: mappings and sequences recursively,
    agent-framework objects by their ``to_dict()``, pydantic model classes by their JSON
    schema, other objects (functions as tools...) by their qualified name, never by ``repr``
    (which would carry a memory address)."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [_jsonable(v) for v in value]
        return items if isinstance(value, list | tuple) else sorted(items, key=str)
    schema = getattr(value, "model_json_schema", None)
    if isinstance(value, type) and callable(schema):
        return {"schema": _jsonable(schema())}
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        try:
            return _jsonable(to_dict())
        except Exception:  # noqa: BLE001 - an object whose to_dict needs arguments: fall through
            pass
    name = getattr(value, "name", None) or getattr(value, "__qualname__", None)
    kind = type(value)
    return {"object": f"{kind.__module__}.{kind.__qualname__}", "name": str(name or "")}


def _message_key(message: Message) -> dict[str, Any]:
    """Role, author and contents of ``message``: texts through :func:`stable_prompt_text`,
    other contents (function calls and results...) by their ``to_dict()`` without volatile
    fields."""
    contents: list[Any] = []
    for content in message.contents:
        if content.type == "text":
            contents.append(stable_prompt_text(content.text or ""))
        else:
            dumped = content.to_dict()
            dumped.pop("additional_properties", None)
            contents.append(strip_volatile(_jsonable(dumped)))
    return {"role": str(message.role), "author": message.author_name, "contents": contents}


def chat_request_key(
    model: str | None,
    client: str,
    messages: Sequence[Message],
    options: Mapping[str, Any] | None,
) -> str:
    """The cache key of one non-streaming chat request: model id (``None`` when the client
    names none), client class name, the messages (:func:`_message_key`) and the options
    (``instructions``, ``response_format``, ``tools``, ``temperature``...; without
    ``conversation_id``; strings normalised by :func:`stable_prompt_text`)."""
    opts = {k: v for k, v in (options or {}).items() if k not in _VOLATILE_OPTIONS}
    return request_key(
        KIND,
        {
            "model": model,
            "client": client,
            "messages": [_message_key(m) for m in messages],
            "options": strip_volatile(_jsonable(opts)),
        },
    )


class CachedChatClient:
    """``wrapped`` (an agent-framework chat client) with its non-streaming ``get_response``
    answers cached in ``cache`` under :func:`chat_request_key`; the ``ChatResponse`` is stored
    as its ``to_json()`` and replayed with ``ChatResponse.from_dict`` (with the request's
    ``response_format``, so ``.value`` parses as live). Streaming requests pass through
    uncached. An answer cut at its token bound (``finish_reason == "length"``) is never
    stored. An entry that no longer deserialises is a miss (and is replaced).

    Usage: a replayed response carries the ``usage_details`` of the call that stored it, so
    the manager's usage accounting (``ManagerUsage`` in :mod:`deepcritical.orchestrators.
    magentic`) counts it as one request with its original tokens, as a :class:`~deepcritical.
    state.cache.CachedModel` hit is counted by pydantic-ai. What was really paid is in the
    counters: ``live_requests`` (non-streaming calls answered by ``wrapped``, counted after
    they succeed), ``cached_requests`` (answered from the cache) and ``input_tokens`` /
    ``output_tokens`` of the live ones.

    Other attributes (``model``, ``client`` read by :func:`deepcritical.llm.
    close_chat_client`...) are the wrapped client's.
    """

    def __init__(self, wrapped: SupportsChatGetResponse[Any], cache: CallStore) -> None:
        self.wrapped = wrapped
        self.cache = cache
        self.additional_properties: dict[str, Any] = wrapped.additional_properties
        self.live_requests = 0
        self.cached_requests = 0
        self.input_tokens = 0
        self.output_tokens = 0

    def __getattr__(self, name: str) -> Any:
        # only called for attributes this wrapper lacks: ``model``, ``client``...
        if name == "wrapped":  # not yet set (copy/pickle): no recursion
            raise AttributeError(name)
        return getattr(self.wrapped, name)

    @property
    def model_id(self) -> str | None:
        """The wrapped client's model id (its ``model`` attribute), if it names one."""
        model = getattr(self.wrapped, "model", None)
        return str(model) if model else None

    def key(self, messages: Sequence[Message], options: Mapping[str, Any] | None) -> str:
        """The cache key of ``get_response(messages, options=options)``."""
        return chat_request_key(self.model_id, type(self.wrapped).__name__, messages, options)

    @overload
    def get_response(
        self,
        messages: Sequence[Message],
        *,
        stream: Literal[False] = ...,
        options: ChatOptions[Any] | Mapping[str, Any] | None = None,
        compaction_strategy: CompactionStrategy | None = None,
        tokenizer: TokenizerProtocol | None = None,
        function_invocation_kwargs: Mapping[str, Any] | None = None,
        client_kwargs: Mapping[str, Any] | None = None,
    ) -> Awaitable[ChatResponse[Any]]: ...

    @overload
    def get_response(
        self,
        messages: Sequence[Message],
        *,
        stream: Literal[True],
        options: ChatOptions[Any] | Mapping[str, Any] | None = None,
        compaction_strategy: CompactionStrategy | None = None,
        tokenizer: TokenizerProtocol | None = None,
        function_invocation_kwargs: Mapping[str, Any] | None = None,
        client_kwargs: Mapping[str, Any] | None = None,
    ) -> ResponseStream[ChatResponseUpdate, ChatResponse[Any]]: ...

    def get_response(
        self,
        messages: Sequence[Message],
        *,
        stream: bool = False,
        options: ChatOptions[Any] | Mapping[str, Any] | None = None,
        compaction_strategy: CompactionStrategy | None = None,
        tokenizer: TokenizerProtocol | None = None,
        function_invocation_kwargs: Mapping[str, Any] | None = None,
        client_kwargs: Mapping[str, Any] | None = None,
    ) -> Awaitable[ChatResponse[Any]] | ResponseStream[ChatResponseUpdate, ChatResponse[Any]]:
        """The cached response to this request, or the wrapped client's (then cached);
        ``stream=True``: the wrapped client's stream, uncached.

        Raises:
            whatever the wrapped client raises (nothing is cached then).
        """
        extra: dict[str, Any] = {
            "compaction_strategy": compaction_strategy,
            "tokenizer": tokenizer,
            "function_invocation_kwargs": function_invocation_kwargs,
            "client_kwargs": client_kwargs,
        }
        extra = {k: v for k, v in extra.items() if v is not None}
        if stream:
            streamed: ResponseStream[ChatResponseUpdate, ChatResponse[Any]]
            streamed = self.wrapped.get_response(
                messages=messages,
                stream=True,
                options=options,
                **extra,
            )
            return streamed
        return self._respond(list(messages), options, extra)

    async def _respond(
        self, messages: list[Message], options: Mapping[str, Any] | None, extra: dict[str, Any]
    ) -> ChatResponse[Any]:
        key = self.key(messages, options)
        response_format = (options or {}).get("response_format")
        payload = await asyncio.to_thread(self.cache.get, KIND, key)
        if payload is not None:
            try:
                cached: ChatResponse[Any] = ChatResponse.from_json(
                    payload,
                    dependencies={"chat_response": {"response_format": response_format}},
                )
            except (ValueError, TypeError, KeyError) as exc:
                log.warning("unreadable chat cache entry, asking live", error=str(exc))
            else:
                self.cached_requests += 1
                return cached
        response: ChatResponse[Any] = await self.wrapped.get_response(
            messages=messages,
            stream=False,
            options=options,
            **extra,
        )
        self.live_requests += 1
        usage = response.usage_details or {}
        self.input_tokens += int(usage.get("input_token_count") or 0)
        self.output_tokens += int(usage.get("output_token_count") or 0)
        if str(response.finish_reason or "") == "length":
            # cut at max_tokens: not an answer to replay (its retry must ask live)
            log.info("chat answer cut at its token bound, not cached")
            return response
        label = self.model_id or type(self.wrapped).__name__
        await asyncio.to_thread(self.cache.put, KIND, key, response.to_json(), label)
        return response
