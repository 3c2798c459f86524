"""Study records read by rules: each reporting pattern, its proof (a verbatim span), near
misses that must not be read, full-text passages, and the verbatim check that drops and
counts unproven values."""

from __future__ import annotations

import pytest

from deepcritical.evidence.proofs import checked_record, locate_quote
from deepcritical.evidence.study_extraction import appraise_items, extract_study
from deepcritical.models import (
    Citation,
    EffectEstimate,
    Evidence,
    ExtractedValue,
    Passage,
    PassageKind,
    StudyRecord,
    TextSpan,
    parse_number,
)


def item(content: str, passages: list[Passage] | None = None) -> Evidence:
    return Evidence(
        id="E1",
        content=content,
        citation=Citation(source="local", id="1", pmid="1"),
        passages=passages or [],
    )


def assert_proven(e: Evidence, record: StudyRecord) -> None:
    """Every value of ``record`` occurs in ``e``'s text at the span its proof names."""
    for v in record.values():
        p = v.proof
        text = e.content if p.passage is None else e.passages[p.passage].text
        assert text[p.start : p.end] == p.quote
        if isinstance(v, EffectEstimate):
            for x in (v.value, v.ci_low, v.ci_high, v.p_value):
                assert x is None or x in p.quote
        else:
            assert v.value in p.quote


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("METHODS: Of the women screened, n = 248 were enrolled.", "248"),
        ("METHODS: We recruited 248 women from antenatal clinics.", "248"),
        ("RESULTS: A total of 1,024 patients were randomised to two arms.", "1,024"),
        ("METHODS: The study population comprised 196 pregnant women.", "196"),
        ("METHODS: A total of 12 537 participants with dysglycaemia took part.", "12 537"),
        ("METHODS: Sixty-seven patients undergoing surgery were allocated.", "Sixty-seven"),
    ],
)
def test_sample_size_patterns_are_read_with_their_span(text: str, value: str) -> None:
    e = item(text)
    record = extract_study(e)
    assert record.sample_size is not None
    assert record.sample_size.value == value
    assert record.n == int(parse_number(value) or 0)
    assert_proven(e, record)


def test_whole_sample_count_beats_a_subgroup_and_background_counts() -> None:
    e = item(
        "BACKGROUND: Stroke affects 15000 people a year.\n\n"
        "METHODS: In all, 61 patients (9%) had pneumonia; a total of 455 patients were "
        "studied."
    )
    record = extract_study(e)
    assert record.sample_size is not None
    assert record.sample_size.value == "455"


def test_near_misses_give_no_sample_size() -> None:
    for text in (
        "RESULTS: Pneumonia occurred in 61 patients (9%).",  # a subgroup
        "METHODS: Data from 2004 were reviewed.",  # a year
        "METHODS: Group A (n = 20) and group B (n = 21) were compared.",  # group sizes
    ):
        assert extract_study(item(text)).sample_size is None, text


