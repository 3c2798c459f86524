"""The ``magentic`` orchestrator with the REAL agent-framework Magentic classes.

The manager is the standard Magentic manager (our :class:`ResearchManager` subclass) on a
scripted agent-framework chat client that answers its real prompts (facts, plan, JSON
progress ledgers, final answer); the participants' roles are pydantic-ai agents on a scripted
``FunctionModel``. Every case must end in a validated report whose metadata says why.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from agent_framework import Message
from agent_framework.orchestrations import MagenticProgressLedgerItem

from deepcritical.agents.search import SearchAgent
from deepcritical.config import Settings
from deepcritical.events import DoneData, ManagerData, ResearchEvent, WorkflowSummary
from deepcritical.evidence.store import EvidenceStore
from deepcritical.models import Citation, Evidence, ResearchReport, RunResult, SearchFilters
from deepcritical.orchestrators.agent_set import build_extractive_agents, build_llm_agents
from deepcritical.orchestrators.deps import RunDeps
from deepcritical.orchestrators.magentic import (
    MagenticOrchestrator,
    coerce_ledger_bool,
    match_speaker,
    parse_progress_ledger,
)
from deepcritical.orchestrators.magentic_agents import (
    HypothesisParticipant,
    ResearchParticipant,
    build_participants,
)
from deepcritical.orchestrators.run import ResearchRun
from deepcritical.report.validation import citation_problems
from deepcritical.testing.chat import ManagerScript, RoleScript, ScriptedChatClient
from deepcritical.testing.embedders import HashingEmbedder
from deepcritical.testing.failing_sources import HangingSource

NAMES = ["SearchAgent", "HypothesisAgent", "JudgeAgent", "ReportAgent"]
QUESTION = "Does metformin reduce cancer risk in people with diabetes?"


# --------------------------------------------------------------------------- doubles
def paper(pmid: int, query: str) -> Evidence:
    topics = [
        "cancer incidence was lower among diabetic patients taking metformin",
        "metformin activated AMPK and inhibited mTOR signalling in tumour cells",
        "a randomised trial of metformin reported cancer outcomes in diabetes",
    ]
    return Evidence(
        content=f"RESULTS: In study {pmid}, {topics[pmid % 3]} (cohort {pmid * 11}).",
        citation=Citation(source="fake", id=str(pmid), pmid=str(pmid), title=f"Study {pmid}"),
        query=query,
        relevance=0.5,
    )


class PaperSource:
    """Returns ``limit`` fresh papers per call."""

    name = "fake"

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        self.calls.append(query)
        base = 100 * len(self.calls)
        return [paper(base + i, query) for i in range(1, limit + 1)]


class RecordingClient(ScriptedChatClient):
    """Keeps every message the manager was sent (to read the participants' answers)."""

    def __init__(self, script: ManagerScript) -> None:
        super().__init__(script)
        self.seen: list[Message] = []

    def _inner_get_response(self, *, messages: Sequence[Message], **kwargs: Any) -> Any:
        self.seen.extend(messages)
        return super()._inner_get_response(messages=messages, **kwargs)


def settings(**overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "llm": "none",
        "max_rounds": 3,
        "results_per_query": 3,
        "sources": ["local"],
        "llm_retries": 1,
        "time_budget_seconds": 60,
        "grounding": False,  # the hashing test embedder does not measure support
    }
    values.update(overrides)
    return Settings(**values)


def make(
    script: ManagerScript | None = None,
    roles: RoleScript | None = None,
    sources: Sequence[object] | None = None,
    run_settings: Settings | None = None,
    **kwargs: Any,
) -> tuple[MagenticOrchestrator, EvidenceStore, RecordingClient, RoleScript]:
    s = run_settings or settings()
    roles = roles or RoleScript()
    client = RecordingClient(script or ManagerScript())
    store = EvidenceStore(HashingEmbedder(), near_duplicate_threshold=0.999)
    run_sources = list(sources) if sources is not None else [PaperSource()]
    deps = RunDeps(
        settings=s,
        agents=build_llm_agents(s, roles.model()),
        store=store,
        search=SearchAgent(run_sources, store, s.results_per_query),  # type: ignore[arg-type]
        source_names=[src.name for src in run_sources],  # type: ignore[attr-defined]
        fallback=build_extractive_agents(s, HashingEmbedder()),
        llm_label="scripted",
    )
    orch = MagenticOrchestrator(deps, chat_client=client, **kwargs)
    return orch, store, client, roles


async def collect(orch: MagenticOrchestrator) -> list[ResearchEvent]:
    return [e async for e in orch.run(QUESTION)]


def result_of(events: list[ResearchEvent]) -> RunResult:
    assert events[-1].type == "done", [(e.type, e.message) for e in events[-8:]]
    assert events[-1].result is not None
    return events[-1].result


def assert_validated(result: RunResult) -> ResearchReport:
    report = result.report
    by_id = {e.id: e for e in result.evidence}
    assert citation_problems(report, by_id) == []
    for ref in report.references:
        assert ref.evidence_id in by_id
        assert ref.citation == by_id[ref.evidence_id].citation
    assert report.metadata.orchestrator == "magentic"
    assert report.metadata.stop_reason is not None
    return report


def _manager(events: list[ResearchEvent], kind: str) -> list[ManagerData]:
    """The data of the ``manager`` events of ``kind``, in order."""
    return [e.data for e in events if isinstance(e.data, ManagerData) and e.data.kind == kind]


def _workflow(event: ResearchEvent) -> WorkflowSummary:
    """The workflow summary a ``done`` event carries."""
    workflow = event.data_as(DoneData).workflow
    assert workflow is not None
    return workflow


def types(events: list[ResearchEvent]) -> list[str]:
    return [e.type for e in events]


# --------------------------------------------------------------------------- cases
async def test_normal_finish_builds_a_validated_report_from_the_participants() -> None:
    orch, store, client, roles = make()
    events = await collect(orch)
    report = assert_validated(result_of(events))
    meta = report.metadata

    # every participant worked once, in the manager's order, through the shared store
    assert roles.tally.roles() == {
        "planner",
        "query_generator",
        "hypothesis",
        "judge",
        "reflection",
        "writer.outline",
        "writer.section",
        "writer.summary",
        "screener",
    }
    # the search agent screened through its source tools
    assert {"save_source", "get_progress", "check_completion"} <= set(roles.tool_calls)
    assert roles.tally.requests["writer.outline"] == 1  # ReportAgent's draft was used
    assert len(store) == 6
    assert meta.papers_reviewed == 6
    assert meta.iterations == 1
    assert meta.stop_reason == "manager_finished"
    assert report.references
    assert all(r.evidence_id in store for r in report.references)
    assert "Magentic manager" in report.methodology
    # the same events as the iterative orchestrator, plus the manager's decisions
    seen = set(types(events))
    assert {
        "started",
        "planning",
        "searching",
        "evidence_added",
        "hypothesis",
        "judge_assessment",
        "report_section",
        "manager",
        "done",
    } <= seen
    assert "warning" not in seen, [e.message for e in events if e.type == "warning"]
    speakers = [d.next_speaker for d in _manager(events, "progress")]
    assert speakers[:4] == NAMES
    # the manager's instruction is a request, turned into queries by the query generator
    assert (
        "Request from the research manager: Find clinical studies"
        in (roles.prompts["query_generator"][0])
    )
    # participants answered the manager with short summaries
    answers = [m.text for m in client.seen if m.author_name in NAMES]
    assert answers
    assert all(0 < len(a) < 500 for a in answers)
    assert any("new items" in a for a in answers)
    search_answers = [m.text for m in client.seen if m.author_name == "SearchAgent"]
    assert any("Collection check: READY" in a for a in search_answers), search_answers
    assert "search agent's model screened 6 record(s)" in report.methodology
    done = events[-1]
    assert _workflow(done).satisfied is True
    assert done.data_as(DoneData).stop_reason == "manager_finished"


async def test_judge_sufficient_closes_the_search_in_code() -> None:
    script = ManagerScript(
        speakers=["SearchAgent", "JudgeAgent", "SearchAgent", "ReportAgent", None]
    )
    orch, store, client, _ = make(script, RoleScript(sufficient_at_call=1))
    report = assert_validated(result_of(await collect(orch)))
    assert report.metadata.stop_reason == "sufficient"
    assert report.metadata.iterations == 1  # the second search request was refused
    assert len(store) == 6
    assert any(
        m.author_name == "SearchAgent" and m.text.startswith("Search is closed")
        for m in client.seen
    )


async def test_manager_that_never_calls_the_reporter_still_ends_in_a_report() -> None:
    """The manager says "satisfied" while the judge found the evidence insufficient and no
    report is drafted: each time the run overrules it (SearchAgent searches on) until a stop
    rule closes the search (here the round limit); then its "satisfied" ends the workflow
    and the orchestrator writes the report."""
    script = ManagerScript(speakers=["SearchAgent", "HypothesisAgent", "JudgeAgent", None])
    orch, _, _, roles = make(script)
    events = await collect(orch)
    report = assert_validated(result_of(events))
    assert any("never called ReportAgent" in n for n in report.metadata.notes)
    assert roles.tally.requests["writer.outline"] == 1  # written by the orchestrator
    assert report.references
    assert report.metadata.stop_reason == "max_rounds"
    assert report.metadata.iterations == 3
    overruled = [
        e for e in events if e.type == "manager" and e.data_as(ManagerData).kind == "overruled"
    ]
    assert len(overruled) == 2  # after rounds 1 and 2; after round 3 the search was closed
    assert "search is still open (1 of 3 search round(s) used" in overruled[0].message
    assert "2 premature 'request satisfied' overruled" in report.methodology
    assert _workflow(events[-1]).overruled == 2
    assert _workflow(events[-1]).satisfied is True


async def test_a_satisfied_manager_before_any_search_is_sent_to_search() -> None:
    """A small model's first ledger says the request is satisfied: with the search open and
    nothing drafted, the run overrules it and SearchAgent is called, so the run never ends
    with an empty report."""
    script = ManagerScript(speakers=[None, "ReportAgent", None])
    orch, store, client, _ = make(script)
    events = await collect(orch)
    report = assert_validated(result_of(events))
    progress = _manager(events, "progress")
    assert progress[0].satisfied is False  # the overruled ledger
    assert progress[0].next_speaker == "SearchAgent"
    assert (progress[0].instruction or "").startswith("Search for the evidence still missing")
    assert any(m.author_name == "SearchAgent" for m in client.seen)
    assert len(store) > 0
    assert report.references
    assert report.metadata.stop_reason == "manager_finished"  # after ReportAgent's draft


async def test_a_satisfied_manager_after_a_stop_rule_is_not_overruled() -> None:
    script = ManagerScript(speakers=["SearchAgent", "JudgeAgent", None])
    orch, _, _, _ = make(script, RoleScript(sufficient_at_call=1))
    events = await collect(orch)
    report = assert_validated(result_of(events))
    assert report.metadata.stop_reason == "sufficient"
    assert report.metadata.iterations == 1
    assert not _manager(events, "overruled")
    assert "overruled" not in report.methodology


async def test_round_limit_ends_in_a_report_not_canned_text() -> None:
    script = ManagerScript(speakers=["SearchAgent", "JudgeAgent"], cycle=True)
    orch, _, _, _ = make(script, run_settings=settings(max_rounds=10), max_round_count=5)
    events = await collect(orch)
    report = assert_validated(result_of(events))
    assert report.metadata.stop_reason == "manager_round_limit"
    assert report.metadata.iterations == 3  # searches at manager rounds 1, 3 and 5
    assert any("round limit (5 rounds)" in n for n in report.metadata.notes)
    assert any(e.type == "warning" and "round limit" in e.message for e in events)
    assert "Workflow terminated" not in report.to_markdown()
    assert _workflow(events[-1]).final_answer.startswith("Workflow terminated")
    assert script.ledgers == 5


async def test_ledger_booleans_written_as_strings_are_coerced() -> None:
    script = ManagerScript(string_booleans=True)
    orch, _, client, _ = make(script)
    events = await collect(orch)
    report = assert_validated(result_of(events))
    # "false" was read as False: the run went through every participant, without stalls
    assert report.metadata.stop_reason == "manager_finished"
    assert {m.author_name for m in client.seen if m.author_name in NAMES} == set(NAMES)
    assert _workflow(events[-1]).replans == 0
    assert script.kinds.count("ledger") == 5
    # the trap: agent-framework keeps the string, and bool("false") is True
    assert bool(MagenticProgressLedgerItem.from_dict({"answer": "false"}).answer) is True


async def test_a_failing_role_falls_back_to_extractive_with_a_warning() -> None:
    orch, _, _, _ = make(roles=RoleScript(fail_roles=frozenset({"hypothesis"})))
    events = await collect(orch)
    report = assert_validated(result_of(events))
    assert any("hypothesis agent failed" in n for n in report.metadata.notes)
    assert any(e.type == "warning" and "extractive" in e.message for e in events)
    assert report.metadata.stop_reason == "manager_finished"


class ExplodingHypotheses(HypothesisParticipant):
    async def work(self, instruction: str) -> str:
        raise RuntimeError("participant exploded")


def exploding(run: ResearchRun) -> list[ResearchParticipant]:
    return [
        ExplodingHypotheses(run) if p.agent_name == "HypothesisAgent" else p
        for p in build_participants(run)
    ]


async def test_a_participant_that_raises_ends_the_workflow_with_a_report() -> None:
    orch, store, _, _ = make(participants=exploding)
    events = await collect(orch)
    report = assert_validated(result_of(events))
    assert report.metadata.stop_reason == "error"
    assert any("participant exploded" in n for n in report.metadata.notes)
    assert len(store) == 6
    assert report.references
    assert any(e.type == "warning" and "RuntimeError" in e.message for e in events)


async def test_time_budget_stops_the_workflow_and_still_reports() -> None:
    orch, _, _, _ = make(sources=[HangingSource()], run_settings=settings(time_budget_seconds=0.5))
    before = asyncio.all_tasks()
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    events = await collect(orch)
    assert loop.time() - t0 < 10
    report = assert_validated(result_of(events))
    assert report.metadata.stop_reason == "time_budget"
    assert any("time budget" in n for n in report.metadata.notes)
    assert "ran out before any source was searched" in report.executive_summary
    assert report.references == []
    await asyncio.sleep(0)
    assert asyncio.all_tasks() - before == set()


async def _cancel_after(orch: MagenticOrchestrator, event_type: str, kind: str | None) -> None:
    before = asyncio.all_tasks()
    reached = asyncio.Event()

    async def consume() -> None:
        async for event in orch.run(QUESTION):
            data = event.data
            if event.type == event_type and (
                kind is None or (isinstance(data, ManagerData) and data.kind == kind)
            ):
                reached.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(reached.wait(), 10)
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0)
    assert asyncio.all_tasks() - before == set()


