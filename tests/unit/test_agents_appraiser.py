"""The model's study extraction through the LLM plumbing (a scripted FunctionModel): values
proven by verbatim quotes are kept, invented or misquoted ones dropped and counted, and the
source reaches the model fenced as data."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from deepcritical.agents.appraiser import LLMStudyExtractor
from deepcritical.llm.agent_config import LLMConfig
from deepcritical.models import Citation, Evidence

ABSTRACT = (
    "METHODS: A total of 1,024 patients with sepsis were randomised to drug or placebo in "
    "12 hospitals.\n\nRESULTS: Death fell (hazard ratio, 0.45; 95% confidence interval [CI], "
    "0.33 to 0.63). Median follow-up was 2 years."
)


def item() -> Evidence:
    return Evidence(id="E1", content=ABSTRACT, citation=Citation(source="pubmed", id="1"))


class Script:
    """A FunctionModel answering with one scripted output, recording the prompt."""

    def __init__(self, output: dict[str, Any]) -> None:
        self.output = output
        self.prompts: list[str] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        first = messages[0]
        assert isinstance(first, ModelRequest)
        self.prompts.append(
            "\n".join(str(p.content) for p in first.parts if isinstance(p, UserPromptPart))
        )
        return ModelResponse(
            parts=[ToolCallPart(info.output_tools[0].name, json.dumps(self.output))]
        )


def extractor(script: Script) -> LLMStudyExtractor:
    return LLMStudyExtractor(LLMConfig(model=FunctionModel(script), retries=1, timeout_seconds=10))


async def test_quoted_values_are_kept_with_their_span() -> None:
    script = Script(
        {
            "sample_size": {"value": "1,024", "quote": "A total of 1,024 patients"},
            "population": {"value": "patients with sepsis", "quote": "patients with sepsis"},
            "intervention": {"value": "drug", "quote": "randomised to drug or placebo"},
            "comparator": {"value": "placebo", "quote": "randomised to drug or placebo"},
            "effects": [
                {
                    "measure": "HR",
                    "value": "0.45",
                    "ci_low": "0.33",
                    "ci_high": "0.63",
                    # white space differs from the source (a line break): still verbatim
                    "quote": "hazard ratio, 0.45; 95% confidence interval [CI],\n0.33 to 0.63",
                }
            ],
            "follow_up": {"value": "2 years", "quote": "Median follow-up was 2 years"},
        }
    )
    record = await extractor(script).extract(item())
    assert record.method == "model"
    assert record.values_dropped == 0
    assert record.sample_size is not None
    assert record.n == 1024
    effect = record.primary_effect
    assert effect is not None
    assert (effect.measure, effect.value, effect.ci_low, effect.ci_high) == (
        "HR",
        "0.45",
        "0.33",
        "0.63",
    )
    assert ABSTRACT[effect.proof.start : effect.proof.end] == effect.proof.quote
    assert record.randomised is not None  # cues come from the rules' reading
    assert '<source id="E1" nonce="' in script.prompts[0]


async def test_invented_and_misquoted_values_are_dropped_and_counted() -> None:
    script = Script(
        {
            # a value the source never states, with an invented quote
            "sample_size": {"value": "2,000", "quote": "A total of 2,000 patients"},
            # a real quote, but the value is not in it
            "setting": {"value": "Oslo", "quote": "in 12 hospitals"},
            "effects": [
                {
                    "measure": "HR",
                    "value": "0.40",  # rounded: not as written
                    "ci_low": "0.33",
                    "ci_high": "0.63",
                    "quote": "hazard ratio, 0.45; 95% confidence interval [CI], 0.33 to 0.63",
                },
                {"measure": "OR", "value": "3.1", "quote": "odds ratio 3.1"},
            ],
        }
    )
    record = await extractor(script).extract(item())
    assert record.setting is None
    assert record.values_dropped == 4
    # the invented values are gone; what the rules read with confidence stands
    assert record.sample_size is not None
    assert record.sample_size.value == "1,024"
    assert [(e.measure, e.value) for e in record.effects] == [("HR", "0.45")]
    assert record.disagreements == 0


async def test_model_values_that_disagree_with_the_rules_are_shown_as_neither() -> None:
    """Issue 28: the model's numbers are held to the rules' standard. A model sample size
    (verbatim, but the number of hospitals) and an estimate at the same place as the rules'
    but with another value are both dropped with the rules' reading, and counted."""
    script = Script(
        {
            "sample_size": {"value": "12", "quote": "in 12 hospitals"},
            "effects": [
                {
                    "measure": "HR",
                    "value": "0.33",
                    "ci_low": "0.33",
                    "ci_high": "0.63",
                    "quote": "hazard ratio, 0.45; 95% confidence interval [CI], 0.33 to 0.63",
                }
            ],
        }
    )
    record = await extractor(script).extract(item())
    assert record.sample_size is None
    assert record.sample_size_parts == []
    assert record.n is None
    assert record.effects == []
    assert record.disagreements == 2
    assert record.values_dropped == 0


async def test_a_model_sample_size_quoted_from_an_exclusion_is_dropped() -> None:
    text = "METHODS: Of 300 women screened, 45 were excluded.\n\nRESULTS: Pain fell."
    script = Script({"sample_size": {"value": "45", "quote": "45 were excluded"}})
    evidence = Evidence(id="E1", content=text, citation=Citation(source="pubmed", id="1"))
    record = await extractor(script).extract(evidence)
    assert record.sample_size is None
    assert record.values_dropped == 1


@pytest.mark.parametrize("quote", ["", "   ", "HAZARD RATIO, 0.45"])
async def test_empty_or_paraphrased_quotes_prove_nothing(quote: str) -> None:
    script = Script({"follow_up": {"value": "0.45", "quote": quote}})
    record = await extractor(script).extract(item())
    assert record.follow_up is None
    assert record.values_dropped == 1
