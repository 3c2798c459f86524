"""The dense-index benchmarks' measuring parts: the synthetic vectors, the exact top 10 they
keep while writing, and the recall they report (which must fall when the index is wrong)."""

from __future__ import annotations

import queue
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bench_dense_index import build, exact_top10, search, synthetic
from deepcritical.corpus.ivf_index import IvfIndex


def _sources(n: int = 50, d: int = 24) -> Any:
    x = np.random.default_rng(1).normal(size=(n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_synthetic_vectors_are_the_sources_then_unit_near_copies() -> None:
    sources = _sources()
    x = synthetic(sources, 0, 200, 0.015)
    assert np.allclose(x[:50], sources)
    assert np.allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(x[50:] * sources[np.arange(50, 200) % 50], axis=1)
    assert cosines.min() > 0.9
    assert not np.allclose(x[50:100], sources)


def _run(tmp_path: Path, size: int) -> tuple[dict[str, Any], dict[str, Any]]:
    np.save(tmp_path / "s.npy", _sources())
    np.save(tmp_path / "q.npy", _sources(5)[:, :24] + 0.1)
    job = {
        "vectors": str(tmp_path / "s.npy"),
        "queries": str(tmp_path / "q.npy"),
        "directory": str(tmp_path / "dense"),
        "size": size,
        "sigma": 0.015,
    }
    results: queue.Queue[dict[str, Any]] = queue.Queue()
    build(job, results)
    built = results.get()
    search({**job, "exact": built["exact"]}, results)
    return built, results.get()


def test_an_exact_index_scores_recall_one_and_a_damaged_one_less(tmp_path: Path) -> None:
    built, found = _run(tmp_path, 3_000)
    assert found["recall"] == 1.0
    assert found["p95"] >= found["p50"] > 0
    index = IvfIndex(tmp_path / "dense")  # remove the true neighbours: recall must drop
    index.delete(sorted({p for row in built["exact"] for p in row}))
    index.close()
    results: queue.Queue[dict[str, Any]] = queue.Queue()
    job = {"queries": str(tmp_path / "q.npy"), "directory": str(tmp_path / "dense")}
    search({**job, "exact": built["exact"]}, results)
    assert results.get()["recall"] == 0.0


def test_the_exact_top_10_read_from_the_log_is_brute_force(tmp_path: Path) -> None:
    x = synthetic(_sources(), 0, 1_200, 0.05)
    ids = [str(i) for i in range(1_200)]
    index = IvfIndex(tmp_path / "dense")
    index.upsert(ids, x)
    index.close()
    q = _sources(3)
    exact = exact_top10(tmp_path / "dense", q)
    half = x.astype(np.float16).astype(np.float32)
    for row, got in zip(q, exact, strict=True):
        assert got == [ids[i] for i in np.argsort(-(half @ row))[:10]]
