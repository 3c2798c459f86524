"""The compressed dense index (corpus/ivf_index.py): exact below the training size, IVF-SQ8
above it, a vector log that survives a killed process, and readers that see a writer's
vectors. Training sizes are lowered so the IVF path runs on a few thousand vectors."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from deepcritical.corpus import ivf_index
from deepcritical.corpus.index import LocalCorpus
from deepcritical.corpus.ivf_index import IvfIndex, ivf_cells
from deepcritical.formats.pubmed_xml import AbstractSection, PubmedArticle
from deepcritical.testing.embedders import HashingEmbedder

DIM = 32


def clustered(n: int, seed: int = 0) -> NDArray[np.float32]:
    """``n`` unit vectors around 40 centres (the shape of a corpus of related abstracts)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(40, DIM))
    x = centres[rng.integers(0, 40, n)] + rng.normal(scale=0.3, size=(n, DIM))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x.astype(np.float16).astype(np.float32)  # as the log stores them


def exact_top(x: NDArray[np.float32], q: NDArray[np.float32], k: int) -> list[int]:
    return [int(i) for i in np.argsort(-(x @ q))[:k]]


def ids(n: int, start: int = 0) -> list[str]:
    return [str(10_000 + i) for i in range(start, start + n)]


def test_below_the_training_size_search_is_exact_and_replacing_an_id_keeps_one_vector(
    tmp_path: Path,
) -> None:
    x = clustered(500)
    index = IvfIndex(tmp_path / "dense")
    index.upsert(ids(500), x)
    q = clustered(3, seed=9)
    for row in q:
        got = [p for p, _ in index.query(row, 10)]
        assert got == [ids(500)[i] for i in exact_top(x, row, 10)]
    moved = -q[0]
    index.upsert(["10007"], moved.reshape(1, -1))
    assert index.count() == 500
    assert index.query(moved, 1)[0][0] == "10007"
    assert "10007" not in [p for p, _ in index.query(q[0], 10)]
    index.delete(["10007", "not-stored"])
    assert index.count() == 499
    assert "10007" not in [p for p, _ in index.query(moved, 50)]
    index.close()


def test_the_last_vector_of_an_id_given_twice_wins_and_a_bad_shape_is_refused(
    tmp_path: Path,
) -> None:
    x = clustered(3)
    index = IvfIndex(tmp_path / "dense")
    index.upsert(["1", "2", "1"], x)
    assert index.count() == 2
    assert index.query(x[2], 1)[0][0] == "1"
    with pytest.raises(ValueError, match="expected 2 vectors"):
        index.upsert(["1", "2"], x)
    with pytest.raises(ValueError, match="32-dimensional"):
        index.upsert(["9"], np.ones((1, 8), dtype=np.float32))
    index.close()


def test_a_killed_writer_loses_no_committed_vector_or_removal(tmp_path: Path) -> None:
    """No close(): the index file is older than the log, as after SIGKILL mid-import."""
    x = clustered(300)
    writer = IvfIndex(tmp_path / "dense")
    writer.upsert(ids(200), x[:200])
    writer.close()  # saved through the first 200
    killed = IvfIndex(tmp_path / "dense")
    killed.upsert(ids(100, 200), x[200:])
    killed.delete(["10005"])
    del killed  # never closed: the file still holds 10005 and lacks the last 100
    assert [p.name for p in (tmp_path / "dense").glob("*.faiss")] == ["index.200.faiss"]
    reopened = IvfIndex(tmp_path / "dense")
    assert reopened.count() == 299
    for row in clustered(5, seed=4):
        got = [p for p, _ in reopened.query(row, 10)]
        keep = [i for i in range(300) if i != 5]
        expected = [ids(300)[keep[i]] for i in exact_top(x[keep], row, 10)]
        assert got == expected
    assert "10005" not in [p for p, _ in reopened.query(x[5], 20)]
    reopened.close()


