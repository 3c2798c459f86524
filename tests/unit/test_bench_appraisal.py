"""The appraisal benchmark's hand labels and its extraction figures (on the PubMedQA corpus in
../shared; skipped when it is absent)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.bench_appraisal import LABELS, extraction_figures
from benchmarks.pubmedqa_data import DEFAULT_DATA


def test_labels_are_at_least_60_abstracts_with_values_as_written() -> None:
    data = json.loads(LABELS.read_text(encoding="utf-8"))
    labels = data["labels"]
    assert len(labels) >= 60
    assert len({label["pmid"] for label in labels}) == len(labels)
    assert set(data["rules"]) == {"sample_size", "primary_effect"}
    for label in labels:
        assert label["pmid"].isdigit()
        effect = label["effect"]
        if effect is not None:
            assert set(effect) == {"measure", "value", "ci_low", "ci_high"}
    assert sum(label["sample_size"] is None for label in labels) >= 5  # some report none
    assert sum(label["effect"] is None for label in labels) >= 5


def test_extraction_meets_the_targets_on_the_labels() -> None:
    corpus = Path(DEFAULT_DATA) / "corpus.jsonl"
    if not corpus.is_file():
        pytest.skip("../shared/data/pubmedqa is absent")
    f = extraction_figures(corpus)
    assert f["verbatim"] == f["shown"] > 0  # precision 100%
    n_hit, n_total = f["n"]
    e_hit, e_total = f["effect"]
    assert n_hit / n_total >= 0.85
    assert e_hit / e_total >= 0.80
