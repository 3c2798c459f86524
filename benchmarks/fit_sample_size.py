"""Fit the sample-size model on the dev half of the appraisal hand labels.

Run: ``.venv/bin/python -m benchmarks.fit_sample_size [--write]``.

Every candidate count of each dev-half abstract
(:func:`deepcritical.evidence.sample_size_model.sample_size_candidates`) is labelled 1 when its
value is the label's sample size (``sample_size.value`` of ``benchmarks/appraisal_labels.json``,
compared as numbers), 0 otherwise. A logistic regression (scikit-learn, L2, ``C`` below) fits
P(the candidate is the sample size). An abstract shows its best candidate when that
probability reaches the threshold.

The threshold is chosen by cross-validation on the dev half only: 5 folds by abstract,
repeated with 3 shuffles; each abstract's best candidate and its probability are pooled, and
the threshold is the lowest of 0.50, 0.51, ... 0.99 from which every higher one's pooled
precision (right / shown) reaches ``--precision`` (default 0.975, above the issue's 97%
target to leave a margin for abstracts unlike the dev half's). The final model is fitted on
the whole dev half. The test half is never read here: ``benchmarks/bench_appraisal.py`` reports it.

Prints the cross-validated precision and recall at each threshold near the one chosen.
``--write`` stores the model in ``src/deepcritical/evidence/sample_size_model.json``
(shipped in the package). Data: ``../shared/data/pubmedqa``; exits 0 with a message when it
is absent. About 30 s on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sklearn.feature_extraction import DictVectorizer
from sklearn.linear_model import LogisticRegression

from benchmarks.appraisal_scoring import labelled_sample_size, same_number
from benchmarks.bench_appraisal import abstract_items, load_labels
from benchmarks.pubmedqa_data import DEFAULT_DATA
from deepcritical.evidence.sample_size_model import (
    MODEL_FILE,
    SampleSizeCandidate,
    SampleSizeModel,
    sample_size_candidates,
)

MODEL = Path(__file__).resolve().parents[1] / "src" / "deepcritical" / "evidence" / MODEL_FILE
C = 0.3
"""Inverse L2 strength, chosen by the same cross-validation among 0.1, 0.3 and 1."""
FOLDS, SHUFFLES = 5, 3
THRESHOLDS = [round(0.5 + i / 100, 2) for i in range(50)]
PRUNE = 0.01
"""Coefficients smaller than this (absolute) are not shipped."""


@dataclass(frozen=True)
class Abstract:
    """One dev-half abstract: its PMID, labelled sample size (``None``: none) and candidates."""

    pmid: str
    gold: str | None
    candidates: list[SampleSizeCandidate]

    def targets(self) -> list[int]:
        """1 for each candidate whose value is the labelled sample size, else 0."""
        return [int(same_number(repr(c.value), self.gold)) for c in self.candidates]


def dev_abstracts(corpus_file: Path) -> list[Abstract]:
    """The dev half's labelled abstracts with their candidates."""
    labels = [x for x in load_labels()["labels"] if x["split"] == "dev"]
    items = abstract_items(corpus_file, {x["pmid"] for x in labels})
    return [
        Abstract(
            label["pmid"],
            labelled_sample_size(label),
            sample_size_candidates(items[label["pmid"]].content),
        )
        for label in labels
    ]


def fit(abstracts: list[Abstract], c: float = C) -> SampleSizeModel:
    """A model fitted on ``abstracts`` (threshold 0.5; the caller sets the shipped one)."""
    rows = [x.features for a in abstracts for x in a.candidates]
    y = [t for a in abstracts for t in a.targets()]
    vectorizer = DictVectorizer()
    matrix = vectorizer.fit_transform(rows)
    model = LogisticRegression(C=c, max_iter=5000)
    model.fit(matrix, y)
    names = vectorizer.get_feature_names_out()
    weights = {
        str(n): round(float(w), 4)
        for n, w in zip(names, model.coef_[0], strict=True)
        if abs(w) >= PRUNE
    }
    return SampleSizeModel(weights, float(model.intercept_[0]), 0.5)


