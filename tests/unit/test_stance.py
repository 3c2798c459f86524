"""Per-source stance (deepcritical.evidence.stance) and question polarity
(deepcritical.text.polarity): cue rules on small realistic abstracts, and the reversal of
stances for a negated question."""

from __future__ import annotations

import pytest

from deepcritical.evidence.stance import (
    Finding,
    conclusion_sentences,
    finding_of,
    p_value_counts,
    read_stance,
    results_disagree,
    sentence_cues,
    stance_of_sentences,
)
from deepcritical.models import Citation, Evidence, Stance
from deepcritical.text.polarity import is_negated_question

QUESTION = "Does exercise during pregnancy prevent postnatal depression?"
NEGATED = "Does exercise during pregnancy not prevent postnatal depression?"

POSITIVE_ABSTRACT = (
    "OBJECTIVE: To assess whether exercise during pregnancy prevents postnatal depression.\n"
    "RESULTS: Women randomised to exercise had fewer high depression scores (8% vs 15%).\n"
    "CONCLUSIONS: Regular exercise during pregnancy significantly reduced the prevalence of "
    "postnatal depression. Further studies are needed in other populations."
)
NULL_ABSTRACT = (
    "OBJECTIVE: To assess whether exercise during pregnancy prevents postnatal depression.\n"
    "RESULTS: High depression scores were as common with exercise as without (12% vs 13%).\n"
    "CONCLUSIONS: We did not find a lower prevalence of high depression scores among women "
    "randomised to regular exercise during pregnancy."
)
HEDGED_ABSTRACT = (
    "OBJECTIVE: To assess whether exercise during pregnancy prevents postnatal depression.\n"
    "RESULTS: Depression scores were reported by 80 women.\n"
    "CONCLUSIONS: Whether exercise prevents postnatal depression remains unclear; the "
    "question remains to be answered by a larger trial."
)


def item(content: str, eid: str = "E1") -> Evidence:
    return Evidence(id=eid, content=content, citation=Citation(source="pubmed", id=eid))


# --- question polarity --------------------------------------------------------------------


@pytest.mark.parametrize(
    "question",
    [
        "Does metformin not affect cancer risk?",
        "Is obesity not associated with asthma?",
        "Isn't early extubation safe after cardiac surgery?",
        "Is there no difference between the two stents?",
        "Does vitamin D have no effect on fracture risk?",
        "Is aspirin without benefit in primary prevention?",
        "Statins in the elderly: are they never indicated?",
    ],
)
def test_negated_questions_are_recognised(question: str) -> None:
    assert is_negated_question(question)


@pytest.mark.parametrize(
    "question",
    [
        "Does metformin affect cancer risk?",
        "Is non-small cell lung cancer more common in smokers?",
        "Is nonadherence associated with readmission?",
        "Is the drug no longer effective after five years?",
        "Does the test detect not only adenomas but also carcinomas?",
        "Should all patients be screened, or not?",
        "Patients not on statins: does exercise lower cholesterol?",
        "Does surgery help patients who did not respond to radiotherapy?",
        "Are patients aware of when they do not understand?",
        "Can ureteroscopy be performed without dilatation of the meatus?",
        "Cannot-be-missed diagnoses: is ultrasound enough?",
        "Can predilatation in transcatheter aortic valve implantation be safely omitted?",
    ],
)
def test_plain_questions_are_not_negated(question: str) -> None:
    assert not is_negated_question(question)


def test_stance_reverses_for_a_negated_question() -> None:
    null = read_stance(item(NULL_ABSTRACT), NEGATED)
    assert null.stance is Stance.SUPPORTS  # "no effect found" answers "does it not?" with yes
    assert null.finding is Finding.NULL
    assert "negated" in null.reason
    positive = read_stance(item(POSITIVE_ABSTRACT), NEGATED)
    assert positive.stance is Stance.CONTRADICTS
    assert read_stance(item(HEDGED_ABSTRACT), NEGATED).stance is Stance.NEUTRAL


