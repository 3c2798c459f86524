"""build_agents picks implementations; both sets run end to end through the orchestrator."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel

from deepcritical.agents.planner import ExtractivePlanner, LLMPlanner
from deepcritical.agents.roles import (
    HypothesisGenerator,
    Judge,
    Planner,
    QueryGenerator,
    ReportWriter,
)
from deepcritical.agents.search import SearchAgent
from deepcritical.config import Settings
from deepcritical.evidence.store import EvidenceStore
from deepcritical.models import Citation, Evidence, SearchFilters, marker_ids
from deepcritical.orchestrators.agent_set import AgentSet, build_agents
from deepcritical.orchestrators.deps import RunDeps
from deepcritical.orchestrators.iterative import IterativeOrchestrator
from deepcritical.report.validation import citation_problems
from deepcritical.testing.chat import FENCED_ID, first_prompt
from deepcritical.testing.embedders import HashingEmbedder
from deepcritical.testing.scripted_roles import ScriptedRoles
from deepcritical.writing.extractive import ExtractiveReportWriter
from deepcritical.writing.llm_writer import LLMReportWriter


def test_no_model_gives_extractive_agents() -> None:
    agents = build_agents(Settings(llm="none"), None, HashingEmbedder())
    assert agents.mode == "extractive"
    assert isinstance(agents.planner, ExtractivePlanner)
    assert isinstance(agents.writer, ExtractiveReportWriter)
    assert agents.usage.as_dict()["total"]["requests"] == 0


def test_a_model_gives_llm_agents_sharing_one_usage_tracker() -> None:
    model = FunctionModel(lambda m, i: ModelResponse(parts=[]))
    agents = build_agents(Settings(llm="none", llm_retries=4), model, HashingEmbedder())
    assert agents.mode == "llm"
    assert isinstance(agents.planner, LLMPlanner)
    assert isinstance(agents.writer, LLMReportWriter)
    assert isinstance(agents.planner, LLMPlanner)
    assert agents.planner._agent.usage is agents.usage
    assert agents.planner._agent._agents  # a pydantic-ai Agent was built
    assert agents.writer._outline.usage is agents.usage
    assert agents.planner._agent.timeout_seconds == Settings().llm_timeout_seconds


def test_agent_sets_satisfy_the_role_protocols() -> None:
    model = FunctionModel(lambda m, i: ModelResponse(parts=[]))
    for agents in (
        build_agents(Settings(), None, HashingEmbedder()),
        build_agents(Settings(), model, HashingEmbedder()),
    ):
        planner: Planner = agents.planner
        queries: QueryGenerator = agents.queries
        hypotheses: HypothesisGenerator = agents.hypotheses
        judge: Judge = agents.judge
        writer: ReportWriter = agents.writer
        for role in (planner, queries, hypotheses, judge, writer):
            assert role is not None


def corpus_source(pubmedqa_dir: Path) -> Any:
    docs: list[Evidence] = []
    with (pubmedqa_dir / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in list(fh)[:200]:
            row = json.loads(line)
            docs.append(
                Evidence(
                    content="\n".join(
                        f"{s['label']}: {s['text']}" if s.get("label") else s["text"]
                        for s in row["abstract_sections"]
                    ),
                    citation=Citation(source="local", id=row["pmid"], pmid=row["pmid"]),
                )
            )

    class Corpus:
        name = "local"

        async def search(
            self, query: str, limit: int, filters: SearchFilters | None = None
        ) -> list[Evidence]:
            words = set(re.findall(r"[a-z]{4,}", query.lower()))
            ranked = sorted(
                docs, key=lambda d: -len(words & set(re.findall(r"[a-z]{4,}", d.content.lower())))
            )
            return [d.model_copy(update={"query": query}) for d in ranked[:limit]]

    return Corpus()


def orchestrator(agents: AgentSet, source: Any, fallback: AgentSet | None = None) -> Any:
    settings = Settings(llm="none", max_rounds=2, results_per_query=5, sources=["local"])
    store = EvidenceStore(HashingEmbedder(), near_duplicate_threshold=0.999)
    search = SearchAgent([source], store, 5)
    deps = RunDeps(settings, agents, store, search, ["local"], fallback=fallback)
    return IterativeOrchestrator(deps), store


async def test_extractive_set_runs_a_whole_question(pubmedqa_dir: Path) -> None:
    agents = build_agents(Settings(llm="none"), None, HashingEmbedder())
    agents.writer = ExtractiveReportWriter(HashingEmbedder(), min_similarity=0.05)
    orch, store = orchestrator(agents, corpus_source(pubmedqa_dir))
    events = [e async for e in orch.run("Does laparoscopic surgery shorten hospital stay?")]
    assert events[-1].type == "done", [e.message for e in events]
    result = events[-1].result
    assert result is not None
    report = result.report
    by_id = {e.id: e for e in store.all()}
    assert report.references
    assert citation_problems(report, by_id) == []
    assert report.metadata.citation_validation.markers_removed == 0
    assert [w for w in events if w.type == "warning"] == []


@dataclass
class FabricatingScript(ScriptedRoles):
    """The laparoscopy scenario: answers every role, citing the ids shown and a fabricated
    id ``E999`` too; every request is recorded, the screening's tool calls included (one
    call per request, as usage counts them)."""

    def screening_steps(
        self, messages: list[ModelMessage], info: AgentInfo
    ) -> ModelResponse | None:
        steps = super().screening_steps(messages, info)
        if steps is not None:
            self.record("screener", first_prompt(messages), info)
        return steps

    def planner(self, prompt: str) -> dict[str, Any]:
        return {
            "refined_question": "Does laparoscopic surgery shorten hospital stay?",
            "checklist": [
                {"key": "stay", "description": "laparoscopic surgery hospital stay"},
                {"key": "complications", "description": "laparoscopic complications"},
                {"key": "cost", "description": "laparoscopic surgery costs"},
            ],
            "queries": ["laparoscopic hospital stay"],
            "key_terms": ["laparoscopic", "hospital stay"],
        }

    def hypothesis(self, prompt: str) -> dict[str, Any]:
        ids = FENCED_ID.findall(prompt)
        return {
            "hypotheses": [
                {
                    "statement": "Laparoscopy shortens stay.",
                    "supporting_evidence_ids": [*ids[:2], "E999"],
                    "confidence": 0.6,
                }
            ]
        }

    def judge(self, prompt: str) -> dict[str, Any]:
        return {
            "sufficient": "false",
            "mechanism_score": 2,
            "clinical_evidence_score": "6/10",
            "reasoning": "More needed.",
        }

    def outline(self, prompt: str) -> dict[str, Any]:
        ids = FENCED_ID.findall(prompt)
        return {
            "title": "Laparoscopy and stay",
            "outline": [{"heading": "Length of stay", "evidence_ids": ids[:3]}],
        }

    def findings(self, prompt: str) -> dict[str, Any]:
        ids = FENCED_ID.findall(prompt)
        return {"content": f"Stay was shorter [{ids[0]}]. A fabricated trial agreed [E999]."}

    def rewriter(self, prompt: str) -> dict[str, Any]:
        return {"rewritten_sentence": ""}

    def reflection(self, prompt: str) -> dict[str, Any]:
        return {"items": [], "follow_up_queries": ["laparoscopy cost"]}

    def summary(self, prompt: str) -> dict[str, Any]:
        ids = FENCED_ID.findall(prompt)
        return {
            "executive_summary": f"Shorter stays [{ids[0]}].",
            "limitations": ["Small studies"],
            "conclusion": f"Probably shorter [{ids[0]}].",
        }

    def queries(self, prompt: str) -> dict[str, Any]:
        n = sum(c.role == "queries" for c in self.calls)  # the earlier query requests
        return {"queries": [f"laparoscopic versus open length of stay {n}"]}


async def test_llm_set_runs_a_whole_question_with_a_scripted_model(pubmedqa_dir: Path) -> None:
    llm = FabricatingScript()
    settings = Settings(llm="none")
    agents = build_agents(settings, FunctionModel(llm), HashingEmbedder())
    orch, _store = orchestrator(
        agents,
        corpus_source(pubmedqa_dir),
        fallback=build_agents(settings, None, HashingEmbedder()),
    )
    events = [e async for e in orch.run("Does laparoscopic surgery shorten hospital stay?")]
    assert events[-1].type == "done", [e.message for e in events]
    assert [w.message for w in events if w.type == "warning"] == []
    report = events[-1].result.report
    text = " ".join(report.texts())
    assert "fabricated" not in text
    assert "E999" not in text
    assert set(marker_ids(text)) <= llm.ids_shown("outline", "findings")
    assert report.hypotheses_tested
    assert "E999" not in report.hypotheses_tested[0].supporting_evidence_ids
    assert {
        "planner",
        "queries",
        "hypothesis",
        "judge",
        "reflection",
        "findings",
        "summary",
        "screener",
    } <= llm.roles()
    usage = agents.usage.by_role()
    assert {
        "planner",
        "query_generator",
        "hypothesis",
        "judge",
        "reflection",
        "writer.outline",
        "writer.section",
        "writer.summary",
        "screener",
    } <= set(usage)
    assert agents.usage.total().requests == len(llm.calls)
