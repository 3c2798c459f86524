"""The report's appraisal: the "Study characteristics" table built from data, the certainty of
hypotheses, findings and the verdict in the markdown and the JSON."""

from __future__ import annotations

import json

from deepcritical.evidence.sample_size import find_sample_size
from deepcritical.evidence.study_extraction import extract_study
from deepcritical.models import (
    CERTAINTY_LABEL,
    Citation,
    Evidence,
    Hypothesis,
    Reference,
    ReportMetadata,
    ReportSection,
    ResearchReport,
    Screening,
)
from deepcritical.report.appraisal import STUDY_TABLE_HEADING, add_appraisal, study_table
from deepcritical.report.sections import add_verdict
from deepcritical.report.validation import citation_problems

TRIAL = (
    "METHODS: In this double-blind multicentre trial, 900 adults were randomized to metformin "
    "or placebo.\n\nRESULTS: Dementia fell (HR 0.80, 95% CI 0.70-0.90; p = 0.01)."
)
COHORT = "METHODS: A cohort of 60 patients.\n\nRESULTS: Metformin did not change scores."


def ev(n: int, text: str, types: list[str]) -> Evidence:
    return Evidence(
        id=f"E{n}",
        content=text,
        citation=Citation(source="pubmed", id=str(n), pmid=str(n), title=f"Study {n}"),
        publication_types=types,
        screening=Screening.RELEVANT,
    )


EVIDENCE = {
    "E1": ev(1, TRIAL, ["Randomized Controlled Trial"]),
    "E2": ev(2, COHORT, ["Observational Study"]),
}


def report() -> ResearchReport:
    return ResearchReport(
        title="Metformin and dementia",
        research_question="Does metformin prevent dementia?",
        executive_summary="Metformin lowered dementia risk [E1].",
        hypotheses_tested=[
            Hypothesis(
                id="H1",
                statement="Metformin prevents dementia.",
                supporting_evidence_ids=["E1"],
                contradicting_evidence_ids=["E2"],
            )
        ],
        findings=[ReportSection(heading="Trials", content="Risk fell in a trial [E1].")],
        conclusion="Metformin may help [E1].",
        references=[
            Reference(evidence_id="E1", citation=EVIDENCE["E1"].citation),
            Reference(evidence_id="E2", citation=EVIDENCE["E2"].citation),
        ],
        metadata=ReportMetadata(),
    )


def test_study_table_has_one_row_per_cited_study_with_values_as_written() -> None:
    section = study_table(list(EVIDENCE.values()))
    assert section is not None
    assert section.heading == STUDY_TABLE_HEADING
    rows = [line for line in section.content.splitlines() if line.startswith("| [E")]
    assert len(rows) == 2
    assert "| 900 |" in rows[0]
    assert "HR 0.80 (95% CI 0.70 to 0.90) for Dementia fell, p = 0.01" in rows[0]
    assert "metformin vs placebo" in rows[0]
    assert "| 60 |" in rows[1]
    assert "dropped (0)" in section.content


def test_add_appraisal_rates_hypotheses_findings_and_the_verdict() -> None:
    r = add_verdict(report(), "Does metformin prevent dementia?", EVIDENCE)
    r = add_appraisal(r, EVIDENCE)
    h = r.hypotheses_tested[0]
    assert h.certainty is not None
    expected = "inconsistency (1 supporting: PMID 1; 1 contradicting: PMID 2)"
    assert h.certainty.downgrades[0] == expected
    assert r.findings[0].certainty is not None
    assert r.findings[0].certainty.evidence_ids == ["E1"]
    assert r.metadata.certainty == h.certainty
    assert r.metadata.verdict is not None
    assert f"this verdict ({CERTAINTY_LABEL}): Moderate" in r.conclusion
    assert r.references[0].study is not None
    assert r.references[0].study.n == 900
    assert r.findings[-1].heading == STUDY_TABLE_HEADING
    assert citation_problems(r, EVIDENCE) == []


