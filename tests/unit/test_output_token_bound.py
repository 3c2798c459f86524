"""Every model call sends a bound on its answer (issue 29): ``llm_max_output_tokens`` when
set, else a quarter of the context window (4,096 assumed when unknown), between 256 and
2,048; the bound reaches the roles' calls and the prompt keeps room for it."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from deepcritical.config import Settings
from deepcritical.llm.agent_config import LLMConfig
from deepcritical.llm.context_window import ContextWindowError, fit_prompt
from deepcritical.orchestrators.agent_set import build_agents
from deepcritical.testing.embedders import HashingEmbedder


@pytest.mark.parametrize(
    ("context", "explicit", "bound"),
    [
        (None, None, 1024),
        (8192, None, 2048),
        (32768, None, 2048),
        (512, None, 256),
        (8192, 700, 700),
    ],
)
def test_the_bound_comes_from_the_setting_or_the_context_window(
    context: int | None, explicit: int | None, bound: int
) -> None:
    settings = Settings(llm_context_tokens=context, llm_max_output_tokens=explicit)
    assert settings.output_token_bound() == bound


async def test_every_role_of_a_model_run_sends_the_bound_when_none_is_set() -> None:
    seen: list[Any] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append((info.model_settings or {}).get("max_tokens"))
        return ModelResponse(parts=[TextPart('{"verdict": "sufficient"}')])

    settings = Settings(llm="openai:gpt-4o", structured_output="prompted")
    assert settings.llm_max_output_tokens is None
    agents = build_agents(settings, FunctionModel(answer), HashingEmbedder())
    runners = [
        getattr(role, "_agent", None)
        for role in (agents.planner, agents.queries, agents.hypotheses, agents.judge)
    ]
    assert all(r is not None and r.max_output_tokens == 1024 for r in runners)

    class Out(BaseModel):
        verdict: str

    runner = LLMConfig(model=FunctionModel(answer), max_output_tokens=1024).structured("x", Out)
    await runner.run("Answer.", "Judge.", None)
    assert seen == [1024]


def test_the_prompt_keeps_room_for_the_bound() -> None:
    block = '<source id="E1" nonce="ab12">\n' + "x" * 3000 + "\n</source ab12>\n"
    prompt = "Question.\n" + block * 2
    _, dropped = fit_prompt("Be brief.", prompt, 4096, answer_tokens=2048)
    assert dropped == 0
    fitted, dropped = fit_prompt("Be brief.", prompt, 3200, answer_tokens=2048)
    assert fitted.count("<source") == 1
    assert dropped == 1
    assert fit_prompt("Be brief.", prompt, 3200, answer_tokens=16)[1] == 0  # 768 kept at least
    with pytest.raises(ContextWindowError):
        fit_prompt("Be brief.", prompt, 2200, answer_tokens=2048)


@pytest.mark.parametrize(
    ("llm", "context", "fitted_to"),
    [
        ("openai-compatible:smollm2@http://127.0.0.1:8088/v1", None, 4096),
        ("OpenAI-Compatible:m@http://127.0.0.1:8088/v1", None, 4096),
        ("openai-compatible:smollm2@http://127.0.0.1:8088/v1", 8192, 8192),
        ("openai:gpt-4o", None, None),
        ("anthropic:claude-sonnet-4-5", None, None),
        ("openai:gpt-4o", 16384, 16384),
    ],
)
def test_prompts_of_a_server_that_does_not_say_its_window_fit_the_assumed_one(
    llm: str, context: int | None, fitted_to: int | None
) -> None:
    """llama-cpp-python's server states no context window: its prompts were sent unfitted,
    and a screening prompt of 29 records got HTTP 400 from a server run with --n_ctx 8192."""
    settings = Settings(llm=llm, llm_context_tokens=context)
    assert settings.prompt_context_tokens() == fitted_to
    agents = build_agents(
        settings, FunctionModel(lambda m, i: ModelResponse([])), HashingEmbedder()
    )
    runners = [getattr(role, "_agent", None) for role in (agents.planner, agents.judge)]
    assert all(r is not None and r.context_tokens == fitted_to for r in runners)
