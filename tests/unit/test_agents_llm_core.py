"""The structured-output runner: retries, our error types, usage accounting, lenient types."""

from __future__ import annotations

import asyncio
import json
from datetime import date
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from deepcritical.agents.judge import JudgeOutput
from deepcritical.llm.agent_config import LLMConfig
from deepcritical.llm.lenient import (
    EvidenceIdList,
    LenientBool,
    LenientFraction,
    LenientScore,
    LenientStrList,
)
from deepcritical.llm.llm_errors import AgentError, AgentModelError, AgentOutputError
from deepcritical.llm.runner import ModelRetry, StructuredAgent
from deepcritical.llm.usage import UsageTracker


class Out(BaseModel):
    answer: str
    n: int


def tool_call(info: AgentInfo, args: Any) -> ModelResponse:
    payload = args if isinstance(args, str) else json.dumps(args)
    return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, payload)])


async def test_valid_output_is_returned_and_usage_recorded() -> None:
    usage = UsageTracker()
    seen: list[str | None] = []

    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info.instructions)
        return tool_call(info, {"answer": "yes", "n": "3"})

    agent: StructuredAgent[None, Out] = StructuredAgent(
        "tester", FunctionModel(fn), Out, type(None), usage=usage, today=lambda: date(2031, 2, 3)
    )
    out = await agent.run("SYSTEM TEXT", "user text", None)
    assert out == Out(answer="yes", n=3)
    assert seen == ["Today's date is 2031-02-03.\n\nSYSTEM TEXT"]  # the date in every prompt
    record = usage.by_role()["tester"]
    assert (record.runs, record.failures, record.requests) == (1, 0, 1)
    assert record.input_tokens > 0
    assert record.output_tokens > 0
    assert usage.as_dict()["total"]["requests"] == 1


async def test_invalid_json_is_retried_then_accepted() -> None:
    calls = 0

    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal calls
        calls += 1
        return tool_call(info, "{not json" if calls == 1 else {"answer": "ok", "n": 1})

    agent: StructuredAgent[None, Out] = StructuredAgent(
        "tester", FunctionModel(fn), Out, type(None), retries=2
    )
    assert (await agent.run("i", "p", None)).answer == "ok"
    assert calls == 2


async def test_invalid_json_forever_raises_agent_output_error_and_counts_usage() -> None:
    calls = 0

    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal calls
        calls += 1
        return tool_call(info, "{definitely not json")

    usage = UsageTracker()
    agent: StructuredAgent[None, Out] = StructuredAgent(
        "judge", FunctionModel(fn), Out, type(None), retries=2, usage=usage
    )
    with pytest.raises(AgentOutputError) as info:
        await agent.run("i", "p", None)
    assert isinstance(info.value, AgentError)
    assert info.value.role == "judge"
    assert "invalid model output" in str(info.value)
    assert calls == 3  # first answer + 2 retries
    record = usage.by_role()["judge"]
    assert record.failures == 1
    assert record.requests == 3


async def test_plain_text_instead_of_structured_output_raises_our_error() -> None:
    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("Sure! The answer is yes.")])

    agent: StructuredAgent[None, Out] = StructuredAgent(
        "planner", FunctionModel(fn), Out, type(None), retries=1
    )
    with pytest.raises(AgentOutputError):
        await agent.run("i", "p", None)


async def test_validator_can_send_the_output_back() -> None:
    answers = iter(["bad", "good"])
    feedback: list[str] = []

    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        feedback.extend(str(getattr(p, "content", "")) for p in last.parts)
        return tool_call(info, {"answer": next(answers), "n": 1})

    def check(deps: str, out: Out) -> Out:
        if out.answer != deps:
            raise ModelRetry(f"answer must be {deps}")
        return out

    agent: StructuredAgent[str, Out] = StructuredAgent(
        "tester", FunctionModel(fn), Out, str, retries=2, validator=check
    )
    assert (await agent.run("i", "p", "good")).answer == "good"
    assert any("answer must be good" in f for f in feedback)


async def test_timeout_raises_agent_model_error() -> None:
    async def slow(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        await asyncio.sleep(5)
        return tool_call(info, {"answer": "late", "n": 1})

    agent: StructuredAgent[None, Out] = StructuredAgent(
        "writer", FunctionModel(slow), Out, type(None), timeout_seconds=0.05
    )
    with pytest.raises(AgentModelError, match="timed out"):
        await agent.run("i", "p", None)


async def test_config_builds_agents_with_its_retries_timeout_and_usage() -> None:
    calls = 0

    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal calls
        calls += 1
        return tool_call(info, {"answer": "no number"})

    config = LLMConfig(model=FunctionModel(fn), retries=1, timeout_seconds=7.0)
    agent = config.structured("tester", Out)
    assert (agent.role, agent.model, agent.timeout_seconds) == ("tester", config.model, 7.0)
    assert agent.usage is config.usage
    with pytest.raises(AgentOutputError):
        await agent.run("i", "p", None)
    assert calls == 2  # first answer + 1 retry
    assert config.usage.by_role()["tester"].failures == 1

    def check(deps: str, output: Out) -> Out:
        if output.answer != deps:
            raise ModelRetry("wrong")
        return output

    answers = iter(["bad", "good"])
    checked = LLMConfig(
        model=FunctionModel(lambda m, i: tool_call(i, {"answer": next(answers), "n": 1})),
        retries=2,
    ).structured("checked", Out, str, validator=check)
    assert (await checked.run("i", "p", "good")).answer == "good"


async def test_test_model_smoke() -> None:
    agent: StructuredAgent[None, JudgeOutput] = StructuredAgent(
        "judge", TestModel(), JudgeOutput, type(None)
    )
    out = await agent.run("i", "p", None)
    assert isinstance(out, JudgeOutput)
    assert 0 <= out.mechanism_score <= 10


class Lenient(BaseModel):
    flag: LenientBool = False
    score: LenientScore = 0
    share: LenientFraction = 0.0
    items: LenientStrList = []
    ids: EvidenceIdList = []


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("false", False),
        ("False", False),
        ("FALSE.", False),
        ("no", False),
        ("No.", False),
        ("not sufficient", False),
        ("", False),
        (None, False),
        (0, False),
        ("true", True),
        ("Yes", True),
        ("yes!", True),
        (True, True),
        (1, True),
    ],
)
def test_string_booleans_are_read_correctly(raw: object, expected: bool) -> None:
    assert Lenient.model_validate({"flag": raw}).flag is expected