async def test_cancelling_the_consumer_while_the_manager_thinks_stops_all_work() -> None:
    script = ManagerScript(hang_at_ledger=2)
    orch, _, _, _ = make(script)
    await _cancel_after(orch, "evidence_added", None)
    assert script.ledgers == 2


async def test_each_run_builds_a_fresh_workflow() -> None:
    orch, _, _, _ = make(ManagerScript(speakers=["SearchAgent", "ReportAgent", None]))
    first = result_of(await collect(orch))
    orch.chat_client = ScriptedChatClient(ManagerScript(speakers=["ReportAgent", None]))
    second = result_of(await collect(orch))
    assert first.report.metadata.stop_reason == "manager_finished"
    assert second.report.metadata.stop_reason == "manager_finished"


def test_round_limit_must_stay_below_the_superstep_limit() -> None:
    s = settings()
    with pytest.raises(ValueError, match="max_round_count"):
        make(run_settings=s, max_round_count=45)
    orch, _, _, _ = make(run_settings=settings(max_rounds=20))
    assert orch.max_round_count == 44


# --------------------------------------------------------------------------- ledger parsing
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, True),
        (False, False),
        ("true", True),
        ("True", True),
        ("false", False),
        ("False", False),
        (" no ", False),
        ("yes", True),
        ("", False),
        ("null", False),
        (None, False),
        (0, False),
        (1, True),
        ("false, the report is missing", False),
        ("true - done", True),
        ("maybe", False),
    ],
)
def test_coerce_ledger_bool(value: object, expected: bool) -> None:
    assert coerce_ledger_bool(value) is expected


