"""The call cache of the Magentic manager's agent-framework chat client
(:class:`~deepcritical.llm.chat_cache.CachedChatClient`): unit cases on the scripted manager
client of the Magentic tests, then a whole ``research()`` run repeated against the Chat
Completions stub with persistence on, whose second run must not reach the manager's model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from agent_framework import ChatResponse, Message, SupportsChatGetResponse
from pydantic import BaseModel

from deepcritical.api import research
from deepcritical.config import Settings
from deepcritical.events import ResearchEvent
from deepcritical.llm.chat_cache import KIND, CachedChatClient
from deepcritical.llm.providers import close_chat_client
from deepcritical.models import RunResult
from deepcritical.state import RunStore
from deepcritical.state.cache import CallCache
from deepcritical.testing.chat import (
    ChatCompletionsStub,
    ManagerScript,
    RoleScript,
    ScriptedChatClient,
    request_kind,
)
from deepcritical.testing.embedders import HashingEmbedder
from tests.conftest import hashed_corpus
from tests.integration.test_magentic_openai_stub import QUESTION, RECORDS

INSTRUCTIONS = {"instructions": "You coordinate a biomedical literature research team."}


def facts_request(nonce: str = "0123abcd", day: str = "2026-01-02") -> list[Message]:
    """A manager conversation: task with a fenced source, then the facts prompt."""
    task = (
        f"Today's date is {day}.\n\nResearch question: metformin and cancer\n"
        f'<source id="E1" nonce="{nonce}">Metformin lowered cancer incidence.</source '
        f'nonce="{nonce}">'
    )
    return [
        Message(role="user", contents=[task]),
        Message(role="assistant", author_name="SearchAgent", contents=["Found 3 studies."]),
        Message(role="user", contents=["Answer the pre-survey about the facts."]),
    ]


def plan_request() -> list[Message]:
    return [Message(role="user", contents=["Please devise a short bullet-point plan."])]


async def ask(
    client: SupportsChatGetResponse[Any],
    messages: Sequence[Message],
    options: Mapping[str, Any] | None = None,
) -> ChatResponse[Any]:
    response: ChatResponse[Any] = await client.get_response(
        messages=list(messages), options=dict(options or INSTRUCTIONS)
    )
    return response


# --------------------------------------------------------------------------- unit
async def test_a_second_wrapper_answers_the_same_conversation_from_the_cache(
    runs: RunStore,
) -> None:
    cache = CallCache(runs)
    first_inner = ScriptedChatClient(ManagerScript())
    first = CachedChatClient(first_inner, cache)
    live = await ask(first, facts_request())
    assert first_inner.script.kinds == ["facts"]
    assert (first.live_requests, first.cached_requests) == (1, 0)
    assert first.input_tokens == first_inner.script.tally.input_tokens["manager"] > 0
    assert first.output_tokens == first_inner.script.tally.output_tokens["manager"] > 0

    second_inner = ScriptedChatClient(ManagerScript())
    second = CachedChatClient(second_inner, cache)
    replayed = await ask(second, facts_request())
    assert second_inner.script.kinds == []  # the inner client was not called
    assert (second.live_requests, second.cached_requests) == (0, 1)
    assert (second.input_tokens, second.output_tokens) == (0, 0)
    assert replayed.text == live.text
    assert [m.role for m in replayed.messages] == ["assistant"]
    # the usage the manager's accounting reads travels with the cached response
    assert live.usage_details is not None
    assert replayed.usage_details == live.usage_details

    await ask(second, plan_request())  # another conversation: live
    assert second_inner.script.kinds == ["plan"]
    assert (second.live_requests, second.cached_requests) == (1, 1)
    assert cache.stats[KIND] == {"hits": 1, "misses": 2}


async def test_fence_nonce_and_date_do_not_change_the_key_but_the_text_and_options_do(
    runs: RunStore,
) -> None:
    cache = CallCache(runs)
    inner = ScriptedChatClient(ManagerScript())
    client = CachedChatClient(inner, cache)
    await ask(client, facts_request(nonce="0123abcd", day="2026-01-02"))
    await ask(client, facts_request(nonce="ffee9988aa", day="2027-06-30"))
    assert inner.script.kinds == ["facts"]
    assert client.cached_requests == 1

    changed = facts_request()
    changed[1] = Message(role="assistant", author_name="SearchAgent", contents=["Found 4."])
    await ask(client, changed)
    await ask(client, facts_request(), {**INSTRUCTIONS, "temperature": 0.7})
    await ask(client, facts_request(), {"instructions": "Other instructions."})
    assert inner.script.kinds == ["facts"] * 4
    assert (client.live_requests, client.cached_requests) == (4, 1)


class Verdict(BaseModel):
    answer: bool


class JsonClient:
    """A minimal ``SupportsChatGetResponse`` answering JSON; records every call."""

    def __init__(self) -> None:
        self.additional_properties: dict[str, Any] = {}
        self.model = "json-model"
        self.calls: list[dict[str, Any]] = []

    def get_response(self, messages: Sequence[Message], **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        if kwargs.get("stream"):
            return "a stream"

        async def respond() -> ChatResponse[Any]:
            return ChatResponse(
                messages=[Message(role="assistant", contents=['{"answer": true}'])],
                response_format=(kwargs.get("options") or {}).get("response_format"),
            )

        return respond()


async def test_structured_replay_streaming_pass_through_and_unreadable_entries(
    runs: RunStore,
) -> None:
    cache = CallCache(runs)
    inner = JsonClient()
    client = CachedChatClient(inner, cache)
    options = {"response_format": Verdict}
    await ask(client, plan_request(), options)
    replayed = await ask(CachedChatClient(JsonClient(), cache), plan_request(), options)
    assert replayed.value == Verdict(answer=True)  # parsed with the request's format

    assert client.model_id == "json-model"
    streamed: Any = client.get_response(messages=plan_request(), stream=True)
    assert streamed == "a stream"  # the wrapped client's stream, as it returned it
    assert inner.calls[-1]["stream"] is True
    assert client.live_requests == 1  # the stream is neither cached nor counted

    cache.put(KIND, client.key(plan_request(), INSTRUCTIONS), "{not json", "broken")
    await ask(client, plan_request())
    assert (client.live_requests, client.cached_requests) == (2, 0)
    assert cache.get(KIND, client.key(plan_request(), INSTRUCTIONS)) is not None  # replaced
    again = CachedChatClient(JsonClient(), cache)
    await ask(again, plan_request())
    assert again.cached_requests == 1


async def test_close_chat_client_still_closes_the_wrapped_http_client(runs: RunStore) -> None:
    class Http:
        closed = False

        async def close(self) -> None:
            self.closed = True

    inner = JsonClient()
    inner.client = Http()  # type: ignore[attr-defined]
    await close_chat_client(CachedChatClient(inner, CallCache(runs)))
    assert inner.client.closed  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- end to end
@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    return hashed_corpus(tmp_path, RECORDS)


def done(events: list[ResearchEvent]) -> RunResult:
    assert events[-1].type == "done", [(e.type, e.message) for e in events[-10:]]
    assert events[-1].result is not None
    return events[-1].result


async def test_a_repeated_magentic_run_replays_the_manager_from_the_cache(
    tmp_path: Path, corpus_dir: Path
) -> None:
    """Two persisted ``research()`` runs of one question, the manager's client built from
    settings (``openai-compatible`` on the stub): the second makes no manager request."""
    with ChatCompletionsStub(ManagerScript(), RoleScript()) as stub:
        s = Settings(
            llm=f"openai-compatible:stub@{stub.base_url}",
            orchestrator="magentic",
            sources=["local"],
            data_dir=tmp_path / "data",
            corpus_dir=corpus_dir,
            max_rounds=2,
            results_per_query=4,
            llm_retries=1,
            llm_timeout_seconds=30,
            time_budget_seconds=120,
        )
        assert s.persist_runs
        first = done([e async for e in research(QUESTION, s, embedder=HashingEmbedder())])
        first_manager = [r for r in stub.requests if request_kind(r) == "manager"]
        assert first_manager
        assert stub.manager.kinds[-1] == "final"
        sent = len(stub.requests)

        second = done([e async for e in research(QUESTION, s, embedder=HashingEmbedder())])
        assert not stub.errors, stub.errors
        manager_later = [r for r in stub.requests[sent:] if request_kind(r) == "manager"]
        assert manager_later == []  # every manager call was answered by the cache
        assert len(stub.manager.kinds) == len(first_manager)

    # a cached manager call still counts as a request with the tokens it cost first
    first_usage = first.report.metadata.usage.llm["manager"]
    second_usage = second.report.metadata.usage.llm["manager"]
    assert first_usage.requests == len(first_manager)
    assert second_usage.requests == first_usage.requests
    assert second_usage.input_tokens == first_usage.input_tokens > 0
    # as for the roles' CachedModel hits: the whole usage reads as the first run's
    assert second.report.metadata.usage.llm == first.report.metadata.usage.llm
    assert second.report.metadata.stop_reason == "manager_finished"
    assert [r.citation for r in second.report.references] == [
        r.citation for r in first.report.references
    ]
