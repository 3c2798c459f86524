"""Screening by the search agent's model through the source tools (issue 12, item 2).

With a model, each round's new records are screened by :class:`LLMSourceScreener`: a
scripted ``FunctionModel`` (:class:`deepcritical.testing.chat.RoleScript`) calls
``save_source`` for the records that answer a checklist question, ``get_progress`` and
``check_completion``, and gives its verdicts and next queries. A record it does not save is
off-topic (with its reason), stays in the store and reaches no checklist item, hypothesis,
finding or reference; a broken screener falls back to calibrated screening with a warning.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deepcritical.agents.screener import (
    NOT_SAVED,
    LLMSourceScreener,
    ScreenedRecord,
    verbatim_excerpts,
)
from deepcritical.agents.search import SearchAgent
from deepcritical.events import EvidenceAddedData, ResearchEvent
from deepcritical.evidence.screening import default_calibration
from deepcritical.evidence.store import EvidenceStore
from deepcritical.llm.agent_config import LLMConfig
from deepcritical.llm.llm_errors import AgentOutputError
from deepcritical.models import (
    ChecklistItem,
    Citation,
    Evidence,
    ResearchPlan,
    RunResult,
    Screening,
    SearchFilters,
    marker_ids,
)
from deepcritical.orchestrators.agent_set import build_extractive_agents, build_llm_agents
from deepcritical.orchestrators.deps import RunDeps
from deepcritical.orchestrators.iterative import IterativeOrchestrator
from deepcritical.report.validation import citation_problems
from deepcritical.state.run_store import RunStore
from deepcritical.state.sources import SourceCollector
from deepcritical.state.syllabus import Syllabus
from deepcritical.testing.chat import ManagerScript, RoleScript
from deepcritical.testing.embedders import HashingEmbedder
from tests.unit.test_magentic_orchestrator import QUESTION, PaperSource, collect, make, settings

OFF_TOPIC_MARK = "asthma"


def asthma_paper(number: int, query: str) -> Evidence:
    return Evidence(
        content=f"RESULTS: In study {number}, inhaled corticosteroids reduced {OFF_TOPIC_MARK} "
        "attacks in children at school.",
        citation=Citation(
            source="fake", id=str(number), pmid=str(number), title=f"Asthma inhalers {number}"
        ),
        query=query,
        relevance=0.9,
    )


class MixedSource(PaperSource):
    """Metformin papers, and one asthma paper per call (the first result)."""

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        papers = await super().search(query, limit)
        return [asthma_paper(9000 + len(self.calls), query), *papers[: limit - 1]]


def iterative(
    roles: RoleScript, *, calibrated: bool = False
) -> tuple[IterativeOrchestrator, EvidenceStore]:
    s = settings(max_rounds=2)
    store = EvidenceStore(HashingEmbedder(), near_duplicate_threshold=0.999)
    source = MixedSource()
    deps = RunDeps(
        settings=s,
        agents=build_llm_agents(s, roles.model()),
        store=store,
        search=SearchAgent([source], store, s.results_per_query),
        source_names=[source.name],
        fallback=build_extractive_agents(s, HashingEmbedder()),
        llm_label="scripted",
        screening=default_calibration() if calibrated else None,
    )
    return IterativeOrchestrator(deps), store


async def run_iterative(roles: RoleScript, **kwargs: Any) -> tuple[list[ResearchEvent], RunResult]:
    orch, _ = iterative(roles, **kwargs)
    events = [e async for e in orch.run(QUESTION)]
    assert events[-1].type == "done", [(e.type, e.message) for e in events[-6:]]
    result = events[-1].result
    assert result is not None
    return events, result


def assert_kept_out(result: RunResult, off_ids: set[str]) -> None:
    """``off_ids`` are in the run's evidence but nowhere in what the report or plan uses."""
    report = result.report
    assert off_ids <= {e.id for e in result.evidence}
    assert not off_ids & {r.evidence_id for r in report.references}
    cited = {i for s in report.findings for i in marker_ids(s.content)}
    cited |= set(marker_ids(report.executive_summary)) | set(marker_ids(report.conclusion))
    assert not off_ids & cited
    for h in report.hypotheses_tested:
        assert not off_ids & {*h.supporting_evidence_ids, *h.contradicting_evidence_ids}
    assert result.plan is not None
    for item in result.plan.checklist:
        assert not off_ids & set(item.evidence_ids)
    assert citation_problems(report, {e.id: e for e in result.evidence}) == []


