"""The web app's clarify card without a server: *Research* asks for the clarification, the
run waits while the card is shown, *Continue* runs with the answers in the context, *Skip*
with the context unchanged; a failing clarifier leaves the decision to the rules."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import gradio as gr
import pytest

from deepcritical.config import Settings
from deepcritical.models import Clarification
from deepcritical.text.clarify_rules import clarify_by_rules
from deepcritical.ui.app import build_app
from deepcritical.ui.clarify_card import ClarifyHandlers
from tests.unit.ui_fixtures import FakeResearch, run_result, script

METFORMIN = "Does metformin reduce mortality?"


def handler(demo: gr.Blocks, name: str) -> Any:
    found = [fn.fn for fn in demo.fns.values() if getattr(fn.fn, "__name__", "") == name]
    assert found, name
    return found[0]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, sources=["local"], persist_runs=False, _env_file=None)


class Clarifier:
    """A ``clarify(question, settings)`` recording the settings' model; the rules decide."""

    def __init__(self, fail: bool = False) -> None:
        self.models: list[str] = []
        self.fail = fail

    async def __call__(self, question: str, settings: Settings) -> Clarification | None:
        self.models.append(settings.llm)
        if self.fail:
            raise RuntimeError("model down")
        return clarify_by_rules(question)


def run_args(pending: Any, question: str = METFORMIN, context: str = "") -> list[Any]:
    return [pending, question, context, "none", "", ["local"], 1, 5, "iterative"]


async def collect(stream: AsyncIterator[Any]) -> list[Any]:
    return [out async for out in stream]


async def test_research_shows_the_card_and_the_run_waits(settings: Settings) -> None:
    research, clarifier = FakeResearch(script(run_result())), Clarifier()
    demo = build_app(settings, research_fn=research, clarify_fn=clarifier)
    group, _title, *rest = await handler(demo, "clarify")(True, METFORMIN, "none", "")
    radios, boxes, pending = rest[:3], rest[3:6], rest[6]
    assert group["visible"] is True
    assert radios[0]["visible"] is True
    assert radios[0]["label"] == "Which population is the question about?"
    assert "Older adults (65 and over)" in radios[0]["choices"]
    assert radios[1]["visible"] is False
    assert boxes[1]["visible"] is False
    assert boxes[0]["visible"] is True
    assert clarifier.models == ["none"]
    outs = await collect(handler(demo, "run_unless_asked")(*run_args(pending)))
    assert research.calls == []  # waiting for the visitor
    assert len(outs) == 1
    assert all(o == gr.skip() for o in outs[0])


async def test_continue_runs_with_the_answers_in_the_context(settings: Settings) -> None:
    research = FakeResearch(script(run_result()))
    demo = build_app(settings, research_fn=research, clarify_fn=Clarifier())
    *_, pending = await handler(demo, "clarify")(True, "Is metformin effective?", "", "")
    answer = handler(demo, "answer_clarification")
    # a chosen population, a typed outcome (typed wins over a choice), nothing in slot 3
    group, kept, context = answer(
        pending, "Trials only.", "Older adults (65 and over)", "Mortality", None, "", "stroke", ""
    )
    assert group["visible"] is False
    assert kept is None
    assert context == (
        "Trials only.\n\nClarified by the user:\n"
        "- population: Older adults (65 and over)\n- outcome: stroke"
    )
    await collect(handler(demo, "run")("Is metformin effective?", context, "", "", [], 1, 5, ""))
    assert research.calls[0][2] == context
    # nothing chosen nor typed: the context stays as it was
    assert answer(pending, " notes ", None, None, None, "", "", "")[2] == "notes"


async def test_skip_or_no_clarification_runs_unchanged(settings: Settings) -> None:
    research = FakeResearch(script(run_result()))
    demo = build_app(settings, research_fn=research, clarify_fn=Clarifier())
    group, pending = handler(demo, "skip_clarification")()
    assert group["visible"] is False
    assert pending is None
    complete = "Does metformin reduce mortality in older adults with diabetes?"
    group, *rest = await handler(demo, "clarify")(True, complete, "", "")
    assert group["visible"] is False
    assert rest[-1] is None
    outs = await collect(handler(demo, "run_unless_asked")(*run_args(rest[-1], complete, "x")))
    assert research.calls[0][0] == complete
    assert research.calls[0][2] == "x"
    assert "Report ready" in str(outs[-1][1])


async def test_switch_off_never_asks(settings: Settings) -> None:
    clarifier = Clarifier()
    demo = build_app(settings, research_fn=FakeResearch([]), clarify_fn=clarifier)
    group, *rest = await handler(demo, "clarify")(False, METFORMIN, "", "")
    assert group["visible"] is False
    assert rest[-1] is None
    assert clarifier.models == []


async def test_a_failing_clarifier_leaves_it_to_the_rules(settings: Settings) -> None:
    demo = build_app(settings, research_fn=FakeResearch([]), clarify_fn=Clarifier(fail=True))
    group, *rest = await handler(demo, "clarify")(True, METFORMIN, "", "")
    assert group["visible"] is True
    assert Clarification.model_validate(rest[-1]).by == "rules"


def test_the_switch_follows_the_setting(tmp_path: Path) -> None:
    off = Settings(data_dir=tmp_path, ui_clarify=False, _env_file=None)
    demo = build_app(off, research_fn=FakeResearch([]), clarify_fn=Clarifier())
    config = demo.get_config_file()
    switch = next(
        c for c in config["components"] if c.get("props", {}).get("elem_id") == "dc-clarify-on"
    )
    assert switch["props"]["value"] is False
    card = next(
        c for c in config["components"] if c.get("props", {}).get("elem_id") == "dc-clarify"
    )
    assert card["props"]["visible"] is False


async def test_a_slow_clarifier_leaves_it_to_the_rules(settings: Settings) -> None:
    async def slow(question: str, settings: Settings) -> Clarification | None:
        await asyncio.sleep(30)
        return None

    async def no_run(*args: Any) -> AsyncIterator[Any]:
        yield ()

    handlers = ClarifyHandlers(settings, slow, no_run, 13, timeout_seconds=0.05)
    group, *rest = await handlers.clarify(True, METFORMIN, "", "")
    assert group["visible"] is True
    assert Clarification.model_validate(rest[-1]).by == "rules"
