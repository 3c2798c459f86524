"""``DEEPCRITICAL_LLM_RETRIES`` reaches the provider SDK clients (issue 13 item 7): a model
server on 127.0.0.1 that answers every request with HTTP 500 receives exactly
``llm_retries + 1`` requests per call, through the pydantic-ai model of the agents and
through the agent-framework chat client of the Magentic manager.

(respx cannot count these requests: the openai SDK sends them through ``httpx2``, which
respx does not patch; a real listener sees what the client really sends.)
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from agent_framework import Message
from agent_framework.exceptions import ChatClientException
from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelHTTPError

from deepcritical.config import Settings
from deepcritical.llm.providers import build_chat_client, build_model, close_chat_client


class FailingModelServer:
    """An OpenAI-compatible server on 127.0.0.1 (ephemeral port) that counts the requests it
    receives and answers each with HTTP 500."""

    def __init__(self) -> None:
        self.requests = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with server._lock:
                    server.requests += 1
                data = json.dumps({"error": {"message": "overloaded", "type": "server"}}).encode()
                self.send_response(500)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FailingModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


@pytest.fixture
def failing_server() -> Iterator[FailingModelServer]:
    with FailingModelServer() as server:
        yield server


def settings_for(server: FailingModelServer, retries: int) -> Settings:
    return Settings(
        llm=f"openai-compatible:stub-model@{server.base_url}",
        llm_retries=retries,
        llm_timeout_seconds=30,
        _env_file=None,
    )


@pytest.mark.parametrize("retries", [0, 1])
async def test_the_agents_model_sends_llm_retries_plus_one_requests(
    failing_server: FailingModelServer, retries: int
) -> None:
    model = build_model(settings_for(failing_server, retries))
    assert model is not None
    async with model:  # closes the provider's HTTP client
        with pytest.raises(ModelHTTPError) as info:
            await Agent(model).run("Does metformin reduce cancer risk?")
    assert info.value.status_code == 500
    assert failing_server.requests == retries + 1


@pytest.mark.parametrize("retries", [0, 1])
async def test_the_managers_chat_client_sends_llm_retries_plus_one_requests(
    failing_server: FailingModelServer, retries: int
) -> None:
    client = build_chat_client(settings_for(failing_server, retries))
    try:
        with pytest.raises(ChatClientException, match="Error code: 500"):
            await client.get_response([Message(role="user", contents=["Plan the research."])])
    finally:
        await close_chat_client(client)
    assert failing_server.requests == retries + 1
