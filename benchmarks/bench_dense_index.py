"""Benchmark of the corpus's compressed dense index (issue 35): recall@10 against exact search,
query latency, import rate, peak RSS and bytes on disk per vector, at 10^6 and 10^7 vectors.

Run: ``PYTHONPATH=. python -u -m benchmarks.bench_dense_index [--sizes 1000000,10000000]
[--questions 100] [--sigma 0.015] [--vectors FILE.npy] [--keep DIR]`` (``--keep`` leaves the
indexes in DIR; a size whose index is there already is searched again, not rebuilt: its exact
top 10 are then read from its log).

Vectors: SYNTHETIC, as in ``bench_corpus_scale``. The real all-MiniLM-L6-v2 vectors of the
1,000 PubMedQA abstracts (``../shared/data/pubmedqa/corpus.jsonl``) come first; vector ``k``
past them is the vector of abstract ``k mod 1000`` plus Gaussian noise (``--sigma`` per
dimension), renormalised, so each abstract has 10^3 .. 10^4 near-copies: a hard case for an
approximate index (the exact top 10 are near-copies told apart by their noise). Queries are
the first ``--questions`` PubMedQA dev questions embedded by the real model.

Each size runs in a child process of its own (spawned, so its peak RSS, ``ru_maxrss``, is the
index's, not the model's): it writes the vectors through :class:`IvfIndex` in upserts of 2,000
(the importer's batch, with its log transactions, training and saves), closes it, and keeps
the exact top 10 of every query (float32 dot products over every vector written, chunk by
chunk). A second child opens the index as a searching process would and times
``IvfIndex.query(vector, 50)`` (the hybrid search's depth) per question after one warm-up
pass; recall@10 is the share of the exact top 10 found in the index's top 10. Disk is the
``dense/`` directory's total.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import platform
import resource
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from benchmarks.offline import use_offline_environment
from benchmarks.pubmedqa_data import DEFAULT_DATA, pubmedqa_files
from deepcritical.evidence.embedding_paths import parse_cpuinfo

DEFAULT_SIZES = "1000000,10000000"
BATCH = 2_000  # the importer's records per batch in bench_corpus_scale
CHUNK = 50_000  # vectors generated at a time
TARGET_RECALL = 0.95  # dense recall@10 against exact search
TARGET_P95_MS = 300.0  # the hybrid query's whole budget at 10^7 (this is its dense part)
TARGET_RSS_MB = 8192.0  # peak RSS of the import at 10^7


def synthetic(sources: NDArray[np.float32], start: int, stop: int, sigma: float) -> Any:
    """Vectors ``start .. stop - 1`` (see the module docs), float32 unit rows."""
    k = np.arange(start, stop)
    out = sources[k % len(sources)].copy()
    noise = np.random.default_rng(start).normal(0.0, sigma, out.shape).astype(np.float32)
    out += np.where((k < len(sources))[:, None], 0.0, noise).astype(np.float32)
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


def embed_inputs(job: dict[str, Any], results: Any) -> None:
    """Child process: the real vectors of the 1,000 abstracts and of the questions."""
    use_offline_environment()
    from deepcritical.corpus.readers import read_jsonl
    from deepcritical.corpus.text import index_text
    from deepcritical.evidence.embeddings import shared_embedder

    model = shared_embedder()
    if not Path(job["vectors"]).is_file():
        sources = list(read_jsonl(Path(job["corpus_file"])))
        np.save(job["vectors"], model.embed([index_text(a) for a in sources]))
    np.save(job["queries"], model.embed(job["questions"]))
    results.put({})


class ExactTop10:
    """Each query's exact top 10 ids by inner product, kept while vectors stream past in
    chunks (:meth:`add`), so no more than one chunk is in memory."""

    def __init__(self, queries: NDArray[np.float32]) -> None:
        self._queries = queries
        self._scores = np.full((len(queries), 10), -np.inf, dtype=np.float32)
        self._ids = np.full((len(queries), 10), "", dtype=object)

    def add(self, ids: list[str], vectors: NDArray[np.float32]) -> None:
        """Take a chunk of ``vectors`` (``(len(ids), d)``) under ``ids``."""
        scores = np.concatenate([self._scores, self._queries @ vectors.T], axis=1)
        names = np.broadcast_to(np.array(ids, dtype=object), (len(self._queries), len(ids)))
        labels = np.concatenate([self._ids, names], axis=1)
        order = np.argsort(-scores, axis=1, kind="stable")[:, :10]
        self._scores = np.take_along_axis(scores, order, axis=1)
        self._ids = np.take_along_axis(labels, order, axis=1)

    def ids(self) -> list[list[str]]:
        """The top 10 ids of each query, best first."""
        return [[str(x) for x in row] for row in self._ids]


def exact_top10(directory: Path, queries: NDArray[np.float32]) -> list[list[str]]:
    """Each query's exact top 10 ids by inner product over every vector the dense index in
    ``directory`` stores (:meth:`IvfIndex.stored`, its float16 log, chunk by chunk)."""
    from deepcritical.corpus.ivf_index import IvfIndex

    index = IvfIndex(directory)
    top = ExactTop10(queries)
    for ids, vectors in index.stored():
        top.add(ids, vectors)
    index.close()
    return top.ids()


def stored_count(directory: Path) -> int:
    """Vectors in the dense index's log under ``directory`` (0 when there is none)."""
    from deepcritical.corpus.ivf_index import LOG_NAME

    if not (directory / LOG_NAME).is_file():
        return 0
    with sqlite3.connect(directory / LOG_NAME) as conn:
        (n,) = conn.execute("SELECT count(*) FROM vectors").fetchone()
    return int(n)


