"""Automated GRADE-style certainty: the starting level from the design, each downgrade
(risk of bias, inconsistency, indirectness, imprecision by size and by CI), each upgrade
(large effect, dose-response), and the level's wording."""

from __future__ import annotations

from deepcritical.evidence.certainty import OPTIMAL_INFORMATION_SIZE, rate_certainty
from deepcritical.evidence.sample_size import find_sample_size
from deepcritical.evidence.study_extraction import extract_study
from deepcritical.models import (
    CERTAINTY_LABEL,
    CertaintyLevel,
    Citation,
    Evidence,
    Screening,
    Stance,
)

RCT = ["Randomized Controlled Trial"]
COHORT = ["Observational Study"]


def ev(
    n: int,
    text: str,
    types: list[str] | None = None,
    *,
    screening: Screening | None = Screening.RELEVANT,
    stance: Stance | None = None,
) -> Evidence:
    return Evidence(
        id=f"E{n}",
        content=text,
        citation=Citation(source="pubmed", id=str(n), pmid=str(n), title=f"Study {n}"),
        publication_types=types or [],
        screening=screening,
        stance=stance,
    )


GOOD_RCT = (
    "METHODS: In this double-blind multicentre trial, 900 adults were randomized to drug or "
    "placebo.\n\nRESULTS: Death fell (RR 0.80, 95% CI 0.70-0.90)."
)


def test_randomised_trials_without_problems_are_high() -> None:
    c = rate_certainty([ev(1, GOOD_RCT, RCT)])
    assert c is not None
    assert (c.level, c.start, c.basis, c.downgrades) == (
        CertaintyLevel.HIGH,
        CertaintyLevel.HIGH,
        "randomised trials",
        [],
    )
    assert c.total_n == 900
    assert c.summary() == "High: randomised trials"
    assert c.line().startswith(f"Certainty ({CERTAINTY_LABEL}): High")


def test_observational_starts_low_and_imprecision_names_the_total_n() -> None:
    text = "METHODS: A cohort study of 84 patients.\n\nRESULTS: Risk rose (HR 1.3, 95% CI 1.1-1.6)."
    c = rate_certainty([ev(1, text, COHORT)])
    assert c is not None
    assert c.summary() == "Very low: observational; imprecision, total n = 84 (84 in PMID 1)"
    assert c.total_n == 84 < OPTIMAL_INFORMATION_SIZE


def test_risk_of_bias_proxies_downgrade_a_trial() -> None:
    text = (
        "METHODS: At a single centre, 40 adults were randomized to drug or placebo.\n\n"
        "RESULTS: Pain fell (MD -1.2, 95% CI -2.0 to -0.4)."
    )
    c = rate_certainty([ev(1, text, RCT)])
    assert c is not None
    assert c.downgrades[0] == (
        "risk of bias (blinding not stated, single centre, small n = 40 in PMID 1)"
    )
    assert c.level is CertaintyLevel.LOW  # risk of bias + imprecision (n = 40)


def test_opposite_stances_downgrade_for_inconsistency() -> None:
    items = [ev(1, GOOD_RCT, RCT), ev(2, GOOD_RCT.replace("900", "800"), RCT)]
    c = rate_certainty(items, supporting=["E1"], contradicting=["E2"])
    assert c is not None
    assert c.downgrades == ["inconsistency (1 supporting: PMID 1; 1 contradicting: PMID 2)"]
    assert c.level is CertaintyLevel.MODERATE
    by_stance = rate_certainty(
        [
            ev(1, GOOD_RCT, RCT, stance=Stance.SUPPORTS),
            ev(2, GOOD_RCT, RCT, stance=Stance.CONTRADICTS),
        ]
    )
    assert by_stance is not None
    assert by_stance.downgrades[0].startswith("inconsistency")


def test_partial_matches_downgrade_for_indirectness() -> None:
    c = rate_certainty([ev(1, GOOD_RCT, RCT, screening=Screening.PARTIAL)])
    assert c is not None
    assert c.downgrades == ["indirectness (1 of 1 only partly match the question: PMID 1)"]