def test_past_the_training_size_it_is_ivf_sq8_with_high_recall_and_reopens_as_ivf(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ivf_index, "TRAIN_AT", 3_000)
    monkeypatch.setattr(ivf_index, "NPROBE", 16)
    x = clustered(6_000)
    index = IvfIndex(tmp_path / "dense")
    for start in range(0, 6_000, 1_000):
        index.upsert(ids(1_000, start), x[start : start + 1_000])
    assert index._is_ivf()
    queries = clustered(50, seed=7)
    recall = np.mean(
        [
            len({p for p, _ in index.query(q, 10)} & {ids(6_000)[i] for i in exact_top(x, q, 10)})
            / 10
            for q in queries
        ]
    )
    assert recall >= 0.9
    index.close()
    reopened = IvfIndex(tmp_path / "dense")
    assert reopened._is_ivf()
    assert reopened.count() == 6_000
    assert reopened.query(x[123], 1)[0][0] == ids(6_000)[123]
    reopened.delete([ids(6_000)[123]])  # through the IVF's hash table
    reopened.upsert([ids(6_000)[5]], -x[5:6])  # a replacement removes the old vector too
    assert ids(6_000)[123] not in [p for p, _ in reopened.query(x[123], 10)]
    assert reopened.query(-x[5], 1)[0][0] == ids(6_000)[5]
    assert ids(6_000)[5] not in [p for p, _ in reopened.query(x[5], 10)]
    assert reopened._index.ntotal == 5_999
    reopened.close()


def test_the_cells_are_retrained_as_the_log_grows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ivf_index, "TRAIN_AT", 2_000)
    monkeypatch.setattr(ivf_index, "RETRAIN_GROWTH", 2)
    x = clustered(4_500)
    index = IvfIndex(tmp_path / "dense")
    trained: list[str | None] = []
    for start in range(0, 4_500, 500):
        index.upsert(ids(500, start), x[start : start + 500])
        trained.append(index._meta("trained_on"))
    assert trained[3] == "2000"
    assert trained[-1] == "4000"
    assert index.count() == 4_500
    assert index._index.ntotal == 4_500
    index.close()


def test_a_reader_sees_a_writers_new_vectors_at_its_next_query(tmp_path: Path) -> None:
    x = clustered(400)
    writer = IvfIndex(tmp_path / "dense")
    writer.upsert(ids(200), x[:200])
    reader = IvfIndex(tmp_path / "dense")
    writer.upsert(ids(200, 200), x[200:])
    assert reader.query(x[350], 1)[0][0] == ids(400)[350]
    writer.delete([ids(400)[350]])
    assert ids(400)[350] not in [p for p, _ in reader.query(x[350], 5)]
    writer.close()
    reader.close()


def test_the_number_of_cells_follows_the_size() -> None:
    assert ivf_cells(100_000) == 1024
    assert ivf_cells(800_000) == 4096
    assert ivf_cells(10) == 256


def _article(pmid: str, text: str) -> PubmedArticle:
    return PubmedArticle(pmid=pmid, title=text, abstract_sections=[AbstractSection(text=text)])


def test_a_new_corpus_uses_the_compressed_index_and_an_older_one_keeps_chroma(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = [_article("1", "statin therapy lowers cholesterol"), _article("2", "aspirin and stroke")]
    with LocalCorpus(tmp_path / "new", HashingEmbedder(DIM)) as new:
        new.add_articles(docs)
        assert new.dense_kind == "faiss-ivf-sq8"
        assert new.search("aspirin stroke", 1, mode="dense")[0].article.pmid == "2"
    assert (tmp_path / "new" / "dense" / "vectors.sqlite3").is_file()
    assert not (tmp_path / "new" / "chroma").exists()

    # an embedded corpus made before the compressed index: Chroma vectors, no meta.dense_index
    monkeypatch.setattr(LocalCorpus, "_check_kind", lambda self: "chroma")
    with LocalCorpus(tmp_path / "old", HashingEmbedder(DIM)) as old:
        old.add_articles(docs)
    monkeypatch.undo()
    with sqlite3.connect(tmp_path / "old" / "corpus.sqlite3") as conn:
        conn.execute("DELETE FROM meta WHERE key = 'dense_index'")
    with LocalCorpus.open(tmp_path / "old", HashingEmbedder(DIM)) as old:
        assert old.dense_kind == "chroma"
        assert old.search("aspirin stroke", 1, mode="dense")[0].article.pmid == "2"
    assert not (tmp_path / "old" / "dense").exists()


def test_the_training_sample_is_random_so_a_period_in_the_import_order_does_not_show(
    tmp_path: Path,
) -> None:
    """Four vectors in turn: a stride of 4 (or any multiple) would sample one of them only."""
    four = clustered(4, seed=3)
    index = IvfIndex(tmp_path / "dense")
    index.upsert(ids(4_000), four[np.arange(4_000) % 4])
    index.delete(ids(400))  # gaps in the keys
    sample = index._sample(800)
    assert len(sample) == 800
    nearest = np.argmax(sample @ four.T, axis=1)
    assert np.bincount(nearest, minlength=4).min() >= 150
    index.close()
