"""Embedding paths on this machine: speed against torch fp32, vector agreement, import rate and
retrieval quality of the corpus each builds.

Run: ``PYTHONPATH=. python -u -m benchmarks.bench_import [--data DIR] [--work-dir DIR]
[--questions N] [--paths torch-fp32,torch-bf16-128,onnx-int8] [--texts 64] [--rounds 3]``.

Data: ``../shared/data/pubmedqa`` (``corpus.jsonl``: 1,000 PubMedQA abstracts;
``dev_questions.jsonl``: 500 questions with the PMID of their abstract; see
:mod:`benchmarks.retrieval`). Exits 0 with a message when the data is absent.

Printed, in one run (speeds depend on the machine and its load, so every target is a ratio
to torch fp32 measured in the same run, and the CPU model, its flags and the load are shown):

1. The machine (:func:`~deepcritical.evidence.embedding_paths.detect_capabilities`) and the
   paths chosen for it (:func:`~deepcritical.evidence.embedding_paths.choose_paths`).
2. Embedding alone: ``--rounds`` rounds, each embedding the same ``--texts`` dev abstracts
   with every path in turn (interleaved, so a change of load hits all paths alike): the
   median wall-clock rate, the median rate per CPU-second of this process (less sensitive to
   other processes on a shared machine), and the median per-round ratio to torch fp32, with
   the target: the chosen CPU path at least :data:`TARGET_SPEEDUP` times torch fp32.
3. Agreement with torch fp32 on those abstracts and 200 dev questions: cosine per text (mean,
   min) against :data:`~deepcritical.evidence.embedding_paths.EXACT_COSINE` for the exact
   paths.
4. Import through :meth:`LocalCorpus.add_file` (what ``deepcritical corpus add`` runs) of the
   first 100 abstracts and of all 1,000 into fresh directories: rate = 900 / (t1000 - t100)
   (fixed costs cancel out), against :data:`TARGET_RATE`; then, for the chosen path, the
   pipelined import against one batch after the other (``LocalCorpus(pipelined=False)``),
   alternating.
5. Retrieval of each corpus (:mod:`benchmarks.retrieval`: recall@1/5/10, MRR@10 per mode),
   recall@10 within :data:`TARGET_RECALL_GAP` of torch fp32; and the int8 corpus queried with
   the run path's vectors (the case an int8 corpus searched by a run's embedder would be).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import get_args

import numpy as np
from numpy.typing import NDArray

from benchmarks.offline import use_offline_environment
from benchmarks.pubmedqa_data import DEFAULT_DATA, pubmedqa_files
from benchmarks.retrieval import CUTOFFS, MODES, evaluate, load_questions
from deepcritical.corpus.index import LocalCorpus
from deepcritical.corpus.readers import read_corpus_file
from deepcritical.corpus.text import index_text
from deepcritical.evidence.embedding_paths import (
    EXACT_COSINE,
    PATHS,
    PathName,
    choose_paths,
    detect_capabilities,
)
from deepcritical.evidence.embeddings import DEFAULT_MODEL, Embedder
from deepcritical.evidence.onnx_embeddings import onnx_int8_name, path_embedder

TARGET_RATE = 100.0  # abstracts per second through `corpus add`, issues 17 and 35, 2 cores
TARGET_SPEEDUP = 3.0  # the chosen CPU path against torch fp32 at 256 word pieces, issue 35
TARGET_RECALL_GAP = 0.01  # recall@10 within 1 point of torch fp32
SMALL = 100
PIPELINE_N = 512  # abstracts per import of the pipelined / one-after-the-other comparison
BASELINE: PathName = "torch-fp32"


class Renamed:
    """``embedder`` under another ``model_name``: lets the benchmark query a corpus with
    vectors of a path the corpus would refuse (to measure whether it should)."""

    def __init__(self, embedder: Embedder, model_name: str) -> None:
        self._embedder = embedder
        self.model_name = model_name
        self.dimension = embedder.dimension

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """The wrapped embedder's vectors."""
        return self._embedder.embed(texts)