def test_parse_progress_ledger_coerces_strings_flat_answers_and_names() -> None:
    text = """Here is the ledger:
```json
{"is_request_satisfied": {"reason": "not yet", "answer": "false"},
 "is_in_loop": "False",
 "is_progress_being_made": {"reason": "yes", "answer": "true"},
 "next_speaker": {"reason": "need data", "answer": "search_agent"},
 "instruction_or_question": {"reason": "", "answer": "Find trials {with braces}"}}
```"""
    ledger = parse_progress_ledger(text, NAMES)
    assert ledger.is_request_satisfied.answer is False
    assert ledger.is_in_loop.answer is False
    assert ledger.is_progress_being_made.answer is True
    assert ledger.next_speaker.answer == "SearchAgent"
    assert ledger.instruction_or_question.answer == "Find trials {with braces}"


def test_parse_progress_ledger_refuses_unknown_speakers_unless_satisfied() -> None:
    ledger = '{"is_request_satisfied": {"answer": %s}, "next_speaker": {"answer": "Bob"}}'
    with pytest.raises(ValueError, match="unknown next speaker"):
        parse_progress_ledger(ledger % '"no"', NAMES)
    assert parse_progress_ledger(ledger % '"yes"', NAMES).is_request_satisfied.answer is True
    with pytest.raises(ValueError, match="no JSON"):
        parse_progress_ledger("I think SearchAgent should go next.", NAMES)
    python_style = (
        "{'is_request_satisfied': {'answer': False}, 'next_speaker': {'answer': 'JudgeAgent'}}"
    )
    with pytest.raises(ValueError, match="no JSON"):
        parse_progress_ledger(python_style, NAMES)  # single quotes are not JSON
    assert (
        parse_progress_ledger(
            '{"is_request_satisfied": {"answer": False}, "next_speaker": {"answer": "Judge"}}',
            NAMES,
        ).next_speaker.answer
        == "JudgeAgent"
    )


