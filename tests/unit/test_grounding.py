"""Claim-level grounding: cited sentences must be supported by a passage of a cited source.

The behaviour tests use real PubMedQA abstracts and the real all-MiniLM-L6-v2 embedder (the
default threshold is calibrated for it); structural tests use the hashing embedder with an
explicit threshold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deepcritical.agents.planner import ExtractivePlanner
from deepcritical.models import (
    Citation,
    Evidence,
    GroundedClaim,
    Hypothesis,
    ReportSection,
    ResearchReport,
    StudyDesign,
    marker_ids,
)
from deepcritical.report.grounding import (
    DEFAULT_THRESHOLD,
    EmptiedPart,
    claim_text,
    ground_report,
    source_passages,
)
from deepcritical.report.validation import citation_problems, validate_report
from deepcritical.testing.embedders import HashingEmbedder
from deepcritical.writing.extractive import EXTRACTIVE_NOTE, ExtractiveReportWriter

STATINS_STROKE = "11340218"  # statin use at stroke onset and discharge home (case-referent)
VACCINES = "1571683"  # storage of vaccines in general practice (real, irrelevant here)
STATINS_AF = "21881325"  # preoperative statins and atrial fibrillation after CABG
FIRST_NAMES = "2224269"  # calling patients by their first names

VERBATIM = "Prognostic factors were, in general, more unfavorable among patients on statins"
PARAPHRASE = (
    "Patients taking statins when their stroke began were somewhat more likely to be "
    "discharged home, although the difference was not statistically significant"
)


def load(pubmedqa_dir: Path, ids: dict[str, str]) -> dict[str, Evidence]:
    rows = {}
    with (pubmedqa_dir / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            rows[row["pmid"]] = row
    out = {}
    for eid, pmid in ids.items():
        row = rows[pmid]
        content = "\n".join(
            f"{s['label']}: {s['text']}" if s.get("label") else s["text"]
            for s in row["abstract_sections"]
        )
        out[eid] = Evidence(
            id=eid,
            content=content,
            citation=Citation(source="local", id=pmid, pmid=pmid, year=row.get("year")),
            mesh_terms=row["mesh_terms"],
        )
    return out


@pytest.fixture
def evidence(pubmedqa_dir: Path) -> dict[str, Evidence]:
    return load(
        pubmedqa_dir, {"E1": STATINS_STROKE, "E2": VACCINES, "E3": STATINS_AF, "E4": FIRST_NAMES}
    )


def draft(evidence: dict[str, Evidence]) -> ResearchReport:
    """A validated report mixing supported and unsupported cited sentences."""
    report = ResearchReport(
        title="Statins and stroke",
        research_question="Does pretreatment with statins improve outcome after stroke?",
        executive_summary=(
            f"{VERBATIM} [E1]. Statin pretreatment improves outcome after stroke [E2]."
        ),
        findings=[
            ReportSection(
                heading="Stroke outcome",
                content=(
                    f"{PARAPHRASE} [E1, E2]. This section summarises one study.\n\n"
                    "- Preoperative statin therapy seemed to reduce atrial fibrillation after "
                    "CABG [E3].\n"
                    "- Vaccines lose potency when frozen [E1]."
                ),
            ),
            ReportSection(
                heading="Bedside manner",
                content="Calling patients by their first names improves stroke outcome [E1].",
            ),
        ],
        conclusion=f"Statins may improve outcome after stroke [E4]. {EXTRACTIVE_NOTE}",
    )
    validated = validate_report(report, evidence)
    assert citation_problems(validated, evidence) == []
    return validated


# --------------------------------------------------------------------------- real abstracts
@pytest.mark.slow
def test_grounding_on_real_abstracts(
    evidence: dict[str, Evidence], minilm_embedder: object
) -> None:
    report = draft(evidence)
    before = report.model_copy(deep=True)
    grounded = ground_report(report, evidence, minilm_embedder)  # type: ignore[arg-type]
    assert report == before  # the input is untouched

    # a sentence citing only a real but irrelevant source (vaccine storage) is removed
    assert "improves outcome after stroke" not in grounded.executive_summary
    # the verbatim extractive quote stays, with the quote and a similarity of 1
    assert grounded.executive_summary == f"{VERBATIM} [E1]."
    verbatim = next(c for c in grounded.grounding if c.sentence.startswith("Prognostic"))
    assert verbatim.supported
    assert not verbatim.removed
    assert verbatim.score == pytest.approx(1.0, abs=1e-3)
    assert verbatim.quotes[0].quote == VERBATIM + "."
    # the irrelevant citation is dropped from a sentence that also cites a supporting source
    stroke = grounded.findings[0].content
    assert f"{PARAPHRASE} [E1]." in stroke
    mixed = next(c for c in grounded.grounding if c.sentence.startswith("Patients taking"))
    assert mixed.evidence_ids == ["E1", "E2"]
    assert mixed.kept_ids == ["E1"]
    by_id = {q.evidence_id: q for q in mixed.quotes}
    assert by_id["E1"].supports
    assert by_id["E1"].similarity >= DEFAULT_THRESHOLD
    assert not by_id["E2"].supports
    assert by_id["E2"].similarity < 0.4
    assert "odds ratio" in by_id["E1"].quote  # the RESULTS sentence on discharge home
    # every quote is verbatim text of the item it is attributed to
    for claim in grounded.grounding:
        for q in claim.quotes:
            assert q.quote in evidence[q.evidence_id].content
    # markdown structure: the unsupported bullet goes, the supported one and the uncited
    # sentence stay
    assert "This section summarises one study." in stroke
    assert "- Preoperative statin therapy seemed to reduce atrial fibrillation" in stroke
    assert "Vaccines lose potency" not in stroke
    # a section left empty is dropped, with a note
    assert [s.heading for s in grounded.findings] == ["Stroke outcome"]
    assert any("Bedside manner" in n for n in grounded.metadata.notes)
    # the conclusion keeps its uncited fixed statement
    assert grounded.conclusion == EXTRACTIVE_NOTE

    # records and counts
    check = grounded.metadata.grounding_check
    assert check is not None
    assert (check.sentences_checked, check.sentences_supported) == (7, 3)
    assert (check.sentences_removed, check.citations_removed) == (4, 1)
    assert grounded.metadata.grounding_score == pytest.approx(3 / 7, abs=1e-3)
    # references: E4 is cited nowhere any more; E2 neither (its only supported use was none)
    assert [r.evidence_id for r in grounded.references] == ["E1", "E3"]
    assert set(check.removed_reference_ids) == {"E2", "E4"}
    assert grounded.references[0].study_design == StudyDesign.CASE_CONTROL
    assert citation_problems(grounded, evidence) == []
    # cited ids are a subset of the ids that were cited
    assert set(marker_ids(" ".join(grounded.texts()))) == {"E1", "E3"}

    # markdown shows the score and the design of each reference
    md = grounded.to_markdown()
    assert "*Grounding check: 3 of 7 cited sentences are supported" in md
    assert "grounding score 0.43; cosine similarity ≥ 0.65" in md
    assert "4 unsupported sentences, 1 unsupported citation and 2 references removed" in md
    assert "*Study design: case-control study.*" in md

    # idempotent: grounding again changes nothing, records included
    assert ground_report(grounded, evidence, minilm_embedder) == grounded  # type: ignore[arg-type]


@pytest.mark.slow
async def test_extractive_report_is_fully_grounded(
    evidence: dict[str, Evidence], minilm_embedder: object
) -> None:
    plan = await ExtractivePlanner().plan("Do statins improve clinical outcome after stroke?")
    writer = ExtractiveReportWriter(minilm_embedder)  # type: ignore[arg-type]
    report = validate_report(await writer.write(plan, list(evidence.values()), [], None), evidence)
    grounded = ground_report(report, evidence, minilm_embedder)  # type: ignore[arg-type]
    check = grounded.metadata.grounding_check
    assert check is not None
    assert check.sentences_checked >= 3
    assert grounded.metadata.grounding_score == 1.0
    assert (check.sentences_removed, check.citations_removed) == (0, 0)
    assert all(c.score == pytest.approx(1.0, abs=1e-3) for c in grounded.grounding)
    assert grounded.texts() == report.texts()


# --------------------------------------------------------------------------- structure
def ev(eid: str, text: str, title: str = "", pmid: str = "") -> Evidence:
    return Evidence(
        id=eid,
        content=text,
        citation=Citation(source="pubmed", id=pmid or eid[1:], pmid=pmid or eid[1:], title=title),
    )


@pytest.fixture
def small() -> dict[str, Evidence]:
    return {
        "E1": ev(
            "E1", "RESULTS: Aspirin lowered stroke risk in older adults.\nCONCLUSIONS: Use it."
        ),
        "E2": ev("E2", "Vaccines stored in fridges lost potency."),
        "E3": ev("E3", "Metformin users had fewer cancers.", title="Metformin and cancer"),
    }


def test_source_passages_are_verbatim_sentences_and_windows() -> None:
    item = ev(
        "E1",
        "BACKGROUND: First point here. Second point here.\nRESULTS: Third one.",
        title="A title",
    )
    passages = source_passages(item)
    assert passages == [
        "A title",
        "First point here.",
        "First point here. Second point here.",
        "Second point here.",
        "Third one.",
    ]
    assert all(p in item.content or p == "A title" for p in passages)


def test_claim_text_strips_markers_and_markup() -> None:
    assert claim_text("**Aspirin** lowered risk [E1, E2].") == "Aspirin lowered risk."
    assert claim_text("| Aspirin | lowered risk [E1] |") == "Aspirin lowered risk"
    assert claim_text("Risk fell ([E3]) in _all_ groups.") == "Risk fell in all groups."


def test_markdown_structure_hypotheses_and_tables(small: dict[str, Evidence]) -> None:
    report = ResearchReport(
        title="t",
        research_question="q",
        executive_summary="Aspirin lowered stroke risk in older adults [E1, E2].",
        hypotheses_tested=[Hypothesis(statement="h", contradicting_evidence_ids=["E2"])],
        findings=[
            ReportSection(
                heading="Table",
                content=(
                    "Intro without citation.\n\n"
                    "| Drug | Finding |\n|---|---|\n"
                    "| Aspirin | lowered stroke risk in older adults [E1] |\n"
                    "| Statins | cured baldness [E1] |\n\n"
                    "  - Metformin users had fewer cancers [E3].\n"
                    "  - Tea cures everything [E3]."
                ),
            )
        ],
    )
    report = validate_report(report, small)
    grounded = ground_report(report, small, HashingEmbedder(), threshold=0.6)
    assert grounded.executive_summary == "Aspirin lowered stroke risk in older adults [E1]."
    assert grounded.findings[0].content == (
        "Intro without citation.\n\n"
        "| Drug | Finding |\n|---|---|\n"
        "| Aspirin | lowered stroke risk in older adults [E1] |\n\n"
        "  - Metformin users had fewer cancers [E3]."
    )
    # E2 is no longer cited in the text, but the hypothesis still cites it: reference kept
    assert [r.evidence_id for r in grounded.references] == ["E1", "E2", "E3"]
    assert citation_problems(grounded, small) == []
    assert grounded.metadata.grounding_check is not None
    assert grounded.metadata.grounding_check.references_removed == 0


def test_unvalidated_input_is_validated_first(small: dict[str, Evidence]) -> None:
    report = ResearchReport(
        title="t",
        research_question="q",
        executive_summary=(
            "Aspirin lowered stroke risk in older adults [PMID: 1]. Made up [PMID: 999]."
        ),
    )
    grounded = ground_report(report, small, HashingEmbedder(), threshold=0.6)
    assert grounded.executive_summary == "Aspirin lowered stroke risk in older adults [E1]."
    assert grounded.metadata.citation_validation.sentences_removed == 1  # the fabricated one
    assert [r.evidence_id for r in grounded.references] == ["E1"]
    assert citation_problems(grounded, small) == []


def test_emptied_summary_and_conclusion_get_a_fixed_statement(
    small: dict[str, Evidence],
) -> None:
    report = validate_report(
        ResearchReport(
            title="t",
            research_question="q",
            executive_summary="Tea cures everything [E2].",
            conclusion="Coffee too [E1].",
        ),
        small,
    )
    grounded = ground_report(report, small, HashingEmbedder(), threshold=0.6)
    assert grounded.executive_summary == EmptiedPart["executive summary"]
    assert grounded.conclusion == EmptiedPart["conclusion"]
    assert grounded.references == []
    assert grounded.metadata.grounding_score == 0.0
    assert citation_problems(grounded, small) == []


def test_nothing_cited_gives_no_score(small: dict[str, Evidence]) -> None:
    report = ResearchReport(title="t", research_question="q", executive_summary="Nothing found.")
    grounded = ground_report(report, small, HashingEmbedder())
    assert grounded.metadata.grounding_score is None
    assert grounded.grounding == []
    assert "no cited sentence to check" in grounded.to_markdown()


def test_threshold_decides(small: dict[str, Evidence]) -> None:
    report = validate_report(
        ResearchReport(
            title="t", research_question="q", executive_summary="Aspirin lowered risk [E1]."
        ),
        small,
    )
    score = ground_report(report, small, HashingEmbedder(), threshold=0.0).grounding[0].score
    assert 0.3 < score < 0.95
    kept = ground_report(report, small, HashingEmbedder(), threshold=score)
    gone = ground_report(report, small, HashingEmbedder(), threshold=score + 0.01)
    assert kept.executive_summary == report.executive_summary
    assert gone.executive_summary == EmptiedPart["executive summary"]
    # regrounding at another threshold keeps the record of what was removed before
    again = ground_report(gone, small, HashingEmbedder(), threshold=0.0)
    assert [c.removed for c in again.grounding] == [True]


def test_nli_hook_decides_support(small: dict[str, Evidence]) -> None:
    calls: list[tuple[str, str]] = []

    def nli(premise: str, hypothesis: str) -> float:
        calls.append((premise, hypothesis))
        return 0.9 if "Aspirin" in premise and "stroke" in hypothesis else 0.1

    report = validate_report(
        ResearchReport(
            title="t",
            research_question="q",
            executive_summary=(
                "Aspirin protects against stroke [E1, E3]. Aspirin helps memory [E1]."
            ),
        ),
        small,
    )
    # a threshold no embedding could reach: the NLI callable decides, not the similarity
    grounded = ground_report(report, small, HashingEmbedder(), threshold=2.0, nli=nli)
    assert grounded.executive_summary == "Aspirin protects against stroke [E1]."
    first = grounded.grounding[0]
    assert first.kept_ids == ["E1"]
    q1 = next(q for q in first.quotes if q.evidence_id == "E1")
    assert q1.entailment == 0.9
    assert q1.supports
    assert q1.quote == "Aspirin lowered stroke risk in older adults."
    assert first.score == 0.9
    assert grounded.grounding[1].removed
    # premises are source passages, hypotheses the claims without markers
    assert ("Aspirin lowered stroke risk in older adults.", "Aspirin helps memory.") in calls
    assert all("[E" not in h for _, h in calls)
    check = grounded.metadata.grounding_check
    assert check is not None
    assert check.method == "embedding+nli"
    assert "NLI entailment ≥ 0.5" in grounded.to_markdown()


# --------------------------------------------------------------------------- rewrites
def test_an_unsupported_sentence_is_replaced_by_a_supported_rewrite_in_place(
    evidence: dict[str, Evidence],
) -> None:
    report = validate_report(
        ResearchReport(
            title="t",
            research_question="q",
            findings=[
                ReportSection(
                    heading="Stroke",
                    content=(
                        f"{VERBATIM} [E1]. Vaccines lose potency when frozen [E1]. "
                        "Calling patients by their first names helps [E4]."
                    ),
                )
            ],
        ),
        evidence,
    )
    offered: list[str] = []

    def rewrite(claim: GroundedClaim) -> str | None:
        offered.append(claim.sentence)
        if "Vaccines" in claim.sentence:  # rewrite from the best passage of E1 it was given
            [quote] = claim.quotes
            assert quote.evidence_id == "E1"
            return f"{quote.quote.rstrip('.')} [E1, E2]."  # E2 was not cited: dropped
        raise RuntimeError("the model failed")  # the other one stays removed

    grounded = ground_report(
        report, evidence, HashingEmbedder(), threshold=0.9, rewrite=rewrite, max_rewrites=5
    )
    assert offered == [
        "Vaccines lose potency when frozen [E1].",
        "Calling patients by their first names helps [E4].",
    ]
    content = grounded.findings[0].content
    vaccines = next(c for c in grounded.grounding if c.sentence.startswith("Vaccines"))
    assert vaccines.rewritten
    assert not vaccines.supported  # as drafted, it was not
    assert not vaccines.removed
    assert vaccines.kept_ids == ["E1"]
    assert vaccines.grounded_sentence.endswith("[E1].")
    assert "E2" not in vaccines.grounded_sentence
    # in place: after the verbatim quote, where the unsupported sentence was
    assert content == f"{VERBATIM} [E1]. {vaccines.grounded_sentence}"
    first_names = next(c for c in grounded.grounding if "first names" in c.sentence)
    assert first_names.removed
    check = grounded.metadata.grounding_check
    assert check is not None
    assert (check.sentences_removed, check.sentences_rewritten) == (1, 1)
    assert citation_problems(grounded, evidence) == []
    assert "*(rewritten: the sentence as drafted was not supported)*" in grounded.to_markdown()


def test_a_rewrite_that_is_still_unsupported_or_cites_nothing_is_not_kept(
    evidence: dict[str, Evidence],
) -> None:
    report = validate_report(
        ResearchReport(
            title="t",
            research_question="q",
            executive_summary="Vaccines lose potency when frozen [E1]. Statins help [E3].",
        ),
        evidence,
    )
    answers = iter(["Vaccines are fragile [E1].", "Statins help (no citation)."])
    grounded = ground_report(
        report,
        evidence,
        HashingEmbedder(),
        threshold=0.9,
        rewrite=lambda claim: next(answers),
        max_rewrites=1,  # only the first is offered
    )
    assert all(c.removed and not c.rewritten for c in grounded.grounding)
    assert grounded.executive_summary == EmptiedPart["executive summary"]
