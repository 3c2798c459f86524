"""Scale benchmark of the local corpus (issues 17, 35): grow one corpus to 10^4 .. 10^7 documents.

Run: ``PYTHONPATH=. python -u -m benchmarks.bench_corpus_scale [--sizes 10000,100000,1000000]
[--questions 100] [--sigma 0.015] [--batch 2000] [--keep DIR] [--vectors FILE.npy]``
(``--keep`` grows a corpus left there by an earlier run further; ``--vectors`` caches the real
vectors of the 1,000 source abstracts between runs).

Documents: we have no large real set, so the corpus is the 1,000 real PubMedQA abstracts
(``../shared/data/pubmedqa/corpus.jsonl``, PubMedQA, Jin et al. 2019, MIT licence) plus
SYNTHETIC VARIANTS of them: document ``k`` (PMID ``100000000 + k``) takes abstract ``k mod
1000``, shuffles its sentences (seeded by ``k``), drops one of them when it has more than two,
and appends one sentence of another abstract. The output says so.

Embedder: embedding 10^6 texts with all-MiniLM-L6-v2 at ~100 texts/s would take hours, so the
synthetic documents bypass the model: a variant's vector is the real all-MiniLM-L6-v2 vector of
its source abstract plus Gaussian noise (``--sigma`` per dimension, 0.015: about 0.3 in norm),
renormalised (:class:`SourceNoiseEmbedder`). The 1,000 real abstracts (embedded once by the
real model, stored with their own vectors) and every query use the real model. Each figure is
printed with the embedder it used.

At each size, one child process (spawned, so its peak RSS is its own) imports the documents
from the previous size up to this one (``LocalCorpus.add_articles``, ``--batch`` records per
batch: vectors upserted into the dense index (FAISS, exact then IVF-SQ8, with its float16 log),
records + FTS5 rows in one SQLite transaction) and reports
its import rate and peak RSS (``resource.getrusage``, ``ru_maxrss``); a second child opens the
corpus and runs the first ``--questions`` PubMedQA dev questions in hybrid mode (top 10):
one untimed warm-up pass (it caches the query vectors), then a timed pass of the index part
(FTS5 BM25 + dense index + RRF + record fetch, cached query vectors) and a timed pass of the
query embedding alone; the hybrid latency of a question is the sum of the two. It also prints
recall@10 of the gold abstract (the real one among its synthetic variants), and the dense
search's recall@10 against exact search (float32 dot products over every stored vector, read
back from the dense index's log). Index size on disk is the corpus directory's total, also per
document. Timings depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from benchmarks.bench_dense_index import exact_top10, run_child
from benchmarks.offline import use_offline_environment
from benchmarks.pubmedqa_data import DEFAULT_DATA, pubmedqa_files
from deepcritical.corpus.documents import DB_NAME, count_documents
from deepcritical.corpus.index import LocalCorpus
from deepcritical.corpus.readers import read_jsonl
from deepcritical.corpus.text import index_text
from deepcritical.formats.pubmed_xml import AbstractSection, PubmedArticle

DEFAULT_SIZES = "10000,100000,1000000"
SYNTHETIC_PMID_BASE = 100_000_000
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"  # recorded in the corpus
TARGET_P95_MS = 300.0  # at 10^6 and 10^7 documents
TARGET_RSS_MB = {1_000_000: 4096.0, 10_000_000: 8192.0}  # peak RSS during import
TARGET_DENSE_RECALL = 0.95  # dense recall@10 against exact search
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])")


class SourceNoiseEmbedder:
    """Embeds a registered text from the real vectors of the source abstracts: a real abstract
    (``seed`` None) as its own vector, a synthetic variant as its source's vector plus Gaussian
    noise (``sigma`` per dimension, seeded), renormalised. Never loads a model.

    The generator registers each document's indexed text (:meth:`register`) before the corpus
    embeds it; an entry is dropped once embedded, so memory stays at one batch.

    Raises:
        KeyError: (``embed``) a text that was not registered (e.g. a query).
    """

    def __init__(self, sources: NDArray[np.float32], sigma: float) -> None:
        self._sources = sources
        self._sigma = sigma
        self._pending: dict[str, list[tuple[int, int | None]]] = {}
        self.dimension = int(sources.shape[1])
        self.model_name = MODEL_NAME

    def register(self, text: str, source: int, seed: int | None) -> None:
        """Say that ``text`` is abstract ``source`` (``seed`` None) or a variant of it."""
        self._pending.setdefault(text, []).append((source, seed))

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """One unit vector per text, ``(len(texts), 384)``."""
        out = np.empty((len(texts), self._sources.shape[1]), dtype=np.float32)
        for i, text in enumerate(texts):
            waiting = self._pending[text]
            source, seed = waiting.pop(0)
            if not waiting:
                del self._pending[text]
            vector = self._sources[source].copy()
            if seed is not None:
                noise = np.random.default_rng(seed).normal(0.0, self._sigma, out.shape[1])
                vector += noise.astype(np.float32)
            out[i] = vector / np.linalg.norm(vector)
        return out


def load_abstracts(corpus_file: Path) -> list[PubmedArticle]:
    """The 1,000 real PubMedQA abstracts."""
    return list(read_jsonl(corpus_file))


def variant(sources: list[PubmedArticle], k: int) -> tuple[PubmedArticle, int]:
    """Synthetic document ``k`` (see the module docs) and the index of its source abstract."""
    n = len(sources)
    source = k % n
    rng = random.Random(k)
    sentences = _SENTENCE.split(" ".join(s.text for s in sources[source].abstract_sections))
    rng.shuffle(sentences)
    if len(sentences) > 2:
        sentences.pop(rng.randrange(len(sentences)))
    other = _SENTENCE.split(sources[(source * 7 + k) % n].abstract_text())
    sentences.append(rng.choice(other))
    article = PubmedArticle(
        pmid=str(SYNTHETIC_PMID_BASE + k),
        abstract_sections=[AbstractSection(text=" ".join(sentences))],
        year=sources[source].year,
        mesh_terms=sources[source].mesh_terms,
    )
    return article, source


def documents(
    sources: list[PubmedArticle], start: int, stop: int, embedder: SourceNoiseEmbedder
) -> Iterator[PubmedArticle]:
    """Documents ``start .. stop - 1``: the real abstracts first (``k < 1000``), then variants;
    each one's text is registered with ``embedder``."""
    for k in range(start, stop):
        if k < len(sources):
            embedder.register(index_text(sources[k]), k, None)
            yield sources[k]
            continue
        article, source = variant(sources, k)
        embedder.register(index_text(article), source, k)
        yield article


