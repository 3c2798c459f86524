"""The researcher's review decisions as data: what an edited plan changed
(:func:`~deepcritical.models.plan_changes`), the checks an edited plan passes
(:func:`~deepcritical.state.reviews.check_plan`), a decision on a record
(:class:`~deepcritical.models.EvidenceDecision`), and how decisions reach the store and the
flow of records (:func:`~deepcritical.orchestrators.review_step.apply_decisions`)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import ValidationError

from deepcritical.evidence.store import EvidenceStore
from deepcritical.models import (
    ChecklistItem,
    ChecklistStatus,
    Citation,
    Evidence,
    EvidenceDecision,
    ResearchPlan,
    ResearchReport,
    RunReview,
    Screening,
    flow_lines,
    on_topic_items,
    plan_changes,
)
from deepcritical.orchestrators.flow import FlowLog
from deepcritical.orchestrators.review_step import apply_decisions, screened_table
from deepcritical.state.errors import InvalidPlanError
from deepcritical.state.reviews import check_plan
from deepcritical.testing.embedders import HashingEmbedder

SOURCES = ["pubmed", "europepmc"]


def plan(**change: Any) -> ResearchPlan:
    base = ResearchPlan(
        question="Does aspirin prevent stroke?",
        refined_question="Does aspirin prevent stroke in adults?",
        checklist=[
            ChecklistItem(key="effect", description="Effect of aspirin on stroke"),
            ChecklistItem(key="harms", description="Bleeding with aspirin", min_evidence=1),
        ],
        queries=["aspirin stroke prevention"],
    )
    return base.model_copy(update=change)


def test_plan_changes_name_every_edit_in_the_plans_order() -> None:
    before = plan()
    after = plan(
        refined_question="Does low-dose aspirin prevent stroke?",
        checklist=[
            ChecklistItem(key="effect", description="Effect of low-dose aspirin on stroke"),
            ChecklistItem(key="dose", description="Dose-response"),
        ],
        queries=["aspirin stroke prevention", "low dose aspirin ischaemic stroke"],
        sources=["pubmed"],
    )
    assert plan_changes(before, after, SOURCES) == [
        "refined question changed to 'Does low-dose aspirin prevent stroke?'",
        "removed checklist item 'harms'",
        "changed checklist item 'effect': Effect of low-dose aspirin on stroke",
        "added checklist item 'dose': Dose-response",
        "added query 'low dose aspirin ischaemic stroke'",
        "sources: PubMed",
    ]
    assert plan_changes(before, before.model_copy(deep=True), SOURCES) == []
    # any other field is listed whole (search filters, per-source queries, key terms...)
    assert plan_changes(before, plan(key_terms=["aspirin", "stroke"]), SOURCES) == [
        'changed key terms: ["aspirin", "stroke"]'
    ]
    # every source kept is no change
    assert plan_changes(before, plan(sources=list(SOURCES)), SOURCES) == []


def test_check_plan_cleans_an_edit_and_keeps_the_question() -> None:
    proposed = plan()
    edit = plan(question="another question", sources=["europepmc", "pubmed"]).model_dump(
        mode="json"
    )
    edit["checklist"][0]["status"] = "satisfied"
    edit["checklist"][0]["evidence_ids"] = ["E1"]
    edit["queries"] = ["  aspirin   stroke "]
    checked = check_plan(edit, proposed, SOURCES)
    assert checked.question == proposed.question
    assert checked.queries == ["aspirin stroke"]
    assert checked.sources == []  # every source of the run: stored as "all"
    assert checked.checklist[0].status == ChecklistStatus.UNSATISFIED
    assert checked.checklist[0].evidence_ids == []
    assert check_plan(plan(sources=["pubmed"]), proposed, SOURCES).sources == ["pubmed"]
    # an edit of some fields keeps the others as proposed (the YAML shown holds only some)
    keyed = plan(key_terms=["aspirin", "stroke"])
    partial = check_plan({"queries": ["aspirin ischaemic stroke"]}, keyed, SOURCES)
    assert partial.key_terms == ["aspirin", "stroke"]
    assert [c.key for c in partial.checklist] == ["effect", "harms"]
    assert partial.queries == ["aspirin ischaemic stroke"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"checklist": []}, "at least one checklist item"),
        ({"sources": ["scopus"]}, "unknown source(s) scopus; the run searches pubmed, europepmc"),
        ({"refined_question": "   "}, "refined question is empty"),
        ({"queries": ["ok", ""]}, "query 2 is empty"),
        ({"queries": ["x" * 301]}, "query 1 is empty or longer than 300"),
        ({"checklist": [{"key": "a", "description": "A"}, {"key": "a", "description": "B"}]},
         "checklist key 'a' is used twice"),
        ({"checklist": [{"key": " ", "description": "A"}]}, "checklist item 1 needs a key"),
        ({"checklist": [{"key": "a", "description": "A", "min_evidence": 0}]},
         "checklist.0.min_evidence"),
        ({"queries": "not a list"}, "invalid plan: queries"),
    ],
)  # fmt: skip
def test_a_bad_edit_is_refused_with_a_clear_error(change: dict[str, Any], message: str) -> None:
    edit = plan().model_dump(mode="json") | change
    with pytest.raises(InvalidPlanError) as raised:
        check_plan(edit, plan(), SOURCES)
    assert message in str(raised.value)


def test_an_exclusion_needs_a_reason_and_reasons_are_one_line() -> None:
    with pytest.raises(ValidationError, match="excluding E3 needs a reason"):
        EvidenceDecision(evidence_id="E3", action="exclude", reason="   ")
    decision = EvidenceDecision(evidence_id="E3", action="exclude", reason="wrong\n population")
    assert decision.screening_reason() == "excluded by the reviewer: wrong population"
    assert EvidenceDecision(evidence_id="E7", action="include").screening_reason() == (
        "included by the reviewer"
    )
    with pytest.raises(ValidationError):
        EvidenceDecision(evidence_id="E3", action="drop", reason="x")


def _store() -> EvidenceStore:
    store = EvidenceStore(HashingEmbedder())
    items = [
        Evidence(
            content=f"Aspirin and stroke study {n} in adults.",
            citation=Citation(source="pubmed", id=str(1000 + n), title=f"Study {n}", year=2020),
            screening=Screening.RELEVANT if n < 3 else Screening.OFF_TOPIC,
            screening_reason="relevant" if n < 3 else "off-topic: similarity 0.10",
        )
        for n in range(4)
    ]
    store.add(items)
    return store


def test_decisions_move_records_and_the_flow_counts_them_apart() -> None:
    store = _store()
    ids = [e.id for e in store.all()]
    table = screened_table(store.all())
    assert [r.included for r in table] == [True, True, True, False]
    review = RunReview(
        number=1,
        stage="evidence",
        status="approved",
        decisions=[
            EvidenceDecision(evidence_id=ids[0], action="exclude", reason="animal study"),
            EvidenceDecision(evidence_id=ids[3], action="include"),
        ],
    )
    run = SimpleNamespace(store=store)
    apply_decisions(run, review)
    on_topic = {e.id for e in on_topic_items(store.all())}
    assert on_topic == {ids[1], ids[2], ids[3]}
    flow = FlowLog(identified_per_source={"pubmed": 4}).flow(
        store.all(), ResearchReport(title="t", research_question="q")
    )
    assert flow.excluded == 1
    assert flow.excluded_by_reviewer == 1
    assert flow.included_by_reviewer == 1
    assert flow.exclusion_reasons == {"excluded by the reviewer": 1}
    assert not flow.problems()
    lines = flow_lines(flow)
    assert "- Excluded by the reviewer: 1" in lines
    assert "- Included by the reviewer: 1" in lines


def test_a_decision_finds_its_paper_by_identifier_when_the_ids_moved() -> None:
    store = _store()
    first, second = store.all()[:2]
    moved = EvidenceDecision(
        evidence_id=first.id, action="exclude", reason="wrong paper", keys=["pmid:1001"]
    )  # the review showed PMID 1001 as first.id; the replay numbered it second.id
    gone = EvidenceDecision(evidence_id="E9", action="exclude", reason="x", keys=["pmid:999"])
    review = RunReview(number=1, stage="evidence", status="approved", decisions=[moved, gone])
    missing = apply_decisions(SimpleNamespace(store=store), review)
    assert missing == ["E9"]
    assert first.screening == Screening.RELEVANT
    assert second.citation.id == "1001"
    assert second.screening == Screening.OFF_TOPIC
    table = screened_table(store.all())
    assert table[1].keys == ["pmid:1001"]


def test_the_methodology_sentence_says_what_the_reviewer_did() -> None:
    edited = RunReview(number=1, stage="plan", status="approved", changes=["added query 'x'"])
    assert edited.methodology_line() == (
        "The plan was reviewed and edited by the user before the search: added query 'x'."
    )
    same = RunReview(number=1, stage="plan", status="approved")
    assert "approved unchanged" in same.methodology_line()
    timed = RunReview(number=2, stage="evidence", status="timed_out")
    assert "timed out" in timed.methodology_line()
    more = RunReview(number=2, stage="evidence", status="approved", more_search=True)
    assert more.methodology_line().endswith("One more search round was asked for.")