def test_a_ci_crossing_no_effect_is_imprecise_when_no_size_is_stated() -> None:
    text = "RESULTS: In a double-blind randomized trial, OR 0.9 (95% CI 0.7-1.2)."
    c = rate_certainty([ev(1, text, RCT)])
    assert c is not None
    assert c.downgrades == [
        "imprecision, 95% CI crosses no effect (OR 0.9 (95% CI 0.7 to 1.2) in PMID 1)"
    ]
    assert c.notes == ["total n not stated for PMID 1: no size-based downgrade"]
    difference = rate_certainty(
        [ev(2, "RESULTS: A double-blind randomized trial: MD 0.3 (95% CI -0.1 to 0.6).", RCT)]
    )
    assert difference is not None
    assert difference.downgrades[0].startswith("imprecision, 95% CI crosses no effect (MD 0.3")


def test_large_effect_and_dose_response_upgrade_observational_evidence() -> None:
    text = (
        "METHODS: A cohort of 5000 workers.\n\nRESULTS: Risk tripled (OR 3.1, 95% CI 2.2-4.3) "
        "and the association was dose-dependent."
    )
    c = rate_certainty([ev(1, text, COHORT)])
    assert c is not None
    assert c.upgrades == [
        "large effect (OR 3.1 (95% CI 2.2 to 4.3) in PMID 1)",
        'dose-response ("dose-dependent" in PMID 1)',
    ]
    assert c.level is CertaintyLevel.HIGH
    assert "upgraded: large effect (OR 3.1 (95% CI 2.2 to 4.3) in PMID 1)" in c.summary()


def test_a_large_effect_whose_ci_crosses_one_does_not_upgrade() -> None:
    text = "METHODS: A cohort of 5000 workers.\n\nRESULTS: OR 2.5 (95% CI 0.9-6.0)."
    c = rate_certainty([ev(1, text, COHORT)])
    assert c is not None
    assert c.upgrades == []
    assert c.level is CertaintyLevel.LOW


def test_the_best_design_is_rated_and_off_topic_items_are_left_out() -> None:
    items = [
        ev(1, GOOD_RCT, RCT),
        ev(2, "METHODS: A cohort of 12 patients.", COHORT),
        ev(3, "A cohort of 9 patients.", COHORT, screening=Screening.OFF_TOPIC),
    ]
    c = rate_certainty(items)
    assert c is not None
    assert c.level is CertaintyLevel.HIGH
    assert c.total_n == 900
    assert c.evidence_ids == ["E1", "E2"]
    assert rate_certainty([items[2]]) is None
    assert rate_certainty([]) is None


def test_case_reports_start_very_low_and_levels_do_not_go_below() -> None:
    text = "We report a case of a 45-year-old woman at our hospital."
    c = rate_certainty(
        [ev(1, text, ["Case Reports"], screening=Screening.PARTIAL)],
    )
    assert c is not None
    assert c.start is CertaintyLevel.VERY_LOW
    assert c.level is CertaintyLevel.VERY_LOW
    assert c.basis == "case reports, preclinical or unrecognised designs"


def test_no_size_based_downgrade_without_a_stated_total_n() -> None:
    """Issue 28: a count that is not the whole sample is not read, so certainty makes no
    size-based downgrade and says the total n was not stated (real corpus wording, PMID
    9444542: group sizes only, whose sum, 48, is read as the sample; and a trial whose size is
    not given)."""
    groups = (
        "PARTICIPANTS: Five controls with HCA and five age-matched controls without HCA, seven "
        "depressed subjects with HCA and seven without HCA, and 12 subjects with clinically "
        "diagnosed probable AD with HCA and 12 without HCA were studied."
    )
    grouped = ev(1, groups, COHORT)
    grouped.study = extract_study(grouped, read_size=find_sample_size)  # the rules' sum
    c = rate_certainty([grouped])
    assert c is not None
    assert c.total_n == 48
    assert "small n = 48 in PMID 1" in c.summary()  # never "small n = 5"
    assert "total n = 48 (48 in PMID 1)" in c.summary()
    unstated = "METHODS: Women were randomized to drug or placebo in a double-blind trial."
    u = rate_certainty([ev(2, unstated, RCT), ev(3, GOOD_RCT, RCT)])
    assert u is not None
    assert u.total_n is None
    assert not any("total n" in d or "small n" in d for d in u.downgrades)
    assert u.notes == ["total n not stated for PMID 2: no size-based downgrade"]
    assert "total n not stated for PMID 2" in u.summary()
