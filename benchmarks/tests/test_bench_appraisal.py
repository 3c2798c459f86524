"""The appraisal benchmark's hand labels and its scoring (precision and recall per field,
against labels; on the PubMedQA corpus in ../shared, skipped when it is absent)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from benchmarks.appraisal_scoring import score_record, total
from benchmarks.bench_appraisal import LABELS
from deepcritical.models import (
    EffectEstimate,
    ExtractedValue,
    StudyDesign,
    StudyRecord,
    TextSpan,
    parse_number,
)

DESIGNS = {d.value for d in StudyDesign}


def test_labels_hold_265_abstracts_and_the_full_texts_split_into_dev_and_test() -> None:
    data = json.loads(LABELS.read_text(encoding="utf-8"))
    labels = data["labels"]
    assert len(labels) >= 265
    assert len({label["pmid"] for label in labels}) == len(labels)
    halves = Counter(label["split"] for label in labels)
    assert set(halves) == {"dev", "test"}
    assert min(halves.values()) >= 250
    assert len(data["full_texts"]) == 6
    for label in [*labels, *data["full_texts"]]:
        assert label["pmid"].isdigit()
        assert label["design"] in DESIGNS
        size = label["sample_size"]
        if size is not None:
            assert (size["written"] is None) == (size["sum_of"] is not None)
            if size["sum_of"] is not None:  # the sum is right
                parts = [parse_number(p) for p in size["sum_of"]]
                assert sum(p or 0 for p in parts) == parse_number(size["value"]), label
        for effect in label["effects"]:
            assert {"measure", "value", "ci_low", "ci_high", "outcome"} <= set(effect)
            assert (effect["ci_low"] is None) == (effect["ci_high"] is None)
    assert sum(label["sample_size"] is None for label in labels) >= 20  # some state none
    assert sum(1 for label in labels for e in label["effects"] if e["ci_low"]) >= 100


def _value(text: str, value: str) -> ExtractedValue:
    start = text.index(value)
    return ExtractedValue(
        value=value, proof=TextSpan(quote=value, start=start, end=start + len(value))
    )


def test_a_verbatim_value_that_is_not_the_label_counts_against_precision() -> None:
    text = "Five controls with HCA and five without were studied."
    record = StudyRecord(sample_size=_value(text, "Five"), design=StudyDesign.COHORT.value)
    label: dict[str, Any] = {
        "pmid": "1",
        "design": StudyDesign.COHORT.value,
        "sample_size": {"value": "48", "written": None, "sum_of": ["Five", "five"]},
        "analysed": None,
        "effects": [],
    }
    scores = score_record(record, label).fields
    assert (scores["sample size"].shown, scores["sample size"].right) == (1, 0)
    assert scores["sample size"].labelled == 1
    assert scores["sample size"].found == 0
    assert (scores["design"].shown, scores["design"].right) == (1, 1)


def test_effects_are_matched_by_value_and_bounds_and_their_outcome_by_its_words() -> None:
    text = "Mortality fell (RR 0.80, 95% CI 0.70 to 0.91); OR 2.0 (95% CI 1.1 to 3.0)."
    span = TextSpan(quote=text, start=0, end=len(text))
    right = EffectEstimate(
        measure="RR",
        value="0.80",
        ci_low="0.70",
        ci_high="0.91",
        proof=span,
        outcome=_value(text, "Mortality"),
    )
    wrong = EffectEstimate(measure="OR", value="2.0", ci_low="1.1", ci_high="3.1", proof=span)
    label: dict[str, Any] = {
        "pmid": "2",
        "design": StudyDesign.OTHER.value,
        "sample_size": None,
        "analysed": None,
        "effects": [
            {
                "measure": "RR",
                "value": "0.8",
                "ci_low": "0.7",
                "ci_high": "0.91",
                "outcome": "all-cause mortality",
            },
            {
                "measure": "OR",
                "value": "2.0",
                "ci_low": "1.1",
                "ci_high": "3.0",
                "outcome": "stroke",
            },
        ],
    }
    scores = total([score_record(StudyRecord(effects=[right, wrong]), label)]).fields
    effect, outcome = scores["effect with CI"], scores["outcome named"]
    assert (effect.shown, effect.right, effect.labelled, effect.found) == (2, 1, 2, 1)
    assert (outcome.shown, outcome.right) == (2, 1)
