"""Planning (scope, MeSH terms, sub-questions, date in the prompt), query syntax and routing
to sources, and re-ranking of a round's results."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from deepcritical.agents.planner import LLMPlanner
from deepcritical.agents.queries import (
    ExtractiveQueryGenerator,
    LLMQueryGenerator,
    build_query_prompt,
)
from deepcritical.agents.search import SearchAgent, rerank
from deepcritical.evidence.store import EvidenceStore
from deepcritical.llm.agent_config import LLMConfig
from deepcritical.models import (
    ChecklistItem,
    Citation,
    Evidence,
    ResearchPlan,
    SearchFilters,
    SubQuestion,
)
from deepcritical.sources.query_syntax import (
    date_filter,
    is_pubmed_syntax,
    mesh_query,
    plain_query,
    query_for_source,
)
from deepcritical.testing.embedders import HashingEmbedder


class Script:
    def __init__(self, output: dict[str, Any]) -> None:
        self.output = output
        self.prompts: list[str] = []
        self.instructions: list[str] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        first = messages[0]
        assert isinstance(first, ModelRequest)
        self.prompts.append(
            "\n".join(str(p.content) for p in first.parts if isinstance(p, UserPromptPart))
        )
        self.instructions.append(info.instructions or "")
        tool = info.output_tools[0].name
        return ModelResponse(parts=[ToolCallPart(tool, json.dumps(self.output))])

    def config(self) -> LLMConfig:
        return LLMConfig(model=FunctionModel(self), retries=1)


PLAN_OUTPUT = {
    "refined_question": "Does metformin slow cognitive decline in Alzheimer disease?",
    "checklist": [
        {"key": "clinical", "description": "Clinical trials of metformin in Alzheimer disease"},
        {"key": "mechanism", "description": "AMPK and tau mechanisms of metformin"},
        {"key": "safety", "description": "Adverse effects of metformin in older adults"},
    ],
    "queries": ["metformin alzheimer"],
    "key_terms": ["metformin", "Alzheimer disease"],
    "scope_in": ["adults with Alzheimer disease", "metformin monotherapy"],
    "scope_out": ["type 1 diabetes"],
    "mesh_terms": ["Metformin", "Alzheimer Disease"],
    "sub_questions": [
        {"question": "Mechanism?", "queries": ["metformin AMPK tau", "metformin amyloid", "x"]},
        {"question": "Trials?", "queries": ['"Metformin"[MeSH Terms] AND dementia[tiab]']},
        {"question": "Safety?", "queries": ["metformin adverse elderly"]},
        {"question": "Cost?", "queries": ["metformin cost"]},
    ],
}


async def test_planner_gives_scope_mesh_and_capped_sub_questions_with_the_date() -> None:
    script = Script(PLAN_OUTPUT)
    planner = LLMPlanner(
        script.config(), today=lambda: date(2030, 5, 17), max_questions=3, queries_per_question=2
    )
    plan = await planner.plan("Can metformin be repurposed for Alzheimer's?")
    assert plan.scope_in == ["adults with Alzheimer disease", "metformin monotherapy"]
    assert plan.scope_out == ["type 1 diabetes"]
    assert plan.mesh_terms == ["Metformin", "Alzheimer Disease"]
    assert [q.question for q in plan.sub_questions] == ["Mechanism?", "Trials?", "Safety?"]
    assert plan.sub_questions[0].queries == ["metformin AMPK tau", "metformin amyloid"]
    # the plan's own queries first, then the sub-questions' interleaved by rank
    assert plan.queries == [
        "metformin alzheimer",
        "metformin AMPK tau",
        '"Metformin"[MeSH Terms] AND dementia[tiab]',
        "metformin adverse elderly",
        "metformin amyloid",
    ]
    [instructions] = script.instructions
    assert "2030-05-17" in instructions
    assert "at most 3 sub-questions" in instructions
    assert "MeSH" in instructions


def test_pubmed_syntax_is_recognised_and_stripped_for_other_sources() -> None:
    tagged = '("Metformin"[MeSH Terms] OR metformin[tiab]) AND dementia*[tiab]'
    assert is_pubmed_syntax(tagged)
    assert not is_pubmed_syntax("metformin AND dementia")
    assert plain_query(tagged) == "Metformin dementia"
    assert plain_query("metformin AND dementia") == "metformin AND dementia"  # left alone
    dated = f"metformin[tiab] AND {date_filter(2015)}"
    assert date_filter(2015) == '("2015"[dp] : "3000"[dp])'
    assert plain_query(dated) == "metformin"
    assert query_for_source(tagged, "pubmed") == tagged
    assert query_for_source(tagged, "openalex") == "Metformin dementia"
    assert query_for_source("metformin", "pubmed", 2015) == (
        '(metformin) AND ("2015"[dp] : "3000"[dp])'
    )
    assert query_for_source(dated, "pubmed", 2015) == dated  # one date filter only
    assert query_for_source("metformin", "web", 2015) == "metformin"
    assert mesh_query(["Metformin"], ["tau"]) == (
        '("Metformin"[MeSH Terms] OR "Metformin"[tiab]) AND "tau"[tiab]'
    )


def paper(pmid: int, text: str, source: str) -> Evidence:
    return Evidence(
        content=f"RESULTS: {text}",
        citation=Citation(source=source, id=str(pmid), pmid=str(pmid), title=f"Paper {pmid}"),
    )


class RecordingSource:
    def __init__(self, name: str, results: dict[str, list[Evidence]] | None = None) -> None:
        self.name = name
        self.results = results or {}
        self.seen: list[str] = []

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        self.seen.append(query)
        return self.results.get(query, [])[:limit]


async def test_each_source_gets_the_query_in_its_own_syntax() -> None:
    pubmed, web, local = RecordingSource("pubmed"), RecordingSource("web"), RecordingSource("local")
    store = EvidenceStore(HashingEmbedder())
    agent = SearchAgent([pubmed, web, local], store, 5, pubmed_date_from=2018)
    tagged = '"Metformin"[MeSH Terms] AND tau[tiab]'
    result = await agent.run([tagged, "metformin tau mice"])
    assert pubmed.seen == [
        f"({tagged}) AND {date_filter(2018)}",
        f"(metformin tau mice) AND {date_filter(2018)}",
    ]
    assert web.seen == local.seen == ["Metformin tau", "metformin tau mice"]
    assert result.queries == [tagged, "metformin tau mice"]  # recorded as written


async def test_a_round_is_re_ranked_by_relevance_and_capped_before_it_is_kept() -> None:
    off_topic = [paper(i, f"weather report {i} rain wind clouds", "web") for i in range(1, 4)]
    on_topic = [paper(9, "metformin slowed cognitive decline in alzheimer disease", "local")]
    # the off-topic query comes first and ranks its papers first
    web = RecordingSource("web", {"first": off_topic})
    local = RecordingSource("local", {"second": on_topic})
    store = EvidenceStore(HashingEmbedder())
    agent = SearchAgent([web, local], store, 5)
    targets = ["metformin cognitive decline alzheimer disease"]
    result = await agent.run(["first", "second"], relevance_to=targets, keep=2)
    kept = [store.require(i).citation.pmid for i in result.added_ids]
    assert kept[0] == "9"  # the relevant paper of the second query is kept first
    assert len(kept) == 2  # the cap keeps the two most relevant documents

    ordered = rerank([*off_topic, *on_topic], targets, HashingEmbedder())
    assert ordered[0].citation.pmid == "9"
    assert [e.citation.pmid for e in rerank([*off_topic, *on_topic], [], HashingEmbedder())] == [
        "1",
        "2",
        "3",
        "9",
    ]  # no targets: fused order


def plan_with_mesh() -> ResearchPlan:
    return ResearchPlan(
        question="q",
        refined_question="Does metformin slow Alzheimer disease?",
        checklist=[
            ChecklistItem(key="clinical", description="metformin trials in Alzheimer disease"),
            ChecklistItem(key="mechanism", description="metformin AMPK tau mechanism"),
        ],
        key_terms=["metformin", "Alzheimer disease"],
        mesh_terms=["Metformin", "Alzheimer Disease"],
        sub_questions=[SubQuestion(question="Is tau reduced?")],
    )


async def test_query_generators_use_mesh_terms_and_unsatisfied_items() -> None:
    plan = plan_with_mesh()
    extractive = await ExtractiveQueryGenerator().queries(plan, None, 2, 10, tried=[])
    assert mesh_query(["Metformin", "Alzheimer Disease"]) in extractive
    assert any("trials" in q for q in extractive)  # per unsatisfied checklist item

    prompt = build_query_prompt(plan, None, 2, 4, [])
    assert "MeSH terms: Metformin, Alzheimer Disease" in prompt
    assert "- Is tau reduced?" in prompt
    assert "- clinical (unsatisfied, 0/2 sources): metformin trials in Alzheimer disease" in prompt
    script = Script({"queries": ['"Metformin"[MeSH Terms] AND tau[tiab]', "metformin tau"]})
    out = await LLMQueryGenerator(script.config()).queries(plan, None, 2, 4, [])
    assert out == ['"Metformin"[MeSH Terms] AND tau[tiab]', "metformin tau"]
    [instructions] = script.instructions
    assert "[MeSH" in instructions
    assert '("2015"[dp] : "3000"[dp])' in instructions
    assert instructions.startswith("Today's date is ")
