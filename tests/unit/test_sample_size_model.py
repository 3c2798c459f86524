"""The sample-size model (issue 28): every count is a candidate, the rules' sum of groups is
one too, the best candidate is shown only when its probability reaches the threshold."""

from __future__ import annotations

from deepcritical.evidence.sample_size_model import (
    SampleSizeModel,
    default_model,
    read_sample_size,
    sample_size_candidates,
)

TRIAL = (
    "BACKGROUND: Of 4,000 adults screened in 2010, many were eligible.\n"
    "METHODS: A total of 1,024 patients were randomised to drug or placebo; 96 were excluded "
    "from the analysis.\n"
    "RESULTS: Mortality fell in 61 patients (9%)."
)
GROUPS = (
    "PARTICIPANTS: Five controls with HCA and five age-matched controls without HCA, seven "
    "depressed subjects with HCA and seven without HCA, and 12 subjects with clinically "
    "diagnosed probable AD with HCA and 12 without HCA were studied."
)


def test_every_count_is_a_candidate_with_its_verbatim_span() -> None:
    candidates = sample_size_candidates(TRIAL)
    values = [c.value for c in candidates]
    assert values == [4000, 1024, 96, 61]  # reading order; "2010" is a year, not a count
    for c in candidates:
        (span,) = c.reading.spans
        assert float(TRIAL[span.start : span.end].replace(",", "")) == c.value
    total = candidates[1]
    assert total.features["cue:total_before"] == 1.0
    assert total.features["rules_same"] == 1.0  # the rules read 1,024 as the total
    assert candidates[0].features["section=BACKGROUND"] == 1.0
    assert candidates[3].features["cue:subgroup"] == 1.0


def test_the_rules_sum_of_groups_is_the_last_candidate() -> None:
    candidates = sample_size_candidates(GROUPS)
    summed = candidates[-1]
    assert summed.summed
    assert summed.value == 48
    assert [GROUPS[p.start : p.end] for p in summed.reading.parts] == [
        "Five",
        "five",
        "seven",
        "seven",
        "12",
        "12",
    ]
    assert not any(c.summed for c in candidates[:-1])


def test_the_best_candidate_is_shown_only_above_the_threshold() -> None:
    weights = {"cue:total_before": 6.0, "cue:reject": -4.0, "cue:subgroup": -4.0}
    sure = SampleSizeModel(weights, intercept=-3.0, threshold=0.9)
    reading = read_sample_size(TRIAL, sure)
    assert reading is not None
    assert reading.total is not None
    assert TRIAL[reading.total.start : reading.total.end] == "1,024"
    best = sure.best(TRIAL)
    assert best is not None
    assert 0.9 < best[1] < 1.0
    unsure = SampleSizeModel(weights, intercept=-3.0, threshold=0.99)
    assert read_sample_size(TRIAL, unsure) is None  # "not stated", not a guess
    assert read_sample_size("RESULTS: No numbers here.", sure) is None


def test_the_shipped_model_ranks_the_stated_total_first_and_abstains_on_a_pool() -> None:
    model = default_model()
    assert 0.5 <= model.threshold < 1.0
    reading = read_sample_size(TRIAL)
    assert reading is not None
    assert reading.total is not None
    assert TRIAL[reading.total.start : reading.total.end] == "1,024"
    pool = (
        "METHODS: We identified 667 patients who received lung resection. Of these, 436 with "
        "complete records were studied, and 58 were excluded."
    )
    shown = read_sample_size(pool)
    assert shown is None or pool[shown.spans[0].start : shown.spans[0].end] != "667"