def test_markdown_and_json_show_the_appraisal() -> None:
    r = add_appraisal(add_verdict(report(), "Does metformin prevent dementia?", EVIDENCE), EVIDENCE)
    md = r.to_markdown()
    assert "### Study characteristics" in md
    assert "| [1] | randomised controlled trial |" in md  # markers numbered like citations
    assert f"Certainty ({CERTAINTY_LABEL}): Moderate: randomised trials; inconsistency" in md
    # every estimate with the outcome it measures
    assert "*Study: n = 900; HR 0.80 (95% CI 0.70 to 0.90) for Dementia fell, p = 0.01.*" in md
    data = json.loads(r.to_json())
    assert data["metadata"]["certainty"]["level"] == "Moderate"
    assert data["hypotheses_tested"][0]["certainty"]["basis"] == "randomised trials"
    effect = data["references"][0]["study"]["effects"][0]
    assert (effect["measure"], effect["value"], effect["ci_low"], effect["ci_high"]) == (
        "HR",
        "0.80",
        "0.70",
        "0.90",
    )
    assert effect["proof"]["quote"] in TRIAL
    assert ResearchReport.model_validate_json(r.to_json()) == r


def test_no_verdict_rates_the_references_and_adds_no_sentence() -> None:
    r = report()
    r.research_question = "How does metformin act?"
    r = add_appraisal(r, EVIDENCE)
    assert r.metadata.verdict is None
    assert r.metadata.certainty is not None
    assert r.metadata.certainty.evidence_ids == ["E1", "E2"]
    assert "Certainty of the evidence" not in r.conclusion


def test_a_verdict_whose_hypothesis_lists_no_source_rests_on_the_references() -> None:
    r = report()
    r.hypotheses_tested[0].supporting_evidence_ids = []
    r.hypotheses_tested[0].contradicting_evidence_ids = []
    r = add_appraisal(add_verdict(r, r.research_question, EVIDENCE), EVIDENCE)
    assert r.metadata.verdict == "uncertain"
    assert r.hypotheses_tested[0].certainty is None
    assert r.metadata.certainty is not None
    assert r.metadata.certainty.evidence_ids == ["E1", "E2"]
    assert "Certainty of the evidence behind this verdict" in r.conclusion


def test_source_text_that_looks_like_a_marker_stays_inert_in_the_table() -> None:
    item = ev(3, "PARTICIPANTS: Adults in cohort [E7] | site B.\n\nMETHODS: 120 adults.", [])
    section = study_table([item])
    assert section is not None
    assert "Adults in cohort (E7) / site B." in section.content
    assert "[E7]" not in section.content


def test_study_table_shows_group_sums_not_stated_and_every_estimate() -> None:
    """Issue 28: n is the stated total, the sum of groups marked as such, or "not stated";
    every estimate is listed with its outcome, not only the first."""
    groups = ev(
        3,
        "PARTICIPANTS: Five controls with HCA and five age-matched controls without HCA, seven "
        "depressed subjects with HCA and seven without HCA, and 12 subjects with clinically "
        "diagnosed probable AD with HCA and 12 without HCA were studied.",
        ["Observational Study"],
    )
    unstated = ev(
        4,
        "RESULTS: Mortality fell (RR 0.80, 95% CI 0.70-0.91) and stroke was rarer (OR 0.60, "
        "95% CI 0.40-0.90).",
        ["Observational Study"],
    )
    groups.study = extract_study(groups, read_size=find_sample_size)  # the rules' sum
    section = study_table([groups, unstated])
    assert section is not None
    rows = [line for line in section.content.splitlines() if line.startswith("| [E")]
    assert "| 48 (sum of groups: 5 + 5 + 7 + 7 + 12 + 12) |" in rows[0]
    assert "| not stated |" in rows[1]
    listed = [line for line in section.content.splitlines() if line.startswith("- [E4]")]
    assert listed == [
        "- [E4] RR 0.80 (95% CI 0.70 to 0.91) for Mortality fell; "
        "OR 0.60 (95% CI 0.40 to 0.90) for stroke was rarer"
    ]