def test_match_speaker() -> None:
    assert match_speaker("ReportAgent", NAMES) == "ReportAgent"
    assert match_speaker("report agent", NAMES) == "ReportAgent"
    assert match_speaker("'Hypothesis'", NAMES) == "HypothesisAgent"
    assert match_speaker("Agent", NAMES) is None  # ambiguous
    assert match_speaker("Bob", NAMES) is None
    assert match_speaker(3, NAMES) is None


async def test_a_stalling_manager_replans_then_ends_at_its_reset_limit() -> None:
    script = ManagerScript(speakers=["SearchAgent"], in_loop=True)
    orch, _, _, _ = make(script, max_stall_count=1, max_reset_count=1)
    events = await collect(orch)
    report = assert_validated(result_of(events))
    assert report.metadata.stop_reason == "manager_stalled"
    assert {"facts_update", "plan_update"} <= set(script.kinds)
    assert _manager(events, "replan")
    assert _workflow(events[-1]).replans == 1


class GarbageLedgers(ManagerScript):
    def ledger(self) -> str:
        return "I would ask the SearchAgent, I think."


async def test_unparsable_ledgers_are_retried_then_the_run_still_reports() -> None:
    script = GarbageLedgers()
    orch, _, _, roles = make(script)  # max_reset_count=2: one replanned attempt
    events = await collect(orch)
    report = assert_validated(result_of(events))
    assert report.metadata.stop_reason == "manager_stalled"
    # 2 attempts, reset and replan, 2 attempts, reset, then the reset limit ends it
    assert script.ledgers == 4
    assert script.kinds.count("plan_update") == 2
    assert "query_generator" not in roles.tally.roles()  # no participant was ever called
    assert any("never called ReportAgent" in n for n in report.metadata.notes)


def test_participants_run_is_a_plain_def_returning_a_coroutine_or_a_stream() -> None:
    import inspect

    from agent_framework import AgentResponse, ResponseStream, SupportsAgentRun

    orch, _, _, _ = make()
    run = ResearchRun(orch.deps, QUESTION, orchestrator="magentic")
    for participant in build_participants(run):
        assert isinstance(participant, SupportsAgentRun)
        assert not inspect.iscoroutinefunction(participant.run)
        assert not inspect.isasyncgenfunction(participant.run)
        assert participant.name in NAMES
        assert participant.description
    hypotheses = HypothesisParticipant(run)
    coroutine = hypotheses.run("Form hypotheses")
    assert inspect.iscoroutine(coroutine)
    response = asyncio.run(coroutine)
    assert isinstance(response, AgentResponse)
    assert response.text.startswith("Nothing on-topic in the evidence store")
    stream = hypotheses.run([Message(role="user", contents=["x" * 5000])], stream=True)
    assert isinstance(stream, ResponseStream)
    final = asyncio.run(stream.get_final_response())
    assert 0 < len(final.text) < 500
    assert final.messages[0].author_name == "HypothesisAgent"
    assert hypotheses.calls == 2