@pytest.mark.parametrize(
    ("text", "measure", "value", "low", "high", "p"),
    [
        ("RESULTS: Risk rose (OR 2.4, 95% CI 1.3, 4.6).", "OR", "2.4", "1.3", "4.6", None),
        (
            "RESULTS: Death fell (hazard ratio, 0.45; 95% confidence interval [CI], 0.33 to 0.63).",
            "HR",
            "0.45",
            "0.33",
            "0.63",
            None,
        ),
        (
            "RESULTS: Less pain (RR 0.8; 95% CI 0.6–0.9; p = 0.02).",
            "RR",
            "0.8",
            "0.6",
            "0.9",
            "0.02",
        ),
        (
            "RESULTS: It had an AUC of 0.87 (95% CI: 0.82-0.91).",
            "AUC",
            "0.87",
            "0.82",
            "0.91",
            None,
        ),
        (
            "RESULTS: The test had a sensitivity 92% overall.",
            "sensitivity",
            "92%",
            None,
            None,
            None,
        ),
        (
            "RESULTS: No benefit (95% confidence interval 0.38, 1.49, odds ratio = 0.75).",
            "OR",
            "0.75",
            "0.38",
            "1.49",
            None,
        ),
        (
            "RESULTS: Scores rose by 0.42 mmHg (95% CI 0.32-0.52 mmHg) per step.",
            "estimate",
            "0.42",
            "0.32",
            "0.52",
            None,
        ),
        # the forms of issue 28's second pass, each as a real abstract writes it
        (
            "RESULTS: The lowest grade had 3.12 times the mortality of the highest grade "
            "(95% confidence interval 2.4 to 4.1).",
            "estimate",
            "3.12",
            "2.4",
            "4.1",
            None,
        ),
        (
            "RESULTS: After retirement grade predicted mortality less (rate ratio 1.86; 1.6 to "
            "2.2).",
            "IRR",
            "1.86",
            "1.6",
            "2.2",
            None,
        ),
        (
            "RESULTS: Tumour grade was the only prognostic factor (HR = 6, 95%CI of HR = "
            "1.2-34.2).",
            "HR",
            "6",
            "1.2",
            "34.2",
            None,
        ),
        (
            "RESULTS: Visits were accepted more often (adjusted OR = 1.5 (CI95%: 1.1-2.0)).",
            "OR",
            "1.5",
            "1.1",
            "2.0",
            None,
        ),
        (
            "RESULTS: Agreement was moderate, κ = 0.39 CI [0.24; 0.57].",
            "kappa",
            "0.39",
            "0.24",
            "0.57",
            None,
        ),
        (
            "RESULTS: Alignment was closer to neutral (mean=2.8°; 95% CI=2.4°, 3.2°).",
            "estimate",
            "2.8",
            "2.4",
            "3.2",
            None,
        ),
        (
            "RESULTS: Imaging fell by -9.1 percentage points for ultrasound (95% CI: -17.2, -1.1).",
            "estimate",
            "-9.1",
            "-17.2",
            "-1.1",
            None,
        ),
        (
            "RESULTS: Hospital deaths were likelier "
            "(Proportion ratio(PR)1.12[95%CI1.08-1.15]p<0.001).",
            "PR",
            "1.12",
            "1.08",
            "1.15",
            None,  # a p value glued to the bracket is not read
        ),
        (
            "RESULTS: Regression coefficients (95% CI) were 120 (47-194) for one plate.",
            "beta",
            "120",
            "47",
            "194",
            None,
        ),
        # issue 28's third pass
        (
            "RESULTS: Hospice deaths were less likely for those born in 'other' geographical "
            "regions (PR0.90[95% 0.82-0.98]p<0.001).",
            "PR",
            "0.90",
            "0.82",
            "0.98",
            None,
        ),
        (
            "RESULTS: The cumulative dose of regular insulin showed a positive and significant "
            "relation with CIMT: increase of 21 microm in CIMT per S.D. of insulin use (95% CI: "
            "8-35 adjusted for gender and age).",
            "estimate",
            "21",
            "8",
            "35",
            None,
        ),
    ],
)
def test_effect_patterns_are_read_with_their_span(
    text: str, measure: str, value: str, low: str | None, high: str | None, p: str | None
) -> None:
    e = item(text)
    record = extract_study(e)
    assert record.effects, text
    effect = record.effects[0]
    assert (effect.measure, effect.value, effect.ci_low, effect.ci_high, effect.p_value) == (
        measure,
        value,
        low,
        high,
        p,
    )
    assert_proven(e, record)