def test_plain_pydantic_bool_also_maps_false_string_to_false() -> None:
    class Plain(BaseModel):
        flag: bool

    assert Plain.model_validate({"flag": "false"}).flag is False
    assert Plain.model_validate_json('{"flag": "false"}').flag is False
    with pytest.raises(ValidationError):
        Plain.model_validate({"flag": "No."})  # what LenientBool is for


def test_unreadable_boolean_is_rejected_not_guessed() -> None:
    with pytest.raises(ValidationError):
        Lenient.model_validate({"flag": "maybe"})


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(7, 7), ("7", 7), ("7/10", 7), ("4 out of 5", 8), (7.6, 8), (15, 10), (-2, 0)],
)
def test_scores(raw: object, expected: int) -> None:
    assert Lenient.model_validate({"score": raw}).score == expected


@pytest.mark.parametrize(("raw", "expected"), [(0.8, 0.8), (80, 0.8), ("80%", 0.8), ("0.25", 0.25)])
def test_fractions(raw: object, expected: float) -> None:
    assert Lenient.model_validate({"share": raw}).share == pytest.approx(expected)


def test_lists_and_ids() -> None:
    parsed = Lenient.model_validate(
        {
            "items": "- metformin AND tau\n\n- AMPK dementia",
            "ids": ["[E3]", "e7", "E3, E12", "PMID 1"],
        }
    )
    assert parsed.items == ["metformin AND tau", "AMPK dementia"]
    assert parsed.ids == ["E3", "E7", "E12"]


def test_judge_output_coerces_string_booleans_from_json() -> None:
    out = JudgeOutput.model_validate_json(
        '{"mechanism_score": "6/10", "clinical_evidence_score": "3", "sufficient": "false",'
        ' "recommendation": "Continue searching", "next_queries": "metformin tau",'
        ' "reasoning": "x"}'
    )
    assert out.sufficient is False
    assert (out.mechanism_score, out.clinical_evidence_score) == (6, 3)
    assert out.recommendation == "continue"
    assert out.next_queries == ["metformin tau"]
    assert JudgeOutput.model_validate(
        {"sufficient": "Yes", "recommendation": "synthesise"}
    ).sufficient


async def test_an_answer_cut_at_its_token_bound_is_retried_once_saying_so() -> None:
    prompts: list[str] = []

    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompts.append(first_user_text(messages))
        if len(prompts) == 1:  # a model that ran on until max_tokens: JSON cut short
            return ModelResponse(
                parts=[TextPart('{"answer": "and so on and')], finish_reason="length"
            )
        return ModelResponse(parts=[TextPart('{"answer": "ok", "n": 2}')])

    usage = UsageTracker()
    agent: StructuredAgent[None, Out] = StructuredAgent(
        "planner",
        FunctionModel(fn),
        Out,
        type(None),
        usage=usage,
        max_output_tokens=300,
        output="json_schema",  # pydantic-ai raises at once on a cut native answer
    )
    assert await agent.run("i", "the question", None) == Out(answer="ok", n=2)
    assert prompts[0] == "the question"
    assert prompts[1].startswith("the question")
    assert "limit of 300 tokens and was cut" in prompts[1]
    assert usage.by_role()["planner"].requests == 2


async def test_a_tool_call_cut_forever_costs_the_usual_retries_and_raises_our_error() -> None:
    calls = 0

    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal calls
        calls += 1
        return ModelResponse(
            parts=[ToolCallPart(info.output_tools[0].name, '{"answer": "on and on')],
            finish_reason="length",
        )

    agent: StructuredAgent[None, Out] = StructuredAgent(
        "planner", FunctionModel(fn), Out, type(None), retries=2, max_output_tokens=300
    )
    with pytest.raises(AgentOutputError):
        await agent.run("i", "p", None)
    assert calls == 3  # pydantic-ai's retries of the invalid arguments, and no more


def first_user_text(messages: list[ModelMessage]) -> str:
    """The user prompt of the first request of a pydantic-ai conversation."""
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    first = messages[0]
    assert isinstance(first, ModelRequest)
    return "".join(str(p.content) for p in first.parts if isinstance(p, UserPromptPart))
