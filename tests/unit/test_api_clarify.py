"""``api.clarify`` (rules offline, the model when one is given) and a run whose context
carries the user's answer: the plan and the report's methodology say what was clarified."""

from __future__ import annotations

import json

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from deepcritical import clarified_context, clarify, research
from deepcritical.config import Settings
from deepcritical.models import Citation, Evidence, SearchFilters
from deepcritical.orchestrators.deps import QuestionError
from deepcritical.testing.embedders import HashingEmbedder

METFORMIN = "Does metformin reduce mortality?"
OFFLINE = Settings(llm="none", persist_runs=False, sources=["local"], max_rounds=1)


class MetforminSource:
    """Three abstracts about metformin and mortality for every query."""

    name = "fake"

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        return [
            Evidence(
                content=(
                    f"CONCLUSIONS: Metformin use was associated with lower all-cause mortality "
                    f"in cohort {i} of adults over 65 with type 2 diabetes."
                ),
                citation=Citation(source="fake", id=str(i), pmid=str(i), title=f"Study {i}"),
                query=query,
            )
            for i in range(1, min(limit, 3) + 1)
        ]


async def test_offline_clarify_uses_the_rules() -> None:
    clarification = await clarify(METFORMIN, OFFLINE)
    assert clarification is not None
    assert clarification.by == "rules"
    assert [q.element for q in clarification.questions] == ["population"]
    complete = "Does metformin reduce mortality in adults over 65 with type 2 diabetes?"
    assert await clarify(complete, OFFLINE) is None


async def test_clarify_with_a_model_asks_the_model() -> None:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        answer = {
            "clarifying_questions": [
                {
                    "element": "outcome",
                    "prompt": "Which mortality?",
                    "choices": ["All-cause", "Cancer"],
                }
            ]
        }
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, json.dumps(answer))])

    clarification = await clarify(METFORMIN, OFFLINE, model=FunctionModel(model))
    assert clarification is not None
    assert clarification.by == "model"
    assert clarification.questions[0].choices == ["All-cause", "Cancer"]


@pytest.mark.parametrize("question", ["", "  ", "x" * 3000])
async def test_bad_questions_are_refused(question: str) -> None:
    with pytest.raises(QuestionError):
        await clarify(question, OFFLINE)


async def test_the_answer_reaches_the_plan_and_the_methodology() -> None:
    clarification = await clarify(METFORMIN, OFFLINE)
    assert clarification is not None
    context = clarified_context(
        None, clarification.answer({"population": "Older adults (65 and over)"})
    )
    events = [
        e
        async for e in research(
            METFORMIN,
            OFFLINE,
            context=context,
            sources=[MetforminSource()],
            embedder=HashingEmbedder(),
        )
    ]
    done = events[-1]
    assert done.type == "done"
    assert done.result is not None
    assert done.result.plan is not None
    assert [c.text() for c in done.result.plan.clarified] == [
        "population = Older adults (65 and over)"
    ]
    report = done.result.report
    assert (
        "The question was clarified by the user before planning: "
        "population = Older adults (65 and over)." in report.methodology
    )
    assert "population: Older adults (65 and over)" in report.methodology