@pytest.mark.parametrize(
    ("text", "value", "low", "high"),
    [
        # the Lancet's middle-dot decimal point
        (
            "RESULTS: Death fell (hazard ratio 0\u00b775, 95% CI 0\u00b762\u20130\u00b791).",
            "0\u00b775",
            "0\u00b762",
            "0\u00b791",
        ),
        # Unicode hyphens between the bounds (PubMed XML keeps U+2010 and U+2011)
        ("RESULTS: Risk rose (odds ratio 1.52, 95% CI 1.21\u20101.90).", "1.52", "1.21", "1.90"),
        ("RESULTS: Risk rose (odds ratio 1.52, 95% CI 1.21\u20111.90).", "1.52", "1.21", "1.90"),
        ("RESULTS: Risk rose (OR 1.52, 95%-CI 1.21-1.90).", "1.52", "1.21", "1.90"),
        ("RESULTS: Risk rose (OR 1.7, CI95 1.2-2.4).", "1.7", "1.2", "2.4"),
        (
            "RESULTS: The estimate was 0.30 (95% credible interval 0.10 to 0.50).",
            "0.30",
            "0.10",
            "0.50",
        ),
        (
            "RESULTS: Risk rose (odds ratio 2.0, 95% confidence interval from 1.3 to 3.1).",
            "2.0",
            "1.3",
            "3.1",
        ),
        (
            "RESULTS: Risk rose (odds ratio 1.52, 95% CI between 1.21 and 1.90).",
            "1.52",
            "1.21",
            "1.90",
        ),
        (
            "RESULTS: The odds ratio was 1.52, with a 95% CI ranging from 1.21 to 1.90.",
            "1.52",
            "1.21",
            "1.90",
        ),
        # a p value before the CI
        ("RESULTS: The odds ratio was 1.52 (p = 0.01; 95% CI 1.21-1.90).", "1.52", "1.21", "1.90"),
        # a rate with its denominator before its CI
        ("RESULTS: The rate was 3.2 per 1000 person-years (95% CI 2.8-3.7).", "3.2", "2.8", "3.7"),
        # "(95% CI)" after a summary's name, and "; 95% CI" after bare bounds
        ("RESULTS: The mean (95% CI) was 3.4 (2.1-4.7).", "3.4", "2.1", "4.7"),
        ("RESULTS: The pooled RR was 0.85 (0.76-0.95; 95% CI).", "0.85", "0.76", "0.95"),
    ],
)
def test_common_reporting_forms_give_the_estimate_with_its_ci(
    text: str, value: str, low: str, high: str
) -> None:
    e = item(text)
    record = extract_study(e)
    found = [(x.value, x.ci_low, x.ci_high) for x in record.effects]
    assert (value, low, high) in found, (text, found)
    assert_proven(e, record)


def test_a_change_names_what_it_changes_as_its_outcome() -> None:
    record = extract_study(
        item(
            "RESULTS: The cumulative dose of regular insulin showed a positive relation with "
            "CIMT: increase of 21 microm in CIMT per S.D. of insulin use (95% CI: 8-35)."
        )
    )
    outcome = record.effects[0].outcome
    assert outcome is not None
    assert outcome.value == "CIMT per S.D. of insulin use"


def test_values_in_the_nested_brackets_of_their_header_are_read_in_later_sentences() -> None:
    text = (
        "RESULTS: By use of the MIXED group as reference, the risk of death (risk ratio [95% "
        "CI]) was 1.12 (0.94-1.34) in the CARD-only group, 1.26 (1.15-1.38) in the GM-only "
        "group, and 1.48 (1.28-1.72) in the no-GM/CARD group. Cohort-2 results were consistent "
        "with cohort 1 for most covariates, and significant survival differences were again "
        "found between GM-only and the MIXED group (1.25 [1.14-1.37])."
    )
    e = item(text)
    record = extract_study(e)
    assert [(x.measure, x.value, x.ci_low, x.ci_high) for x in record.effects] == [
        ("RR", "1.12", "0.94", "1.34"),
        ("RR", "1.26", "1.15", "1.38"),
        ("RR", "1.48", "1.28", "1.72"),
        ("RR", "1.25", "1.14", "1.37"),
    ]
    assert_proven(e, record)
    # written in other brackets than its header's, a later value is not read
    other = text.replace("(1.25 [1.14-1.37])", "1.25 (1.14-1.37)")
    assert len(extract_study(item(other)).effects) == 3


