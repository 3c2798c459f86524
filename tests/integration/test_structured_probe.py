"""``structured_output=auto`` probes an openai-compatible endpoint once and picks what works:
OpenAI's ``json_schema`` response format where the server takes it, llama-cpp-python's
``json_object`` + ``schema`` form where the server answers HTTP 500 to ``json_schema`` (the
stub plays both), and a role then runs through the chosen form."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from deepcritical.config import Settings
from deepcritical.llm.probe import probe_structured_output, resolve_endpoint
from deepcritical.llm.providers import build_model
from deepcritical.llm.runner import StructuredAgent
from deepcritical.llm.structured import OutputStrategy
from deepcritical.testing.chat import ChatCompletionsStub, ManagerScript, RoleScript


class Queries(BaseModel):
    queries: list[str]


@pytest.mark.parametrize(
    ("reject_json_schema", "expected"), [(False, "json_schema"), (True, "json_object")]
)
async def test_auto_picks_the_form_the_server_takes(
    reject_json_schema: bool, expected: OutputStrategy
) -> None:
    with ChatCompletionsStub(
        ManagerScript(), RoleScript(), reject_json_schema=reject_json_schema
    ) as stub:
        settings = Settings(
            llm=f"openai-compatible:stub@{stub.base_url}", llm_retries=0, persist_runs=False
        )
        resolved = await resolve_endpoint(settings)
        assert resolved.structured_output == expected
        assert resolved.llm_context_tokens is None  # the stub does not say
        sent = [r.get("response_format", {}).get("type") for r in stub.requests]
        assert sent == (["json_schema", "json_object"] if reject_json_schema else ["json_schema"])
        # cached per endpoint for the process: no second probe
        assert (await resolve_endpoint(settings)).structured_output == expected
        assert len(stub.requests) == len(sent)

        # a role's call goes out in the chosen form and validates
        model = build_model(resolved)
        assert model is not None
        agent: StructuredAgent[None, Queries] = StructuredAgent(
            "query_generator", model, Queries, type(None), output=expected
        )
        async with model:
            out = await agent.run("Write queries.", "Question: metformin and cancer?", None)
        assert out.queries
        last = stub.requests[-1]["response_format"]
        assert last["type"] == expected
        schema = last["schema"] if expected == "json_object" else last["json_schema"]["schema"]
        assert schema["required"] == ["queries"]
        assert schema["properties"]["queries"]["maxItems"] == 4  # bounded for a grammar


async def test_probe_reports_why_each_strategy_failed() -> None:
    with ChatCompletionsStub(ManagerScript(), RoleScript(), reject_json_schema=True) as stub:
        settings = Settings(
            llm=f"openai-compatible:stub@{stub.base_url}", llm_retries=0, persist_runs=False
        )
        probe = await probe_structured_output(settings, ("json_schema",))
    assert probe.strategy is None
    assert "HTTP 500" in probe.tried["json_schema"]
    assert "Unknown response_format" not in probe.tried["json_schema"]  # no server text
