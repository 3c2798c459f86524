"""Retrieval benchmark of the local corpus on PubMedQA: BM25 vs dense vs hybrid (RRF).

Run: ``.venv/bin/python -m benchmarks.retrieval [--data DIR] [--questions N]``.

Data: ``../shared/data/pubmedqa`` (``corpus.jsonl``: 1000 PubMedQA abstracts without titles;
``dev_questions.jsonl``: 500 questions, each with the PMID of the abstract it was written
from; PubMedQA, Jin et al. 2019, MIT licence). Exits 0 with a message when the data is absent.

Prints: the time to load all-MiniLM-L6-v2, to index the corpus (embedding + Chroma + BM25)
into a temporary directory, and to reopen it; then, after one untimed warm-up pass over the
questions, per mode: query latency (mean, p50, p95 in milliseconds, including the query
embedding for dense and hybrid), recall@1/5/10 of the gold PMID and MRR@10 (reciprocal rank
of the gold PMID in the top 10, 0 when absent). Timings depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.offline import use_offline_environment
from benchmarks.pubmedqa_data import DEFAULT_DATA, pubmedqa_files
from deepcritical.corpus.hybrid import SearchMode
from deepcritical.corpus.index import LocalCorpus
from deepcritical.evidence.embeddings import shared_embedder

CUTOFFS = (1, 5, 10)
MODES: tuple[SearchMode, ...] = ("bm25", "dense", "hybrid")


def load_questions(path: Path, limit: int | None) -> list[tuple[str, str]]:
    """``(question, gold pmid)`` pairs from a PubMedQA dev file (first ``limit`` if given)."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    pairs = [(str(r["question"]), str(r["pmid"])) for r in rows]
    return pairs[:limit] if limit else pairs


def evaluate(
    corpus: LocalCorpus, questions: list[tuple[str, str]], mode: SearchMode
) -> dict[str, float]:
    """Recall@1/5/10, MRR@10 and latency (ms) of one search mode over ``questions``."""
    hits = dict.fromkeys(CUTOFFS, 0)
    reciprocal = 0.0
    latencies: list[float] = []
    for question, gold in questions:
        start = time.perf_counter()
        pmids = [h.article.pmid for h in corpus.search(question, max(CUTOFFS), mode=mode)]
        latencies.append((time.perf_counter() - start) * 1000)
        if gold in pmids:
            rank = pmids.index(gold) + 1
            reciprocal += 1 / rank
            for k in CUTOFFS:
                hits[k] += rank <= k
    n = len(questions)
    latencies.sort()
    out = {f"recall@{k}": hits[k] / n for k in CUTOFFS}
    out["mrr@10"] = reciprocal / n
    out["ms_mean"] = statistics.fmean(latencies)
    out["ms_p50"] = latencies[n // 2]
    out["ms_p95"] = latencies[min(n - 1, int(n * 0.95))]
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the results; returns the process exit code."""
    use_offline_environment()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="PubMedQA directory")
    parser.add_argument("--questions", type=int, default=None, help="use the first N only")
    args = parser.parse_args(argv)
    files = pubmedqa_files(args.data)
    if files is None:
        return 0
    corpus_file, questions_file = files
    questions = load_questions(questions_file, args.questions)

    embedder = shared_embedder()
    start = time.perf_counter()
    embedder.embed(["warm-up"])
    print(f"model load: {time.perf_counter() - start:.1f} s")

    with tempfile.TemporaryDirectory(prefix="dc-bench-") as tmp:
        directory = Path(tmp) / "corpus"
        start = time.perf_counter()
        result = LocalCorpus(directory, embedder).add_file(corpus_file)
        print(
            f"index: {result.added} abstracts in {time.perf_counter() - start:.1f} s "
            "(embedding + Chroma + BM25)"
        )
        start = time.perf_counter()
        corpus = LocalCorpus.open(directory, embedder)
        corpus.search("warm-up query", 1)
        print(f"reopen + first search: {time.perf_counter() - start:.2f} s")
        # torch runs slowly the first time it meets an input shape (one per query length):
        # one untimed pass so that every mode is timed warm, whichever runs first
        start = time.perf_counter()
        for question, _ in questions:
            corpus.search(question, max(CUTOFFS))
        print(f"warm-up pass (untimed in the table): {time.perf_counter() - start:.1f} s")

        print(f"\n{len(questions)} questions, gold = the abstract each question came from")
        header = f"{'mode':<8}" + "".join(f"{'R@' + str(k):>8}" for k in CUTOFFS)
        print(header + f"{'MRR@10':>8}{'ms mean':>9}{'p50':>7}{'p95':>7}")
        for mode in MODES:
            m = evaluate(corpus, questions, mode)
            print(
                f"{mode:<8}"
                + "".join(f"{m[f'recall@{k}']:>8.3f}" for k in CUTOFFS)
                + f"{m['mrr@10']:>8.3f}{m['ms_mean']:>9.1f}{m['ms_p50']:>7.1f}{m['ms_p95']:>7.1f}"
            )
        corpus.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
