"""Bounded choices per call (:func:`deepcritical.llm.choices.with_choices`): the schema lists
this call's values as an enum (what a grammar enforces), validation stays the model's own."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from deepcritical.agents.hypothesis import HypothesisOutput
from deepcritical.llm.choices import with_choices
from deepcritical.llm.lenient import EvidenceIdList, LenientStrList
from deepcritical.llm.runner import StructuredAgent
from deepcritical.llm.structured import grammar_schema
from deepcritical.writing.llm_writer import OutlineOutput


class Decision(BaseModel):
    status: str = "relevant"
    keys: LenientStrList = Field(default_factory=list)


class Round(BaseModel):
    decisions: dict[str, Decision] = Field(default_factory=dict)
    best: str = ""
    ids: EvidenceIdList = Field(default_factory=list, json_schema_extra={"maxItems": 3})


def _props(schema: dict[str, Any], name: str) -> dict[str, Any]:
    prop: dict[str, Any] = schema["properties"][name]
    return prop


def test_a_string_field_becomes_an_enum_and_a_list_field_enum_items() -> None:
    bounded = with_choices(Round, {"best": ["E1", "E2"], "ids": ["E1", "E2", "E1"]})
    schema = bounded.model_json_schema()
    assert _props(schema, "best")["enum"] == ["E1", "E2"]
    ids = _props(schema, "ids")
    assert ids["items"]["enum"] == ["E1", "E2"]  # de-duplicated, order kept
    assert ids["maxItems"] == 3  # the field's own bounds are kept
    assert bounded.__name__ == "Round"
    # validation is the original one: lenient ids, values outside the enum still read
    out = bounded.model_validate({"best": "E9", "ids": "[e2], E 7"})
    assert isinstance(out, Round)
    assert out.best == "E9"
    assert out.ids == ["E2", "E7"]


def test_a_dict_of_models_gets_exactly_the_keys_each_required() -> None:
    bounded = with_choices(Round, {"decisions": ["E1", "E2"], "decisions.keys": ["a", "b"]})
    schema = bounded.model_json_schema()
    decisions = _props(schema, "decisions")
    assert decisions["required"] == ["E1", "E2"]
    assert set(decisions["properties"]) == {"E1", "E2"}
    assert decisions["additionalProperties"] is False
    assert decisions["properties"]["E1"]["properties"]["keys"]["items"]["enum"] == ["a", "b"]
    out = bounded.model_validate({"decisions": {"E1": {"keys": "a\nz"}}})
    assert out.decisions["E1"].keys == ["a", "z"]  # read as the original model reads it


def test_nested_lists_of_models_are_restricted_through_dotted_paths() -> None:
    bounded = with_choices(
        HypothesisOutput,
        {
            "hypotheses.id": ["", "H1"],
            "hypotheses.supporting_evidence_ids": ["E1", "E2"],
            "hypotheses.contradicting_evidence_ids": [],
        },
    )
    draft = bounded.model_json_schema()["$defs"]["HypothesisDraft"]["properties"]
    assert draft["id"]["enum"] == ["", "H1"]
    assert draft["supporting_evidence_ids"]["items"]["enum"] == ["E1", "E2"]
    assert draft["contradicting_evidence_ids"]["maxItems"] == 0  # no value: no item
    # the grammar form keeps the enums
    bounded_grammar = grammar_schema(bounded.model_json_schema())
    items = bounded_grammar["$defs"]["HypothesisDraft"]["properties"]["supporting_evidence_ids"]
    assert items["items"]["enum"] == ["E1", "E2"]


def test_no_choices_is_the_model_itself_and_bad_paths_are_refused() -> None:
    assert with_choices(Round, {}) is Round
    with pytest.raises(ValueError, match="no field 'nope'"):
        with_choices(Round, {"nope": ["x"]})
    with pytest.raises(ValueError, match="not a model"):
        with_choices(Round, {"best.inner": ["x"]})

    class Numbers(BaseModel):
        n: int = 0

    with pytest.raises(ValueError, match="not a string"):
        with_choices(Numbers, {"n": ["1"]})


async def test_a_call_sends_its_bounded_schema_and_returns_the_agents_type() -> None:
    """``StructuredAgent.run(output_type=...)`` sends the per-call schema (the enum of the ids
    shown) under a grammar strategy; the validator still runs on the result."""
    schemas: list[dict[str, Any]] = []

    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        output_object = info.model_request_parameters.output_object
        assert output_object is not None
        schemas.append(output_object.json_schema)
        return ModelResponse(
            parts=[TextPart('{"outline": [{"heading": "Effect", "evidence_ids": ["E2"]}]}')]
        )

    checked: list[OutlineOutput] = []

    def validator(_: None, output: OutlineOutput) -> OutlineOutput:
        checked.append(output)
        return output

    agent: StructuredAgent[None, OutlineOutput] = StructuredAgent(
        "writer.outline",
        FunctionModel(fn),
        OutlineOutput,
        type(None),
        output="json_object",
        validator=validator,
    )
    bounded = with_choices(OutlineOutput, {"outline.evidence_ids": ["E1", "E2"]})
    out = await agent.run("Outline.", "Sources E1, E2.", None, output_type=bounded)
    assert isinstance(out, OutlineOutput)
    assert out.outline[0].evidence_ids == ["E2"]
    assert checked == [out]
    section = schemas[0]["$defs"]["OutlineSection"]["properties"]["evidence_ids"]
    assert section["items"]["enum"] == ["E1", "E2"]
    assert section["minItems"] == 1
    # a call without output_type sends the agent's own schema
    await agent.run("Outline.", "Sources E1, E2.", None)
    assert (
        "enum" not in schemas[1]["$defs"]["OutlineSection"]["properties"]["evidence_ids"]["items"]
    )
