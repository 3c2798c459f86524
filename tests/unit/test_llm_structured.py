"""Structured output per strategy: reasoning blocks, tolerant JSON, context windows, usage."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai.usage import RequestUsage, RunUsage

from deepcritical.llm.context_window import (
    ANSWER_RESERVE_TOKENS,
    CONTEXT_SETTING,
    ContextWindowError,
    estimate_tokens,
    fit_prompt,
)
from deepcritical.llm.fencing import fence_evidence, new_fence
from deepcritical.llm.llm_errors import AgentModelError, AgentOutputError
from deepcritical.llm.runner import ModelRetry, StructuredAgent
from deepcritical.llm.structured import (
    OutputStrategy,
    extract_json_object,
    output_spec,
    split_reasoning,
)
from deepcritical.llm.usage import UsageTracker, reasoning_tokens
from deepcritical.models import Citation, Evidence


class Verdict(BaseModel):
    answer: str
    n: int


@pytest.mark.parametrize(
    ("text", "reasoning", "answer"),
    [
        ('<think>a</think>{"n": 1}', "a", '{"n": 1}'),
        ('<think>\nstep 1\n</think>\n\n{"n": 1}', "step 1", '{"n": 1}'),
        ('I weigh it.</think>{"n": 1}', "I weigh it.", '{"n": 1}'),
        ('<think>never closed {"n": 2}', 'never closed {"n": 2}', 'never closed {"n": 2}'),
        ('{"n": 1}', "", '{"n": 1}'),
    ],
)
def test_split_reasoning(text: str, reasoning: str, answer: str) -> None:
    assert split_reasoning(text) == (reasoning, answer)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('Sure! {"a": "x"} Hope this helps.', {"a": "x"}),
        ('{"a": "line one\nline two"}', {"a": "line one\nline two"}),  # raw newline in a string
        ('e.g. {"a": 0} then the answer {"a": 2, "b": {"c": 3}}', {"a": 2, "b": {"c": 3}}),
        ("no object here", None),
        ('{"a": ', None),
    ],
)
def test_extract_json_object(text: str, expected: dict[str, Any] | None) -> None:
    assert extract_json_object(text) == expected


@pytest.mark.parametrize("strategy", ["json_schema", "json_object", "prompted"])
async def test_reasoning_model_text_parses(strategy: OutputStrategy) -> None:
    """A reasoning model's text (think block, fenced JSON with a raw newline, trailing
    prose) validates on the first try in every text-output strategy."""
    calls: list[str | None] = []

    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls.append(info.model_request_parameters.output_mode)
        text = (
            "<think>The user wants JSON. {not json} Let me answer.</think>\n"
            '```json\n{"answer": "two\nlines", "n": 3}\n```\nDone.'
        )
        return ModelResponse(
            parts=[TextPart(text)],
            usage=RequestUsage(input_tokens=10, output_tokens=40, details={"reasoning_tokens": 25}),
        )

    usage = UsageTracker()
    agent: StructuredAgent[None, Verdict] = StructuredAgent(
        "judge", FunctionModel(fn), Verdict, type(None), output=strategy, usage=usage
    )
    out = await agent.run("Judge.", "Question?", None)
    assert out == Verdict(answer="two\nlines", n=3)
    assert calls == ["native" if strategy != "prompted" else "prompted"]
    assert usage.by_role()["judge"].reasoning_tokens == 25


async def test_prompted_output_retries_with_the_validation_error() -> None:
    """An invalid prompted answer goes back to the model with the validation error; the
    second answer validates."""
    seen: list[str] = []

    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(
            "\n".join(str(getattr(p, "content", "")) for m in messages[1:] for p in m.parts)
        )
        if len(seen) == 1:
            return ModelResponse(parts=[TextPart('{"answer": "x", "n": "many"}')])
        return ModelResponse(parts=[TextPart('{"answer": "x", "n": 4}')])

    agent: StructuredAgent[None, Verdict] = StructuredAgent(
        "judge", FunctionModel(fn), Verdict, type(None), output="prompted"
    )
    assert await agent.run("Judge.", "Q?", None) == Verdict(answer="x", n=4)
    assert len(seen) == 2
    assert "int_parsing" in seen[1]  # the validation error, fed back
    assert '"many"' in seen[1]


async def test_prompted_output_that_never_validates_is_an_output_error() -> None:
    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("I cannot answer in JSON.")])

    agent: StructuredAgent[None, Verdict] = StructuredAgent(
        "judge", FunctionModel(fn), Verdict, type(None), output="prompted", retries=1
    )
    with pytest.raises(AgentOutputError):
        await agent.run("Judge.", "Q?", None)


def test_output_spec_per_strategy() -> None:
    assert output_spec(Verdict, "tool") is Verdict
    assert type(output_spec(Verdict, "json_schema")).__name__ == "NativeOutput"
    assert type(output_spec(Verdict, "json_object")).__name__ == "NativeOutput"
    assert type(output_spec(Verdict, "prompted")).__name__ == "PromptedOutput"


def test_reasoning_tokens_from_pydantic_ai_or_details() -> None:
    assert reasoning_tokens(RunUsage(output_tokens=9, details={"reasoning_tokens": 4})) == 4
    assert reasoning_tokens(RunUsage(output_tokens=9)) == 0


# --- context windows -------------------------------------------------------------------------


def _evidence(n: int, chars: int) -> list[Evidence]:
    return [
        Evidence(
            id=f"E{i}",
            content="word " * (chars // 5),
            citation=Citation(source="pubmed", id=str(1000 + i), title=f"Study {i}"),
        )
        for i in range(1, n + 1)
    ]


def test_fit_prompt_keeps_a_prompt_that_fits() -> None:
    assert fit_prompt("sys", "short prompt", 4096) == ("short prompt", 0)
    assert fit_prompt("sys", "x" * 100_000, None) == ("x" * 100_000, 0)


def test_fit_prompt_trims_the_last_evidence_first() -> None:
    fence = new_fence()
    prompt = "Question: does it work?\n\n" + fence_evidence(_evidence(6, 3000), fence)
    context = ANSWER_RESERVE_TOKENS + estimate_tokens(prompt) // 2
    fitted, dropped = fit_prompt("sys", prompt, context)
    assert 0 < dropped < 6
    assert "Question: does it work?" in fitted
    assert 'id="E1"' in fitted
    assert 'id="E6"' not in fitted
    assert estimate_tokens("sys") + estimate_tokens(fitted) + ANSWER_RESERVE_TOKENS <= context


def test_fit_prompt_refuses_what_cannot_fit_naming_the_setting() -> None:
    fence = new_fence()
    prompt = "Q " * 3000 + fence_evidence(_evidence(2, 500), fence)
    with pytest.raises(ContextWindowError, match=CONTEXT_SETTING):
        fit_prompt("sys", prompt, 1024)
    with pytest.raises(ContextWindowError):  # no evidence to trim
        fit_prompt("sys", "Q " * 3000, 1024)


async def test_an_over_long_prompt_is_refused_before_any_request() -> None:
    requests: list[int] = []

    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        requests.append(1)
        return ModelResponse(parts=[TextPart(json.dumps({"answer": "a", "n": 1}))])

    agent: StructuredAgent[None, Verdict] = StructuredAgent(
        "writer.section", FunctionModel(fn), Verdict, type(None), context_tokens=1024
    )
    with pytest.raises(AgentModelError, match="context window of 1024 tokens"):
        await agent.run("Write.", "word " * 5000, None)
    assert requests == []


async def test_a_call_with_tools_asks_for_a_tool_call_output_under_a_grammar() -> None:
    """A grammar-constrained answer cannot call tools: a call that gives the model tools asks
    for its output as a tool call; the same agent's tool-less calls stay native."""
    modes: list[str | None] = []

    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        modes.append(info.model_request_parameters.output_mode)
        if info.output_tools:
            return ModelResponse(
                parts=[ToolCallPart(info.output_tools[0].name, '{"answer": "a", "n": 1}')]
            )
        return ModelResponse(parts=[TextPart('{"answer": "a", "n": 1}')])

    def noop() -> str:
        """A tool the model may call."""
        return "ok"

    agent: StructuredAgent[None, Verdict] = StructuredAgent(
        "screener", FunctionModel(fn), Verdict, type(None), output="json_object"
    )
    tools: FunctionToolset[None] = FunctionToolset([noop])
    assert await agent.run("Screen.", "Records.", None, toolsets=[tools]) == Verdict(
        answer="a", n=1
    )
    assert await agent.run("Screen.", "Records.", None) == Verdict(answer="a", n=1)
    assert modes == ["tool", "native"]


async def test_an_output_error_says_what_was_wrong_last_without_the_models_text() -> None:
    """The error of a call that never validated names its last problem (field and message),
    never the value the model wrote."""

    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart('{"answer": "x", "n": "SECRET-ish text"}')])

    agent: StructuredAgent[None, Verdict] = StructuredAgent(
        "judge", FunctionModel(fn), Verdict, type(None), output="json_object", retries=1
    )
    with pytest.raises(AgentOutputError) as caught:
        await agent.run("Judge.", "Q?", None)
    message = str(caught.value)
    assert "last problem: n: Input should be a valid integer" in message
    assert "SECRET" not in message


async def test_an_output_error_names_the_validators_message() -> None:
    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart('{"answer": "x", "n": 1}')])

    def refuse(_: None, output: Verdict) -> Verdict:
        raise ModelRetry("n must be at least 2")

    agent: StructuredAgent[None, Verdict] = StructuredAgent(
        "judge",
        FunctionModel(fn),
        Verdict,
        type(None),
        output="json_object",
        retries=1,
        validator=refuse,
    )
    with pytest.raises(AgentOutputError, match="last problem: n must be at least 2"):
        await agent.run("Judge.", "Q?", None)
