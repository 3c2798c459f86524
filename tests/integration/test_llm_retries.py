"""``DEEPCRITICAL_LLM_RETRIES`` reaches the provider SDK clients (issue 13 item 7): a model
server on 127.0.0.1 that answers every request with HTTP 500 receives exactly
``llm_retries + 1`` requests per call, through the pydantic-ai model of the agents and
through the agent-framework chat client of the Magentic manager.

(respx cannot count these requests: the openai SDK sends them through ``httpx2``, which
respx does not patch; a real listener sees what the client really sends.)
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from agent_framework import Message
from agent_framework.exceptions import ChatClientException
from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelHTTPError

from deepcritical.config import Settings
from deepcritical.llm.providers import build_chat_client, build_model, close_chat_client
from tests.integration.error_listener import ErrorListener


@pytest.fixture
def failing_server() -> Iterator[ErrorListener]:
    """A model server that answers every request with HTTP 500."""
    with ErrorListener(500, "overloaded", "server") as server:
        yield server


def settings_for(server: ErrorListener, retries: int) -> Settings:
    return Settings(
        llm=f"openai-compatible:stub-model@{server.base_url}",
        llm_retries=retries,
        llm_timeout_seconds=30,
        _env_file=None,
    )


@pytest.mark.parametrize("retries", [0, 1])
async def test_the_agents_model_sends_llm_retries_plus_one_requests(
    failing_server: ErrorListener, retries: int
) -> None:
    model = build_model(settings_for(failing_server, retries))
    assert model is not None
    async with model:  # closes the provider's HTTP client
        with pytest.raises(ModelHTTPError) as info:
            await Agent(model).run("Does metformin reduce cancer risk?")
    assert info.value.status_code == 500
    assert len(failing_server.seen) == retries + 1


@pytest.mark.parametrize("retries", [0, 1])
async def test_the_managers_chat_client_sends_llm_retries_plus_one_requests(
    failing_server: ErrorListener, retries: int
) -> None:
    client = build_chat_client(settings_for(failing_server, retries))
    try:
        with pytest.raises(ChatClientException, match="Error code: 500"):
            await client.get_response([Message(role="user", contents=["Plan the research."])])
    finally:
        await close_chat_client(client)
    assert len(failing_server.seen) == retries + 1
