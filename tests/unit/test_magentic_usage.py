"""Usage accounting of a run, for both orchestrators: LLM requests and input/output tokens
per agent (the Magentic manager included) must equal what the scripted models reported;
search calls are counted per source; wall time per stage is recorded; the CLI prints it."""

from __future__ import annotations

from rich.console import Console

from deepcritical.agents.search import SearchAgent, SearchRound
from deepcritical.cli.run_output import print_usage
from deepcritical.config import Settings
from deepcritical.events import DoneData
from deepcritical.evidence.store import EvidenceStore
from deepcritical.models import (
    Citation,
    Evidence,
    ResearchReport,
    RunResult,
    SearchFilters,
    UsageReport,
)
from deepcritical.orchestrators.agent_set import build_extractive_agents, build_llm_agents
from deepcritical.orchestrators.deps import RunDeps
from deepcritical.orchestrators.iterative import IterativeOrchestrator
from deepcritical.orchestrators.progress import RunAccounting
from deepcritical.sources.base import SourceError
from deepcritical.testing.chat import ManagerScript, RoleScript, Tally
from deepcritical.testing.embedders import HashingEmbedder
from tests.unit.test_magentic_orchestrator import QUESTION, PaperSource, make, result_of


def assert_usage_matches(usage: UsageReport, *tallies: Tally) -> None:
    """Per role: requests, input and output tokens equal the scripted models' reports."""
    expected_roles: set[str] = set()
    for tally in tallies:
        expected_roles |= tally.roles()
        for role, requests in tally.requests.items():
            used = usage.llm[role]
            assert used.requests == requests, role
            assert used.input_tokens == tally.input_tokens[role], role
            assert used.output_tokens == tally.output_tokens[role], role
            assert used.failures == 0, role
    assert set(usage.llm) == expected_roles
    assert usage.llm_total.requests == sum(sum(t.requests.values()) for t in tallies)
    assert usage.llm_total.input_tokens == sum(sum(t.input_tokens.values()) for t in tallies)
    assert usage.llm_total.output_tokens == sum(sum(t.output_tokens.values()) for t in tallies)


async def test_magentic_usage_matches_what_the_models_reported() -> None:
    speakers = ["SearchAgent", "HypothesisAgent", "JudgeAgent", "SearchAgent", "ReportAgent"]
    script = ManagerScript(speakers=[*speakers, None])
    orch, _, _, roles = make(script)
    events = [e async for e in orch.run(QUESTION)]
    result = result_of(events)
    usage = result.report.metadata.usage
    assert_usage_matches(usage, script.tally, roles.tally)
    manager = usage.llm["manager"]
    assert manager.requests == len(script.kinds) == 2 + 6 + 1  # facts, plan, ledgers, answer
    assert usage.search["fake"].calls == 4  # 2 rounds x 2 queries x 1 source
    assert usage.search["fake"].results == 12
    assert usage.search_calls == 4
    assert {"planning", "manager", "query_generation", "searching", "writing"} <= set(
        usage.stage_seconds
    )
    assert all(v >= 0 for v in usage.stage_seconds.values())
    assert events[-1].data_as(DoneData).usage.llm["manager"].requests == manager.requests


def iterative(roles: RoleScript, sources: list[object]) -> IterativeOrchestrator:
    s = Settings(llm="none", max_rounds=2, results_per_query=3, sources=["local"], llm_retries=1)
    store = EvidenceStore(HashingEmbedder(), near_duplicate_threshold=0.999)
    deps = RunDeps(
        settings=s,
        agents=build_llm_agents(s, roles.model()),
        store=store,
        search=SearchAgent(sources, store, s.results_per_query),  # type: ignore[arg-type]
        source_names=[src.name for src in sources],  # type: ignore[attr-defined]
        fallback=build_extractive_agents(s, HashingEmbedder()),
    )
    return IterativeOrchestrator(deps)


class BrokenSource:
    name = "broken"

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        raise SourceError("broken", "HTTP 503")


async def test_iterative_usage_matches_what_the_models_reported() -> None:
    roles = RoleScript()
    orch = iterative(roles, [PaperSource(), BrokenSource()])
    events = [e async for e in orch.run(QUESTION)]
    result = result_of(events)
    usage = result.report.metadata.usage
    assert result.report.metadata.orchestrator == "iterative"
    assert_usage_matches(usage, roles.tally)
    assert "manager" not in usage.llm
    assert roles.tally.requests["query_generator"] == 2  # two rounds
    assert usage.search["fake"].calls == 4
    assert usage.search["fake"].failed_calls == 0
    assert usage.search["broken"].calls == 4
    assert usage.search["broken"].failed_calls == 4
    assert usage.search["broken"].results == 0
    assert {"planning", "searching", "hypotheses", "judging", "writing", "validation"} <= set(
        usage.stage_seconds
    )
    assert events[-1].data_as(DoneData).usage.search_calls == 8


def test_record_search_counts_partial_failures_per_source() -> None:
    accounting = RunAccounting()
    result = SearchRound(
        queries=["a", "b", "c"],
        hits_per_source={"pubmed": 5, "web": 0},
        hits_per_query={"a": {"pubmed": 3, "web": 0}, "b": {"pubmed": 2}, "c": {}},
    )
    accounting.record_search(result, ["pubmed", "web"])
    accounting.record_search(SearchRound(queries=[]), ["pubmed", "web"])
    report = accounting.report([])
    assert report.search["pubmed"].calls == 3
    assert report.search["pubmed"].failed_calls == 1
    assert report.search["pubmed"].results == 5
    assert report.search["web"].failed_calls == 2
    assert report.llm == {}
    assert report.llm_total.requests == 0


def test_cli_prints_the_usage_at_the_end() -> None:
    console = Console(width=160, no_color=True)
    usage = UsageReport.model_validate(
        {
            "llm": {
                "manager": {"requests": 9, "input_tokens": 1200, "output_tokens": 80},
                "judge": {"requests": 2, "failures": 1, "input_tokens": 300, "output_tokens": 20},
            },
            "llm_total": {"requests": 11, "input_tokens": 1500, "output_tokens": 100},
            "search": {"pubmed": {"calls": 6, "failed_calls": 1, "results": 42}},
            "stage_seconds": {"searching": 3.25, "manager": 1.5},
        }
    )
    report = ResearchReport(title="T", research_question="Q")
    report.metadata.usage = usage
    report.metadata.citation_validation.references_checked = 0
    result = RunResult(
        report=report,
        evidence=[
            Evidence(content="x", citation=Citation(source="pubmed", id="1", pmid="1")),
        ],
    )
    with console.capture() as captured:
        print_usage(result, console)
    text = captured.get()
    assert "LLM manager" in text
    assert "1200" in text
    assert "2 (1 failed)" in text
    assert "LLM total" in text
    assert "1500" in text
    assert "search PubMed" in text
    assert "6 (1 failed)" in text
    assert "42 results" in text
    assert "searching 3.2 s" in text or "searching 3.3 s" in text
    assert "manager 1.5 s" in text
