"""The deep_research tool: run mapping, statuses, description."""

from __future__ import annotations

import inspect
import uuid
from pathlib import Path
from typing import Any

import gradio as gr
import pytest
from pydantic import SecretStr

from deepcritical.config import Settings
from deepcritical.orchestrators.deps import QuestionError
from deepcritical.ui.mcp_tool import make_deep_research_tool, parse_output, run_deep_research
from tests.unit.ui_fixtures import FakeResearch, run_result, script


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, sources=["local"], max_rounds=3, _env_file=None)


async def test_completed_run_maps_to_the_structure(settings: Settings) -> None:
    fake = FakeResearch(script(run_result("sufficient", iterations=2)))
    out = await run_deep_research("Q?", "ctx", 5, settings, fake)
    assert out.status == "completed"
    assert out.error is None
    assert out.trace_id == "run-42"
    assert out.iterations_used == 2
    assert out.answer.startswith("# Metformin review")
    assert [(s.number, s.id, s.type) for s in out.sources] == [
        (1, "9001", "local"),
        (2, "9002", "local"),
    ]
    assert len(out.sources[0].snippet) <= 301
    assert out.sources[0].snippet.startswith("Metformin")
    assert out.checklist_coverage.satisfied == ["Cancer incidence"]
    assert out.checklist_coverage.gaps == ["Randomised trials"]
    assert out.checklist_coverage.coverage == 0.5
    question, used, context = fake.calls[0]
    assert (question, context, used.max_rounds) == ("Q?", "ctx", 5)
    assert settings.max_rounds == 3  # the server's settings are not modified
    assert fake.closed == 1


async def test_max_rounds_stop_is_max_iterations_reached(settings: Settings) -> None:
    fake = FakeResearch(script(run_result("max_rounds"), run_id=None))
    out = await run_deep_research("Q?", None, 99, settings, fake)
    assert out.status == "max_iterations_reached"
    assert fake.calls[0][1].max_rounds == 20  # clamped
    uuid.UUID(out.trace_id)  # no run store: a uuid4 of our own


async def test_error_event_exception_and_no_report(settings: Settings) -> None:
    out = await run_deep_research("Q?", None, 1, settings, FakeResearch(script(None)))
    assert (out.status, out.error) == ("error", "writing failed: boom")
    assert out.trace_id == "run-42"
    boom = FakeResearch(script(run_result()), raise_at=2)
    out = await run_deep_research("Q?", None, 1, settings, boom)
    assert out.status == "error"
    assert out.error == "RuntimeError: source exploded"
    assert boom.closed == 1
    out = await run_deep_research("Q?", None, 1, settings, FakeResearch(script(run_result())[:2]))
    assert out.status == "error"
    assert "without a report" in (out.error or "")


async def test_tool_function_name_docstring_and_json(settings: Settings) -> None:
    tool = make_deep_research_tool(settings, FakeResearch(script(run_result())))
    assert tool.__name__ == "deep_research"
    params = inspect.signature(tool).parameters
    # the request and the Hugging Face profile are Gradio's injections, not tool parameters
    assert list(params) == ["question", "context", "max_iterations", "request", "profile"]
    assert params["context"].default is None
    assert params["max_iterations"].default == 10
    doc = inspect.getdoc(tool) or ""
    assert "minutes" in doc
    assert "Use it when" in doc
    for name in list(params)[:3]:  # gradio reads one line per parameter after "Args:"
        assert f"\n    {name}: " in "\n" + doc.split("Args:")[1].split("Returns:")[0]
    out = parse_output(await tool("Q?", None, 2))
    assert out["status"] == "completed"
    assert out["sources"][0]["number"] == 1


async def test_a_failed_run_is_raised_as_a_gradio_error(settings: Settings) -> None:
    """Gradio turns a raised ``gr.Error`` into an error answer (``isError`` for MCP)."""
    tool = make_deep_research_tool(settings, FakeResearch(script(None)))
    with pytest.raises(gr.Error) as failed:
        await tool("Q?", None, 1)
    assert failed.value.message == "deep_research failed: writing failed: boom (trace_id run-42)"
    assert failed.value.print_exception is False

    def bad_question(
        question: str, settings: Settings, *, context: str | None = None, owner: str | None = None
    ) -> Any:
        raise QuestionError("the question is empty")

    with pytest.raises(gr.Error, match=r"failed: QuestionError: the question is empty \(trace"):
        await make_deep_research_tool(settings, bad_question)("   ", None, 1)


async def test_error_messages_never_show_the_servers_keys(settings: Settings) -> None:
    keyed = settings.model_copy(update={"openai_api_key": SecretStr("sk-server-key-123456")})

    def leaky(
        question: str, settings: Settings, *, context: str | None = None, owner: str | None = None
    ) -> Any:
        raise RuntimeError("401 for key sk-server-key-123456")

    out = await run_deep_research("Q?", None, 1, keyed, leaky)
    assert out.error == "RuntimeError: 401 for key [redacted]"
