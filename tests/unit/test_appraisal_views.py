"""Where the appraisal shows outside the report: the evidence table's n, Effect and Certainty
columns (sortable, escaped, proofs on hover), the answer card, the reference exports and the
LLM writer's prompts."""

from __future__ import annotations

import json

from deepcritical.evidence.study_extraction import appraise_items
from deepcritical.formats.references import export_references
from deepcritical.llm.fencing import new_fence
from deepcritical.models import (
    CERTAINTY_LABEL,
    ChecklistItem,
    Citation,
    Evidence,
    Hypothesis,
    Reference,
    ReportMetadata,
    ResearchPlan,
    ResearchReport,
    RunResult,
    Screening,
)
from deepcritical.report.appraisal import add_appraisal
from deepcritical.report.sections import add_verdict
from deepcritical.ui.answer import answer_card_html
from deepcritical.ui.evidence_table import sort_rows
from deepcritical.ui.render import EVIDENCE_COLUMNS, evidence_rows, evidence_table_html
from deepcritical.writing.prompts import appraisal_lines, outline_prompt, section_prompt

TRIAL = (
    "METHODS: In this double-blind multicentre trial, 900 adults were randomized to metformin "
    "or placebo.\n\nRESULTS: Dementia fell (HR 0.80, 95% CI 0.70-0.90)."
)
SMALL = "METHODS: A cohort of 60 patients <b>.\n\nRESULTS: Risk rose (OR 1.5, 95% CI 0.9-2.4)."
NOTHING = "Metformin is discussed here without figures."


def ev(n: int, text: str, types: list[str], screening: Screening) -> Evidence:
    return Evidence(
        id=f"E{n}",
        content=text,
        citation=Citation(source="pubmed", id=str(n), pmid=str(n), title=f"Study {n}", year=2020),
        publication_types=types,
        screening=screening,
    )


PLAN = ResearchPlan(
    question="Q?",
    refined_question="Q?",
    checklist=[ChecklistItem(key="effect", description="Effect on dementia")],
)


def result() -> RunResult:
    items = [
        ev(1, TRIAL, ["Randomized Controlled Trial"], Screening.RELEVANT),
        ev(2, SMALL, ["Observational Study"], Screening.RELEVANT),
        ev(3, NOTHING, [], Screening.OFF_TOPIC),
    ]
    appraise_items(items)
    by_id = {e.id: e for e in items[:2]}
    report = ResearchReport(
        title="Metformin",
        research_question="Does metformin prevent dementia?",
        executive_summary="Risk fell [E1]; risk rose [E2].",
        hypotheses_tested=[
            Hypothesis(
                id="H1", statement="Metformin prevents dementia.", supporting_evidence_ids=["E1"]
            )
        ],
        references=[
            Reference(evidence_id="E1", citation=items[0].citation),
            Reference(evidence_id="E2", citation=items[1].citation),
        ],
        metadata=ReportMetadata(),
    )
    report = add_appraisal(add_verdict(report, report.research_question, by_id), by_id)
    return RunResult(report=report, plan=PLAN, evidence=items)


def test_evidence_rows_carry_n_effect_and_certainty() -> None:
    rows = {r.id: r for r in evidence_rows(result())}
    assert (rows["E1"].n, rows["E1"].effect, rows["E1"].certainty) == (
        900,
        "HR 0.80 (95% CI 0.70 to 0.90) for Dementia fell",
        "High",
    )
    assert rows["E1"].effect_quote in TRIAL
    assert rows["E1"].n_quote in TRIAL
    assert rows["E2"].certainty == "Very low"
    assert CERTAINTY_LABEL in rows["E2"].certainty_reason
    assert (rows["E3"].n, rows["E3"].effect, rows["E3"].certainty) == (None, "", "")


def test_new_columns_sort_with_missing_values_last() -> None:
    rows = evidence_rows(result())
    assert {"n", "Effect", "Certainty"} <= set(EVIDENCE_COLUMNS)
    assert [r.id for r in sort_rows(rows, "n")] == ["E2", "E1", "E3"]
    assert [r.id for r in sort_rows(rows, "n", descending=True)] == ["E1", "E2", "E3"]
    assert [r.id for r in sort_rows(rows, "Certainty", descending=True)] == ["E1", "E2", "E3"]
    assert [r.id for r in sort_rows(rows, "Effect")][-1] == "E3"


def test_table_shows_the_cells_escaped_with_proofs_on_hover() -> None:
    html = evidence_table_html(evidence_rows(result()))
    # the n's proof is its sentence, shown on hover
    assert '<td class="dc-n" title="In this double-blind multicentre trial, 900 adults were' in html
    assert ">900</td>" in html
    assert "<th>Certainty</th>" in html
    assert ">High</td>" in html
    assert "<b>" not in html  # source text in a hover title is escaped
    assert "60 patients &lt;b&gt;" in html


def test_answer_card_states_the_certainty_of_the_verdicts_evidence() -> None:
    card = answer_card_html(result())
    assert 'class="dc-card-certainty">High: randomised trials (' in card
    assert CERTAINTY_LABEL in card


def test_reference_exports_note_n_and_effect() -> None:
    ris = export_references(result(), "ris")
    assert "n = 900; HR 0.80 (95% CI 0.70 to 0.90)" in ris
    csl = json.loads(export_references(result(), "csljson", "evidence"))
    assert "n = 60; OR 1.5 (95% CI 0.9 to 2.4)" in csl[1]["note"]


def test_llm_writer_prompts_give_study_data_and_certainty_as_fenced_data() -> None:
    r = result()
    items = r.evidence[:2]
    fence = new_fence()
    lines = appraisal_lines(items, fence)
    assert lines
    assert CERTAINTY_LABEL in lines[1]
    assert f'<source id="study_data" nonce="{fence.nonce}">' in lines[2]
    assert (
        "- E1: n = 900; HR 0.80 (95% CI 0.70 to 0.90) for Dementia fell; certainty High: "
        "randomised trials" in (lines[2])
    )
    section = section_prompt(PLAN, "Trials", "", items, r.report.hypotheses_tested, fence, 300)
    assert "certainty Very low: observational" in section
    outline = outline_prompt(PLAN, items, r.report.hypotheses_tested, None, fence)
    assert "- H1: Metformin prevents dementia. (supporting: E1; contradicting: none; " in outline
    assert "certainty High: randomised trials)" in outline
    assert appraisal_lines([r.evidence[2]], fence) == []
