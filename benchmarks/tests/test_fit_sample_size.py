"""The shipped sample-size model is what ``benchmarks/fit_sample_size.py`` fits on the dev
half of the appraisal labels (so the JSON in the package can be rebuilt from the labels)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from benchmarks.fit_sample_size import dev_abstracts, fit
from deepcritical.evidence.sample_size_model import MODEL_FILE


@pytest.mark.slow
def test_the_shipped_weights_are_what_the_fit_gives_on_the_dev_half(pubmedqa_dir: Path) -> None:
    shipped = json.loads(
        resources.files("deepcritical.evidence").joinpath(MODEL_FILE).read_text("utf-8")
    )
    refit = fit(dev_abstracts(pubmedqa_dir / "corpus.jsonl"))
    assert refit.intercept == pytest.approx(shipped["intercept"], abs=1e-3)
    weights: dict[str, float] = shipped["weights"]
    assert len(weights) > 1000
    for name in set(refit.weights) & set(weights):
        assert refit.weights[name] == pytest.approx(weights[name], abs=1e-3)
    for name in set(refit.weights) ^ set(weights):  # a weight at the pruning cut may cross it
        assert abs(refit.weights.get(name, weights.get(name, 0.0))) < 0.011
