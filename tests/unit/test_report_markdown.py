"""Rendering of reports: ResearchReport.to_markdown numbering and to_json round trip."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from deepcritical.models import (
    Citation,
    CitationValidation,
    Evidence,
    Hypothesis,
    Reference,
    ReportMetadata,
    ReportSection,
    ResearchReport,
)
from deepcritical.report import validate_report


def _citation(n: int) -> Citation:
    return Citation(
        source="pubmed",
        id=str(30000000 + n),
        pmid=str(30000000 + n),
        title=f"Study number {n}",
        authors=[f"Author{n} A"],
        journal="J Test",
        year=2000 + n,
    )


def _evidence() -> dict[str, Evidence]:
    return {
        f"E{n}": Evidence(id=f"E{n}", content=f"Content {n}.", citation=_citation(n))
        for n in range(1, 8)
    }


def _report() -> ResearchReport:
    """E5 is cited first, then E2, then E3; E7 is listed but never cited."""
    return ResearchReport(
        title="Metformin and Alzheimer's disease",
        research_question="Can metformin be repurposed for Alzheimer's disease?",
        executive_summary="Metformin lowered dementia risk [E5]. Mechanisms agree [E5, E2].",
        methodology="We searched PubMed.",
        hypotheses_tested=[
            Hypothesis(
                statement="Metformin activates AMPK and lowers tau",
                drug="metformin",
                target="AMPK",
                pathway="mTOR",
                effect="less tau",
                confidence=0.7,
                supporting_evidence_ids=["E2", "E5"],
                contradicting_evidence_ids=["E3"],
            )
        ],
        findings=[
            ReportSection(
                heading="Clinical",
                content="- Cohorts [E2, E5].\n- Trials [E3].\n\nOverall modest [E3, E2].",
            )
        ],
        limitations=["Observational data [E5]."],
        conclusion="Promising but unproven.",
        references=[Reference(evidence_id=f"E{n}", citation=_citation(n)) for n in (2, 3, 5, 7)],
        metadata=ReportMetadata(
            sources_searched=["pubmed", "trials"],
            papers_reviewed=12,
            iterations=3,
            confidence=0.62,
            stop_reason="sufficient",
            llm="openai:gpt-4o",
            checklist_coverage=0.75,
            notes=["planner failed"],
            citation_validation=CitationValidation(
                references_checked=5,
                references_removed=1,
                references_added=2,
                markers_checked=9,
                markers_removed=3,
                sentences_removed=2,
                removed_reference_ids=["E99"],
                removed_marker_ids=["E99", "PMID:1"],
            ),
        ),
    )


def test_numbers_follow_first_citation_and_references_follow_the_numbers() -> None:
    md = _report().to_markdown()
    assert "Metformin lowered dementia risk [1]. Mechanisms agree [1, 2]." in md
    assert "- Cohorts [1, 2].\n- Trials [3].\n\nOverall modest [2, 3]." in md
    assert "- Observational data [1]." in md
    refs = md.split("## References", 1)[1].split("---", 1)[0].strip().splitlines()
    assert refs == [
        "1. " + _citation(5).format_reference(),
        "2. " + _citation(2).format_reference(),
        "3. " + _citation(3).format_reference(),
        "4. " + _citation(7).format_reference(),  # listed, never cited: after the cited ones
    ]
    assert "[E" not in md


def test_multi_id_marker_is_numbered_in_ascending_order() -> None:
    report = _report().model_copy(update={"executive_summary": "A [E5]. B [E3, E5, E2]."})
    md = report.to_markdown()
    assert "A [1]. B [1, 2, 3]." in md  # E5 -> 1, E3 -> 2 (first cited here), E2 -> 3


def test_hypotheses_show_their_evidence_numbers() -> None:
    md = _report().to_markdown()
    assert "- **Metformin activates AMPK and lowers tau** (confidence 0.70)" in md
    assert "Chain: metformin → AMPK → mTOR → less tau" in md
    assert "Supporting: [2], [1]; contradicting: [3]" in md


def test_hypothesis_without_referenced_evidence_says_none() -> None:
    report = _report()
    report.hypotheses_tested[0].supporting_evidence_ids = ["E6"]  # not a reference
    report.hypotheses_tested[0].contradicting_evidence_ids = []
    assert "Supporting: none; contradicting: none" in report.to_markdown()


def test_footer_shows_run_metadata_and_citation_check_counts() -> None:
    md = _report().to_markdown()
    assert (
        "*Sources searched: PubMed, ClinicalTrials.gov · papers reviewed: 12 · iterations: 3"
        " · checklist coverage: 75% · stopped because the evidence was judged sufficient"
        " · model: openai:gpt-4o*"
    ) in md
    assert (
        "*Citation check: 5 references and 9 inline citations checked against the evidence"
        " store; 1 reference, 3 citations and 2 sentences removed.*"
    ) in md
    assert "*Note: planner failed*" in md


def test_validated_report_renders_the_validation_it_did() -> None:
    draft = _report().model_copy(
        update={
            "executive_summary": "Real [E5]. Fabricated [E99]. Half real [E2, E98].",
            "metadata": ReportMetadata(),
        }
    )
    report = validate_report(draft, _evidence())
    md = report.to_markdown()
    assert "Real [1]. Half real [2]." in md
    assert "Fabricated" not in md
    assert "1 sentence removed" in md
    assert "2 citations" in md
    assert re.search(r"\[E\d+", md) is None


def test_report_without_references_says_so() -> None:
    report = ResearchReport(title="T", research_question="Q", executive_summary="Nothing found.")
    md = report.to_markdown()
    assert "## References\n\nNo references." in md
    assert md.endswith("\n")


def test_to_json_round_trips() -> None:
    report = _report()
    report.metadata.generated_at = datetime(2024, 5, 1, 12, 30, tzinfo=UTC)
    text = report.to_json()
    assert ResearchReport.model_validate_json(text) == report
    assert '"evidence_id": "E5"' in text  # ids, not display numbers
    assert '"valid": false' in text  # the computed flag is serialised for readers


def test_to_json_round_trips_after_validation() -> None:
    report = validate_report(_report(), _evidence())
    assert ResearchReport.model_validate_json(report.to_json()) == report
    assert ResearchReport.model_validate_json(report.to_json(indent=None)) == report


def test_each_footer_line_is_its_own_line_when_rendered() -> None:
    md = _report().to_markdown()
    footer = md.split("\n---\n", 1)[1].strip().splitlines()
    assert all(line.endswith("  ") for line in footer[:-1]), footer


def test_markers_in_headings_and_hypothesis_statements_are_numbered() -> None:
    report = _report()
    report.findings[0].heading = "Clinical evidence [E5]"
    report.hypotheses_tested[0].statement = "Metformin activates AMPK [E2]"
    md = report.to_markdown()
    assert "### Clinical evidence [1]" in md
    assert "**Metformin activates AMPK [2]**" in md


def test_duplicate_reference_does_not_break_numbering() -> None:
    report = _report()
    report.references.append(Reference(evidence_id="E7", citation=_citation(6)))
    refs = report.to_markdown().split("## References", 1)[1].split("---", 1)[0]
    assert "4. " + _citation(7).format_reference() in refs
    assert not any(line.startswith("5. ") for line in refs.splitlines())