@pytest.mark.parametrize(
    ("text", "values"),
    [
        (
            "RESULTS: Before evacuation the serum inhibin concentrations (median 8.3 U/ml; 95% "
            "confidence interval 2.4 to 34.5) were significantly greater than in 21 normal women "
            "at the same stage of pregnancy (2.8 U/ml; 2.1 to 3.6), and inhibin in molar tissue "
            "was also present in high concentrations (578 U/ml cytosol; 158 to 1162).",
            [("8.3", "2.4", "34.5"), ("2.8", "2.1", "3.6"), ("578", "158", "1162")],
        ),
        (
            "RESULTS: Compared with nondrinkers, an inverse trend in risk was observed when "
            "alcohol was consumed during meals only (for>or =3 drinks per day: OR = 0.50; 95% CI "
            "= 0.30-0.82). In contrast, no consistent trend in risk was found for subjects "
            "drinking outside of meals (for>or =3 drinks per day: 0.98; 0.49-1.96).",
            [("0.50", "0.30", "0.82"), ("0.98", "0.49", "1.96")],
        ),
    ],
)
def test_values_written_in_the_shape_of_a_first_estimate_share_its_ci_reading(
    text: str, values: list[tuple[str, str, str]]
) -> None:
    e = item(text)
    record = extract_study(e)
    assert [(x.value, x.ci_low, x.ci_high) for x in record.effects] == values
    assert len({x.measure for x in record.effects}) == 1
    assert_proven(e, record)


@pytest.mark.parametrize(
    ("text", "values"),
    [
        # no estimate with its CI named sets the shape
        ("RESULTS: Women were older (45 years; 20 to 70) than men (41 years; 18 to 66).", []),
        # the first estimate joins its bounds with "to", the later bracket with a dash
        (
            "RESULTS: Levels were high (median 8.3 U/ml; 95% CI 2.4 to 34.5) and fell in 21 "
            "women (2.8 U/ml; 2.1-3.6).",
            ["8.3"],
        ),
        # the first estimate gives its CI after a comma, not ";"
        (
            "RESULTS: Levels were high (median 8.3 U/ml, 95% CI 2.4 to 34.5) and fell in 21 "
            "women (2.8 U/ml; 2.1 to 3.6).",
            ["8.3"],
        ),
    ],
)
def test_a_bracket_of_value_and_bounds_needs_a_first_estimate_of_its_shape(
    text: str, values: list[str]
) -> None:
    assert [x.value for x in extract_study(item(text)).effects] == values


def test_near_miss_effects_are_not_read() -> None:
    for text in (
        "RESULTS: Patients with OR without diabetes were seen in 2004.",  # "OR" as a word
        "RESULTS: The 95% CI was not reported for the 12 outcomes.",  # no estimate
        "RESULTS: Pain was 3 times a day for 12 weeks.",  # "times" without a CI
        "RESULTS: The difference was 0.49 mmHg (95% CI 3.71-2.71).",  # outside its own CI
    ):
        assert extract_study(item(text)).effects == [], text


def test_labelled_sections_give_population_setting_outcome_and_cues() -> None:
    text = (
        "DESIGN: Double-blind, randomized, placebo-controlled trial at a single centre.\n\n"
        "SETTING: University Level I trauma center.\n\n"
        "PARTICIPANTS: Adults over 55 years with hip fractures.\n\n"
        "INTERVENTION: Intramedullary nail.\n\n"
        "MAIN OUTCOME MEASURES: Pain and mobility at one year.\n\n"
        "RESULTS: Median follow-up was 14 months; the effect was dose-dependent."
    )
    e = item(text)
    record = extract_study(e)
    assert record.setting is not None
    assert record.setting.value.startswith("University Level I")
    assert record.population is not None
    assert "hip fractures" in record.population.value
    assert record.intervention is not None
    assert record.intervention.value.startswith("Intra")
    assert record.outcomes
    assert record.outcomes[0].value.startswith("Pain and mobility")
    assert record.follow_up is not None
    assert record.follow_up.value == "14 months"
    for cue in ("randomised", "blinded", "single_centre", "dose_response"):
        assert getattr(record, cue) is not None, cue
    assert_proven(e, record)


def test_negated_cues_do_not_count() -> None:
    record = extract_study(
        item(
            "METHODS: A non-randomized, open study; participants were randomly selected. "
            "RESULTS: There was no dose-response."
        )
    )
    assert record.randomised is None
    assert record.dose_response is None


