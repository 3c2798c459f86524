"""build_agents picks implementations; both sets run end to end through the orchestrator."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    UserPromptPart,
)
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
from deepcritical.models import Citation, Evidence, marker_ids
from deepcritical.orchestrators.agent_set import AgentSet, build_agents
from deepcritical.orchestrators.deps import RunDeps
from deepcritical.orchestrators.iterative import IterativeOrchestrator
from deepcritical.report.validation import citation_problems
from deepcritical.testing.chat import RoleScript
from deepcritical.testing.embedders import HashingEmbedder
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

        async def search(self, query: str, limit: int) -> list[Evidence]:
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


class ScriptedLLM:
    """Answers every role by the shape of its output schema; cites a fabricated id too."""

    def __init__(self) -> None:
        self.shown: dict[str, list[str]] = {}
        self.calls: list[str] = []
        self.screening = RoleScript()  # plays the search agent's screening (saves all)

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        props = set(info.output_tools[0].parameters_json_schema.get("properties", {}))
        tools = self.screening.screener_response(messages, info)
        if tools is not None:
            self.calls.append("screener")  # one request each, as usage counts them
            return tools
        if "screened" in props:
            self.calls.append("screener")
            return self.screening.screener_output(messages, info)
        first = messages[0]
        assert isinstance(first, ModelRequest)
        prompt = "\n".join(str(p.content) for p in first.parts if isinstance(p, UserPromptPart))
        ids = re.findall(r'<source id="(E\d+)" nonce=', prompt)
        role: str
        out: dict[str, Any]
        if "checklist" in props:
            role, out = (
                "planner",
                {
                    "refined_question": "Does laparoscopic surgery shorten hospital stay?",
                    "checklist": [
                        {"key": "stay", "description": "laparoscopic surgery hospital stay"},
                        {"key": "complications", "description": "laparoscopic complications"},
                        {"key": "cost", "description": "laparoscopic surgery costs"},
                    ],
                    "queries": ["laparoscopic hospital stay"],
                    "key_terms": ["laparoscopic", "hospital stay"],
                },
            )
        elif "hypotheses" in props:
            role, out = (
                "hypothesis",
                {
                    "hypotheses": [
                        {
                            "statement": "Laparoscopy shortens stay.",
                            "supporting_evidence_ids": [*ids[:2], "E999"],
                            "confidence": 0.6,
                        }
                    ]
                },
            )
        elif "mechanism_score" in props:
            role, out = (
                "judge",
                {
                    "sufficient": "false",
                    "mechanism_score": 2,
                    "clinical_evidence_score": "6/10",
                    "reasoning": "More needed.",
                },
            )
        elif "outline" in props:
            role, out = (
                "findings",
                {
                    "title": "Laparoscopy and stay",
                    "outline": [{"heading": "Length of stay", "evidence_ids": ids[:3]}],
                },
            )
        elif "content" in props:
            role, out = (
                "findings",
                {"content": f"Stay was shorter [{ids[0]}]. A fabricated trial agreed [E999]."},
            )
        elif "rewritten_sentence" in props:
            role, out = "rewriter", {"rewritten_sentence": ""}
        elif "follow_up_queries" in props:
            role, out = "reflection", {"items": [], "follow_up_queries": ["laparoscopy cost"]}
        elif "executive_summary" in props:
            role, out = (
                "summary",
                {
                    "executive_summary": f"Shorter stays [{ids[0]}].",
                    "limitations": ["Small studies"],
                    "conclusion": f"Probably shorter [{ids[0]}].",
                },
            )
        else:
            n = self.calls.count("queries")
            role, out = "queries", {"queries": [f"laparoscopic versus open length of stay {n}"]}
        self.calls.append(role)
        self.shown.setdefault(role, []).extend(ids)
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, json.dumps(out))])


async def test_llm_set_runs_a_whole_question_with_a_scripted_model(pubmedqa_dir: Path) -> None:
    llm = ScriptedLLM()
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
    assert set(marker_ids(text)) <= set(llm.shown["findings"])
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
    } <= set(llm.calls)
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
