"""The answer card, its two charts' data and the flow diagram of the Report tab (issue 16):
the verdict as the report states it, "uncertain", an abstention; hostile text escaped."""

from __future__ import annotations

import re

import pytest

from deepcritical.models import (
    Certainty,
    CertaintyLevel,
    GroundingCheck,
    RecordFlow,
    Screening,
    StudyDesign,
)
from deepcritical.ui.answer import (
    CITED,
    NOT_CITED,
    answer_card_html,
    cited_designs,
    design_frame,
    verdict_of_report,
    year_frame,
)
from deepcritical.ui.flow_diagram import flow_html
from tests.unit.ui_fixtures import HOSTILE, evidence, run_result


@pytest.mark.parametrize(
    ("verdict", "kind", "label"),
    [("yes", "yes", "Yes"), ("no", "no", "No"), ("uncertain", "uncertain", "Uncertain")],
)
def test_the_card_states_the_reports_verdict(verdict: str, kind: str, label: str) -> None:
    result = run_result()
    result.report.metadata.verdict = verdict  # type: ignore[assignment]
    result.report.metadata.certainty = Certainty(
        level=CertaintyLevel.MODERATE, start=CertaintyLevel.HIGH, basis="randomised trials"
    )
    result.report.metadata.verdict_reason = "sources disagree: 1 supporting, 1 contradicting"
    card = answer_card_html(result)
    assert f'data-verdict="{kind}"' in card
    assert f'<p class="dc-verdict dc-verdict-{kind}">{label}</p>' in card
    assert "sources disagree: 1 supporting, 1 contradicting" in card


def test_a_report_that_cites_nothing_is_an_abstention() -> None:
    result = run_result(stop_reason="insufficient_evidence")
    result.report.references = []
    result.report.metadata.sources_searched = ["local"]
    verdict = verdict_of_report(result)
    assert (verdict.kind, verdict.label) == ("none", "No evidence found in the sources searched")
    card = answer_card_html(result)
    assert "No evidence found in the sources searched" in card
    assert '<dd class="dc-card-cited">0</dd>' in card
    assert "Local corpus" in card
    # nothing searched at all (the time budget ran out first)
    result.report.metadata.sources_searched = []
    assert verdict_of_report(result).label == "No source was searched"


def test_the_closest_record_report_is_an_abstention_too() -> None:
    result = run_result(stop_reason="insufficient_evidence")
    result.report.references = result.report.references[:1]
    verdict = verdict_of_report(result)
    assert verdict.label == "No evidence found in the sources searched"
    assert "closest" in verdict.detail


def test_a_question_that_is_not_yes_no_points_to_the_report() -> None:
    assert verdict_of_report(run_result()).label == "See the report"


def test_the_card_counts_cited_sources_by_design_and_shows_grounding_and_sources() -> None:
    result = run_result()
    result.report.references[0].study_design = StudyDesign.RCT
    result.report.references[1].study_design = StudyDesign.COHORT
    md = result.report.metadata
    md.grounding_score = 0.75
    md.grounding_check = GroundingCheck(sentences_checked=4, sentences_supported=3)
    md.sources_searched = ["local", "pubmed"]
    md.source_failures = {"europepmc": "HTTP 503"}
    assert cited_designs(result) == {StudyDesign.RCT: 1, StudyDesign.COHORT: 1}
    card = answer_card_html(result)
    assert (
        '<dd class="dc-card-cited">2 (randomised controlled trial: 1; cohort study: 1)</dd>' in card
    )
    assert "0.75 (3 of 4 cited sentences supported" in card
    assert "Local corpus, PubMed (unavailable: Europe PMC)" in card
    result.report.metadata.grounding_score = None
    assert "not checked" in answer_card_html(result)


def test_hostile_text_in_the_question_reason_and_sources_is_escaped() -> None:
    result = run_result()
    result.report.research_question = f"Does {HOSTILE} work?"
    result.report.metadata.verdict = "uncertain"
    result.report.metadata.verdict_reason = HOSTILE
    result.report.metadata.sources_searched = [HOSTILE]
    card = answer_card_html(result)
    assert "<script" not in card
    assert "<img" not in card
    assert card.count("&lt;script&gt;") == 3
    assert 'data-verdict="uncertain"' in card