def reuse(job: dict[str, Any], results: Any) -> None:
    """Child process: the exact top 10 of an index already built (``--keep``)."""
    queries = np.load(job["queries"]).astype(np.float32)
    results.put({"exact": exact_top10(Path(job["directory"]), queries)})


def build(job: dict[str, Any], results: Any) -> None:
    """Child process: write ``job['size']`` vectors through IvfIndex; the exact top 10."""
    from deepcritical.corpus.ivf_index import IvfIndex

    sources = np.load(job["vectors"]).astype(np.float32)
    queries = np.load(job["queries"]).astype(np.float32)
    index = IvfIndex(Path(job["directory"]))
    top = ExactTop10(queries)
    index_seconds = 0.0
    for start in range(0, job["size"], CHUNK):
        stop = min(job["size"], start + CHUNK)
        x = synthetic(sources, start, stop, job["sigma"])
        half = x.astype(np.float16).astype(np.float32)  # the values the index holds
        ids = [str(100_000_000 + i) for i in range(start, stop)]
        began = time.perf_counter()
        for b in range(0, stop - start, BATCH):
            index.upsert(ids[b : b + BATCH], x[b : b + BATCH])
        index_seconds += time.perf_counter() - began
        top.add(ids, half)
        if stop % 1_000_000 == 0 or stop == job["size"]:
            print(f"    {stop:>12,} vectors written, {index_seconds:.0f} s", flush=True)
    began = time.perf_counter()
    index.close()
    index_seconds += time.perf_counter() - began
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6
    results.put({"seconds": index_seconds, "rss": rss, "exact": top.ids()})


def search(job: dict[str, Any], results: Any) -> None:
    """Child process: open the index, query every question twice (warm-up, timed)."""
    from deepcritical.corpus.ivf_index import IvfIndex

    queries = np.load(job["queries"]).astype(np.float32)
    began = time.perf_counter()
    index = IvfIndex(Path(job["directory"]))
    open_seconds = time.perf_counter() - began
    for q in queries:
        index.query(q, 50)
    ms: list[float] = []
    found = 0
    for q, exact in zip(queries, job["exact"], strict=True):
        began = time.perf_counter()
        hits = index.query(q, 50)
        ms.append((time.perf_counter() - began) * 1000)
        found += len({p for p, _ in hits[:10]} & set(exact))
    index.close()
    ordered = sorted(ms)
    results.put(
        {
            "recall": found / (10 * len(queries)),
            "p50": statistics.median(ordered),
            "p95": ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))],
            "open": open_seconds,
            "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6,
        }
    )