def test_stance_reversal_can_be_forced() -> None:
    sentences = ["Exercise significantly reduced postnatal depression."]
    assert stance_of_sentences(sentences, QUESTION).stance is Stance.SUPPORTS
    assert stance_of_sentences(sentences, QUESTION, negated=True).stance is Stance.CONTRADICTS
    assert Stance.NEUTRAL.reversed() is Stance.NEUTRAL
    assert Stance.SUPPORTS.reversed().reversed() is Stance.SUPPORTS


# --- cue rules ----------------------------------------------------------------------------


def test_positive_conclusion_supports() -> None:
    reading = read_stance(item(POSITIVE_ABSTRACT), QUESTION)
    assert reading.stance is Stance.SUPPORTS
    assert reading.finding is Finding.POSITIVE
    assert '"significantly"' in reading.reason
    assert reading.sentence.startswith("Regular exercise during pregnancy")
    # a trailing "further studies are needed" sentence does not undo the main conclusion


def test_null_conclusion_contradicts() -> None:
    reading = read_stance(item(NULL_ABSTRACT), QUESTION)
    assert reading.stance is Stance.CONTRADICTS
    assert '"did not"' in reading.reason


def test_hedged_conclusion_is_neutral() -> None:
    reading = read_stance(item(HEDGED_ABSTRACT), QUESTION)
    assert reading.stance is Stance.NEUTRAL
    assert reading.reason.startswith("hedged conclusion")


def test_positive_cue_in_the_scope_of_a_negation_is_not_positive() -> None:
    cues = sentence_cues("Elderly patients did not benefit from surgery in addition to RT.")
    assert cues.null == ("did not",)
    assert cues.positive == ()
    cues = sentence_cues("There is little evidence that the campaigns were effective.")
    assert cues.positive == ()


def test_mixed_conclusion_is_neutral() -> None:
    finding, reason, _ = finding_of(
        ["Surgery improved gait, but it did not change survival; quality of life was better."]
    )
    assert finding is Finding.UNDECIDED
    assert reason.startswith("mixed findings")


def test_negation_describing_a_subgroup_is_not_a_null_finding() -> None:
    cues = sentence_cues("Patients had worse outcomes than those who had not received it.")
    assert cues.null == ()


def test_sameness_supports_only_a_sameness_question() -> None:
    sentences = ["Ultrasound has comparable sensitivity to X-ray for limb fractures."]
    same = stance_of_sentences(sentences, "Is ultrasound equal to X-ray for fractures?")
    assert same.stance is Stance.SUPPORTS
    other = stance_of_sentences(sentences, "Does ultrasound change fracture management?")
    assert other.stance is Stance.NEUTRAL


def test_positive_finding_does_not_settle_a_skeptical_question() -> None:
    sentences = ["Routine dissection significantly improved staging accuracy."]
    assert stance_of_sentences(sentences, "Is routine dissection useful?").stance is (
        Stance.SUPPORTS
    )
    skeptical = stance_of_sentences(sentences, "Is routine dissection really necessary?")
    assert skeptical.stance is Stance.NEUTRAL
    assert '"really"' in skeptical.reason
    null = stance_of_sentences(["Routine dissection is unnecessary."], "Is it really needed?")
    assert null.stance is Stance.CONTRADICTS


def test_null_finding_after_a_context_sentence_decides_but_a_positive_one_does_not() -> None:
    context_first = ["COPD is underdiagnosed in the United States."]
    question = "Do respiratory symptoms predict COPD?"
    null = stance_of_sentences([*context_first, "Symptoms did not predict COPD."], question)
    assert null.stance is Stance.CONTRADICTS
    assert null.sentence == "Symptoms did not predict COPD."
    positive = stance_of_sentences([*context_first, "Symptoms predicted COPD."], question)
    assert positive.stance is Stance.NEUTRAL
    assert positive.reason == "its main conclusion states no finding"


