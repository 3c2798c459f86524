"""Evidence grading: study designs from publication types, MeSH, preprint flag and keywords,
on real PubMedQA abstracts and real ClinicalTrials.gov / Europe PMC responses; their use by
the judges and the extractive writer."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from deepcritical.agents.judge import ExtractiveJudge, LLMJudge
from deepcritical.evidence.design import DesignGroup, classify_design, design_group, is_clinical
from deepcritical.evidence.grading import (
    DESIGN_ORDER,
    EVIDENCE_LEVEL,
    assess_design,
    clinical_weight,
    evidence_level,
    grade_evidence,
    rank_by_level,
)
from deepcritical.llm.agent_config import LLMConfig
from deepcritical.llm.usage import UsageTracker
from deepcritical.models import (
    ChecklistItem,
    ChecklistStatus,
    Citation,
    Evidence,
    ResearchPlan,
    StudyDesign,
)
from deepcritical.sources.clinicaltrials import study_to_evidence
from deepcritical.sources.europepmc import parse_search
from deepcritical.testing.embedders import HashingEmbedder
from deepcritical.writing.extractive import ExtractiveReportWriter

D = StudyDesign


def abstract(pubmedqa_dir: Path, pmid: str) -> Evidence:
    """A PubMedQA record as the local corpus gives it (labelled paragraphs, MeSH terms)."""
    with (pubmedqa_dir / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row["pmid"] == pmid:
                content = "\n".join(
                    f"{s['label']}: {s['text']}" if s.get("label") else s["text"]
                    for s in row["abstract_sections"]
                )
                return Evidence(
                    content=content,
                    citation=Citation(source="local", id=pmid, pmid=pmid),
                    mesh_terms=row["mesh_terms"],
                )
    raise LookupError(pmid)


def item(content: str = "Text.", **kwargs: Any) -> Evidence:
    citation = kwargs.pop("citation", Citation(source="pubmed", id="1", pmid="1"))
    return Evidence(content=content, citation=citation, **kwargs)


# --------------------------------------------------------------------------- real abstracts
@pytest.mark.parametrize(
    ("pmid", "design", "basis"),
    [
        # MeSH "Randomized Controlled Trials as Topic" is about trials, not a trial: these are
        # a meta-analysis of two RCTs, a meta-analysis of phase 3 RCTs, a systematic review
        (
            "15489384",
            D.META_ANALYSIS,
            "text 'meta-analytic'",
        ),
        ("18041059", D.META_ANALYSIS, "text 'meta-analysis'"),
        ("23412195", D.SYSTEMATIC_REVIEW, "systematically searched"),
        ("26175531", D.SYSTEMATIC_REVIEW, "databases were searched"),
        # randomised trials read from the methods
        ("11035130", D.RCT, "randomized, double-blind, placebo-controlled study"),
        ("11567820", D.RCT, "were randomized"),
        ("12442934", D.RCT, "MeSH 'Double-Blind Method'"),
        # "a prospective, randomized trial is indicated" (conclusion): not this study's design
        ("9107172", D.OBSERVATIONAL, "prospectively"),
        # MeSH study-design headings
        ("8375607", D.COHORT, "MeSH 'Cohort Studies'"),
        ("11340218", D.CASE_CONTROL, "MeSH 'Case-Control Studies'"),
        ("8017535", D.CROSS_SECTIONAL, "MeSH 'Cross-Sectional Studies'"),
        # two headings (Cohort Studies, Cross-Sectional Studies): the one the text names
        ("10173769", D.CROSS_SECTIONAL, "MeSH 'Cross-Sectional Studies'"),
        # preclinical: Animals without Humans (even when randomised), cultured cells
        ("7547656", D.ANIMAL, "MeSH 'Animals' without 'Humans'"),
        ("10577397", D.ANIMAL, "MeSH 'Animals' without 'Humans'"),
        ("15223779", D.IN_VITRO, "MeSH 'Tumor Cells, Cultured'"),
        ("12765819", D.CASE_REPORT, "52-year-old woman"),
        ("1571683", D.CROSS_SECTIONAL, "Questionnaire"),
    ],
)
def test_real_pubmedqa_abstracts(pubmedqa_dir: Path, pmid: str, design: D, basis: str) -> None:
    grade = assess_design(abstract(pubmedqa_dir, pmid))
    assert grade.design == design, grade
    assert basis in grade.basis
    assert grade.level == EVIDENCE_LEVEL[design]


def test_rct_as_topic_mesh_alone_is_never_a_trial(pubmedqa_dir: Path) -> None:
    e = abstract(pubmedqa_dir, "22519710")  # a simulation of trial power
    assert "Randomized Controlled Trials as Topic" in e.mesh_terms
    assert grade_evidence(e) == D.OTHER


# --------------------------------------------------------------------------- levels
def test_evidence_levels_order_designs() -> None:
    level = EVIDENCE_LEVEL
    chain = [
        D.META_ANALYSIS,
        D.SYSTEMATIC_REVIEW,
        D.RCT,
        D.CLINICAL_TRIAL,
        D.COHORT,
        D.CASE_CONTROL,
        D.CROSS_SECTIONAL,
        D.CASE_REPORT,
        D.REVIEW,
        D.ANIMAL,
    ]
    assert all(level[a] > level[b] for a, b in itertools.pairwise(chain))
    assert level[D.IN_VITRO] == level[D.ANIMAL] > level[D.OTHER] == level[D.PREPRINT] == 0
    assert DESIGN_ORDER[0] == D.META_ANALYSIS
    assert set(DESIGN_ORDER[-2:]) == {D.PREPRINT, D.OTHER}
    assert set(EVIDENCE_LEVEL) == set(D)


def test_rank_by_level_puts_the_strongest_design_first() -> None:
    mice = item("Knockout mice showed less amyloid.")
    rct = item("Text.", publication_types=["Randomized Controlled Trial"])
    cohort = item("A retrospective cohort of 2,000 adults.")
    assert rank_by_level([mice, cohort, rct]) == [rct, cohort, mice]
    assert [evidence_level(e) for e in (rct, cohort, mice)] == [8, 6, 1]


# --------------------------------------------------------------------------- publication types
@pytest.mark.parametrize(
    ("kwargs", "design"),
    [
        ({"publication_types": ["Journal Article", "Meta-Analysis", "Review"]}, D.META_ANALYSIS),
        ({"publication_types": ["Systematic Review"]}, D.SYSTEMATIC_REVIEW),
        (
            {
                "publication_types": ["Systematic Review"],
                "content": "RESULTS: A meta-analysis of 12 trials gave a pooled risk ratio of 0.8.",
            },
            D.META_ANALYSIS,
        ),
        ({"publication_types": ["Randomized Controlled Trial"]}, D.RCT),
        ({"publication_types": ["Randomized Controlled Trial, Veterinary"]}, D.ANIMAL),
        ({"publication_types": ["Clinical Trial, Phase II"]}, D.CLINICAL_TRIAL),
        (
            {
                "publication_types": ["Clinical Trial"],
                "content": "METHODS: Patients were randomly assigned to drug or placebo.",
            },
            D.RCT,
        ),
        (
            {
                "publication_types": ["Observational Study"],
                "mesh_terms": ["Cohort Studies", "Humans"],
            },
            D.COHORT,
        ),
        ({"publication_types": ["Observational Study"]}, D.OBSERVATIONAL),
        ({"publication_types": ["Case Reports"]}, D.CASE_REPORT),
        ({"publication_types": ["Review"]}, D.REVIEW),
        (
            {
                "publication_types": ["Review"],
                "content": "METHODS: MEDLINE and EMBASE were searched up to 2020.",
            },
            D.SYSTEMATIC_REVIEW,
        ),
        # a letter about a meta-analysis is not a meta-analysis
        ({"publication_types": ["Letter"], "content": "This meta-analysis is flawed."}, D.OTHER),
    ],
)
def test_publication_types(kwargs: dict[str, Any], design: D) -> None:
    content = str(kwargs.pop("content", "Text."))
    assert grade_evidence(item(content, **kwargs)) == design


@pytest.mark.parametrize(
    ("content", "design"),
    [
        ("BACKGROUND: Randomized trials showed benefit.\nMETHODS: We reviewed 80 charts.", None),
        ("CONCLUSIONS: Further randomized controlled trials are needed.", None),
        ("METHODS: 40 patients were randomised to A or B.", D.RCT),
        ("We performed a nested case-control study within a cohort of nurses.", D.CASE_CONTROL),
        ("A cross-sectional analysis of the Framingham cohort.", D.CROSS_SECTIONAL),
        ("We conducted a phase II trial of drug X in 30 patients.", D.CLINICAL_TRIAL),
        ("A Mendelian randomization study of 300,000 adults.", None),
        ("Rats were given drug X; cell lines were exposed to it in vitro.", D.ANIMAL),
        ("HeLa cell lines were exposed to drug X in vitro.", D.IN_VITRO),
        ("We report a case of a 54-year-old man with gout.", D.CASE_REPORT),
    ],
)
def test_text_cues_read_only_the_items_own_design(content: str, design: D | None) -> None:
    grade = grade_evidence(item(content))
    if design is None:
        assert grade not in (D.RCT, D.META_ANALYSIS), content
    else:
        assert grade == design, content


def test_explicit_design_wins_and_preprints() -> None:
    explicit = item("Patients were randomly assigned.", study_design=D.COHORT)
    assert assess_design(explicit).basis == "set on the evidence item"
    assert grade_evidence(explicit) == D.COHORT
    bare = item("A new idea about tau.", is_preprint=True)
    assert grade_evidence(bare) == D.PREPRINT
    # a preprint keeps the design it reports, but a high-level design weighs less
    rct = item("Patients were randomly assigned to A or B.", is_preprint=True)
    peer = item("Patients were randomly assigned to A or B.")
    assert grade_evidence(rct) == grade_evidence(peer) == D.RCT
    assert (clinical_weight(rct), clinical_weight(peer)) == (1, 2)


def test_clinical_weights() -> None:
    assert clinical_weight(item(publication_types=["Meta-Analysis"])) == 2
    assert clinical_weight(item("A retrospective cohort of 2,000 adults.")) == 1
    assert clinical_weight(item("We report a case of a 54-year-old man.")) == 1
    assert clinical_weight(item("Knockout mice showed less amyloid.")) == 0
    assert clinical_weight(item(publication_types=["Review"])) == 0
    assert clinical_weight(item("Thirty patients had their blood drawn.")) == 1
    assert clinical_weight(item("The weather was discussed.")) == 0


# --------------------------------------------------------------------------- real API shapes
def _trials(api_fixtures: Path) -> dict[str, Evidence]:
    out: dict[str, Evidence] = {}
    for path in sorted((api_fixtures / "clinicaltrials_v2").glob("*.json")):
        payload = json.loads(path.read_text(encoding="utf-8"))
        for study in payload.get("studies") or [payload]:
            e = study_to_evidence(study)
            if e is not None and e.citation.nct_id:
                out[e.citation.nct_id] = e
    return out


def test_clinicaltrials_records(api_fixtures: Path) -> None:
    trials = _trials(api_fixtures)
    # interventional + "Phase 3, randomized, double-blind ..." in the (future-tense) summary
    assert grade_evidence(trials["NCT07281079"]) == D.RCT
    assert grade_evidence(trials["NCT02710084"]) == D.RCT  # "randomized, placebo-controlled"
    # open-label phase 1, and a placebo-controlled crossover that never says randomised
    assert grade_evidence(trials["NCT07014020"]) == D.CLINICAL_TRIAL
    assert grade_evidence(trials["NCT05187377"]) == D.CLINICAL_TRIAL
    assert grade_evidence(trials["NCT03475563"]) == D.OBSERVATIONAL  # a stent registry
    # The registry says allocation RANDOMIZED for NCT00763412, but the source does not copy
    # designInfo.allocation into the evidence, so nothing shows it is randomised ...
    assert grade_evidence(trials["NCT00763412"]) == D.CLINICAL_TRIAL
    # ... until a line says so
    randomised = trials["NCT00763412"].model_copy(
        update={"content": trials["NCT00763412"].content + "\nAllocation: RANDOMIZED"}
    )
    assert grade_evidence(randomised) == D.RCT
    assert all(clinical_weight(e) >= 1 for e in trials.values())


def test_europepmc_records(api_fixtures: Path) -> None:
    items: dict[str, Evidence] = {}
    for path in sorted((api_fixtures / "europepmc").glob("search_*.json")):
        found, _ = parse_search(json.loads(path.read_text(encoding="utf-8")))
        items.update({e.citation.id: e for e in found})
    assert grade_evidence(items["40461957"]) == D.META_ANALYSIS  # typed meta-analysis
    assert grade_evidence(items["39212676"]) == D.SYSTEMATIC_REVIEW
    assert grade_evidence(items["40536077"]) == D.META_ANALYSIS  # said in its own abstract
    # a narrative review citing "current meta-analyses" stays a narrative review
    assert grade_evidence(items["40464630"]) == D.REVIEW
    assert grade_evidence(items["40471332"]) == D.OTHER  # a letter about a meta-analysis
    preprint = next(e for e in items.values() if e.is_preprint)
    assert grade_evidence(preprint) in (D.PREPRINT, *DESIGN_ORDER)
    assert grade_evidence(items["39709208"]) == D.OTHER  # a published erratum


# --------------------------------------------------------------------------- design groups
def test_design_groups_come_from_grading() -> None:
    for design in D:
        e = item(study_design=design)
        assert classify_design(e) == design_group(design)
    assert design_group(D.COHORT) == design_group(D.CASE_CONTROL) == DesignGroup.OBSERVATIONAL
    assert design_group(D.ANIMAL) == design_group(D.IN_VITRO) == DesignGroup.LABORATORY
    assert is_clinical(item(study_design=D.CASE_REPORT))
    assert not is_clinical(item("Knockout mice showed less amyloid.", study_design=D.ANIMAL))


def _plan() -> ResearchPlan:
    return ResearchPlan(
        question="Does drug X reduce pain?",
        refined_question="Does drug X reduce pain?",
        checklist=[
            ChecklistItem(key="direct_evidence", description="drug X pain trials"),
            ChecklistItem(key="mechanism", description="drug X mechanism"),
            ChecklistItem(key="conflicting_findings", description="drug X harms"),
        ],
        key_terms=["drug X", "pain"],
    )


def _mixed() -> list[Evidence]:
    def e(i: int, text: str, **kw: Any) -> Evidence:
        return Evidence(
            id=f"E{i}", content=text, citation=Citation(source="pubmed", id=str(i)), **kw
        )

    return [
        e(
            1,
            "Drug X reduced pain in patients versus placebo.",
            publication_types=["Meta-Analysis"],
        ),
        e(2, "Drug X reduced pain in a cohort of 400 patients."),
        e(3, "Drug X reduced pain behaviour in mice.", mesh_terms=["Animals", "Mice"]),
        e(4, "Drug X reduced pain scores: patients were randomly assigned to X or placebo."),
    ]


async def test_extractive_judge_weighs_designs() -> None:
    plan = _plan()
    for c in plan.checklist:
        c.status = ChecklistStatus.PARTIAL
    a = await ExtractiveJudge().assess(plan, _mixed(), [], 1, 4)
    # meta-analysis 4 + cohort 2 + animal 0 + randomised trial 4
    assert a.clinical_evidence_score == 10
    assert "3 read as clinical studies, 2 of them meta-analyses" in a.reasoning
    weaker = await ExtractiveJudge().assess(plan, _mixed()[1:3], [], 1, 2)
    assert weaker.clinical_evidence_score == 2
    assert "clinical score 2/10" in weaker.reasoning


async def test_llm_judge_prompt_names_each_design() -> None:
    prompts: list[str] = []

    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompts.extend(
            str(p.content)
            for m in messages
            for p in getattr(m, "parts", [])
            if isinstance(p, UserPromptPart)
        )
        args = {"mechanism_score": 2, "clinical_evidence_score": 6, "reasoning": "ok"}
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, args)])

    config = LLMConfig(model=FunctionModel(fn), retries=0, timeout_seconds=30, usage=UsageTracker())
    await LLMJudge(config).assess(_plan(), _mixed(), [], 1, 4)
    prompt = prompts[0]
    assert re.search(r"- E1: meta-analysis \(evidence level 10/10; from publication type", prompt)
    assert "- E3: preclinical: animal study (evidence level 1/10" in prompt
    assert "- E4: randomised controlled trial" in prompt


async def test_extractive_writer_groups_by_graded_design() -> None:
    embedder = HashingEmbedder()
    writer = ExtractiveReportWriter(embedder, min_similarity=0.05, relative_to_best=0.0)
    report = await writer.write(_plan(), _mixed(), [], None)
    headings = {s.heading: s.content for s in report.findings}
    assert "[E1]" in headings[DesignGroup.SYSTEMATIC.value]
    assert "[E4]" in headings[DesignGroup.RCT.value]
    assert "[E2]" in headings[DesignGroup.OBSERVATIONAL.value]
    assert "[E3]" in headings[DesignGroup.LABORATORY.value]
    order = [s.heading for s in report.findings]
    assert order == [
        DesignGroup.SYSTEMATIC.value,
        DesignGroup.RCT.value,
        DesignGroup.OBSERVATIONAL.value,
        DesignGroup.LABORATORY.value,
    ]
