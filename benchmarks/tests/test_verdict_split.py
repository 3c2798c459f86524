"""The dev questions' split for the verdict benchmarks (issue 28): once, at random, into a
tuning half and a test half that share no question; the verdict accuracy the answer card shows
is the benchmark's measurement on the test half."""

from __future__ import annotations

import json

from benchmarks.verdict_split import HALVES, SPLIT, half_of
from deepcritical.report import verdict_method as vm


def test_the_dev_questions_are_split_once_into_disjoint_halves() -> None:
    data = json.loads(SPLIT.read_text(encoding="utf-8"))
    tuning, test = half_of("tuning"), half_of("test")
    assert HALVES == ("tuning", "test")
    assert len(tuning) == len(test) == 250
    assert not set(tuning) & set(test)
    assert "random.Random(2811)" in data["description"]


def test_the_shipped_measurement_is_readable_and_consistent() -> None:
    """The figure the answer card shows is the benchmark's own output (written by
    ``bench_pubmedqa --write-accuracy`` on the test half) and holds together."""
    vm.verdict_accuracy.cache_clear()
    accuracy = vm.verdict_accuracy()
    assert accuracy is not None, "verdict_accuracy.json is missing or malformed"
    assert 0 < accuracy.right <= accuracy.stated <= accuracy.questions
    assert accuracy.questions == len(half_of("test"))
    assert "bench_pubmedqa" in accuracy.measured
    assert "test half" in accuracy.measured