def test_a_conclusion_about_something_else_does_not_settle_the_question() -> None:
    # PubMedQA-like: the question asks about cocaine; the conclusion's finding is about
    # cigarettes and violence, so its "associated with" answers nothing about cocaine
    sentences = ["Smoking and violence in childhood are associated with delinquency."]
    question = "Are there effects of intrauterine cocaine exposure on teenage conduct?"
    reading = stance_of_sentences(sentences, question)
    assert reading.stance is Stance.NEUTRAL
    assert reading.finding is Finding.UNDECIDED
    assert reading.reason.endswith("its conclusion names none of the question's terms")
    on_topic = ["Prenatal cocaine exposure is associated with delinquency."]
    assert stance_of_sentences(on_topic, question).stance is Stance.SUPPORTS


@pytest.mark.parametrize(
    ("sentence", "cue"),
    [
        ("Fixation alone does not prevent a second hip fracture.", "alone"),
        ("Fixation for hip fracture should not rest on bone density solely.", "solely"),
        ("Fixation is not necessarily useful in hip fracture.", "not necessarily"),
        ("Fixation modestly reduced hip fracture.", "modestly"),
        ("Fixation reduced hip fracture only in women over 80.", "only"),
    ],
)
def test_a_conclusion_restricted_in_scope_is_not_decisive(sentence: str, cue: str) -> None:
    reading = stance_of_sentences([sentence], "Does prophylactic fixation prevent hip fracture?")
    assert reading.stance is Stance.NEUTRAL
    assert reading.reason.endswith(f'its conclusion is restricted in scope ("{cue}")')


def test_not_only_is_not_a_restriction() -> None:
    sentences = ["Fixation not only reduced hip fracture but also improved mobility."]
    reading = stance_of_sentences(sentences, "Does prophylactic fixation prevent hip fracture?")
    assert reading.stance is Stance.SUPPORTS


def test_unlabelled_abstract_uses_conclusion_like_sentences() -> None:
    text = (
        "We studied 120 women who exercised during pregnancy and 118 who did not. "
        "Depression scores were recorded at six weeks after delivery. "
        "These results suggest that exercise during pregnancy reduces postnatal depression."
    )
    sentences = conclusion_sentences(item(text))
    assert [s.text for s in sentences] == [
        "These results suggest that exercise during pregnancy reduces postnatal depression."
    ]
    assert read_stance(item(text), QUESTION).stance is Stance.SUPPORTS


def test_item_without_sentences_is_neutral() -> None:
    reading = read_stance(item("n/a"), QUESTION)
    assert reading.stance is Stance.NEUTRAL
    assert reading.reason == "no conclusion to read"
    with pytest.raises(ValueError, match="at least one sentence"):
        finding_of([])


def test_evidence_stance_defaults_load_old_records() -> None:
    old = {"id": "E1", "content": "x", "citation": {"source": "pubmed", "id": "1"}}
    loaded = Evidence.model_validate(old)
    assert loaded.stance is None
    assert loaded.stance_reason == ""
    dumped = loaded.model_copy(update={"stance": Stance.SUPPORTS}).model_dump(mode="json")
    assert dumped["stance"] == "supports"


def test_contrast_and_consensus_cues() -> None:
    mixed = ["Sports participation is associated with social capital, but not with parks."]
    assert stance_of_sentences(mixed, "Are social capital and parks related to sport?").stance is (
        Stance.NEUTRAL
    )
    no_consensus = ["There is no consensus on the surgical treatment of these fractures."]
    reading = stance_of_sentences(no_consensus, "Should these fractures be treated surgically?")
    assert reading.stance is Stance.NEUTRAL
    assert reading.reason.startswith("hedged conclusion")
    adjective = ["Selected imaging should be used to avoid unnecessary appendectomies."]
    assert sentence_cues(adjective[0]).null == ()
    assert sentence_cues("Intensive observation is probably unnecessary.").null == (
        "is probably unnecessary",
    )


def test_p_values_are_read_from_results() -> None:
    texts = ["Pain fell (p < 0.001) and function rose (P = .03).", "Sleep: p = 0.41; mood p>0.05."]
    assert p_value_counts(texts) == (2, 2)
    assert p_value_counts(["p < 0.10 and p > 0.01 say neither; p=0.05 is not significant"]) == (
        0,
        1,
    )


