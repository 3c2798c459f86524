"""Import throughput of the local corpus, torch fp32 vs int8 ONNX, and their retrieval quality.

Run: ``PYTHONPATH=. python -u -m benchmarks.bench_import [--data DIR] [--work-dir DIR]
[--questions N] [--backends torch,onnx-int8]``.

Data: ``../shared/data/pubmedqa`` (``corpus.jsonl``: 1,000 PubMedQA abstracts;
``dev_questions.jsonl``: 500 questions with the PMID of their abstract; see
:mod:`benchmarks.retrieval`). Exits 0 with a message when the data is absent.

For each embedding backend (:func:`deepcritical.evidence.onnx_embeddings.backend_embedder`):
the time to load the model (the int8 export is made once and cached; a first run includes
it), then two imports through :meth:`LocalCorpus.add_file` (what ``deepcritical corpus add``
runs) into fresh directories under ``--work-dir``: the first 100 abstracts and all 1,000.
Throughput = 900 / (t1000 - t100) abstracts per second (fixed costs cancel out). Then the
retrieval figures of :mod:`benchmarks.retrieval` (recall@1/5/10, MRR@10, per search mode) on
the 1,000-abstract corpus. With both backends: the cosine between each text's fp32 and int8
vectors, and the change int8 makes to question-to-abstract similarities (what the run's
screening thresholds read; they stay on torch). Timings depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.offline import use_offline_environment
from benchmarks.pubmedqa_data import DEFAULT_DATA, pubmedqa_files
from benchmarks.retrieval import CUTOFFS, MODES, evaluate, load_questions
from deepcritical.config import EmbeddingBackend
from deepcritical.corpus.index import LocalCorpus
from deepcritical.corpus.readers import read_corpus_file
from deepcritical.corpus.text import index_text
from deepcritical.evidence.embeddings import DEFAULT_MODEL, Embedder, embedder_name
from deepcritical.evidence.onnx_embeddings import backend_embedder

TARGET_RATE = 100.0  # abstracts per second, issue 17, on a 2-core machine
TARGET_RECALL_GAP = 0.01  # recall@10 within 1 point of torch
SMALL = 100


def timed_import(directory: Path, source: Path, embedder: Embedder) -> tuple[int, float]:
    """``(abstracts added, seconds)`` of importing ``source`` into a fresh ``directory``."""
    shutil.rmtree(directory, ignore_errors=True)
    start = time.perf_counter()
    with LocalCorpus(directory, embedder) as corpus:
        added = corpus.add_file(source).added
    return added, time.perf_counter() - start


def measure(
    backend: EmbeddingBackend, work: Path, corpus_file: Path, questions: list[tuple[str, str]]
) -> tuple[Embedder, dict[str, float]]:
    """Import rate and retrieval figures of one backend (printed as they come)."""
    start = time.perf_counter()
    embedder = backend_embedder(DEFAULT_MODEL, backend)
    embedder.embed(["warm-up"])
    print(f"\n[{backend}] {embedder_name(embedder)}: load {time.perf_counter() - start:.1f} s")
    small = work / f"first-{SMALL}.jsonl"
    n_small, t_small = timed_import(work / f"{backend}-{SMALL}", small, embedder)
    directory = work / f"{backend}-all"
    n_all, t_all = timed_import(directory, corpus_file, embedder)
    rate = (n_all - n_small) / (t_all - t_small)
    print(f"  import {n_small}: {t_small:.1f} s; import {n_all}: {t_all:.1f} s; {rate:.1f}/s")
    figures = {"rate": rate}
    with LocalCorpus.open(directory, embedder) as corpus:
        for question, _ in questions:  # untimed warm-up, as benchmarks.retrieval does
            corpus.search(question, max(CUTOFFS))
        for mode in MODES:
            for key, value in evaluate(corpus, questions, mode).items():
                figures[f"{mode} {key}"] = value
    return embedder, figures


def print_table(results: dict[str, dict[str, float]]) -> None:
    """Backends side by side, each figure next to its target."""
    names = list(results)
    print("\n" + f"{'figure':<22}" + "".join(f"{n:>12}" for n in names) + "  target")
    rate_row = "".join(f"{results[n]['rate']:>12.1f}" for n in names)
    fastest = max(results[n]["rate"] for n in names)
    status = "met" if fastest >= TARGET_RATE else "MISSED"
    print(f"{'import abstracts/s':<22}{rate_row}  >= {TARGET_RATE:.0f} on 2 cores: {status}")
    for mode in MODES:
        for key in [f"recall@{k}" for k in CUTOFFS] + ["mrr@10", "ms_p50"]:
            row = "".join(f"{results[n][f'{mode} {key}']:>12.3f}" for n in names)
            target = ""
            if key == "recall@10" and "torch" in results and len(names) > 1:
                gap = max(
                    abs(results[n][f"{mode} {key}"] - results["torch"][f"{mode} {key}"])
                    for n in names
                )
                status = "met" if gap <= TARGET_RECALL_GAP else "MISSED"
                target = f"  within {TARGET_RECALL_GAP:.2f} of torch: gap {gap:.3f} {status}"
            print(f"{mode + ' ' + key:<22}{row}{target}")


def print_agreement(
    fp32: Embedder, int8: Embedder, corpus_file: Path, questions: list[tuple[str, str]]
) -> None:
    """Cosine of fp32 vs int8 vectors of the same texts, and the shift in question-to-gold-
    abstract similarity (the quantity screening thresholds are calibrated on)."""
    texts = {a.pmid: index_text(a) for a in read_corpus_file(corpus_file)}
    pairs = [(q, texts[p]) for q, p in questions if p in texts][:200]
    sims: list[np.ndarray] = []
    agree: list[np.ndarray] = []
    for embedder in (fp32, int8):
        q = embedder.embed([q for q, _ in pairs])
        d = embedder.embed([d for _, d in pairs])
        sims.append((q * d).sum(axis=1))
        agree.append(np.concatenate([q, d]))
    cosine = (agree[0] * agree[1]).sum(axis=1)
    shift = np.abs(sims[0] - sims[1])
    print(
        f"\nfp32 vs int8, {len(pairs)} questions + gold abstracts: vector cosine mean "
        f"{cosine.mean():.4f}, min {cosine.min():.4f}; |change| of question-abstract "
        f"similarity mean {shift.mean():.4f}, p95 {np.quantile(shift, 0.95):.4f}, "
        f"max {shift.max():.4f} (screening stays on torch)"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the results; returns the process exit code."""
    use_offline_environment()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="PubMedQA directory")
    parser.add_argument("--work-dir", type=Path, default=None, help="corpora go here (kept)")
    parser.add_argument("--questions", type=int, default=None, help="use the first N only")
    parser.add_argument("--backends", default="torch,onnx-int8", help="comma-separated")
    args = parser.parse_args(argv)
    files = pubmedqa_files(args.data)
    if files is None:
        return 0
    corpus_file, questions_file = files
    questions = load_questions(questions_file, args.questions)
    backends: list[EmbeddingBackend] = []
    for name in args.backends.split(","):
        if name not in ("torch", "onnx-int8"):
            parser.error(f"unknown backend {name!r}")
        backends.append("torch" if name == "torch" else "onnx-int8")
    with tempfile.TemporaryDirectory(prefix="dc-bench-import-") as tmp:
        work = args.work_dir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        lines = corpus_file.read_text(encoding="utf-8").splitlines(keepends=True)
        (work / f"first-{SMALL}.jsonl").write_text("".join(lines[:SMALL]), encoding="utf-8")
        embedders: dict[str, Embedder] = {}
        results: dict[str, dict[str, float]] = {}
        for backend in backends:
            embedders[backend], results[backend] = measure(backend, work, corpus_file, questions)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{len(questions)} questions; throughput = (t1000 - t100) / 900 abstracts")
    print(f"{os.cpu_count()} cores, load average {load} (timings are only as quiet as that)")
    print_table(results)
    if len(embedders) == 2:
        print_agreement(embedders["torch"], embedders["onnx-int8"], corpus_file, questions)
    return 0


if __name__ == "__main__":
    sys.exit(main())
