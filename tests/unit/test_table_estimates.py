"""Effect estimates read from a table's CI columns: the bounds in a column of their own next
to the estimate's, or with the estimate in one cell; reference rows, count columns, rows of
another width and values outside their bounds are not read."""

from __future__ import annotations

from deepcritical.evidence.study_extraction import extract_study
from deepcritical.evidence.table_estimates import effects_of_table, find_column_effects
from deepcritical.models import Citation, Evidence, Passage, PassageKind

# Tables 1 and 4 of a PMC open-access article (pntd.0002065, a dev-half full text), as
# JatsTable.text() writes them: the caption, then one line per row
SEROPREVALENCE = (
    "RVF seroprevalence in 2007, as determined by virus neutralization test and IgG ELISA.\n"
    "District | Goats | Sheep\n"
    " | n | Seroprevalence (%) | 95% C.I. | n | Seroprevalence (%) | 95% C.I.\n"
    "Maganja da Costa | 92 | 39.1c | 29.7, 49.5 | 11 | 54.6b | 25.6, 80.7\n"
    "Morrumbala | 131 | 7.6b | 4.1, 13.7 | – | – | –\n"
    "TOTAL | 377 | 21.2A | 17.9, 24.9 | 277 | 35.8B | 30.7, 41.1"
)
ODDS_RATIOS = (
    "Effect of sex, age and locality on seropositivity to RVFV in 2010.\n"
    "Species | Variable | Level | Odds ratio (OR) | 95% confidence interval (OR) | P-value\n"
    "Goats | Sex | Female | 1* | – | –\n"
    " |  | Male | 0.34 | 0.10, 1.20 | 0.094\n"
    " | Age | 0–6 months | 1* | – | –\n"
    " |  | >12 months | 7.32 | 2.42, 22.12 | <0.001"
)


def test_bounds_in_their_own_column_go_with_the_estimate_before_them() -> None:
    found = find_column_effects(SEROPREVALENCE)
    assert [(f.measure, f.value, f.ci_low, f.ci_high) for f in found] == [
        ("estimate", "39.1", "29.7", "49.5"),
        ("estimate", "54.6", "25.6", "80.7"),
        ("estimate", "7.6", "4.1", "13.7"),
        ("estimate", "21.2", "17.9", "24.9"),
        ("estimate", "35.8", "30.7", "41.1"),
    ]
    assert SEROPREVALENCE[found[0].start : found[0].end] == "39.1c | 29.7, 49.5"
    assert found[0].outcome is not None
    start, end = found[0].outcome
    assert SEROPREVALENCE[start:end] == (
        "RVF seroprevalence in 2007, as determined by virus neutralization test and IgG ELISA"
    )


def test_the_estimate_column_names_the_measure_and_reference_rows_are_skipped() -> None:
    found = find_column_effects(ODDS_RATIOS)
    assert [(f.measure, f.value, f.ci_low, f.ci_high) for f in found] == [
        ("OR", "0.34", "0.10", "1.20"),
        ("OR", "7.32", "2.42", "22.12"),
    ]


def test_an_estimate_and_its_bounds_in_one_cell_are_read() -> None:
    # the same rows written the other common way, estimate and bounds in one cell
    table = (
        "Effect of sex, age and locality on seropositivity to RVFV in 2010.\n"
        "Species | Level | OR (95% CI) | P-value\n"
        "Goats | Male | 0.34 (0.10–1.20) | 0.094\n"
        "Goats | >12 months | 7.32 [2.42, 22.12] | <0.001"
    )
    assert [(f.measure, f.value, f.ci_low, f.ci_high) for f in find_column_effects(table)] == [
        ("OR", "0.34", "0.10", "1.20"),
        ("OR", "7.32", "2.42", "22.12"),
    ]


def test_near_miss_columns_are_not_read() -> None:
    for table in (
        # a count column before the CI
        "Cases by district.\nDistrict | n | 95% CI\nMocuba | 59 | 0.0, 4.9",
        # a value outside its bounds
        "Seroprevalence.\nDistrict | Seroprevalence (%) | 95% C.I.\nMocuba | 13.8 | 0.0, 4.9",
        # a row of another width than the header's
        "Seroprevalence.\nDistrict | Seroprevalence (%) | 95% C.I.\nMocuba | 9 | 4.1 | 4.1, 13.7",
        # a range column without a CI header
        "Age by group.\nGroup | Median | Range\nA | 45 | 20, 70",
    ):
        assert find_column_effects(table) == [], table


def test_a_table_passage_gives_its_cells_and_its_columns_estimates_once() -> None:
    text = SEROPREVALENCE + "\nRR 1.2 (95% CI 1.1-1.4) for the total"
    found = effects_of_table(text)
    assert [f.value for f in found] == ["39.1", "54.6", "7.6", "21.2", "35.8", "1.2"]
    passage = Passage(
        kind=PassageKind.TABLE, section=["Results"], start=0, end=len(text), text=text
    )
    e = Evidence(
        id="E1",
        content="A serosurvey of goats and sheep.",
        citation=Citation(source="local", id="1", pmid="1"),
        passages=[passage],
    )
    record = extract_study(e)
    assert [x.value for x in record.effects] == ["39.1", "54.6", "7.6", "21.2", "35.8", "1.2"]
    assert record.effects[0].proof.quote == "39.1c | 29.7, 49.5"
    assert record.values_dropped == 0