def run_child(target: Any, job: dict[str, Any]) -> dict[str, Any]:
    """Run ``target(job, queue)`` in a spawned process (its peak RSS its own); what it put.

    Raises:
        RuntimeError: the process exited with a non-zero code.
    """
    context = mp.get_context("spawn")
    results = context.Queue()
    process = context.Process(target=target, args=(job, results))
    process.start()
    out: dict[str, Any] = results.get()
    process.join()
    if process.exitcode != 0:
        raise RuntimeError(f"{target.__name__} exited with {process.exitcode}")
    return out


def _verdict(ok: bool, applies: bool) -> str:
    return (": MET" if ok else ": MISSED") if applies else ""


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print each figure next to its target; the exit code."""
    use_offline_environment()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="PubMedQA directory")
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="comma-separated sizes")
    parser.add_argument("--questions", type=int, default=100, help="dev questions queried")
    parser.add_argument("--sigma", type=float, default=0.015, help="noise per dimension")
    parser.add_argument("--vectors", type=Path, default=None, help="source vectors (.npy)")
    parser.add_argument("--keep", type=Path, default=None, help="build the indexes here")
    args = parser.parse_args(argv)
    files = pubmedqa_files(args.data)
    if files is None:
        return 0
    corpus_file, questions_file = files
    rows = [json.loads(line) for line in questions_file.read_text(encoding="utf-8").splitlines()]
    questions = [str(r["question"]) for r in rows if r][: args.questions]
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    cpu = parse_cpuinfo(Path("/proc/cpuinfo").read_text(encoding="utf-8"))[0]
    cpu = cpu or platform.processor() or "unknown"
    print(
        f"CPU: {cpu}, {mp.cpu_count()} cores\nSYNTHETIC VECTORS: the 1,000 real "
        "PubMedQA abstract vectors (all-MiniLM-L6-v2), then near-copies (source + Gaussian "
        f"noise, sigma {args.sigma}/dimension, renormalised); {len(questions)} real dev "
        "questions as queries. Index: corpus/ivf_index.py with its defaults."
    )
    with tempfile.TemporaryDirectory(prefix="dc-dense-") as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        vectors = args.vectors or root / "sources.npy"
        queries = root / "queries.npy"
        run_child(
            embed_inputs,
            {
                "vectors": str(vectors),
                "queries": str(queries),
                "corpus_file": str(corpus_file),
                "questions": questions,
            },
        )
        for size in sizes:
            directory = root / f"dense-{size}"
            print(f"\n== {size:,} vectors", flush=True)
            job = {
                "vectors": str(vectors),
                "queries": str(queries),
                "directory": str(directory),
                "size": size,
                "sigma": args.sigma,
            }
            if stored_count(directory) == size:
                print(f"  (the index in {directory} is reused; its exact top 10 read from its log)")
                built = {**run_child(reuse, job), "seconds": None, "rss": None}
            else:
                built = run_child(build, job)
            found = run_child(search, {**job, "exact": built["exact"]})
            disk = sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())
            at = size >= 10_000_000
            print(
                f"  recall@10 vs exact  {found['recall']:8.3f}      target >= {TARGET_RECALL}"
                f"{_verdict(found['recall'] >= TARGET_RECALL, True)}"
            )
            print(
                f"  dense query p50     {found['p50']:8.1f} ms   (top 50, as the hybrid search "
                "asks)"
            )
            print(
                f"  dense query p95     {found['p95']:8.1f} ms   of the hybrid budget < "
                f"{TARGET_P95_MS:.0f} ms at 10^7{_verdict(found['p95'] < TARGET_P95_MS, at)}"
            )
            if built["seconds"] is not None:
                print(
                    f"  import rate         {size / built['seconds']:8,.0f} vectors/s "
                    f"({built['seconds']:.0f} s: log, index, training, saves)"
                )
                print(
                    f"  peak RSS (import)   {built['rss']:8,.0f} MB   target < "
                    f"{TARGET_RSS_MB:.0f} MB at 10^7{_verdict(built['rss'] < TARGET_RSS_MB, at)}"
                )
            print(
                f"  peak RSS (search)   {found['rss']:8,.0f} MB   (opened in {found['open']:.1f} s)"
            )
            print(
                f"  on disk             {disk / size:8,.0f} bytes/vector ({disk / 1e9:.2f} GB: "
                "float16 log + IVF-SQ8 index)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
