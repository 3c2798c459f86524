"""Extractive helpers: sentences and labels, cue words, claims, terms, query filtering,
study designs, prompt templates."""

from __future__ import annotations

from typing import Any

import pytest

from deepcritical.agents.hypothesis import NOT_ADDRESSED
from deepcritical.agents.queries import fresh_queries, query_key
from deepcritical.evidence.design import StudyDesign, classify_design
from deepcritical.evidence.keysentences import (
    SectionKind,
    candidate_sentences,
    has_conclusion_cue,
    rank_sentences,
    relevant_items,
    section_kind,
    sentences_of,
    top_per_item,
)
from deepcritical.llm.templates import PromptTemplateError, load_prompt, render_prompt
from deepcritical.models import Citation, Evidence, Stance
from deepcritical.testing.embedders import HashingEmbedder
from deepcritical.text.question_claim import question_to_claim
from deepcritical.text.terms import slugify

ABSTRACT = (
    "BACKGROUND: Statins have pleiotropic effects. It is unknown whether they help in stroke.\n"
    "OBJECTIVE: To assess whether statin pretreatment improves stroke outcome.\n"
    "METHODS: We studied 1,000 patients (mean age 71 yrs.) in Sweden, i.e. a cohort.\n"
    "RESULTS: Statin users had an odds ratio of 1.41 (95% CI 0.91 to 2.17) for early discharge."
    " Mortality did not differ between groups (p = 0.4).\n"
    "CONCLUSIONS: Statin pretreatment was not associated with better outcome after stroke."
)


def item(content: str = ABSTRACT, eid: str = "E1", **kw: object) -> Evidence:
    return Evidence(
        id=eid, content=content, citation=Citation(source="pubmed", id="1", pmid="1"), **kw
    )


def test_sentences_are_verbatim_with_labels() -> None:
    e = item()
    sentences = sentences_of(e)
    assert all(e.content[s.start : s.start + len(s.text)] == s.text for s in sentences)
    assert [s.label for s in sentences][:2] == ["BACKGROUND", "BACKGROUND"]
    assert any(
        s.text == "We studied 1,000 patients (mean age 71 yrs.) in Sweden, i.e. a cohort."
        for s in sentences
    )
    assert sentences[-1].kind == SectionKind.CONCLUSION
    assert sentences[-1].is_conclusion
    assert not any(s.text.startswith("CONCLUSIONS") for s in sentences)


def test_candidates_skip_setup_sections() -> None:
    kinds = {s.kind for s in candidate_sentences(item())}
    assert kinds == {SectionKind.RESULTS, SectionKind.CONCLUSION}


def test_unlabelled_abstract_candidates_skip_objective_sentences() -> None:
    text = (
        "To determine whether aspirin lowers risk, we followed 500 adults for ten years. "
        "Aspirin users had fewer colorectal adenomas than non-users in this cohort. "
        "These results suggest that aspirin prevents colorectal adenoma."
    )
    candidates = candidate_sentences(item(text))
    assert [c.text[:10] for c in candidates] == ["Aspirin us", "These resu"]
    assert candidates[-1].is_conclusion
    assert not candidates[0].is_conclusion


@pytest.mark.parametrize(
    ("label", "kind"),
    [
        ("CONCLUSIONS", SectionKind.CONCLUSION),
        ("Conclusions and relevance", SectionKind.CONCLUSION),
        ("MEASUREMENTS AND MAIN RESULTS", SectionKind.RESULTS),
        ("MAIN OUTCOME MEASURES", SectionKind.SETUP),
        ("OUTCOMES", SectionKind.RESULTS),
        ("PATIENTS AND METHODS", SectionKind.SETUP),
        (None, SectionKind.OTHER),
    ],
)
def test_section_kinds(label: str | None, kind: SectionKind) -> None:
    assert section_kind(label) == kind


def test_conclusion_cues() -> None:
    assert has_conclusion_cue("These findings suggest that statins help.")
    assert has_conclusion_cue("In conclusion, statins help.")
    assert not has_conclusion_cue("Patients were enrolled in 2001.")


def test_ranking_prefers_conclusions_and_top_per_item_keeps_reading_order() -> None:
    e1 = item(eid="E1")
    e2 = item("RESULTS: Unrelated gardening results about tomatoes were reported here.", eid="E2")
    ranked = rank_sentences([e1, e2], "statin pretreatment stroke outcome", HashingEmbedder())
    assert ranked[0].evidence_id == "E1"
    assert ranked[0].kind == SectionKind.CONCLUSION
    picks = top_per_item(ranked, 2)
    assert list(picks) == ["E1", "E2"]
    assert [s.position for s in picks["E1"]] == sorted(s.position for s in picks["E1"])
    relevant = relevant_items(ranked, min_similarity=0.1, relative_to_best=0.5)
    assert list(relevant) == ["E1"]


