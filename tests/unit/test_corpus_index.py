"""LocalCorpus: import, idempotent re-import, persistence, errors, hybrid search."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from deepcritical.corpus import lexical
from deepcritical.corpus.corpus_errors import (
    CorpusFormatError,
    CorpusMismatchError,
    CorpusNotFoundError,
    EmptyCorpusError,
)
from deepcritical.corpus.index import LocalCorpus
from deepcritical.corpus.ingest import file_sha256
from deepcritical.corpus.readers import read_corpus_file
from deepcritical.formats.pubmed_xml import AbstractSection, PubmedArticle
from deepcritical.testing.embedders import HashingEmbedder

TOPICS = {
    "1": "Metformin reduces cancer incidence in patients with type 2 diabetes.",
    "2": "Statin therapy lowers cholesterol and cardiovascular mortality.",
    "3": "Aspirin prevents colorectal adenoma recurrence in a randomized trial.",
    "4": "Vaccines stored in refrigerators were exposed to freezing temperatures.",
    "5": "Exercise training improves insulin sensitivity in obese adolescents.",
    "6": "Smoking cessation reduces the risk of lung cancer in former smokers.",
}


class CountingEmbedder(HashingEmbedder):
    """Hashing embedder that counts the texts it embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.texts.extend(texts)
        return super().embed(texts)


def rec(pmid: str, text: str, **extra: Any) -> dict[str, Any]:
    return {
        "pmid": pmid,
        "year": 2010,
        "mesh_terms": [],
        "abstract_sections": [{"label": "RESULTS", "text": text}],
        **extra,
    }


def write_jsonl(path: Path, records: list[Any]) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def topics_file(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "topics.jsonl", [rec(p, t) for p, t in TOPICS.items()])


@pytest.fixture
def corpus(tmp_path: Path, topics_file: Path) -> LocalCorpus:
    local = LocalCorpus(tmp_path / "corpus", HashingEmbedder())
    local.add_file(topics_file)
    return local


def test_add_file_imports_records(tmp_path: Path, topics_file: Path) -> None:
    local = LocalCorpus(tmp_path / "c", HashingEmbedder())
    assert local.is_empty
    assert local.count() == 0
    result = local.add_file(topics_file)
    assert (result.read, result.added, result.skipped_existing) == (6, 6, 0)
    assert local.count() == 6
    assert not local.is_empty
    article = local.get("3")
    assert article is not None
    assert article == next(a for a in read_corpus_file(topics_file) if a.pmid == "3")
    assert local.get("999") is None


def test_re_adding_the_same_file_adds_nothing(tmp_path: Path, topics_file: Path) -> None:
    embedder = CountingEmbedder()
    local = LocalCorpus(tmp_path / "c", embedder)
    local.add_file(topics_file)
    embedded = len(embedder.texts)
    again = local.add_file(topics_file)
    assert (again.read, again.added, again.skipped_existing) == (6, 0, 6)
    assert local.count() == 6
    assert len(embedder.texts) == embedded  # nothing embedded twice
    (manifest,) = local.imported_files()
    assert manifest.sha256 == file_sha256(topics_file)[0]
    assert manifest.records_read == 6
    assert manifest.records_added == 6
    assert manifest.path == str(topics_file.resolve())


def test_overlapping_file_adds_only_new_pmids_and_keeps_first_version(
    tmp_path: Path, corpus: LocalCorpus
) -> None:
    other = write_jsonl(
        tmp_path / "more.jsonl",
        [rec("2", "A different text for an existing PMID."), rec("7", "Coffee and liver disease.")],
    )
    result = corpus.add_file(other)
    assert (result.read, result.added, result.skipped_existing) == (2, 1, 1)
    assert corpus.count() == 7
    stored = corpus.get("2")
    assert stored is not None
    assert "Statin" in stored.abstract_text()
    assert [h.article.pmid for h in corpus.search("coffee liver", 1, mode="bm25")] == ["7"]
    assert len(corpus.imported_files()) == 2


def test_duplicates_within_a_file_and_empty_records(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "dups.jsonl",
        [rec("1", "First."), rec("1", "Second copy."), {"pmid": "2", "abstract_sections": []}],
    )
    local = LocalCorpus(tmp_path / "c", HashingEmbedder())
    result = local.add_file(path)
    assert (result.read, result.added, result.skipped_existing, result.skipped_empty) == (
        3,
        1,
        1,
        1,
    )
    stored = local.get("1")
    assert stored is not None
    assert stored.abstract_text() == "RESULTS: First."
    assert local.get("2") is None


