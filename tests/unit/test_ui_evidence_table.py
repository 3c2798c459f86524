"""The Evidence tab's table: numbered as in the report, sorted by any column, filtered by text,
design, year range and cited / not cited; off-topic rows shown, marked; every cell inert."""

from __future__ import annotations

import re

import pytest

from deepcritical.models import Citation, Evidence, Screening, StudyDesign
from deepcritical.ui.evidence_table import (
    ALL_DESIGNS,
    EvidenceFilter,
    embedded_rows,
    filter_rows,
    rerender_table,
    rows_json,
    sort_rows,
    table_html,
)
from deepcritical.ui.render import EVIDENCE_COLUMNS, EvidenceRow, evidence_rows
from tests.unit.test_ui_render import assert_inert
from tests.unit.ui_fixtures import HOSTILE, run_result


def row(
    id: str, year: int | None, design: str, *, number: int | None = None, **kw: object
) -> EvidenceRow:
    data: dict[str, object] = {
        "source": "PubMed",
        "id": id,
        "title": f"Title {id}",
        "year": year,
        "url": None,
        "answers": [],
        "relevance": 0.5,
        "design": design,
        "number": number,
        "cited": number is not None,
    }
    return EvidenceRow.model_validate(data | kw)


ROWS = [
    row("E1", 2019, "cohort", number=2, first_author="Zhu A", relevance=0.9),
    row("E2", None, "rct", first_author="", relevance=0.4, abstract="Incident dementia fell."),
    row("E3", 2021, "rct", number=1, first_author="Adams B", relevance=0.7),
    row("E10", 2015, "review", first_author="Moss C", relevance=0.2, screening="off_topic"),
]


def ids(rows: list[EvidenceRow]) -> list[str]:
    return [r.id for r in rows]


@pytest.mark.parametrize(
    ("column", "descending", "expected"),
    [
        ("Year", False, ["E10", "E1", "E3", "E2"]),  # no year: last either way
        ("Year", True, ["E3", "E1", "E10", "E2"]),
        ("Cited", False, ["E3", "E1", "E2", "E10"]),  # [1], [2], then by id number
        ("First author", False, ["E3", "E10", "E1", "E2"]),
        ("Screening", True, ["E1", "E3", "E2", "E10"]),  # off-topic after the others
        ("Study design", False, ["E1", "E2", "E3", "E10"]),
        ("unknown column", False, ["E1", "E2", "E3", "E10"]),
    ],
)
def test_sort_by_any_column(column: str, descending: bool, expected: list[str]) -> None:
    assert ids(sort_rows(ROWS, column, descending=descending)) == expected


def test_every_column_sorts() -> None:
    for column in EVIDENCE_COLUMNS:
        assert sorted(ids(sort_rows(ROWS, column))) == sorted(ids(ROWS)), column


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        (EvidenceFilter(), ["E1", "E2", "E3", "E10"]),
        (EvidenceFilter(design="rct"), ["E2", "E3"]),
        (EvidenceFilter(design=ALL_DESIGNS), ["E1", "E2", "E3", "E10"]),
        (EvidenceFilter(year_from=2016), ["E1", "E3"]),
        (EvidenceFilter(year_from=2016, year_to=2020), ["E1"]),
        (EvidenceFilter(scope="cited"), ["E1", "E3"]),
        (EvidenceFilter(scope="not cited"), ["E2", "E10"]),
        (EvidenceFilter(text="adams"), ["E3"]),
        (EvidenceFilter(text="[2]"), ["E1"]),
        (EvidenceFilter(text="e10"), ["E10"]),
        (EvidenceFilter(text="rct", scope="cited"), ["E3"]),
        (EvidenceFilter(text="dementia"), ["E2"]),  # the abstract's text is searched too
    ],
)
def test_filters(rule: EvidenceFilter, expected: list[str]) -> None:
    assert ids(filter_rows(ROWS, rule)) == expected


def test_rows_are_numbered_as_in_the_report() -> None:
    result = run_result()
    numbers = result.report.reference_numbers()
    for r in evidence_rows(result):
        assert r.number == numbers[r.id]
        assert r.cited
        assert r.design == StudyDesign.OTHER.value or r.design


def test_the_table_of_the_state_is_filtered_sorted_and_inert() -> None:
    result = run_result()
    extra = Evidence(
        id="E3",
        content=f"Off topic {HOSTILE}",
        citation=Citation(
            source="local",
            id="x",
            title=f"Knee surgery {HOSTILE}",
            authors=[f"Evil {HOSTILE}"],
            journal=f"J {HOSTILE}",
            year=2001,
            url="https://example.org/3",
        ),
        relevance=0.1,
        screening=Screening.OFF_TOPIC,
        screening_reason=f"off-topic: {HOSTILE}",
    )
    result = result.model_copy(update={"evidence": [*result.evidence, extra]})
    state = rows_json(result)
    full = table_html(state)
    assert_inert(full)
    assert "&lt;script&gt;" in full
    assert full.count('<tr class="dc-evidence-row') == 3
    assert full.count("dc-off-topic") == 1  # visible, marked
    assert "3 of 3 records" in full
    assert [f"<th>{c}</th>" in full for c in EVIDENCE_COLUMNS] == [True] * len(EVIDENCE_COLUMNS)
    # [n] and the evidence id in the first column
    assert re.search(r'<td class="dc-cited">\[1\] <span class="dc-id">E1</span>', full)
    assert 'target="_blank" rel="noopener noreferrer nofollow"' in full
    assert 'title="off-topic: &lt;script&gt;' in full  # the screening reason on hover
    by_year = table_html(state, "Year", False)
    assert by_year.index('data-id="E3"') < by_year.index('data-id="E1"')
    cited = table_html(state, "Year", False, scope="cited")
    assert 'data-id="E3"' not in cited
    assert "2 of 3 records" in cited
    recent = table_html(state, "Year", True, "", ALL_DESIGNS, 2010, None, "all")
    assert 'data-id="E3"' not in recent
    assert table_html(state, "Year", True, "", ALL_DESIGNS, 0, 0, "all").count("<tr class") == 3
    assert "No evidence matches" in table_html(state, text="nothing like this")
    # the table carries its rows: each control re-renders it from what is shown
    assert embedded_rows(full) == state
    again = rerender_table(by_year, "Year", True, "", ALL_DESIGNS, 0, 0, "cited")
    assert again.count("<tr class") == 2
    assert embedded_rows(again) == state
    assert "No evidence matches" in rerender_table(
        again, "Year", True, "zzz", ALL_DESIGNS, 0, 0, "all"
    )
    assert "No evidence yet" in rerender_table(
        "<p>nothing</p>", "Year", True, "", ALL_DESIGNS, 0, 0, ""
    )
    assert "No evidence yet" in table_html("")
    assert "No evidence yet" in table_html("not json")