@pytest.mark.parametrize(
    ("question", "claim", "subject"),
    [
        (
            "Can metformin be repurposed for Alzheimer's disease?",
            "Metformin can be repurposed for Alzheimer's disease.",
            "metformin",
        ),
        ("Does metformin reduce dementia risk?", "Metformin reduces dementia risk.", "metformin"),
        ("Do statins prevent stroke?", "Statins prevent stroke.", "statins"),
        ("Is obesity associated with asthma?", "Obesity is associated with asthma.", "obesity"),
        (
            "Body dysmorphic disorder: does it have a psychotic subtype?",
            "Affirmative answer to the research question: Body dysmorphic disorder: does it have "
            "a psychotic subtype?",
            "",
        ),
    ],
)
def test_question_to_claim(question: str, claim: str, subject: str) -> None:
    result = question_to_claim(question)
    assert (result.statement, result.subject) == (claim, subject)


def test_fresh_queries_filter_tried_and_repeats() -> None:
    tried = ['metformin "Alzheimer disease"']
    out = fresh_queries(
        ["Metformin  Alzheimer disease", "metformin tau", "METFORMIN TAU", "", "a" * 500], tried, 5
    )
    assert out == ["metformin tau", "a" * 300]
    assert query_key(' A  "b" ') == "a b"
    assert fresh_queries(["x", "y", "z"], [], 2) == ["x", "y"]


@pytest.mark.parametrize(
    ("kwargs", "design"),
    [
        ({"publication_types": ["Meta-Analysis"]}, StudyDesign.SYSTEMATIC),
        ({"publication_types": ["Randomized Controlled Trial"]}, StudyDesign.RCT),
        ({"content": "Patients were randomly assigned to drug or placebo."}, StudyDesign.RCT),
        ({"content": "A retrospective cohort of 2,000 adults."}, StudyDesign.OBSERVATIONAL),
        ({"content": "Knockout mice showed less amyloid."}, StudyDesign.LABORATORY),
        ({"content": "We report a case of a 54-year-old man."}, StudyDesign.CASE),
        ({"content": "The weather was discussed."}, StudyDesign.OTHER),
    ],
)
def test_study_designs(kwargs: dict[str, Any], design: StudyDesign) -> None:
    content = str(kwargs.pop("content", "Text."))
    assert classify_design(item(content, **kwargs)) == design


def test_templates_load_and_refuse_missing_values() -> None:
    for name in (
        "planner",
        "clarifier",
        "queries",
        "hypothesis",
        "judge",
        "reflection",
        "writer_outline",
        "writer_section",
        "writer_summary",
    ):
        assert load_prompt(name).strip()
    rendered = render_prompt("judge", untrusted="NOTE $x {y}")
    assert rendered.endswith("NOTE $x {y}")
    with pytest.raises(PromptTemplateError, match="today"):
        render_prompt("planner", untrusted="")
    with pytest.raises(PromptTemplateError, match="not in the package"):
        load_prompt("nope")


def test_slugify() -> None:
    assert slugify("Clinical Efficacy (RCTs)") == "clinical_efficacy_rcts"
    assert slugify("!!!") == "item"


def test_matched_terms_uses_stems_and_whole_multiword_terms() -> None:
    from deepcritical.text.terms import matched_terms, required_term_count

    text = "Hippocampal atrophy on magnetic resonance imaging and decline in cognitive function"
    assert matched_terms(text, ["hippocampal atrophy", "MRI", "cognitive decline"]) == [
        "hippocampal atrophy",
        "cognitive decline",
    ]
    assert matched_terms("Diabetic patients", ["diabetes"]) == ["diabetes"]  # same stem
    assert matched_terms("Insulin in obesity", ["diabetes"]) == []
    assert matched_terms("cancers in diabetes", ["cancer", "diabetes"]) == ["cancer", "diabetes"]
    assert [required_term_count(n) for n in (1, 2, 3, 4, 6)] == [1, 2, 3, 3, 5]


async def test_extractive_hypothesis_ignores_items_off_the_question(hashing_embedder) -> None:  # type: ignore[no-untyped-def]
    """An abstract on metformin and diabetes says nothing about metformin and cancer."""
    from deepcritical.agents.hypothesis import ExtractiveHypothesisGenerator
    from deepcritical.models import ChecklistItem, Citation, Evidence, ResearchPlan

    def item(i: int, text: str) -> Evidence:
        return Evidence(id=f"E{i}", content=text, citation=Citation(source="local", id=str(i)))

    evidence = [
        item(
            1,
            "CONCLUSIONS: Metformin use was associated with a lower risk of cancer in "
            "patients with type 2 diabetes.",
        ),
        item(2, "CONCLUSIONS: Metformin improved glycaemic control in patients with diabetes."),
        item(
            3, "CONCLUSIONS: Metformin did not reduce cancer incidence among people with diabetes."
        ),
    ]
    plan = ResearchPlan(
        question="Does metformin reduce the risk of cancer in patients with diabetes?",
        refined_question="Does metformin reduce the risk of cancer in patients with diabetes?",
        checklist=[ChecklistItem(key="a", description="metformin cancer")],
        key_terms=["metformin", "cancer", "diabetes"],
    )
    gen = ExtractiveHypothesisGenerator(hashing_embedder, relevance_threshold=0.0)
    [hypothesis] = await gen.hypothesize(plan, evidence, [])
    assert hypothesis.supporting_evidence_ids == ["E1"]
    assert hypothesis.contradicting_evidence_ids == ["E3"]
    # each item's stance is recorded on it; the off-question one is neutral, with the reason
    assert [e.stance for e in evidence] == [
        Stance.SUPPORTS,
        Stance.NEUTRAL,
        Stance.CONTRADICTS,
    ]
    assert evidence[1].stance_reason == NOT_ADDRESSED
    assert '"did not"' in evidence[2].stance_reason