def directory_mb(directory: Path) -> float:
    """Total size of the files under ``directory`` in MB (10^6 bytes)."""
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file()) / 1e6


def peak_rss_mb() -> float:
    """This process's peak resident set size in MB (Linux ``ru_maxrss`` is in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6


def _load_model() -> Any:
    from deepcritical.evidence.embeddings import shared_embedder

    return shared_embedder()


def import_step(job: dict[str, Any], results: Any) -> None:
    """Child process: grow the corpus from ``job['start']`` to ``job['stop']`` documents."""
    use_offline_environment()
    sources = load_abstracts(Path(job["corpus_file"]))
    embedder = SourceNoiseEmbedder(np.load(job["vectors"]), job["sigma"])
    corpus = LocalCorpus(Path(job["directory"]), embedder, batch_size=job["batch"])
    started = time.perf_counter()
    result = corpus.add_articles(documents(sources, job["start"], job["stop"], embedder))
    seconds = time.perf_counter() - started
    count = corpus.count()
    corpus.close()
    results.put({"added": result.added, "seconds": seconds, "rss": peak_rss_mb(), "count": count})


class _CachedModel:
    """The real model with a cache of query vectors (so a timed pass measures the index)."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self._cache: dict[str, NDArray[np.float32]] = {}
        self.dimension = int(model.dimension)
        self.model_name = MODEL_NAME

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        missing = [t for t in texts if t not in self._cache]
        if missing:
            for text, vector in zip(missing, self._model.embed(missing), strict=True):
                self._cache[text] = vector
        return np.stack([self._cache[t] for t in texts])


def query_step(job: dict[str, Any], results: Any) -> None:
    """Child process: hybrid query latency (index part and embedding) and recall@10."""
    use_offline_environment()
    model = _load_model()
    cached = _CachedModel(model)
    corpus = LocalCorpus.open(Path(job["directory"]), cached)
    questions: list[tuple[str, str]] = job["questions"]
    for question, _ in questions:  # warm-up: caches the query vectors, warms SQLite pages
        corpus.search(question, 10)
    index_ms: list[float] = []
    found = 0
    for question, gold in questions:
        started = time.perf_counter()
        hits = corpus.search(question, 10)
        index_ms.append((time.perf_counter() - started) * 1000)
        found += gold in [h.article.pmid for h in hits]
    embed_ms: list[float] = []
    for question, _ in questions:
        started = time.perf_counter()
        model.embed([question])
        embed_ms.append((time.perf_counter() - started) * 1000)
    dense = [[h.article.pmid for h in corpus.search(q, 10, mode="dense")] for q, _ in questions]
    corpus.close()
    vectors = cached.embed([q for q, _ in questions])
    exact = exact_top10(Path(job["directory"]) / "dense", vectors)
    total = [a + b for a, b in zip(index_ms, embed_ms, strict=True)]
    results.put(
        {
            "hybrid": _percentiles(total),
            "index": _percentiles(index_ms),
            "embed": _percentiles(embed_ms),
            "recall10": found / len(questions),
            "dense_recall10": sum(len(set(d) & set(e)) for d, e in zip(dense, exact, strict=True))
            / (10 * len(questions)),
        }
    )


def _percentiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    n = len(ordered)
    return statistics.median(ordered), ordered[min(n - 1, int(n * 0.95))]


def source_vectors(sources: list[PubmedArticle], path: Path) -> None:
    """Embed the real abstracts with the real model once and save them (``.npy``)."""
    model = _load_model()
    started = time.perf_counter()
    vectors = model.embed([index_text(a) for a in sources])
    print(
        f"embedded the {len(sources)} real abstracts with all-MiniLM-L6-v2 in "
        f"{time.perf_counter() - started:.0f} s (the source vectors of the variants)"
    )
    np.save(path, vectors)