@dataclass(frozen=True)
class Decision:
    """One held-out abstract: its labelled size, the best candidate's value and probability."""

    gold: str | None
    value: float | None
    probability: float

    @property
    def right(self) -> bool:
        """The best candidate is the labelled size."""
        return self.value is not None and same_number(repr(self.value), self.gold)


def cross_validated(abstracts: list[Abstract], c: float = C) -> list[Decision]:
    """Each abstract's best candidate when fitted without it: ``FOLDS`` folds, ``SHUFFLES``
    times (so each abstract is decided ``SHUFFLES`` times)."""
    out = []
    for seed in range(SHUFFLES):
        order = list(range(len(abstracts)))
        random.Random(seed).shuffle(order)
        for k in range(FOLDS):
            held = set(order[k::FOLDS])
            model = fit([a for i, a in enumerate(abstracts) if i not in held], c)
            for i in sorted(held):
                a = abstracts[i]
                probs = [model.probability(x.features) for x in a.candidates]
                if not probs:
                    out.append(Decision(a.gold, None, 0.0))
                    continue
                j = int(np.argmax(probs))
                out.append(Decision(a.gold, a.candidates[j].value, probs[j]))
    return out


def curve(decisions: list[Decision]) -> list[tuple[float, int, int, int]]:
    """(threshold, shown, right, labelled) at each of ``THRESHOLDS``."""
    labelled = sum(d.gold is not None for d in decisions)
    out = []
    for t in THRESHOLDS:
        shown = [d for d in decisions if d.value is not None and d.probability >= t]
        out.append((t, len(shown), sum(d.right for d in shown), labelled))
    return out


def choose(points: list[tuple[float, int, int, int]], precision: float) -> float:
    """The lowest threshold from which every higher one's precision reaches ``precision``
    too (so one lucky threshold is not chosen); the highest when none does."""
    chosen = THRESHOLDS[-1]
    for t, shown, right, _ in reversed(points):
        if shown and right / shown < precision:
            break
        chosen = t
    return chosen


def main(argv: list[str] | None = None) -> int:
    """Fit, print the cross-validated curve, and with ``--write`` ship the model."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="PubMedQA directory")
    parser.add_argument("--precision", type=float, default=0.975, help="cross-validated target")
    parser.add_argument("--write", action="store_true", help="ship the fitted model")
    args = parser.parse_args(argv)
    corpus_file = args.data / "corpus.jsonl"
    if not corpus_file.is_file():
        print(f"no PubMedQA data at {args.data}: nothing to fit")
        return 0
    abstracts = dev_abstracts(corpus_file)
    points = curve(cross_validated(abstracts))
    threshold = choose(points, args.precision)
    print(f"dev half: {len(abstracts)} abstracts, {FOLDS}-fold cross-validation x {SHUFFLES}")
    for t, shown, right, labelled in points:
        if abs(t - threshold) <= 0.1 + 1e-9:
            mark = "  <- chosen" if t == threshold else ""
            print(
                f"  threshold {t:.2f}: precision {right}/{shown} = {right / max(shown, 1):.1%};"
                f" recall {right}/{labelled} = {right / labelled:.1%}{mark}"
            )
    model = fit(abstracts)
    print(
        f"{len(model.weights)} weights; threshold {threshold:.2f}"
        f" (precision >= {args.precision:.1%})"
    )
    if args.write:
        data = {
            "description": (
                "Sample-size model fitted by benchmarks/fit_sample_size.py on the dev half of"
                f" benchmarks/appraisal_labels.json (logistic regression, C = {C:g}); threshold:"
                " the lowest from which the cross-validated dev precision reaches"
                f" {args.precision:g}."
            ),
            "intercept": model.intercept,
            "threshold": threshold,
            "weights": dict(sorted(model.weights.items())),
        }
        MODEL.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        print(f"written to {MODEL}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