def embedding_speed(
    embedders: dict[PathName, Embedder], texts: list[str], rounds: int
) -> dict[PathName, dict[str, float]]:
    """Interleaved timing of every path on ``texts``: median wall rate, median rate per
    CPU-second, and the median per-round ratio of wall rates to :data:`BASELINE`."""
    wall: dict[PathName, list[float]] = {p: [] for p in embedders}
    cpu: dict[PathName, list[float]] = {p: [] for p in embedders}
    for embedder in embedders.values():
        embedder.embed(texts[:8])  # load and warm up
    for _ in range(rounds):
        for path, embedder in embedders.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            embedder.embed(texts)
            wall[path].append(len(texts) / (time.perf_counter() - start))
            cpu[path].append(len(texts) / max(time.process_time() - start_cpu, 1e-9))
    figures: dict[PathName, dict[str, float]] = {}
    for path in embedders:
        ratios = [w / b for w, b in zip(wall[path], wall[BASELINE], strict=True)]
        cpu_ratios = [c / b for c, b in zip(cpu[path], cpu[BASELINE], strict=True)]
        figures[path] = {
            "wall": statistics.median(wall[path]),
            "cpu": statistics.median(cpu[path]),
            "ratio": statistics.median(ratios),
            "cpu ratio": statistics.median(cpu_ratios),
            "best ratio": max(wall[path]) / max(wall[BASELINE]),
        }
    return figures


def print_speed(figures: dict[PathName, dict[str, float]], chosen: PathName, n: int) -> None:
    """The embedding-alone table, with the speed-up target of the chosen path."""
    print(f"\nembedding alone, {n} dev abstracts per round (median of rounds; x fp32: median")
    print("of the per-round ratios of wall rates; best: ratio of each path's best round):")
    print(
        f"{'path':<16}{'abstracts/s':>12}{'per CPU-s':>11}{'x fp32':>8}{'x fp32 CPU':>12}"
        f"{'x best':>8}"
    )
    for path, f in figures.items():
        line = f"{path:<16}{f['wall']:>12.1f}{f['cpu']:>11.1f}{f['ratio']:>8.2f}"
        line += f"{f['cpu ratio']:>12.2f}{f['best ratio']:>8.2f}"
        if path == chosen:
            met = "met" if f["ratio"] >= TARGET_SPEEDUP else "MISSED"
            line += f"  chosen; target >= {TARGET_SPEEDUP:.0f}x torch fp32 (wall): {met}"
        print(line)


def print_agreement(
    embedders: dict[PathName, Embedder], texts: list[str], questions: list[str]
) -> None:
    """Cosine of each path's vectors to :data:`BASELINE`'s on abstracts and questions."""
    reference = embedders[BASELINE].embed(texts + questions)
    print(
        f"\ncosine to torch fp32 (256 word pieces), {len(texts)} abstracts + "
        f"{len(questions)} questions:"
    )
    for path, embedder in embedders.items():
        if path == BASELINE:
            continue
        cos = (embedder.embed(texts + questions) * reference).sum(axis=1)
        docs, qs = cos[: len(texts)], cos[len(texts) :]
        spec = PATHS[path]
        verdict = ""
        if spec.exact:
            ok = float(qs.min()) >= EXACT_COSINE and (
                spec.max_tokens < 256 or float(docs.min()) >= EXACT_COSINE
            )
            verdict = f"  exact path, target >= {EXACT_COSINE}: {'met' if ok else 'MISSED'}"
            if spec.max_tokens < 256:
                verdict += " (questions; abstracts read to 128 word pieces by design)"
        print(
            f"  {path:<16} abstracts mean {docs.mean():.5f} min {docs.min():.5f}; "
            f"questions mean {qs.mean():.5f} min {qs.min():.5f}{verdict}"
        )


def timed_import(
    directory: Path, source: Path, embedder: Embedder, *, pipelined: bool = True
) -> tuple[int, float]:
    """``(abstracts added, seconds)`` of importing ``source`` into a fresh ``directory``."""
    shutil.rmtree(directory, ignore_errors=True)
    start = time.perf_counter()
    with LocalCorpus(directory, embedder, pipelined=pipelined) as corpus:
        added = corpus.add_file(source).added
    return added, time.perf_counter() - start