async def test_extractive_hypothesis_follows_stance_and_polarity(hashing_embedder) -> None:  # type: ignore[no-untyped-def]
    """Neutral (hedged) sources are in neither list; a negated question reverses stances."""
    from deepcritical.agents.hypothesis import ExtractiveHypothesisGenerator
    from deepcritical.models import ChecklistItem, Citation, Evidence, ResearchPlan

    def item(i: int, text: str) -> Evidence:
        return Evidence(id=f"E{i}", content=text, citation=Citation(source="local", id=str(i)))

    def evidence() -> list[Evidence]:
        return [
            item(1, "CONCLUSIONS: Metformin significantly reduced cancer risk in diabetes."),
            item(2, "CONCLUSIONS: Whether metformin lowers cancer risk in diabetes is unclear."),
            item(3, "CONCLUSIONS: Metformin did not reduce cancer risk in diabetes."),
        ]

    def plan(question: str) -> ResearchPlan:
        return ResearchPlan(
            question=question,
            refined_question=question,
            checklist=[ChecklistItem(key="a", description="metformin cancer")],
            key_terms=["metformin", "cancer", "diabetes"],
        )

    gen = ExtractiveHypothesisGenerator(hashing_embedder, relevance_threshold=0.0)
    plain = evidence()
    [h] = await gen.hypothesize(plan("Does metformin reduce cancer risk in diabetes?"), plain, [])
    assert (h.supporting_evidence_ids, h.contradicting_evidence_ids) == (["E1"], ["E3"])
    assert plain[1].stance is Stance.NEUTRAL
    assert plain[1].stance_reason.startswith("hedged conclusion")
    negated = evidence()
    question = "Does metformin not reduce cancer risk in diabetes?"
    [h] = await gen.hypothesize(plan(question), negated, [])
    assert (h.supporting_evidence_ids, h.contradicting_evidence_ids) == (["E3"], ["E1"])
    assert [e.stance for e in negated] == [Stance.CONTRADICTS, Stance.NEUTRAL, Stance.SUPPORTS]
    assert "negated" in negated[2].stance_reason


def test_gap_limitations_say_why_a_partial_item_is_partial() -> None:
    from deepcritical.models import ChecklistItem, ChecklistStatus, ResearchPlan
    from deepcritical.report.drafts import gap_limitations

    def plan_with(n_ids: int, minimum: int) -> ResearchPlan:
        checklist = [
            ChecklistItem(
                key="efficacy",
                description="Efficacy",
                min_evidence=minimum,
                status=ChecklistStatus.PARTIAL,
                evidence_ids=[f"E{i}" for i in range(n_ids)],
            )
        ]
        return ResearchPlan(question="Q?", refined_question="Q?", checklist=checklist)

    thin = gap_limitations(plan_with(1, 3), [])
    assert "Evidence is thin for the checklist item (1 of 3 sources needed): Efficacy." in thin
    judged = gap_limitations(plan_with(5, 1), [])
    assert not any("sources needed" in line for line in judged)
    assert any(
        "The 5 sources found for the checklist item address it only in part" in line
        for line in judged
    )


async def test_extractive_hypothesis_reads_every_item_screened_relevant(hashing_embedder) -> None:  # type: ignore[no-untyped-def]
    """Screening's calibrated judgement lets an item in that the key-term rule would miss."""
    from deepcritical.agents.hypothesis import ExtractiveHypothesisGenerator
    from deepcritical.models import ChecklistItem, Citation, Evidence, ResearchPlan, Screening

    text = "CONCLUSIONS: Biguanide use significantly reduced cancer incidence in diabetes."
    question = "Does metformin reduce the risk of cancer in patients with diabetes?"
    plan = ResearchPlan(
        question=question,
        refined_question=question,
        checklist=[ChecklistItem(key="a", description="metformin cancer")],
        key_terms=["metformin", "cancer", "diabetes"],
    )
    gen = ExtractiveHypothesisGenerator(hashing_embedder, relevance_threshold=0.0)
    unscreened = Evidence(id="E1", content=text, citation=Citation(source="local", id="1"))
    assert await gen.hypothesize(plan, [unscreened], []) == []
    assert unscreened.stance_reason == NOT_ADDRESSED
    relevant = unscreened.model_copy(update={"screening": Screening.RELEVANT})
    [h] = await gen.hypothesize(plan, [relevant], [])
    assert h.supporting_evidence_ids == ["E1"]
    assert relevant.stance is Stance.SUPPORTS
    partial = unscreened.model_copy(update={"screening": Screening.PARTIAL})
    assert await gen.hypothesize(plan, [partial], []) == []
