"""The clarify step's model and its offline rules: what a question's type needs and lacks."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from deepcritical.models import (
    Clarification,
    ClarifiedElement,
    ClarifyingQuestion,
    clarified_context,
    clarified_elements,
)
from deepcritical.text.clarify_rules import clarify_by_rules, missing_elements


@pytest.mark.parametrize(
    ("question", "missing"),
    [
        ("Does metformin reduce mortality?", ["population"]),
        ("Does aspirin prevent cardiovascular events?", ["population"]),
        ("Is metformin effective?", ["population", "outcome"]),
        ("Does statin therapy in adults over 75 prevent cardiovascular events?", []),
        ("Does metformin reduce mortality in type 2 diabetes?", []),
        ("Does exercise improve depression?", []),  # the condition implies its patients
        ("Is BNP prognostic in heart failure?", ["time_frame"]),
        ("Does hippocampal atrophy predict cognitive decline?", ["time_frame"]),
        ("Does BNP predict 1-year mortality in heart failure?", []),
        ("Does troponin predict in-hospital mortality after myocardial infarction?", []),
        ("Is troponin accurate?", ["population"]),
        ("Is troponin accurate for myocardial infarction?", []),
        ("Is coffee associated with risk?", ["outcome"]),
        ("Is coffee consumption associated with liver cancer?", []),
        ("How common is vitamin D deficiency?", ["population"]),
        ("How common is vitamin D deficiency among nursing home residents?", []),
        ("What is the evidence that statins reduce dementia incidence?", []),
        ("What is the evidence that statins reduce incidence?", ["population", "outcome"]),
        ("Can metformin be repurposed?", ["outcome"]),
        ("Can metformin be repurposed for Alzheimer's disease?", []),
        ("How does metformin work?", []),  # mechanism: nothing essential missing
        ("Should general practitioners call patients by their first names?", []),  # no cue
    ],
)
def test_missing_elements_follow_the_question_type(question: str, missing: list[str]) -> None:
    assert missing_elements(question) == missing


def test_clarification_by_rules_asks_with_choices() -> None:
    clarification = clarify_by_rules("Is metformin effective?")
    assert clarification is not None
    assert clarification.by == "rules"
    assert [q.element for q in clarification.questions] == ["population", "outcome"]
    population = clarification.questions[0]
    assert "population" in population.prompt.lower()
    assert "Older adults (65 and over)" in population.choices
    assert all(2 <= len(q.choices) <= 4 for q in clarification.questions)


def test_prognosis_asks_for_a_time_frame_and_diagnosis_for_the_spectrum() -> None:
    prognosis = clarify_by_rules("Are serum leptin levels a prognostic factor in lung cancer?")
    assert prognosis is not None
    assert prognosis.questions[0].element == "time_frame"
    assert "5 years or more" in prognosis.questions[0].choices
    diagnosis = clarify_by_rules("Is the international normalised ratio reliable?")
    assert diagnosis is not None
    assert "People without symptoms (screening)" in diagnosis.questions[0].choices


def test_no_clarification_when_nothing_is_missing() -> None:
    assert clarify_by_rules("Does statin therapy in adults over 75 prevent stroke?") is None


def test_clarification_is_bounded_and_validated() -> None:
    q = ClarifyingQuestion(element="population", prompt="Who?", choices=["Adults", "Children"])
    with pytest.raises(ValidationError):
        Clarification(question="q", questions=[q, q])  # two about one element
    with pytest.raises(ValidationError):
        Clarification(question="q", questions=[])
    others = [q.model_copy(update={"element": e}) for e in ("outcome", "time_frame", "comparator")]
    with pytest.raises(ValidationError):
        Clarification(question="q", questions=[q, *others])  # four questions
    with pytest.raises(ValidationError):
        ClarifyingQuestion(element="outcome", prompt="Which?", choices=["Mortality"])
    with pytest.raises(ValidationError):
        ClarifyingQuestion(element="outcome", prompt="Which?", choices=["a", "A"])
    with pytest.raises(ValidationError):
        ClarifyingQuestion(element="outcome", prompt="Which?", choices=["a", "b", "c", "d", "e"])


def test_answers_become_context_and_are_read_back() -> None:
    clarification = clarify_by_rules("Is metformin effective?")
    assert clarification is not None
    answers = clarification.answer(
        {"population": "  adults over\n65 ", "outcome": "", "time_frame": "5 years"}
    )
    # the empty outcome is skipped; time frame was not asked
    assert answers == [ClarifiedElement(element="population", value="adults over 65")]
    context = clarified_context("Focus on trials.", answers)
    assert context == "Focus on trials.\n\nClarified by the user:\n- population: adults over 65"
    assert clarified_elements(context) == answers
    assert answers[0].text() == "population = adults over 65"


def test_skipping_leaves_the_context_unchanged() -> None:
    assert clarified_context("notes", []) == "notes"
    assert clarified_context("  ", []) is None
    assert clarified_elements("notes") == []
    assert clarified_elements(None) == []


def test_context_block_reading_ignores_unknown_labels_and_keeps_the_last_answer() -> None:
    context = (
        "Clarified by the user:\n- population: children\n- colour: blue\n\n"
        "Clarified by the user:\n- population: adolescents\n- time frame: 1 year"
    )
    assert [a.text() for a in clarified_elements(context)] == [
        "population = adolescents",
        "time frame = 1 year",
    ]
    # a line that merely mentions the header is not a block
    assert clarified_elements("We were told: Clarified by the user: - population: x") == []