def import_and_recall(
    path: PathName,
    embedder: Embedder,
    work: Path,
    corpus_file: Path,
    questions: list[tuple[str, str]],
    reuse: bool = False,
) -> dict[str, float]:
    """Import rate (``rate``) and retrieval figures (``"<mode> recall@k"``) of one path;
    ``reuse``: a whole corpus of this path left in ``work`` by an earlier run is searched
    as it is (no import, no rate)."""
    whole = work / f"{path}-all"
    if reuse and LocalCorpus.exists(whole):
        print(f"  [{path}] the corpus of an earlier run reused (no import timed)", flush=True)
        return recall(whole, embedder, questions)
    n_small, t_small = timed_import(
        work / f"{path}-{SMALL}", work / f"first-{SMALL}.jsonl", embedder
    )
    n_all, t_all = timed_import(work / f"{path}-all", corpus_file, embedder)
    rate = (n_all - n_small) / (t_all - t_small)
    print(
        f"  [{path}] import {n_small}: {t_small:.1f} s; {n_all}: {t_all:.1f} s; {rate:.1f}/s",
        flush=True,
    )
    return {"rate": rate, **recall(work / f"{path}-all", embedder, questions)}


def compare_pipeline(work: Path, embedder: Embedder, corpus_file: Path, path: PathName) -> None:
    """The import of :data:`PIPELINE_N` abstracts one batch after the other, then pipelined,
    twice each, alternating (so both see the same load): abstracts/s including fixed costs."""
    lines = corpus_file.read_text(encoding="utf-8").splitlines(keepends=True)
    source = work / f"first-{PIPELINE_N}.jsonl"
    source.write_text("".join(lines[:PIPELINE_N]), encoding="utf-8")
    rates: dict[bool, list[float]] = {False: [], True: []}
    for pipelined in (False, True, False, True):
        n, seconds = timed_import(work / "pipeline", source, embedder, pipelined=pipelined)
        rates[pipelined].append(n / seconds)
    off, on = statistics.median(rates[False]), statistics.median(rates[True])
    print(
        f"  [{path}] corpus add of {n} abstracts: one batch after the other {off:.1f}/s, "
        f"pipelined {on:.1f}/s ({on / off:.2f}x; median of 2 each, alternating)",
        flush=True,
    )


def recall(
    directory: Path, embedder: Embedder, questions: list[tuple[str, str]]
) -> dict[str, float]:
    """Retrieval figures of the corpus in ``directory`` searched with ``embedder``."""
    figures: dict[str, float] = {}
    with LocalCorpus.open(directory, embedder) as corpus:
        for question, _ in questions[:20]:  # untimed warm-up
            corpus.search(question, max(CUTOFFS))
        for mode in MODES:
            for key, value in evaluate(corpus, questions, mode).items():
                figures[f"{mode} {key}"] = value
    return figures


def print_table(results: dict[str, dict[str, float]]) -> None:
    """Paths side by side, each figure next to its target."""
    names = list(results)
    print("\n" + f"{'figure':<22}" + "".join(f"{n:>16}" for n in names) + "  target")
    rates = {n: results[n]["rate"] for n in names if "rate" in results[n]}
    if rates:
        row = "".join(f"{results[n].get('rate', float('nan')):>16.1f}" for n in names)
        status = "met" if max(rates.values()) >= TARGET_RATE else "MISSED"
        print(f"{'corpus add abstracts/s':<22}{row}  >= {TARGET_RATE:.0f} on 2 cores: {status}")
    for mode in MODES:
        for key in [f"recall@{k}" for k in CUTOFFS] + ["mrr@10", "ms_p50"]:
            row = "".join(f"{results[n][f'{mode} {key}']:>16.3f}" for n in names)
            target = ""
            if key == "recall@10" and BASELINE in results and len(names) > 1:
                base = results[BASELINE][f"{mode} {key}"]
                gaps = {n: base - results[n][f"{mode} {key}"] for n in names if n != BASELINE}
                worst = max(gaps.values())
                status = "met" if worst <= TARGET_RECALL_GAP else "MISSED"
                target = (
                    f"  torch fp32 - path <= {TARGET_RECALL_GAP:.2f}: worst {worst:.3f} {status}"
                )
            print(f"{mode + ' ' + key:<22}{row}{target}")


