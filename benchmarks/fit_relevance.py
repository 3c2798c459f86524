"""Fit the calibrated relevance of screening on the PubMedQA dev questions.

Run: ``.venv/bin/python -m benchmarks.fit_relevance [--fit-from 200] [--fit-to 500] [--write]``.

For each dev question (by default the 300 questions after the first 200, which are kept for the
benchmarks' targets), the local corpus of the 1,000 PubMedQA abstracts is searched with the
question (hybrid BM25 + dense, the top ``--k`` records), the records are put in a fresh evidence
store, and screening's features (:func:`deepcritical.evidence.screening.screening_features`:
cosine similarity to the question, share of its key concepts mentioned) are read for each.
The label is 1 for the abstract the question was written from (the gold PMID), 0 for the
others (the corpus covers unrelated topics). A logistic regression (scikit-learn) fits
P(gold | features); ``partial_at`` is set so that ``--keep`` of the gold abstracts of the fitted
questions are not screened out, ``relevant_at`` is 0.5.

Prints the fitted parameters, the area under the ROC curve and, on the fitted and the held-out
questions, the share of gold abstracts kept and of other abstracts screened out. ``--write``
stores the parameters in ``src/deepcritical/evidence/relevance_calibration.json`` (shipped in
the package). Data: ``../shared/data/pubmedqa``; exits 0 with a message when it is absent.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from benchmarks.pubmedqa_data import DEFAULT_DATA
from deepcritical.corpus.index import LocalCorpus
from deepcritical.evidence.embeddings import DEFAULT_MODEL, Embedder, shared_embedder
from deepcritical.evidence.screening import RelevanceCalibration, screening_features
from deepcritical.evidence.store import EvidenceStore
from deepcritical.models import Screening
from deepcritical.sources.local import hits_to_evidence

CALIBRATION = (
    Path(__file__).resolve().parents[1]
    / "src"
    / "deepcritical"
    / "evidence"
    / "relevance_calibration.json"
)


@dataclass(frozen=True)
class Sample:
    """One (question, record) pair: its features and whether the record is the gold one."""

    question: int
    similarity: float
    coverage: float
    gold: bool


def collect(
    corpus: LocalCorpus,
    embedder: Embedder,
    questions: list[dict[str, str]],
    first: int,
    last: int,
    k: int,
) -> list[Sample]:
    """Samples of dev questions ``first``..``last - 1``: the top ``k`` records of each."""
    samples: list[Sample] = []
    for index in range(first, min(last, len(questions))):
        row = questions[index]
        items = hits_to_evidence(corpus.search(row["question"], k), row["question"])
        store = EvidenceStore(embedder, near_duplicate_threshold=0.999)
        added = store.add(items).added_ids
        features = screening_features(store, row["question"], added)
        for evidence_id, f in features.items():
            pmid = store.require(evidence_id).citation.pmid
            samples.append(Sample(index, f.similarity, f.coverage, pmid == row["pmid"]))
    return samples


def matrix(samples: list[Sample]) -> tuple[np.ndarray, np.ndarray]:
    """Features ``(n, 2)`` (similarity, coverage) and labels ``(n,)``."""
    x = np.array([[s.similarity, s.coverage] for s in samples], dtype=np.float64)
    y = np.array([int(s.gold) for s in samples], dtype=np.int64)
    return x, y


def rates(model: RelevanceCalibration, samples: list[Sample]) -> tuple[float, float, float]:
    """Share of gold records kept (not off-topic), of other records screened out, and of
    questions whose every non-gold record is screened out."""

    def status(s: Sample) -> Screening:
        return model.status(model.score(s.similarity, s.coverage))

    gold = [s for s in samples if s.gold]
    other = [s for s in samples if not s.gold]
    kept = sum(status(s) != Screening.OFF_TOPIC for s in gold) / max(len(gold), 1)
    out = sum(status(s) == Screening.OFF_TOPIC for s in other) / max(len(other), 1)
    by_question: dict[int, bool] = {}
    for s in other:
        by_question[s.question] = by_question.get(s.question, True) and (
            status(s) == Screening.OFF_TOPIC
        )
    clean = sum(by_question.values()) / max(len(by_question), 1)
    return kept, out, clean


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--fit-from", type=int, default=200)
    parser.add_argument("--fit-to", type=int, default=500)
    parser.add_argument("--held-out", type=int, default=200, help="first N questions")
    parser.add_argument("--k", type=int, default=10, help="records per question")
    parser.add_argument("--keep", type=float, default=0.97, help="gold share to keep")
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--corpus", type=Path, help="reuse this imported corpus directory")
    args = parser.parse_args()
    corpus_file, questions_file = args.data / "corpus.jsonl", args.data / "dev_questions.jsonl"
    if not corpus_file.exists() or not questions_file.exists():
        print(f"PubMedQA data not found under {args.data}; nothing to fit")
        return 0
    lines = questions_file.read_text(encoding="utf-8").splitlines()
    questions = [json.loads(line) for line in lines if line]
    embedder = shared_embedder()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        corpus = LocalCorpus(args.corpus or Path(tmp) / "corpus", embedder)
        corpus.add_file(corpus_file)  # a reused corpus adds nothing twice
        print(f"corpus ready in {time.perf_counter() - started:.0f} s")
        started = time.perf_counter()
        fit = collect(corpus, embedder, questions, args.fit_from, args.fit_to, args.k)
        held = collect(corpus, embedder, questions, 0, args.held_out, args.k)
        seconds = time.perf_counter() - started
        print(f"features of {len(fit) + len(held)} records in {seconds:.0f} s")
    x, y = matrix(fit)
    regression = LogisticRegression(C=10.0).fit(x, y)
    probabilities = regression.predict_proba(x)[:, 1]
    gold_probabilities = np.sort(probabilities[y == 1])
    partial_at = float(gold_probabilities[int((1 - args.keep) * len(gold_probabilities))])
    model = RelevanceCalibration(
        intercept=float(regression.intercept_[0]),
        similarity_weight=float(regression.coef_[0][0]),
        coverage_weight=float(regression.coef_[0][1]),
        relevant_at=0.5,
        partial_at=round(min(partial_at, 0.5), 4),
    )
    print(f"fitted on dev questions {args.fit_from}..{args.fit_to - 1}: {len(fit)} records")
    print(f"parameters: {model}")
    print(f"ROC AUC (fitted questions): {roc_auc_score(y, probabilities):.3f}")
    for name, samples in (("fitted", fit), (f"held-out (first {args.held_out})", held)):
        kept, out, clean = rates(model, samples)
        print(
            f"{name:>22}: gold kept {kept:.1%}, other records screened out {out:.1%}, "
            f"questions with no other record kept {clean:.1%}"
        )
    if args.write:
        data = {
            "intercept": round(model.intercept, 4),
            "similarity_weight": round(model.similarity_weight, 4),
            "coverage_weight": round(model.coverage_weight, 4),
            "relevant_at": model.relevant_at,
            "partial_at": model.partial_at,
            "embedding_model": DEFAULT_MODEL,
            "fitted_on": (
                f"PubMedQA dev questions {args.fit_from}..{args.fit_to - 1}, top {args.k} "
                "local-corpus records each (benchmarks/fit_relevance.py)"
            ),
        }
        CALIBRATION.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        print(f"written: {CALIBRATION}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