def report(size: int, grown: dict[str, Any], queried: dict[str, Any], disk_mb: float) -> None:
    """Print one size's figures next to their targets."""
    at_target = size in TARGET_RSS_MB
    rate = grown["added"] / grown["seconds"] if grown["seconds"] else 0.0
    p50, p95 = queried["hybrid"]
    i50, i95 = queried["index"]
    e50, e95 = queried["embed"]
    p95_target = f"target < {TARGET_P95_MS:.0f} ms at 10^6 and 10^7" + (
        f": {'MET' if p95 < TARGET_P95_MS else 'MISSED'}" if at_target else ""
    )
    rss_limit = TARGET_RSS_MB.get(size)
    rss_target = (
        f"target < {rss_limit:.0f} MB: {'MET' if grown['rss'] < rss_limit else 'MISSED'}"
        if rss_limit
        else "target < 4096 MB at 10^6, < 8192 MB at 10^7"
    )
    dense = queried["dense_recall10"]
    dense_target = f"target >= {TARGET_DENSE_RECALL}: " + (
        "MET" if dense >= TARGET_DENSE_RECALL else "MISSED"
    )
    print(f"\n== {size:,} documents ({grown['count']:,} in the corpus)")
    if not grown["added"]:  # --keep: the corpus was grown to this size by an earlier run
        print("  import             none: the kept corpus holds these already (no rate, no RSS)")
    else:
        print(
            f"  import rate        {rate:10,.0f} docs/s  ({grown['added']:,} added in "
            f"{grown['seconds']:.0f} s; synthetic vectors = source vector + noise, no model)"
        )
    print(f"  hybrid query p50   {p50:10.1f} ms      (index {i50:.1f} + MiniLM query {e50:.1f})")
    print(f"  hybrid query p95   {p95:10.1f} ms      {p95_target}")
    print(f"    index part p95   {i95:10.1f} ms      (FTS5 BM25 + dense index + RRF + fetch)")
    print(f"    query embed p95  {e95:10.1f} ms      (real all-MiniLM-L6-v2)")
    print(
        f"  recall@10 (gold)   {queried['recall10']:10.3f}         (real abstract among variants)"
    )
    print(f"  dense recall@10    {dense:10.3f}         vs exact search; {dense_target}")
    print(
        f"  index size on disk {disk_mb:10,.0f} MB      "
        f"({disk_mb * 1e6 / max(grown['count'], 1):,.0f} bytes per document)"
    )
    if grown["added"]:
        print(f"  peak RSS (import)  {grown['rss']:10,.0f} MB      {rss_target}")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the results; returns the process exit code."""
    use_offline_environment()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="PubMedQA directory")
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="comma-separated corpus sizes")
    parser.add_argument("--questions", type=int, default=100, help="dev questions timed")
    parser.add_argument("--sigma", type=float, default=0.015, help="noise per dimension")
    parser.add_argument("--batch", type=int, default=2000, help="records per import batch")
    parser.add_argument("--keep", type=Path, default=None, help="grow the corpus here (kept)")
    parser.add_argument(
        "--vectors", type=Path, default=None, help="cache of the source vectors (.npy)"
    )
    args = parser.parse_args(argv)
    files = pubmedqa_files(args.data)
    if files is None:
        return 0
    corpus_file, questions_file = files
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    rows = [json.loads(line) for line in questions_file.read_text(encoding="utf-8").splitlines()]
    questions = [(str(r["question"]), str(r["pmid"])) for r in rows if r][: args.questions]
    sources = load_abstracts(corpus_file)
    print(
        f"SYNTHETIC CORPUS: the {len(sources)} real PubMedQA abstracts plus variants of them "
        "(sentences shuffled, one dropped, one from another abstract; new PMIDs), since no "
        "larger real set is available.\nEMBEDDER: real abstracts and queries: "
        "all-MiniLM-L6-v2; synthetic variants: source vector + Gaussian noise "
        f"(sigma {args.sigma}/dimension), renormalised - no model.\n"
        f"Sizes {', '.join(f'{s:,}' for s in sizes)}; {len(questions)} dev questions; "
        "timings are indicative (machine load)."
    )
    with tempfile.TemporaryDirectory(prefix="dc-scale-") as tmp:
        directory = args.keep or Path(tmp) / "corpus"
        vectors = args.vectors or Path(tmp) / "sources.npy"
        if not vectors.is_file():
            source_vectors(sources, vectors)
        common = {"directory": str(directory), "corpus_file": str(corpus_file)}
        done = count_documents(directory / DB_NAME) or 0
        for size in sizes:
            job = {
                **common,
                "vectors": str(vectors),
                "sigma": args.sigma,
                "batch": args.batch,
                "start": done,
                "stop": size,
            }
            grown = run_child(import_step, job)
            done = grown["count"]
            queried = run_child(query_step, {**common, "questions": questions})
            report(size, grown, queried, directory_mb(directory))
    return 0


if __name__ == "__main__":
    sys.exit(main())