def parse_paths(text: str, chosen: PathName, run: PathName) -> list[PathName]:
    """A ``--paths`` list (the words ``chosen`` and ``run`` standing for this machine's
    import and run paths; torch fp32 first, no repeats); ``SystemExit`` for an unknown
    name."""
    names: list[PathName] = [BASELINE]
    for word in text.split(","):
        name = {"chosen": chosen, "run": run}.get(word.strip(), word.strip())
        if name not in get_args(PathName):
            sys.exit(f"unknown path {name!r}; known: {', '.join(PATHS)}")
        if name not in names:
            names.append(name)  # type: ignore[arg-type]
    return names


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the results; returns the process exit code."""
    use_offline_environment()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="PubMedQA directory")
    parser.add_argument("--work-dir", type=Path, default=None, help="corpora go here (kept)")
    parser.add_argument("--questions", type=int, default=None, help="use the first N only")
    parser.add_argument("--paths", default="chosen,run,onnx-int8", help="timed, besides fp32")
    parser.add_argument("--import-paths", default="chosen,onnx-int8", help="imported")
    parser.add_argument("--texts", type=int, default=32, help="abstracts per speed round")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved speed rounds")
    parser.add_argument("--no-import", action="store_true", help="speed and agreement only")
    parser.add_argument(
        "--reuse", action="store_true", help="search torch fp32's corpus left in --work-dir"
    )
    args = parser.parse_args(argv)
    files = pubmedqa_files(args.data)
    if files is None:
        return 0
    corpus_file, questions_file = files
    questions = load_questions(questions_file, args.questions)
    machine = detect_capabilities()
    choice = choose_paths(machine)
    print(f"machine: {machine.describe()}")
    print(f"chosen: corpus {choice.corpus}, runs {choice.run} ({choice.reason})")
    print(f"{os.cpu_count()} cores, load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    paths = parse_paths(args.paths, choice.corpus, choice.run)
    imported = parse_paths(args.import_paths, choice.corpus, choice.run)
    embedders = {p: path_embedder(DEFAULT_MODEL, p) for p in dict.fromkeys(paths + imported)}
    abstracts = [index_text(a) for a in read_corpus_file(corpus_file)]
    sample = abstracts[:: max(1, len(abstracts) // args.texts)][: args.texts]
    timed = {p: embedders[p] for p in paths}
    print_speed(embedding_speed(timed, sample, args.rounds), choice.corpus, len(sample))
    print_agreement(timed, sample, [q for q, _ in questions[:200]])
    if not args.no_import:
        chosen = {p: embedders[p] for p in imported}
        run_imports(args.work_dir, chosen, corpus_file, questions, choice.run, args.reuse)
    print(f"\nload average at the end {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


def run_imports(
    work_dir: Path | None,
    embedders: dict[PathName, Embedder],
    corpus_file: Path,
    questions: list[tuple[str, str]],
    run_path: PathName,
    reuse: bool = False,
) -> None:
    """Import and retrieval of every path (``reuse``: torch fp32's corpus of an earlier run
    searched as it is), the pipeline comparison, and the int8 corpus queried by the run
    path."""
    with tempfile.TemporaryDirectory(prefix="dc-bench-import-") as tmp:
        work = work_dir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        lines = corpus_file.read_text(encoding="utf-8").splitlines(keepends=True)
        (work / f"first-{SMALL}.jsonl").write_text("".join(lines[:SMALL]), encoding="utf-8")
        print(f"\nimport through corpus add; {len(questions)} questions:")
        results: dict[str, dict[str, float]] = {}
        for path, embedder in embedders.items():
            again = reuse and path == BASELINE
            results[path] = import_and_recall(path, embedder, work, corpus_file, questions, again)
        chosen = next(p for p in embedders if p != BASELINE)
        compare_pipeline(work, embedders[chosen], corpus_file, chosen)
        if "onnx-int8" in embedders:
            queries = Renamed(path_embedder(DEFAULT_MODEL, run_path), onnx_int8_name(DEFAULT_MODEL))
            results[f"int8+{run_path}"] = recall(work / "onnx-int8-all", queries, questions)
    print_table(results)


if __name__ == "__main__":
    sys.exit(main())