# --------------------------------------------------------------------------- unit
def test_verbatim_excerpts_keep_only_text_of_the_record() -> None:
    item = asthma_paper(1, "q")
    kept = verbatim_excerpts(
        item,
        [
            "inhaled corticosteroids  reduced\nasthma attacks",  # spacing differs: kept
            "“attacks in children at school.”",  # quoted: kept without quotes and full stop
            "Asthma Inhalers 1",  # case differs: dropped
            "steroids cured asthma",  # paraphrase: dropped
            "",
        ],
    )
    assert kept == [
        "inhaled corticosteroids reduced asthma attacks",
        "attacks in children at school",
    ]


def assert_saved_relevant(records: list[ScreenedRecord], store: EvidenceStore) -> None:
    """Each record was saved relevant for a checklist question, with one excerpt that is
    verbatim text of its item."""
    for record in records:
        assert record.status == Screening.RELEVANT
        assert record.checklist_keys
        assert "saved by the search agent for" in record.reason
        assert len(record.excerpts) == 1
        assert record.excerpts[0] in store.require(record.evidence_id).content


def plan() -> ResearchPlan:
    return ResearchPlan(
        question=QUESTION,
        refined_question=QUESTION,
        checklist=[
            ChecklistItem(key="cancer_incidence", description="Cancer incidence with metformin"),
            ChecklistItem(key="mechanism", description="AMPK and mTOR mechanism"),
        ],
    )


def collector_for(store: EvidenceStore, research: ResearchPlan) -> SourceCollector:
    runs = RunStore.in_memory()
    run_id = runs.create_run(QUESTION, {})
    return SourceCollector(
        runs,
        run_id,
        Syllabus.from_checklist(research.checklist),
        citation_exists=lambda cid: cid in store,
    )


class SilentOnOffTopic(RoleScript):
    """Gives no verdict for the off-topic record (so it was simply not saved)."""

    def _screener(self, prompt: str) -> dict[str, Any]:
        out = super()._screener(prompt)
        out["screened"] = [s for s in out["screened"] if s["status"] != "off_topic"]
        return out


async def test_screener_saves_through_the_tools_and_reads_the_outcome_from_the_collector() -> None:
    store = EvidenceStore(HashingEmbedder(), near_duplicate_threshold=0.999)
    store.add([asthma_paper(1, "q"), *[p for p in await PaperSource().search("q", 2)]])
    research = plan()
    collector = collector_for(store, research)
    roles = SilentOnOffTopic(off_topic_text=OFF_TOPIC_MARK)
    screener = LLMSourceScreener(LLMConfig(roles.model(), retries=1))
    try:
        outcome = await screener.screen(research, store.all(), collector)
        by_id = {r.evidence_id: r for r in outcome.records}
        off, *on = [e.id for e in store.all()]
        assert by_id[off].status == Screening.OFF_TOPIC
        assert by_id[off].reason == f"off-topic: {NOT_SAVED}"
        assert by_id[off].checklist_keys == ()
        # the made-up excerpt was dropped, the verbatim one kept
        assert_saved_relevant([by_id[i] for i in on], store)
        assert roles.tool_calls == [
            "save_source",
            "save_source",
            "get_progress",
            "check_completion",
        ]
        assert sum("excerpt(s) dropped" in a for a in roles.tool_answers) == 2
        assert outcome.next_queries == ["metformin screened follow-up"]
        assert outcome.progress.startswith("NOT READY (50%)")  # 1 of 2 sources per question
        # nothing was written into the items: the run does that
        assert all(not e.screening_reason and not e.checklist_keys for e in store)
    finally:
        collector.runs.close()


class SavesThenExcludes(RoleScript):
    """Saves every record, then calls the first one off-topic in its output."""

    def _screener(self, prompt: str) -> dict[str, Any]:
        out = super()._screener(prompt)
        first = out["screened"][0]
        first.update(status="off_topic", reason="another population")
        return out