def test_bad_line_aborts_before_anything_is_written(tmp_path: Path, corpus: LocalCorpus) -> None:
    # more good records than one import batch (256) precede the bad line
    good = [rec(str(1000 + i), f"Record number {i} about topic {i % 7}.") for i in range(300)]
    path = write_jsonl(tmp_path / "bad.jsonl", [*good, '{"pmid": "77", "year":', rec("9", "x")])
    with pytest.raises(CorpusFormatError, match=r"bad\.jsonl:301: invalid JSON"):
        corpus.add_file(path)
    assert corpus.count() == 6
    assert corpus.get("1000") is None
    assert len(corpus.imported_files()) == 1  # the failed file is not in the manifest


def test_unknown_suffix_and_missing_file(tmp_path: Path, corpus: LocalCorpus) -> None:
    csv = tmp_path / "corpus.csv"
    csv.write_text("pmid,text\n1,x\n")
    with pytest.raises(CorpusFormatError, match="unsupported file type"):
        corpus.add_file(csv)
    with pytest.raises(FileNotFoundError):
        corpus.add_file(tmp_path / "missing.jsonl")
    assert corpus.count() == 6


def test_persists_across_reopening_without_re_embedding(
    tmp_path: Path, corpus: LocalCorpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = corpus.directory
    before = [(h.article.pmid, h.score) for h in corpus.search("cancer risk", 4)]
    corpus.close()

    def no_rebuild(*args: object, **kwargs: object) -> None:
        raise AssertionError("the BM25 index was rebuilt on reopening")

    monkeypatch.setattr(lexical, "rebuild", no_rebuild)
    embedder = CountingEmbedder()
    reopened = LocalCorpus.open(directory, embedder)
    assert reopened.count() == 6
    assert embedder.texts == []  # opening embeds nothing
    after = [(h.article.pmid, h.score) for h in reopened.search("cancer risk", 4)]
    assert after == before
    assert embedder.texts == ["cancer risk"]  # searching embeds the query only


def test_a_corpus_with_a_bm25s_index_gets_its_fts5_index_built_once(
    corpus: LocalCorpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a corpus made before FTS5: no lexical table, no meta row, a bm25s index directory
    directory = corpus.directory
    corpus.close()
    with sqlite3.connect(directory / "corpus.sqlite3") as conn:
        conn.execute("DROP TABLE lexical")
        conn.execute("DROP TABLE lexical_rows")
        conn.execute("DELETE FROM meta WHERE key = 'lexical'")
    conn.close()
    (directory / "bm25" / "gen-1").mkdir(parents=True)
    reopened = LocalCorpus(directory, HashingEmbedder())
    hits = reopened.search("aspirin adenoma", 3, mode="bm25")
    assert [h.article.pmid for h in hits] == ["3"]
    assert not (directory / "bm25").exists()  # the old index is gone
    reopened.close()
    calls: list[object] = []
    monkeypatch.setattr(lexical, "rebuild", lambda *a: calls.append(a))
    LocalCorpus(directory, HashingEmbedder()).close()
    assert calls == []  # built once only


def test_open_and_exists_on_missing_or_empty_corpus(tmp_path: Path) -> None:
    nowhere = tmp_path / "nowhere"
    assert not LocalCorpus.exists(nowhere)
    with pytest.raises(CorpusNotFoundError, match=r"run `deepcritical corpus add FILE` first"):
        LocalCorpus.open(nowhere, HashingEmbedder())
    assert not nowhere.exists()  # checking creates nothing

    empty = LocalCorpus(tmp_path / "empty", HashingEmbedder())
    assert not LocalCorpus.exists(empty.directory)
    with pytest.raises(EmptyCorpusError, match="empty"):
        LocalCorpus.open(empty.directory, HashingEmbedder())
    with pytest.raises(EmptyCorpusError, match=r"corpus add FILE"):
        empty.search("metformin", 5)


def test_exists_after_import(corpus: LocalCorpus) -> None:
    assert LocalCorpus.exists(corpus.directory)
    assert LocalCorpus.open(corpus.directory, HashingEmbedder()).count() == 6


class NamedEmbedder(HashingEmbedder):
    def __init__(self, model_name: str, dimension: int = 256) -> None:
        super().__init__(dimension)
        self.model_name = model_name


def test_other_embedding_model_is_refused(tmp_path: Path, topics_file: Path) -> None:
    local = LocalCorpus(tmp_path / "c", NamedEmbedder("org/model-a"))
    local.add_file(topics_file)
    local.close()
    with pytest.raises(CorpusMismatchError, match="embedded with 'org/model-a', not 'org/model-b'"):
        LocalCorpus(tmp_path / "c", NamedEmbedder("org/model-b"))
    same = LocalCorpus(tmp_path / "c", NamedEmbedder("org/model-a"))
    assert same.search("statin", 1)[0].article.pmid == "2"


def test_other_vector_dimension_is_refused(corpus: LocalCorpus, tmp_path: Path) -> None:
    narrow = LocalCorpus(corpus.directory, HashingEmbedder(dimension=64))
    with pytest.raises(CorpusMismatchError, match="256-dimensional vectors; the embedder gives 64"):
        narrow.search("statin", 1)
    extra = write_jsonl(tmp_path / "extra.jsonl", [rec("9", "Zinc and colds.")])
    with pytest.raises(CorpusMismatchError, match="gives 64"):
        narrow.add_file(extra)
    assert narrow.count() == 6


def test_xml_import_and_gzipped_copy_is_not_added_twice(api_fixtures: Path, tmp_path: Path) -> None:
    local = LocalCorpus(tmp_path / "c", HashingEmbedder())
    files = sorted((api_fixtures / "ncbi_eutils").glob("efetch_*.xml"))
    assert len(files) >= 5
    total = 0
    for path in files:
        result = local.add_file(path)
        assert result.added == result.read
        total += result.added
    assert local.count() == total == 7
    source = api_fixtures / "ncbi_eutils" / "efetch_pubmed_2articles.xml"
    packed = tmp_path / "copy.xml.gz"
    with source.open("rb") as src, gzip.open(packed, "wb") as dst:
        shutil.copyfileobj(src, dst)
    result = local.add_file(packed)
    assert (result.read, result.added, result.skipped_existing) == (2, 0, 2)
    assert local.count() == 7
    # a record without an abstract is still found by its title
    hits = local.search("AIDS treatment correctional facilities", 1, mode="bm25")
    assert hits[0].article.pmid == "12091962"
    article = local.get("27797938")
    assert article is not None
    assert article.title.startswith("Leucocyte telomere length")


def test_hybrid_search_ranks_and_fuses(corpus: LocalCorpus) -> None:
    hits = corpus.search("aspirin colorectal adenoma trial", 3)
    assert len(hits) == 3
    top = hits[0]
    assert top.article.pmid == "3"
    assert top.bm25_rank == 1
    assert top.dense_rank == 1
    assert top.score == pytest.approx(2 / 61)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    for h in hits:  # each score is the RRF sum of the ranks reported
        expected = sum(1 / (60 + r) for r in (h.bm25_rank, h.dense_rank) if r is not None)
        assert h.score == pytest.approx(expected)


def test_stemming_and_stopwords_in_bm25(corpus: LocalCorpus) -> None:
    # "vaccine"/"refrigerator"/"freezing" match "Vaccines"/"refrigerators"/"freezing" by stem
    assert corpus.search("vaccine refrigerator freeze", 2, mode="bm25")[0].article.pmid == "4"
    assert corpus.search("the of and with", 5, mode="bm25") == []  # stopwords only
    assert corpus.search("zzzunknownterm", 5, mode="bm25") == []


def test_modes_limits_and_empty_queries(corpus: LocalCorpus) -> None:
    assert corpus.search("", 5) == []
    assert corpus.search("   ", 5) == []
    assert corpus.search("metformin", 0) == []
    dense = corpus.search("metformin diabetes", 10, mode="dense")
    assert len(dense) == 6  # dense ranks every document
    assert all(h.bm25_rank is None and h.dense_rank is not None for h in dense)
    bm25 = corpus.search("metformin diabetes", 10, mode="bm25")
    assert [h.article.pmid for h in bm25] == ["1"]
    assert all(h.dense_rank is None for h in bm25)
    assert len(corpus.search("cancer", 2)) == 2


def test_add_articles_and_incremental_bm25(corpus: LocalCorpus) -> None:
    extra = PubmedArticle(
        pmid="8", title="Zinc and colds", abstract_sections=[AbstractSection(text="Zinc helps.")]
    )
    result = corpus.add_articles([extra, extra])
    assert (result.read, result.added, result.skipped_existing) == (2, 1, 1)
    assert corpus.search("zinc colds", 1, mode="bm25")[0].article.pmid == "8"
    assert corpus.get("8") == extra
    assert not (corpus.directory / "bm25").exists()  # the index is in the database


def test_concurrent_searches_from_threads(corpus: LocalCorpus) -> None:
    errors: list[BaseException] = []
    results: list[str] = []

    def worker(query: str) -> None:
        try:
            results.append(corpus.search(query, 1)[0].article.pmid)
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [
        threading.Thread(target=worker, args=(q,))
        for q in ["statin cholesterol", "smoking lung cancer", "exercise insulin"] * 3
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(results) == sorted(["2", "6", "5"] * 3)


def test_vector_without_record_is_passed_over(corpus: LocalCorpus) -> None:
    # as left by an import that crashed between writing vectors and committing records
    query = "statin therapy lowers cholesterol"
    dense = corpus._dense_index()
    dense.upsert(["999"], HashingEmbedder().embed([query]))
    assert dense.count() == 7
    hits = corpus.search(query, 2, mode="dense")
    assert len(hits) == 2  # the limit is still filled
    assert hits[0].article.pmid == "2"
    assert hits[1].article.pmid not in {"2", "999"}
    assert hits[0].dense_rank == 2  # rank 1 was the orphan vector
    assert all(h.article.pmid != "999" for h in corpus.search(query, 6))
