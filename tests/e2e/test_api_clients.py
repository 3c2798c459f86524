"""The running app's API through the real clients: ``gradio_client`` calls the named
``/deep_research`` endpoint, and the ``mcp`` client lists and calls the ``deep_research`` tool
over streamable HTTP at ``/gradio_api/mcp/`` (the scripted model, the tiny corpus), then asks
that run follow-up questions with ``ask_about_run``; a failed run or a bad follow-up is an
error for both (``AppError``; an MCP result with ``isError: true``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from deepcritical.ui.mcp_tool import parse_output
from tests.e2e.conftest import AppServer

pytestmark = pytest.mark.slow

QUESTION = "Does metformin lower cancer incidence in type 2 diabetes?"
FOLLOW_UP = "Is metformin use associated with a lower cancer incidence?"
UNRELATED = "What is the boiling point of tungsten?"
KEYS = {
    "trace_id",
    "answer",
    "sources",
    "checklist_coverage",
    "iterations_used",
    "status",
}


def check_output(out: dict[str, Any]) -> None:
    assert set(out) >= KEYS
    assert out["status"] in {"completed", "max_iterations_reached"}, out.get("error")
    assert out["trace_id"]
    assert out["answer"].startswith("# ")
    assert "## References" in out["answer"]
    assert out["sources"], "a completed run cites sources"
    for n, source in enumerate(out["sources"], start=1):
        assert source["number"] == n
        assert f"[{n}]" in out["answer"] or f"{n}. " in out["answer"]
        assert source["type"] == "local"
        assert source["title"]
        assert 0 < len(source["snippet"]) <= 301
    coverage = out["checklist_coverage"]
    assert set(coverage) >= {"satisfied", "gaps"}
    assert len(coverage["satisfied"]) + len(coverage["gaps"]) == 3  # the scripted checklist
    assert 1 <= out["iterations_used"] <= 2


def test_gradio_client_runs_a_research(app_server: AppServer) -> None:
    client = Client(app_server.url, verbose=False)
    text = client.predict(QUESTION, None, 2, api_name="/deep_research")
    out = parse_output(text)
    check_output(out)
    assert "metformin" in out["answer"].lower()


async def _mcp_session(url: str) -> tuple[list[Any], Any, Any, list[Any]]:
    async with (
        streamable_http_client(url + "/gradio_api/mcp/") as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = (await session.list_tools()).tools
        ok = await session.call_tool("deep_research", {"question": QUESTION, "max_iterations": 1})
        bad = await session.call_tool("deep_research", {"question": "   "})
        first = ok.content[0] if ok.content else None
        text = first.text if first is not None and first.type == "text" else "{}"
        run_id = "" if ok.isError else str(parse_output(text).get("trace_id", ""))
        asked = [
            await session.call_tool("ask_about_run", {"run_id": run_id, "question": question})
            for question in (FOLLOW_UP, UNRELATED)
        ]
        asked.append(
            await session.call_tool("ask_about_run", {"run_id": "f" * 32, "question": FOLLOW_UP})
        )
        return tools, ok, bad, asked


def check_follow_ups(asked: list[Any]) -> None:
    """``ask_about_run``'s answers: a cited one, numbered as its sources; the "does not
    answer" one suggesting ``deep_research``; an unknown run is an error saying so."""
    answered, unanswered, unknown = asked
    assert not answered.isError
    out = parse_output(answered.content[0].text)
    assert out["answered"] is True
    assert out["sources"]
    for source in out["sources"]:
        assert f"[{source['number']}]" in out["answer"]
        assert source["snippet"]
    assert not unanswered.isError
    out = parse_output(unanswered.content[0].text)
    assert out["answered"] is False
    assert out["answer"] == "The evidence of this run does not answer this question."
    assert "deep_research" in out["suggestion"]
    assert unknown.isError is True
    text = " ".join(c.text for c in unknown.content if c.type == "text")
    assert text.startswith("ask_about_run failed: no run")


def test_mcp_client_lists_and_calls_deep_research(app_server: AppServer) -> None:
    tools, ok, bad, asked = asyncio.run(_mcp_session(app_server.url))
    by_name = {t.name: t for t in tools}
    assert "deep_research" in by_name, sorted(by_name)
    tool = by_name["deep_research"]
    assert "minutes" in (tool.description or "")
    assert "biomedical" in (tool.description or "")
    props = tool.inputSchema["properties"]
    assert set(props) == {"question", "context", "max_iterations"}
    assert tool.inputSchema["required"] == ["question"]
    assert props["max_iterations"].get("default") == 10
    # no UI handler (they take the session's API key) is exposed as a tool
    assert set(by_name) == {"deep_research", "ask_about_run"}
    ask_tool = by_name["ask_about_run"]
    assert set(ask_tool.inputSchema["properties"]) == {"run_id", "question"}
    assert "follow-up" in (ask_tool.description or "")

    assert not ok.isError
    out = parse_output(ok.content[0].text)
    check_output(out)
    assert out["iterations_used"] == 1
    assert out["status"] == "max_iterations_reached"

    # a failed run is an MCP error result (isError) whose text says why
    assert bad.isError is True
    text = " ".join(c.text for c in bad.content if c.type == "text")
    assert text.startswith("deep_research failed: QuestionError: the research question is empty")
    assert "trace_id" in text

    check_follow_ups(asked)


def test_gradio_client_gets_a_failed_run_as_an_app_error(app_server: AppServer) -> None:
    client = Client(app_server.url, verbose=False)
    with pytest.raises(AppError, match="deep_research failed: QuestionError"):
        client.predict("   ", None, 1, api_name="/deep_research")