def test_randomised_to_gives_intervention_and_comparator() -> None:
    record = extract_study(
        item("METHODS: 134 women were randomized to metformin or placebo before IVF.")
    )
    assert record.intervention is not None
    assert record.intervention.value == "metformin"
    assert record.comparator is not None
    assert record.comparator.value == "placebo before IVF"


def passages_of(*parts: tuple[PassageKind, str, str]) -> list[Passage]:
    """Passages with offsets as in a full text (joined by a blank line)."""
    out, at = [], 0
    for kind, section, text in parts:
        label = "Table 2" if kind is PassageKind.TABLE else ""
        out.append(
            Passage(
                kind=kind, section=[section], start=at, end=at + len(text), text=text, label=label
            )
        )
        at += len(text) + 2
    return out


def test_full_text_results_passages_and_tables_are_read() -> None:
    passages = passages_of(
        (PassageKind.PARAGRAPH, "Introduction", "Earlier trials: OR 9.9 in 5."),
        (PassageKind.PARAGRAPH, "Results", "Mortality was lower (HR 0.71, 95% CI 0.64-0.79)."),
        (PassageKind.TABLE, "Results", "Table 2 RR 1.2 (95% CI 1.1-1.4)"),
    )
    e = item("A study of 300 patients with sepsis.", passages)
    record = extract_study(e)
    assert record.full_text
    assert [(x.measure, x.value) for x in record.effects] == [("HR", "0.71"), ("RR", "1.2")]
    assert record.effects[0].proof.passage == 1
    assert record.effects[0].proof.where == "Results, paragraph 1"
    assert_proven(e, record)


def test_unproven_values_are_dropped_and_counted() -> None:
    e = item("RESULTS: 248 women were enrolled (OR 2.4, 95% CI 1.3-4.6).")
    good = extract_study(e)
    invented = good.model_copy(
        update={
            "setting": ExtractedValue(
                value="Oslo", proof=TextSpan(quote="in Oslo", start=0, end=7)
            ),
            "effects": [
                *good.effects,
                EffectEstimate(
                    measure="HR",
                    value="0.5",
                    ci_low="0.3",
                    ci_high="0.7",
                    proof=TextSpan(quote="HR 0.5 (0.3-0.7)", start=10, end=26),
                ),
            ],
        }
    )
    checked = checked_record(invented, e)
    assert checked.setting is None
    assert [x.value for x in checked.effects] == ["2.4"]
    assert checked.values_dropped == good.values_dropped + 2
    assert checked.sample_size == good.sample_size  # proven values are kept


def test_a_value_outside_its_quote_is_dropped() -> None:
    e = item("RESULTS: 248 women were enrolled.")
    record = extract_study(e)
    assert record.sample_size is not None
    forged = record.model_copy(
        update={"sample_size": record.sample_size.model_copy(update={"value": "2480"})}
    )
    assert checked_record(forged, e).sample_size is None
    assert checked_record(forged, e).values_dropped == 1


def test_locate_quote_finds_text_with_other_white_space_only() -> None:
    e = item("RESULTS: The odds ratio\nwas 2.4 (95% CI 1.3-4.6).")
    found = locate_quote(e, "odds ratio was 2.4")
    assert found is not None
    assert found.quote == "odds ratio\nwas 2.4"
    assert locate_quote(e, "Odds Ratio was 2.4") is None  # case matters
    assert locate_quote(e, "odds ratio was 3.1") is None


def test_appraise_items_reads_new_items_and_again_after_a_full_text() -> None:
    e = item("RESULTS: 248 women were enrolled.")
    assert appraise_items([e]) == 1
    assert e.study is not None
    assert appraise_items([e]) == 0
    e.passages = passages_of((PassageKind.PARAGRAPH, "Results", "OR 2.0 (1.1-3.0)"))
    assert appraise_items([e]) == 1
    assert e.study.full_text


def test_text_span_offsets_must_match_the_quote() -> None:
    with pytest.raises(ValueError, match="do not span"):
        TextSpan(quote="abc", start=0, end=2)