def test_results_that_disagree_with_the_conclusion_make_it_neutral() -> None:
    abstract = (
        "RESULTS: Depression scores did not differ (p = 0.41), nor did anxiety (p = 0.62).\n"
        "CONCLUSIONS: Regular exercise during pregnancy significantly reduced postnatal "
        "depression."
    )
    assert results_disagree(Finding.POSITIVE, item(abstract)).startswith(
        "its conclusion reads positive, but its results report 2 non-significant"
    )
    reading = read_stance(item(abstract), QUESTION)
    assert reading.stance is Stance.NEUTRAL
    assert reading.finding is Finding.UNDECIDED
    null_abstract = (
        "RESULTS: Scores fell (p < 0.001), anxiety fell (p = 0.002), sleep rose (p = 0.01).\n"
        "CONCLUSIONS: Exercise did not prevent postnatal depression."
    )
    assert read_stance(item(null_abstract), QUESTION).stance is Stance.NEUTRAL
    # agreeing p-values leave the reading alone
    assert results_disagree(Finding.NULL, item(NULL_ABSTRACT)) == ""
    assert read_stance(item(POSITIVE_ABSTRACT), QUESTION).stance is Stance.SUPPORTS


@pytest.mark.parametrize(
    ("sentence", "question", "stance"),
    [
        # comparisons: "no better than" is a null finding, not a positive "better"
        ("X was no better than placebo in reducing pain.", "Does X reduce pain?", "contradicts"),
        # sameness answers a superiority question with no
        (
            "X was as effective as Y in reducing pain.",
            "Is X more effective than Y in reducing pain?",
            "contradicts",
        ),
        # and a sameness question with yes
        (
            "X was as effective as Y in reducing pain.",
            "Is X as effective as Y in reducing pain?",
            "supports",
        ),
        # negation scope: the clause on the question's terms decides, not the other one
        ("X did not reduce pain but improved sleep.", "Does X reduce pain?", "contradicts"),
        ("X improved sleep but did not reduce pain.", "Does X improve sleep?", "supports"),
        # both parts of the question, one found and one not: no decisive finding
        (
            "Participation is associated with social capital, but not with sports facilities.",
            "Are social capital and sports facilities related to participation?",
            "neutral",
        ),
        # the question's polarity: a positive finding answers "does not" with no
        ("X reduced pain.", "Does X not reduce pain?", "contradicts"),
        # modal negation and "not all" are null findings
        ("X will not reduce pain in most patients.", "Does X reduce pain?", "contradicts"),
        (
            "Not all patients need the same haemoglobin target.",
            "Should all patients have the same haemoglobin target?",
            "contradicts",
        ),
        # a hedge: "may or may not"
        ("X may or may not reduce pain, depending on dose.", "Does X reduce pain?", "neutral"),
        # an opening condition is not a finding; the main clause decides
        (
            "Unless improvements are made, the register will not identify cases of cerebral palsy.",
            "Does the register identify cases of cerebral palsy?",
            "contradicts",
        ),
        # an opening concession is not read: here the main clause states no finding
        (
            "Although CRP cannot establish appendicitis in the elderly, normal values exclude it.",
            "Is there a role for CRP in the diagnosis of appendicitis in the elderly?",
            "neutral",
        ),
    ],
)
def test_comparisons_negation_scope_and_polarity(sentence: str, question: str, stance: str) -> None:
    assert stance_of_sentences([sentence], question).stance.value == stance


def test_a_conclusion_naming_one_term_of_the_question_is_not_decisive() -> None:
    """Issue 28: a decisive conclusion names at least two of the question's content words
    (on the tuning half, those naming one were right 86% of the time, two or more 96%)."""
    question = "Does prophylactic fixation prevent hip fracture?"
    one = stance_of_sentences(["Fixation was effective."], question)
    assert one.stance is Stance.NEUTRAL
    assert one.reason.endswith("its conclusion names only 1 of the question's terms")
    two = stance_of_sentences(["Fixation was effective against hip fracture."], question)
    assert two.stance is Stance.SUPPORTS