async def test_a_record_saved_but_called_off_topic_is_off_topic_and_unassigned() -> None:
    store = EvidenceStore(HashingEmbedder(), near_duplicate_threshold=0.999)
    store.add(await PaperSource().search("q", 2))
    research = plan()
    collector = collector_for(store, research)
    roles = SavesThenExcludes()
    screener = LLMSourceScreener(LLMConfig(roles.model(), retries=1))
    try:
        outcome = await screener.screen(research, store.all(), collector)
        first, second = (e.id for e in store.all())
        by_id = {r.evidence_id: r for r in outcome.records}
        assert roles.tool_calls.count("save_source") == 2  # both were saved first
        assert by_id[first].status == Screening.OFF_TOPIC
        assert by_id[first].reason == "off-topic: another population"
        assert by_id[first].checklist_keys == ()
        assert by_id[second].status == Screening.RELEVANT
        saved = collector.saved_by_citation([first, second])
        assert saved[first].questions == []  # its question links were undone
        assert saved[second].questions
    finally:
        collector.runs.close()


async def test_a_failing_screener_undoes_its_saves() -> None:
    store = EvidenceStore(HashingEmbedder(), near_duplicate_threshold=0.999)
    store.add(await PaperSource().search("q", 2))
    research = plan()
    collector = collector_for(store, research)
    roles = RoleScript(invalid_roles=frozenset({"screener"}))
    screener = LLMSourceScreener(LLMConfig(roles.model(), retries=1))
    try:
        try:
            await screener.screen(research, store.all(), collector)
        except AgentOutputError:
            pass
        else:
            raise AssertionError("the broken output was accepted")
        assert "save_source" in roles.tool_calls
        saved = collector.saved_by_citation([e.id for e in store])
        assert saved  # the sources stay saved, assigned to no question
        assert all(s.questions == [] for s in saved.values())
        assert collector.get_progress().questions[0].count == 0
    finally:
        collector.runs.close()


def test_the_recorder_merges_a_source_the_screener_saved(tmp_path: Path) -> None:
    """One collector for the search agent and the recorder: the same item is one source."""
    runs = RunStore.open_url(f"sqlite:///{tmp_path / 'runs.db'}")
    try:
        run_id = runs.create_run(QUESTION, {})
        item = asthma_paper(7, "q").model_copy(update={"id": "E1"})
        collector = SourceCollector(
            runs,
            run_id,
            Syllabus.from_checklist(plan().checklist),
            citation_exists=lambda cid: cid == "E1",
        )
        c = item.citation
        collector.save_source(c.source, c.id, c.url, c.title, ["mechanism"], ["x"], "E1")
        runs.transact(
            lambda s: collector.save_in(
                s,
                c.source,
                c.id,
                c.url,
                c.title,
                ["mechanism"],
                [item.snippet(300)],
                citation_id="E1",
                evidence=item.model_dump(mode="json"),
                allow_unassigned=True,
            )
        )
        sources = collector.finalize_sources()
        assert list(sources) == ["mechanism"]
        assert [s.citation_id for s in sources["mechanism"]] == ["E1"]
    finally:
        runs.close()


# --------------------------------------------------------------------------- iterative
async def test_iterative_run_screens_with_the_search_agents_tools() -> None:
    roles = RoleScript(off_topic_text=OFF_TOPIC_MARK)
    events, result = await run_iterative(roles)
    assert {"save_source", "get_progress", "check_completion"} <= set(roles.tool_calls)
    assert "warning" not in {e.type for e in events}, [
        e.message for e in events if e.type == "warning"
    ]
    off = {e.id for e in result.evidence if OFF_TOPIC_MARK in e.content}
    assert len(off) == 4  # one per query, two queries per round
    for e in result.evidence:
        if e.id in off:
            assert e.screening == Screening.OFF_TOPIC
            assert e.screening_reason == "off-topic: about another disease"
            assert e.checklist_keys == []
        else:
            assert e.screening == Screening.RELEVANT
            assert "saved by the search agent" in (e.screening_reason or "")
            assert e.checklist_keys
    assert_kept_out(result, off)
    report = result.report
    assert report.references
    assert "search agent's model screened" in report.methodology
    assert "4 off-topic record(s) were kept out" in report.methodology
    # the screener's next queries were offered to the next round's query generator
    assert "metformin screened follow-up" in roles.prompts["query_generator"][1]
    added = [e for e in events if e.type == "evidence_added"]
    assert [e.data_as(EvidenceAddedData).off_topic for e in added] == [2, 2]