def test_the_charts_show_included_evidence_by_year_and_design_cited_apart() -> None:
    result = run_result()
    extra = evidence(3, "Old cohort", "A cohort study of 2,000 patients followed for 10 years.")
    extra.citation.year = 1999
    undated = evidence(4, "Undated", "A randomised controlled trial of metformin.")
    undated.citation.year = None
    off = evidence(5, f"Off-topic {HOSTILE}", "Knee surgery.")
    off.screening = Screening.OFF_TOPIC
    result.evidence += [extra, undated, off]
    years = year_frame(result)
    assert list(years.columns) == ["year", "records", "status"]
    assert list(years.itertuples(index=False, name=None)) == [
        ("1999", 1, NOT_CITED),
        ("2020", 2, CITED),
        ("unknown", 1, NOT_CITED),
    ]
    designs = design_frame(result)
    assert list(designs.columns) == ["design", "records", "status"]
    assert designs["records"].sum() == 4  # the off-topic record is not included
    assert set(designs["status"]) == {CITED, NOT_CITED}
    assert designs.loc[designs["status"] == CITED, "records"].sum() == 2
    order = [StudyDesign(d) for d in designs["design"]]
    assert order == sorted(order, key=list(StudyDesign).index)


def flow(**override: object) -> RecordFlow:
    values: dict[str, object] = {
        "identified_per_source": {"local": 20, "pubmed": 8},
        "identifier_duplicates": 23,
        "near_duplicates": 1,
        "unique": 4,
        "screened": 4,
        "excluded": 2,
        "exclusion_reasons": {"no key concept of the question": 2},
        "included": 2,
        "relevant": 2,
        "cited": 2,
    }
    values.update(override)
    return RecordFlow.model_validate(values)


def counts(diagram: str) -> dict[str, int]:
    return {s: int(n) for s, n in re.findall(r'data-stage="(\w+)" data-count="(\d+)"', diagram)}


def test_the_flow_diagram_shows_counts_that_add_up() -> None:
    diagram = flow_html(flow())
    found = counts(diagram)
    assert found == {
        "identified": 28,
        "removed": 24,
        "unique": 4,
        "screened": 4,
        "excluded": 2,
        "included": 2,
        "cited": 2,
    }
    assert found["identified"] - found["removed"] == found["unique"]
    assert found["screened"] - found["excluded"] == found["included"]
    assert "Local corpus 20, PubMed 8" in diagram
    assert "23 by identifier, 1 near-duplicate" in diagram
    assert "no key concept of the question 2" in diagram
    assert "<script" not in diagram
    assert "No flow of records" in flow_html(None)


def test_the_flow_diagram_counts_records_found_by_citation_tracking() -> None:
    tracked = flow(identified_by_citation_tracking=5, identifier_duplicates=26, beyond_limit=2)
    assert tracked.problems() == []
    found = counts(flow_html(tracked))
    assert found["identified"] == 33
    assert found["identified"] - found["removed"] == found["unique"]
    assert "Local corpus 20, PubMed 8; citation tracking 5" in flow_html(tracked)


def test_the_flow_diagram_escapes_source_names_and_reasons() -> None:
    diagram = flow_html(
        flow(
            identified_per_source={HOSTILE: 28},
            exclusion_reasons={HOSTILE: 2},
        )
    )
    assert "<script" not in diagram
    assert "<img" not in diagram
    assert diagram.count("&lt;script&gt;") == 2


@pytest.mark.parametrize(
    ("level", "label"),
    [
        (CertaintyLevel.VERY_LOW, "Probably no (very low certainty, 1 study)"),
        (CertaintyLevel.LOW, "Probably no (low certainty, 1 study)"),
        (None, "Probably no (certainty not rated, 1 study)"),
    ],
)
def test_a_verdict_on_weak_evidence_is_tentative_not_a_strong_no(
    level: CertaintyLevel | None, label: str
) -> None:
    """Issue 30: the verdict's display follows its certainty; a No resting on one Very low
    study is "Probably no (...)" in a neutral style, not a large red "No"."""
    result = run_result()
    result.report.metadata.verdict = "no"
    result.report.metadata.certainty = (
        Certainty(level=level, start=CertaintyLevel.LOW, basis="observational", evidence_ids=["E1"])
        if level is not None
        else None
    )
    result.report.references = result.report.references[:1]
    card = answer_card_html(result)
    assert f'<p class="dc-verdict dc-verdict-no dc-verdict-tentative">{label}</p>' in card
    assert ">No</p>" not in card
