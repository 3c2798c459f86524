"""Question types and PICO elements by rules, the checklist of each type, and the rule that
only on-topic evidence counts for a checklist item."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from deepcritical.agents.checklist import assign_to_checklist, refresh_statuses
from deepcritical.agents.planner import (
    EXTRACTIVE_KEYS,
    MAX_CHECKLIST,
    MIN_CHECKLIST,
    ExtractivePlanner,
    extractive_checklist,
)
from deepcritical.agents.reflection import ItemReflection, Reflection, apply_reflection
from deepcritical.evidence.store import EvidenceStore
from deepcritical.models import (
    PICO,
    ChecklistItem,
    ChecklistStatus,
    Citation,
    Evidence,
    QuestionType,
    ResearchPlan,
    Screening,
)
from deepcritical.testing.embedders import HashingEmbedder
from deepcritical.text.question_type import classify_question, extract_pico, frame_question
from deepcritical.text.terms import extract_key_terms

T = QuestionType

# question, type, PICO, checklist keys, (key, words its description must contain)
CASES = [
    (
        "Does dapagliflozin reduce hospitalisation for heart failure in patients with type 2 "
        "diabetes compared with placebo?",
        T.INTERVENTION,
        PICO(
            population="patients with type 2 diabetes",
            intervention="dapagliflozin",
            comparator="placebo",
            outcome="hospitalisation for heart failure",
        ),
        ["effect", "harms", "effect_size", "mechanism"],
        ("effect", ["dapagliflozin", "hospitalisation for heart failure", "placebo", "trials"]),
    ),
    (
        "How accurate is high-sensitivity troponin for the diagnosis of myocardial infarction "
        "in the emergency department?",
        T.DIAGNOSIS_PROGNOSIS,
        PICO(
            population="emergency department",
            intervention="high-sensitivity troponin",
            outcome="myocardial infarction",
        ),
        ["accuracy", "prognostic_value", "comparison", "clinical_utility"],
        ("accuracy", ["high-sensitivity troponin", "myocardial infarction", "sensitivity"]),
    ),
    (
        "Is smoking associated with an increased risk of rheumatoid arthritis in women?",
        T.AETIOLOGY_RISK,
        PICO(
            population="women",
            intervention="smoking",
            outcome="increased risk of rheumatoid arthritis",
        ),
        ["association", "dose_response", "plausibility", "null_findings"],
        ("association", ["smoking", "rheumatoid arthritis", "women", "case-control"]),
    ),
    (
        "What is the mechanism by which metformin activates AMPK in hepatocytes?",
        T.MECHANISM,
        PICO(population="hepatocytes", intervention="metformin", outcome="AMPK"),
        ["pathway", "experimental", "human_evidence"],
        ("experimental", ["metformin", "AMPK", "animal"]),
    ),
    (
        "What is the prevalence of atrial fibrillation among adults over 65 years?",
        T.PREVALENCE,
        PICO(population="adults over 65 years", outcome="atrial fibrillation"),
        ["frequency", "subgroups", "trends"],
        ("frequency", ["Prevalence", "atrial fibrillation", "adults over 65 years"]),
    ),
    (
        "Can metformin be repurposed for Alzheimer's disease?",
        T.REPURPOSING,
        PICO(intervention="metformin", outcome="Alzheimer's disease"),
        ["rationale", "preclinical", "clinical", "safety"],
        ("preclinical", ["metformin", "Alzheimer's disease", "animal models"]),
    ),
]


@pytest.mark.parametrize(("question", "kind", "pico", "keys", "named"), CASES)
def test_each_question_type_gets_its_pico_and_its_own_checklist(
    question: str,
    kind: QuestionType,
    pico: PICO,
    keys: list[str],
    named: tuple[str, list[str]],
) -> None:
    frame = frame_question(question)
    assert frame.question_type == kind
    assert frame.cues  # the type came from a cue, not the default
    assert frame.pico == pico
    checklist = extractive_checklist(question, extract_key_terms(question), frame)
    assert [c.key for c in checklist] == keys
    assert MIN_CHECKLIST <= len(checklist) <= MAX_CHECKLIST
    assert set(keys) <= set(EXTRACTIVE_KEYS)
    key, words = named
    description = next(c.description for c in checklist if c.key == key)
    for word in words:
        assert word in description
    # every item names the question's own intervention / exposure / test / condition
    entity = pico.intervention or pico.outcome
    assert all(entity in c.description for c in checklist)


def test_checklists_differ_by_type() -> None:
    key_sets = {frozenset(case[3]) for case in CASES}
    assert len(key_sets) == len(CASES)
    # the same entities under two types give two different checklists
    pico = PICO(intervention="statins", outcome="dementia")
    intervention = extractive_checklist("q", [], frame_question("Do statins prevent dementia?"))
    aetiology = extractive_checklist(
        "q", [], frame_question("Is statin use associated with dementia?")
    )
    assert {c.description for c in intervention}.isdisjoint(c.description for c in aetiology)
    assert pico.intervention in intervention[0].description


@pytest.mark.parametrize(
    ("question", "intervention", "comparator"),
    [
        ("Aspirin vs clopidogrel for secondary prevention of stroke?", "Aspirin", "clopidogrel"),
        (
            "Is apixaban versus warfarin safer in elderly patients with atrial fibrillation?",
            "apixaban",
            "warfarin",
        ),
        (
            "Is laparoscopic surgery superior to open surgery for rectal cancer?",
            "laparoscopic surgery",
            "open surgery",
        ),
        (
            "Cold knife conization vs. LEEP. Are they the same procedure?",
            "Cold knife conization",
            "LEEP",
        ),
    ],
)
def test_comparator_is_read_from_versus_vs_and_superior_to(
    question: str, intervention: str, comparator: str
) -> None:
    pico = extract_pico(question)
    assert (pico.intervention, pico.comparator) == (intervention, comparator)
    effect = extractive_checklist(question, extract_key_terms(question))[0]
    assert f"comparisons with {comparator}" in effect.description


def test_a_question_with_no_cue_falls_back_to_intervention_and_its_key_terms() -> None:
    question = "Quantum chromodynamics of gluon spin?"
    kind, cues = classify_question(question)
    assert (kind, cues) == (T.INTERVENTION, ())
    checklist = extractive_checklist(question, extract_key_terms(question))
    assert [c.key for c in checklist] == ["effect", "harms", "effect_size", "mechanism"]
    assert all("quantum chromodynamics" in c.description for c in checklist)
    # nothing at all to read: the question itself is the subject
    bare = extractive_checklist("Why?", [], frame_question("Why?"))
    assert len(bare) >= MIN_CHECKLIST
    assert all(c.description for c in bare)


def test_a_pronoun_subject_takes_the_title_part() -> None:
    pico = extract_pico("Inhibin: a new circulating marker of hydatidiform mole?")
    assert (pico.intervention, pico.outcome) == ("Inhibin", "hydatidiform mole")
    pico = extract_pico("CYP2D6*4 allele and breast cancer risk: is there any association?")
    assert (pico.intervention, pico.outcome) == ("CYP2D6*4 allele", "breast cancer risk")
    assert classify_question("Inhibin: a new circulating marker of hydatidiform mole?")[0] == (
        T.DIAGNOSIS_PROGNOSIS
    )


async def test_the_extractive_plan_records_type_and_pico_and_old_plans_still_load() -> None:
    plan = await ExtractivePlanner().plan(CASES[2][0])
    assert plan.question_type == T.AETIOLOGY_RISK
    assert plan.pico == CASES[2][2]
    again = ResearchPlan.model_validate_json(plan.model_dump_json())
    assert again.question_type == T.AETIOLOGY_RISK
    old = ResearchPlan.model_validate(
        {"question": "q", "refined_question": "q", "checklist": [{"key": "k", "description": "d"}]}
    )
    assert old.question_type is None
    assert old.pico.is_empty()


def test_every_pubmedqa_dev_question_is_framed(pubmedqa_dir: Path) -> None:
    path = pubmedqa_dir / "dev_questions.jsonl"
    if not path.exists():
        pytest.skip("dev_questions.jsonl is absent")
    lines = path.read_text(encoding="utf-8").splitlines()
    questions = [json.loads(line)["question"] for line in lines if line.strip()]
    frames = [frame_question(q) for q in questions]
    counts = Counter(f.question_type for f in frames)
    # PubMedQA asks mostly about interventions, then tests and risks; every type it has
    # (no drug repurposing) is found
    assert counts.most_common(1)[0][0] == T.INTERVENTION
    assert {T.DIAGNOSIS_PROGNOSIS, T.AETIOLOGY_RISK, T.MECHANISM, T.PREVALENCE} <= set(counts)
    assert sum(not f.pico.is_empty() for f in frames) == len(frames)
    for q, f in zip(questions, frames, strict=True):
        checklist = extractive_checklist(q, extract_key_terms(q), f)
        assert MIN_CHECKLIST <= len(checklist) <= MAX_CHECKLIST


# --------------------------------------------------------------------------- off-topic guard
def _store() -> tuple[EvidenceStore, str, str]:
    store = EvidenceStore(HashingEmbedder(), near_duplicate_threshold=0.999)
    on, off = store.add(
        [
            Evidence(
                content="Statins reduced stroke recurrence in a randomised trial.",
                citation=Citation(source="local", id="1"),
            ),
            Evidence(
                content="Statins reduced stroke recurrence in a trial of vaccine storage.",
                citation=Citation(source="local", id="2"),
                screening=Screening.OFF_TOPIC,
            ),
        ]
    ).added
    return store, on.id, off.id


def _plan(min_evidence: int = 1) -> ResearchPlan:
    return ResearchPlan(
        question="Do statins reduce stroke recurrence?",
        refined_question="Do statins reduce stroke recurrence?",
        checklist=[
            ChecklistItem(
                key="effect",
                description="statins reduced stroke recurrence trial",
                min_evidence=min_evidence,
            )
        ],
    )


def test_off_topic_evidence_is_never_assigned_nor_counted() -> None:
    store, on, off = _store()
    plan = _plan(min_evidence=2)
    assign_to_checklist(plan, store, [on, off], threshold=-1.0, question_threshold=-1.0)
    [item] = plan.checklist
    assert item.evidence_ids == [on]
    assert item.status == ChecklistStatus.PARTIAL  # one on-topic item of the two needed
    assert "effect" not in store.require(off).checklist_keys
    # an off-topic id already held by the item is taken out and does not count
    item.evidence_ids.append(off)
    refresh_statuses(plan, store)
    assert item.evidence_ids == [on]
    assert item.status == ChecklistStatus.PARTIAL


def test_reflection_cannot_satisfy_an_item_with_only_off_topic_evidence() -> None:
    _, _, off = _store()
    plan = _plan()
    plan.checklist[0].evidence_ids = [off]
    said = Reflection(items=[ItemReflection(key="effect", status=ChecklistStatus.SATISFIED)])
    applied = apply_reflection(plan, said, off_topic={off})
    assert applied.items[0].status == ChecklistStatus.UNSATISFIED
    assert plan.checklist[0].status == ChecklistStatus.UNSATISFIED
