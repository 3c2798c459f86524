"""The state layer on SQLite and on a real PostgreSQL server: runs, source collection,
syllabus, agent tools, call caches, scale and concurrency."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from deepcritical.agents.source_tools import source_toolset
from deepcritical.api import research, resume
from deepcritical.config import Settings
from deepcritical.llm.model_cache import CachedModel
from deepcritical.models import Citation, Evidence, SearchFilters
from deepcritical.sources.base import SourceError
from deepcritical.state import (
    RunNotFoundError,
    RunNotResumableError,
    RunStore,
    Syllabus,
    SyllabusError,
    UnknownCitationError,
    UnknownQuestionError,
)
from deepcritical.state.cache import CachedSource, CallCache
from deepcritical.state.sources import SourceCollector
from deepcritical.testing.embedders import HashingEmbedder

SYLLABUS = Path(__file__).resolve().parents[2] / "syllabi" / "drug_profile.yaml"


def drug_collector(runs: RunStore) -> SourceCollector:
    syllabus = Syllabus.from_file(SYLLABUS)
    run_id = runs.create_run("Profile of drug X", {"llm": "none"}, syllabus=syllabus)
    return SourceCollector(runs, run_id, syllabus)


def test_runs_are_created_listed_and_exported(runs: RunStore) -> None:
    first = runs.create_run("first question", {"llm": "none"})
    second = runs.create_run("second question", {"llm": "none"}, context="ctx")
    listed = runs.list_runs()
    assert [r.id for r in listed] == [second, first]
    record = runs.get_run(second[:8])
    assert record is not None
    assert record.id == second
    assert record.status == "pending"
    assert record.context == "ctx"
    assert runs.get_run("f" * 32) is None
    exported = runs.export_run(first)
    json.dumps(exported)
    assert exported["run"]["question"] == "first question"
    with pytest.raises(RunNotFoundError, match="no run with id 'nope-nope'") as missing:
        runs.export_run("nope-nope")
    assert "runs list" in missing.value.cli_hint  # the command line adds it, no one else


def test_save_source_dedups_and_counts_per_question(runs: RunStore) -> None:
    c = drug_collector(runs)
    r1 = c.save_source(
        "pubmed", "123", None, "Paper A", ["clinical.efficacy", "clinical.safety"], ["x"]
    )
    assert r1.created
    assert r1.number == 1
    assert r1.citation_id == "S1"
    assert r1.message == (
        "✓ Saved source #1 (PubMed) → clinical.efficacy (1/5 ⚠), clinical.safety (1/5 ⚠)"
    )
    # same paper from Europe PMC by its PubMed URL: one source, one more question
    r2 = c.save_source(
        "europepmc", "MED/123", "https://pubmed.ncbi.nlm.nih.gov/123/", "Paper A", ["mechanism.moa"]
    )
    assert not r2.created
    assert r2.number == 1
    assert "already saved" in r2.message
    assert "mechanism.moa (1/3 ⚠)" in r2.message
    r3 = c.save_source("pubmed", "123", None, "Paper A", ["clinical.efficacy"])
    assert not r3.created
    grouped = c.finalize_sources()
    assert [s.number for s in grouped["clinical.efficacy"]] == [1]
    assert grouped["mechanism.moa"][0].questions == [
        "clinical.efficacy",
        "clinical.safety",
        "mechanism.moa",
    ]
    progress = c.get_progress()
    assert progress.total_sources == 1
    assert {q.key: q.count for q in progress.questions}["clinical.efficacy"] == 1
    assert progress.next_focus == "competitive.landscape"
    done = c.check_completion()
    assert not done.ready
    assert done.missing["clinical.efficacy"] == 4
    assert "competitive.landscape" in done.suggestion


def test_a_real_title_replaces_a_derived_one(runs: RunStore) -> None:
    c = drug_collector(runs)
    c.save_source("local", "123", None, "[derived title] To assess X", ["clinical.efficacy"])
    c.save_source("pubmed", "123", None, "Paper A", ["clinical.efficacy"])
    c.save_source("local", "123", None, "[derived title] To assess Y", ["clinical.efficacy"])
    [saved] = c.finalize_sources()["clinical.efficacy"]
    assert saved.title == "Paper A"


def test_bad_input_gets_clear_errors_and_saves_nothing(runs: RunStore) -> None:
    c = drug_collector(runs)
    with pytest.raises(UnknownQuestionError, match=r"valid keys: mechanism\.moa, clinical"):
        c.save_source("pubmed", "1", None, "t", ["clinical.effcacy"])
    with pytest.raises(UnknownCitationError, match="E7"):
        c.save_source("pubmed", "1", None, "t", ["clinical.efficacy"], citation_id="E7")
    with pytest.raises(ValueError, match="at least one question"):
        c.save_source("pubmed", "1", None, "t", [])
    assert c.get_progress().total_sources == 0
    known = SourceCollector(runs, c.run_id, c.syllabus, citation_exists=lambda cid: cid == "E7")
    assert known.save_source("pubmed", "1", None, "t", ["ip.patents"], citation_id="E7").created


def test_syllabus_file_errors_are_clear(tmp_path: Path) -> None:
    assert Syllabus.from_file(SYLLABUS).keys[0] == "mechanism.moa"
    bad = tmp_path / "bad.yaml"
    bad.write_text("questions:\n  - key: a\n    label: A\n  - key: a\n    label: B\n")
    with pytest.raises(SyllabusError, match="appears twice"):
        Syllabus.from_file(bad)
    with pytest.raises(SyllabusError, match="cannot read"):
        Syllabus.from_file(tmp_path / "missing.yaml")


def test_agent_uses_the_source_tools(runs: RunStore) -> None:
    c = drug_collector(runs)
    answers: list[str] = []

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = len(messages)
        for m in messages:
            for p in m.parts:
                if isinstance(p, ToolReturnPart) or type(p).__name__ == "RetryPromptPart":
                    answers.append(str(getattr(p, "content", "")))
        if turn == 1:
            args = {"source_type": "pubmed", "external_id": "9", "url": None, "title": "T"}
            return ModelResponse(
                parts=[
                    ToolCallPart("save_source", {**args, "relevant_questions": ["bogus"]}),
                    ToolCallPart("save_source", {**args, "relevant_questions": ["market.status"]}),
                ]
            )
        if turn == 3:
            return ModelResponse(parts=[ToolCallPart("check_completion", {})])
        return ModelResponse(parts=[TextPart("finished")])

    agent = Agent(FunctionModel(script), toolsets=[source_toolset(c)])
    assert agent.run_sync("collect").output == "finished"
    joined = " | ".join(answers)
    assert "valid keys: mechanism.moa" in joined
    assert "✓ Saved source #1 (PubMed) → market.status (1/2 ⚠)" in joined
    assert "NOT READY" in joined
    assert c.get_progress().total_sources == 1


class CountingSource:
    name = "pubmed"

    def __init__(self) -> None:
        self.calls = 0
        self.fail = False

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        self.calls += 1
        if self.fail:
            raise SourceError("pubmed", "HTTP 503 after 3 tries")
        return [Evidence(content=f"{query} abstract", citation=Citation(source="pubmed", id="42"))]


async def test_search_and_llm_calls_are_cached(runs: RunStore) -> None:
    cache = CallCache(runs)
    inner = CountingSource()
    source = CachedSource(inner, cache)
    first = await source.search("metformin", 5)
    again = await CachedSource(inner, cache).search("metformin", 5)
    assert inner.calls == 1
    assert again == first
    inner.fail = True
    with pytest.raises(SourceError):
        await source.search("other", 5)
    with pytest.raises(SourceError):
        await source.search("other", 5)
    assert inner.calls == 3  # failures are not cached

    model = CachedModel(TestModel(custom_output_text="answer"), cache)
    assert (await Agent(model).run("same prompt")).output == "answer"
    model2 = CachedModel(TestModel(custom_output_text="other"), cache)
    assert (await Agent(model2).run("same prompt")).output == "answer"
    assert (model.live_requests, model2.live_requests, model2.cached_requests) == (1, 0, 1)

    # A resumed run fences its sources with new random nonces, maybe on another day: the
    # same request must still hit; other source text must not.
    def prompt(nonce: str, day: str, text: str) -> str:
        return (
            f"Today's date is {day}.\n\nQuote only sources; nonce {nonce} ends a block.\n"
            f'<source id="E1" nonce="{nonce}">\n{text}\n</source {nonce}>'
        )

    first_run = CachedModel(TestModel(custom_output_text="grounded"), cache)
    resumed = CachedModel(TestModel(custom_output_text="different"), cache)
    text = "Metformin lowered HbA1c."
    assert (await Agent(first_run).run(prompt("9f2c41d7a1b2", "2026-11-21", text))).output == (
        "grounded"
    )
    replay = await Agent(resumed).run(prompt("0c0ffee12345", "2026-11-22", text))
    assert replay.output == "grounded"
    other = await Agent(resumed).run(prompt("0c0ffee12345", "2026-11-22", "Statins."))
    assert other.output == "different"
    assert (resumed.cached_requests, resumed.live_requests) == (1, 1)


class RunSource:
    """A per-run fake source: items tagged with the run's tag, plus one paper every run
    finds (same PMID) that must be stored once per run."""

    name = "pubmed"

    def __init__(self, tag: str) -> None:
        self.tag = tag

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        words = query.split()[:2]
        items = [
            Evidence(
                content=f"{self.tag} study of {' '.join(words)} number {i} in patients "
                f"{self.tag}{i}",
                citation=Citation(
                    source="pubmed",
                    id=f"{abs(hash(self.tag)) % 10**6}{i:03d}",
                    title=f"{self.tag} paper {i} {query}",
                ),
            )
            for i in range(limit)
        ]
        items.append(
            Evidence(
                content="A shared paper on aspirin everyone finds.",
                citation=Citation(source="pubmed", id="77777777", title="Shared aspirin paper"),
            )
        )
        return items


async def test_twenty_parallel_runs_lose_no_write_and_mix_no_source(
    database_url: str, tmp_path: Path
) -> None:
    settings = Settings(
        llm="none",
        sources=["pubmed"],
        data_dir=tmp_path,
        database_url=database_url,
        max_rounds=1,
        results_per_query=4,
        max_queries_per_round=2,
    )
    embedder = HashingEmbedder()

    async def one(i: int) -> tuple[str, set[str]]:
        tag = f"run{i:02d}x"
        run_id, ids = "", set()
        async for event in research(
            f"Does aspirin {tag} prevent stroke?",
            settings,
            sources=[RunSource(tag)],
            embedder=embedder,
        ):
            if event.type == "started":
                run_id = str(event.run_id)
            if event.type == "done" and event.result is not None:
                ids = {e.id for e in event.result.evidence}
        return run_id, ids

    results = await asyncio.gather(*(one(i) for i in range(20)))
    store = RunStore.open_url(database_url)
    try:
        assert len({run_id for run_id, _ in results}) == 20
        for i, (run_id, ids) in enumerate(results):
            record = store.get_run(run_id)
            assert record is not None
            assert record.status in {"completed", "max_iterations"}
            exported = store.export_run(run_id)
            saved = {
                s["citation_id"]: s for group in exported["sources_by_question"].values()
                for s in group
            }  # fmt: skip
            assert set(saved) == ids, f"run {i}: saved {len(saved)} of {len(ids)}"
            assert record.sources == len(ids)
            tag = f"run{i:02d}x"
            for s in saved.values():
                assert s["external_id"] == "77777777" or tag in s["title"], (tag, s["title"])
            assert sum(s["external_id"] == "77777777" for s in saved.values()) <= 1
            assert "database_url" not in record.settings  # secrets are never stored
            assert "openai_api_key" not in record.settings
        with pytest.raises(RunNotResumableError, match="already finished"):
            async for _ in resume(results[0][0], settings):
                pass
        with pytest.raises(RunNotFoundError):
            async for _ in resume("0" * 32, settings):
                pass
    finally:
        store.close()


async def test_resume_keeps_the_report_preferences(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import deepcritical.api as api
    from deepcritical.models import ReportPreferences

    settings = Settings(
        llm="none", sources=["pubmed"], data_dir=tmp_path, database_url=database_url, max_rounds=1
    )
    wanted = ReportPreferences(audience="clinicians", length="brief", focus="bleeding risk")
    run_id = ""
    events = research(
        "Does aspirin prevent stroke?",
        settings,
        preferences=wanted,
        sources=[RunSource("pref")],
        embedder=HashingEmbedder(),
    )
    async for event in events:  # stop the run as soon as it is recorded
        if event.type == "started":
            run_id = str(event.run_id)
            break
    await events.aclose()  # type: ignore[attr-defined]
    store = RunStore.open_url(database_url)
    try:
        record = store.get_run(run_id)
    finally:
        store.close()
    assert record is not None
    assert record.resumable
    assert record.preferences == wanted.model_dump(mode="json")

    seen: dict[str, Any] = {}

    async def fake_research(question: str, settings: Settings, **kwargs: Any) -> Any:
        seen.update(kwargs, question=question)
        return
        yield  # an async generator that yields nothing

    monkeypatch.setattr(api, "_research", fake_research)
    async for _ in resume(run_id, settings):
        pass
    assert seen["question"] == "Does aspirin prevent stroke?"
    assert seen["preferences"] == wanted
    assert seen["run_id"] == record.id


@pytest.mark.parametrize("budget", [0.000001, 0.0001, 0.001, 0.01])
async def test_any_time_budget_ends_with_a_report_and_its_stop_reason(
    database_url: str, tmp_path: Path, budget: float
) -> None:
    """Issue 13: a recorded run with a tiny time budget (the deadline fires during planning,
    searching or while the consumer checkpoints an event) ends with ``done`` and a report,
    never a cancellation; 5 tries per budget, 20 in all."""
    settings = Settings(
        llm="none",
        sources=["pubmed"],
        data_dir=tmp_path,
        database_url=database_url,
        max_rounds=3,
        results_per_query=4,
        time_budget_seconds=budget,
    )
    store = RunStore.open_url(database_url)
    try:
        for attempt in range(5):
            events = [
                e
                async for e in research(
                    f"Does aspirin t{attempt} prevent stroke?",
                    settings,
                    sources=[RunSource(f"t{attempt}")],
                    embedder=HashingEmbedder(),
                )
            ]
            last = events[-1]
            assert last.type == "done", [e.message for e in events]
            assert last.result is not None
            report = last.result.report
            if budget <= 0.001:  # no time to finish: the budget stopped it
                assert report.metadata.stop_reason in {"time_budget", "insufficient_evidence"}
            assert report.metadata.stop_reason != "error"
            assert report.to_markdown().strip()
            record = store.get_run(str(events[0].run_id))
            assert record is not None
            assert record.report_markdown
    finally:
        store.close()
