"""The ``ask_about_run`` MCP tool (issue 32 item 4), without a server: a follow-up question on
a stored finished run (SQLite, the hashing embedder) returns JSON whose answer cites ``[n]``
and whose sources carry those numbers with their supporting passage; an unanswered question
says so and suggests ``deep_research``; bad input, another owner's run and a caller who must
sign in are raised as ``gr.Error`` with a clear message, never the server's key; the tool's
name, parameters and description are what an MCP client reads."""

from __future__ import annotations

import inspect
import json
import re
from functools import partial
from pathlib import Path
from typing import Any

import gradio as gr
import pytest
from pydantic import SecretStr

from deepcritical.api import ask
from deepcritical.config import Settings
from deepcritical.models import FollowUp
from deepcritical.state import RunStore
from deepcritical.testing.embedders import HashingEmbedder
from deepcritical.ui.ask_tool import MCP_SUGGESTION, make_ask_about_run_tool
from deepcritical.ui.auth import Access
from deepcritical.writing.follow_up import NOT_ANSWERED
from tests.state.test_ask_api import QUESTION, store_run
from tests.unit.test_follow_up_answer import RUN

PASSWORDS = Access("password", {"alice": SecretStr("a"), "bob": SecretStr("b")})
ALICE = gr.Request(username="alice")
BOB = gr.Request(username="bob")
KEY = "sk-ask-tool-secret-42"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, sources=["local"], _env_file=None)


def stored(settings: Settings, owner: str | None = None, result: Any = RUN) -> str:
    store = RunStore.open(settings)
    try:
        status = "completed" if result is not None else "failed"
        return store_run(store, result, status, None if result is not None else "boom", owner)
    finally:
        store.close()


def tool(settings: Settings, access: Access | None = None) -> Any:
    return make_ask_about_run_tool(settings, access, partial(ask, embedder=HashingEmbedder()))


async def test_an_answer_cites_numbered_sources_with_their_passages(settings: Settings) -> None:
    run_id = stored(settings)
    out = json.loads(await tool(settings)(run_id[:8], QUESTION))
    assert out["answered"] is True
    assert out["question"] == QUESTION
    assert out["suggestion"] == ""
    assert not re.search(r"\[E\d+\]", out["answer"])  # numbered as the report's
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", out["answer"])}
    numbers = [s["number"] for s in out["sources"]]
    assert cited == set(numbers)
    assert numbers == sorted(numbers)
    first = out["sources"][0]
    assert first["id"] == "111"
    assert first["type"] == "pubmed"
    assert first["title"] == "Study 111"
    assert first["snippet"]
    assert first["snippet"] in " ".join(RUN.evidence[0].content.split())  # a verbatim passage
    store = RunStore.open(settings)
    try:
        assert [f.question for f in store.follow_ups(run_id)] == [QUESTION]  # kept
    finally:
        store.close()


async def test_an_unanswered_question_says_so_and_suggests_deep_research(
    settings: Settings,
) -> None:
    run_id = stored(settings)
    out = json.loads(await tool(settings)(run_id, "What is the boiling point of tungsten?"))
    assert out["answered"] is False
    assert out["answer"] == NOT_ANSWERED
    assert out["sources"] == []
    assert out["suggestion"] == MCP_SUGGESTION
    assert "deep_research" in out["suggestion"]


async def test_bad_input_is_an_error_with_a_clear_message(settings: Settings) -> None:
    run_id = stored(settings)
    failed = stored(settings, result=None)
    ask_about_run = tool(settings)
    for rid, question, expected in [
        (run_id, "  ", "empty"),
        ("f" * 32, QUESTION, "no run"),
        (failed, QUESTION, "no report"),
    ]:
        with pytest.raises(gr.Error) as error:
            await ask_about_run(rid, question)
        assert error.value.message.startswith("ask_about_run failed: ")
        assert expected in error.value.message.lower()
        assert error.value.print_exception is False


async def test_runs_are_the_callers_own(settings: Settings) -> None:
    alices = stored(settings, owner="user:alice")
    ask_about_run = tool(settings, PASSWORDS)
    out = json.loads(await ask_about_run(alices, QUESTION, ALICE, None))
    assert out["answered"] is True
    with pytest.raises(gr.Error, match=r"failed: .*no run"):
        await ask_about_run(alices, QUESTION, BOB, None)  # another owner's: not found
    with pytest.raises(gr.Error, match=r"refused: .*sign in"):
        await ask_about_run(alices, QUESTION, None, None)


async def test_a_failure_never_shows_the_servers_key(settings: Settings) -> None:
    keyed = settings.model_copy(update={"openai_api_key": SecretStr(KEY)})

    async def broken(*args: Any, **kwargs: Any) -> FollowUp:
        raise RuntimeError(f"store down for {KEY}")

    with pytest.raises(gr.Error) as error:
        await make_ask_about_run_tool(keyed, None, broken)("r1", QUESTION)
    assert "store down" in error.value.message
    assert KEY not in error.value.message


def test_name_parameters_and_description() -> None:
    ask_about_run = make_ask_about_run_tool(Settings(_env_file=None))
    assert ask_about_run.__name__ == "ask_about_run"
    params = inspect.signature(ask_about_run).parameters
    # the request and the Hugging Face profile are Gradio's injections, not tool parameters
    assert list(params) == ["run_id", "question", "request", "profile"]
    doc = inspect.getdoc(ask_about_run) or ""
    assert "deep_research" in doc
    assert "trace_id" in doc
    args = "\n" + doc.split("Args:")[1].split("Returns:")[0]
    for name in ["run_id", "question"]:  # gradio reads one line per parameter after "Args:"
        assert f"\n    {name}: " in args