async def test_invalid_screener_output_falls_back_to_calibrated_screening() -> None:
    roles = RoleScript(off_topic_text=OFF_TOPIC_MARK, invalid_roles=frozenset({"screener"}))
    events, result = await run_iterative(roles, calibrated=True)
    warnings = [e.message for e in events if e.type == "warning"]
    assert any(
        "search agent's screening failed" in w and "AgentOutputError" in w for w in warnings
    ), warnings
    assert any("search agent's screening failed" in n for n in result.report.metadata.notes)
    # calibrated reasons (similarity), never the model's
    assert all("similarity" in (e.screening_reason or "") for e in result.evidence)
    assert "search agent's model screened" not in result.report.methodology
    assert "calibrated relevance" in result.report.methodology


async def test_a_screener_model_error_falls_back_with_a_warning() -> None:
    roles = RoleScript(fail_roles=frozenset({"screener"}))
    events, result = await run_iterative(roles)
    assert any(
        e.type == "warning" and "search agent's screening failed" in e.message for e in events
    )
    assert "save_source" in roles.tool_calls  # it had started saving
    # no calibration for this embedder: nothing screened out, and the report says so
    assert all(e.screening != Screening.OFF_TOPIC for e in result.evidence)
    assert "not screened for relevance" in result.report.methodology


class AsthmaSource(PaperSource):
    """Only asthma papers: nothing the search agent's model saves for a metformin question."""

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        await super().search(query, limit)
        return [asthma_paper(8000 + 10 * len(self.calls) + i, query) for i in range(limit)]


async def test_model_written_queries_get_one_rephrased_round_when_nothing_is_on_topic() -> None:
    """Issue 13: with a model, a round that found nothing on-topic is followed by one more
    (rephrased) round; a second empty round ends the search with an abstention."""
    s = settings(max_rounds=4)
    store = EvidenceStore(HashingEmbedder(), near_duplicate_threshold=0.999)
    roles = RoleScript(off_topic_text=OFF_TOPIC_MARK)
    deps = RunDeps(
        settings=s,
        agents=build_llm_agents(s, roles.model()),
        store=store,
        search=SearchAgent([AsthmaSource()], store, s.results_per_query),
        source_names=["fake"],
        fallback=build_extractive_agents(s, HashingEmbedder()),
        llm_label="scripted",
    )
    events = [e async for e in IterativeOrchestrator(deps).run(QUESTION)]
    assert events[-1].type == "done", [(e.type, e.message) for e in events[-6:]]
    assert events[-1].result is not None
    report = events[-1].result.report
    assert [e.round for e in events if e.type == "searching"] == [1, 2]
    assert report.metadata.stop_reason == "insufficient_evidence"
    assert report.metadata.checklist_coverage == 0.0
    assert report.references == []
    assert "judge" not in roles.prompts  # nothing on-topic was ever judged


# --------------------------------------------------------------------------- magentic
async def test_magentic_search_agent_screens_out_what_it_does_not_save() -> None:
    roles = RoleScript(off_topic_text=OFF_TOPIC_MARK)
    orch, store, client, _ = make(ManagerScript(), roles, sources=[MixedSource()])
    events = await collect(orch)
    assert events[-1].type == "done", [(e.type, e.message) for e in events[-6:]]
    result = events[-1].result
    assert result is not None
    assert {"save_source", "get_progress", "check_completion"} <= set(roles.tool_calls)
    off = {e.id for e in store if OFF_TOPIC_MARK in e.content}
    assert len(off) == 2  # one per query
    assert all(store.require(i).screening == Screening.OFF_TOPIC for i in off)
    assert_kept_out(result, off)
    answer = next(m.text for m in client.seen if m.author_name == "SearchAgent")
    assert "4 on-topic of 6 in store" in answer
    assert "Collection check:" in answer


async def test_magentic_search_closes_after_two_rounds_with_nothing_on_topic() -> None:
    """The Magentic search agent applies the same empty-round rule: after two rounds that
    found nothing on-topic it refuses to search again and points the manager to the report."""
    roles = RoleScript(off_topic_text=OFF_TOPIC_MARK)
    script = ManagerScript(speakers=("SearchAgent",) * 3 + ("ReportAgent", None))
    orch, _, client, _ = make(script, roles, sources=[AsthmaSource()])
    events = await collect(orch)
    assert events[-1].type == "done", [(e.type, e.message) for e in events[-6:]]
    result = events[-1].result
    assert result is not None
    assert [e.round for e in events if e.type == "searching"] == [1, 2]
    assert result.report.metadata.stop_reason == "insufficient_evidence"
    answers = [m.text for m in client.seen if m.author_name == "SearchAgent"]
    assert "2 search round(s) found nothing on-topic" in answers[-1]
    assert "Search is closed" in answers[-1]
