"""The search agent's screening without tools (issue 21): under a grammar-constrained
strategy (``json_schema``, ``json_object``) or ``prompted``, the model answers one
:class:`ScreeningDecisions` whose schema bounds this round's choices (its evidence ids as the
keys, the status and checklist keys as enums); the screener saves what it kept through the
run's collector, so the outcome reads as with the tools. A whole iterative run on a
grammar strategy uses no tool call and no fallback, and its sections come in the grammar's
cited-sentence form.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from deepcritical.agents.screener import NOT_SAVED, LLMSourceScreener
from deepcritical.agents.search import SearchAgent
from deepcritical.evidence.store import EvidenceStore
from deepcritical.llm.agent_config import LLMConfig
from deepcritical.llm.llm_errors import AgentOutputError
from deepcritical.llm.structured import OutputStrategy
from deepcritical.models import ResearchPlan, Screening, marker_ids
from deepcritical.orchestrators.agent_set import build_extractive_agents, build_llm_agents
from deepcritical.orchestrators.deps import RunDeps
from deepcritical.orchestrators.iterative import IterativeOrchestrator
from deepcritical.state.sources import SourceCollector
from deepcritical.testing.chat import RoleScript
from deepcritical.testing.embedders import HashingEmbedder
from tests.unit.test_llm_screening import (
    OFF_TOPIC_MARK,
    MixedSource,
    assert_kept_out,
    assert_saved_relevant,
    asthma_paper,
    collector_for,
    plan,
)
from tests.unit.test_magentic_orchestrator import QUESTION, PaperSource, settings


@dataclass(frozen=True)
class Round:
    """A round to screen: an asthma record and two metformin papers, the plan, a collector."""

    store: EvidenceStore
    research: ResearchPlan
    collector: SourceCollector


@pytest.fixture
async def round_() -> AsyncIterator[Round]:
    store = EvidenceStore(HashingEmbedder(), near_duplicate_threshold=0.999)
    store.add([asthma_paper(1, "q"), *await PaperSource().search("q", 2)])
    research = plan()
    collector = collector_for(store, research)
    try:
        yield Round(store, research, collector)
    finally:
        collector.runs.close()


@pytest.mark.parametrize("strategy", ["json_object", "json_schema", "prompted"])
async def test_screening_by_one_bounded_answer_saves_what_was_kept(
    strategy: OutputStrategy, round_: Round
) -> None:
    store, research, collector = round_.store, round_.research, round_.collector
    roles = RoleScript(off_topic_text=OFF_TOPIC_MARK)
    schemas: list[dict[str, Any]] = []

    def recording(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        output_object = info.model_request_parameters.output_object
        assert output_object is not None
        schemas.append(output_object.json_schema)
        return roles.respond(messages, info)

    screener = LLMSourceScreener(LLMConfig(FunctionModel(recording), retries=1, output=strategy))
    assert not screener.uses_tools
    outcome = await screener.screen(research, store.all(), collector)
    off, *on = [e.id for e in store.all()]
    # the schema of this call: exactly the round's ids, each required; keys as an enum
    decisions = schemas[0]["properties"]["decisions"]
    assert decisions["required"] == [off, *on]
    assert decisions["additionalProperties"] is False
    one = decisions["properties"][off]["properties"]
    assert one["status"]["enum"] == ["relevant", "partial", "off_topic"]
    assert one["checklist_keys"]["items"]["enum"] == ["cancer_incidence", "mechanism"]
    assert roles.tool_calls == []  # no tools were offered
    by_id = {r.evidence_id: r for r in outcome.records}
    assert by_id[off].status == Screening.OFF_TOPIC
    assert by_id[off].reason == "off-topic: about another disease"
    assert by_id[off].checklist_keys == ()
    assert_saved_relevant([by_id[i] for i in on], store)
    saved = collector.saved_by_citation([off, *on])
    assert off not in saved  # an off-topic record is never saved
    assert all(saved[i].questions for i in on)
    assert outcome.next_queries == ["metformin screened follow-up"]
    assert outcome.progress.startswith("NOT READY")


async def test_a_missing_decision_or_a_kept_record_without_key_goes_back_to_the_model(
    round_: Round,
) -> None:
    store, research, collector = round_.store, round_.research, round_.collector
    first, second, third = (e.id for e in store.all())
    retries: list[str] = []

    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        retries[:] = [  # the validation errors fed back so far (text output: user parts)
            str(p.content)
            for m in messages[1:]
            for p in m.parts
            if isinstance(p, RetryPromptPart | UserPromptPart)
        ]
        decisions: dict[str, Any] = {
            first: {"status": "off_topic", "checklist_keys": ["mechanism"], "reason": "asthma"},
            second: {"status": "relevant", "checklist_keys": ["made_up"], "excerpt": ""},
        }
        if retries:  # the second answer: complete, with a real key
            decisions[second]["checklist_keys"] = ["mechanism"]
            decisions[third] = {"status": "partial", "checklist_keys": ["cancer_incidence"]}
        return ModelResponse(parts=[TextPart(json.dumps({"decisions": decisions}))])

    screener = LLMSourceScreener(LLMConfig(FunctionModel(fn), retries=2, output="json_object"))
    outcome = await screener.screen(research, store.all(), collector)
    assert len(retries) == 1
    assert f"missing: {third}" in retries[0]
    assert f"{second} is kept but names no checklist key" in retries[0]
    by_id = {r.evidence_id: r for r in outcome.records}
    assert by_id[first].status == Screening.OFF_TOPIC
    assert by_id[second].status == Screening.RELEVANT
    assert by_id[second].checklist_keys == ("mechanism",)
    assert by_id[third].status == Screening.PARTIAL
    assert by_id[third].checklist_keys == ("cancer_incidence",)


async def test_a_screener_that_never_answers_validly_saves_nothing(round_: Round) -> None:
    store, research, collector = round_.store, round_.research, round_.collector

    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart('{"decisions": {}}')])

    screener = LLMSourceScreener(LLMConfig(FunctionModel(fn), retries=1, output="json_object"))
    with pytest.raises(AgentOutputError):
        await screener.screen(research, store.all(), collector)
    assert collector.saved_by_citation([e.id for e in store]) == {}


async def test_an_unsaved_kept_record_is_off_topic_with_the_not_saved_reason(round_: Round) -> None:
    """What the collector holds decides, as with the tools: a record saved for no key (its
    only key dropped as unknown is sent back, so this is the off-topic word) is off-topic."""
    store, research, collector = round_.store, round_.research, round_.collector
    ids = [e.id for e in store.all()]

    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        decisions = {i: {"status": "off_topic", "checklist_keys": ["mechanism"]} for i in ids}
        return ModelResponse(parts=[TextPart(json.dumps({"decisions": decisions}))])

    screener = LLMSourceScreener(LLMConfig(FunctionModel(fn), retries=1, output="json_schema"))
    outcome = await screener.screen(research, store.all(), collector)
    assert {r.status for r in outcome.records} == {Screening.OFF_TOPIC}
    assert {r.reason for r in outcome.records} == {f"off-topic: {NOT_SAVED}"}


async def test_an_iterative_run_on_a_grammar_strategy_needs_no_tool_and_no_fallback() -> None:
    s = settings(max_rounds=2, structured_output="json_object")
    store = EvidenceStore(HashingEmbedder(), near_duplicate_threshold=0.999)
    source = MixedSource()
    roles = RoleScript(off_topic_text=OFF_TOPIC_MARK)
    deps = RunDeps(
        settings=s,
        agents=build_llm_agents(s, roles.model()),
        store=store,
        search=SearchAgent([source], store, s.results_per_query),
        source_names=[source.name],
        fallback=build_extractive_agents(s, HashingEmbedder()),
        llm_label="scripted",
    )
    events = [e async for e in IterativeOrchestrator(deps).run(QUESTION)]
    assert events[-1].type == "done", [(e.type, e.message) for e in events[-6:]]
    result = events[-1].result
    assert result is not None
    warnings = [e.message for e in events if e.type == "warning"]
    assert warnings == []
    assert not [n for n in result.report.metadata.notes if "extractive implementation" in n]
    assert roles.tool_calls == []
    off = {e.id for e in result.evidence if OFF_TOPIC_MARK in e.content}
    assert off
    assert all(
        e.screening == Screening.OFF_TOPIC if e.id in off else e.checklist_keys
        for e in result.evidence
    )
    assert_kept_out(result, off)
    report = result.report
    assert "in one structured answer per round" in report.methodology
    # sections were written as cited sentences, every sentence with its marker
    assert report.findings
    for section in report.findings:
        if section.heading == "Study characteristics":
            continue
        assert marker_ids(section.content)
    assert report.references
