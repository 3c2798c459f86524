"""Which embedder a corpus gets: ``embedding_backend="auto"`` follows the path the corpus
recorded (a corpus made before paths: its original one), a new corpus gets the machine's
import path, an explicit backend that differs from the corpus's vectors is refused, a run's
embedder is reused when it computes the corpus's vector space."""

from __future__ import annotations

from pathlib import Path

import pytest

from deepcritical.config import EmbeddingBackend, Settings
from deepcritical.corpus import embedding
from deepcritical.corpus.corpus_errors import CorpusMismatchError
from deepcritical.corpus.documents import DB_NAME, DocumentStore
from deepcritical.corpus.embedding import (
    corpus_embedder,
    corpus_path,
    describe_corpus_embedding,
    stored_embedding_model,
    stored_embedding_path,
)
from deepcritical.corpus.index import LocalCorpus
from deepcritical.evidence import onnx_embeddings
from deepcritical.evidence.embedding_paths import MachineCapabilities, PathName
from deepcritical.evidence.embeddings import DEFAULT_MODEL, Embedder
from deepcritical.evidence.onnx_embeddings import onnx_int8_name
from deepcritical.formats.pubmed_xml import AbstractSection, PubmedArticle
from deepcritical.testing.embedders import HashingEmbedder

INT8 = onnx_int8_name(DEFAULT_MODEL)


class NamedEmbedder(HashingEmbedder):
    def __init__(self, model_name: str, path: str | None = None) -> None:
        super().__init__()
        self.model_name = model_name
        if path is not None:
            self.path = path


def build(directory: Path, model_name: str, path: str | None = None) -> Path:
    article = PubmedArticle(
        pmid="1",
        title="Metformin in type 2 diabetes",
        abstract_sections=[AbstractSection(label="RESULTS", text="Metformin lowered HbA1c.")],
    )
    with LocalCorpus(directory, NamedEmbedder(model_name, path)) as local:
        assert local.add_articles([article]).added == 1
    return directory


def settings(directory: Path, backend: EmbeddingBackend) -> Settings:
    return Settings(corpus_dir=directory, embedding_backend=backend)


@pytest.fixture
def loaded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths asked of path_embedder (which returns an embedder named after them); this
    machine's paths are those of a CPU with AMX."""
    asked: list[str] = []

    def fake(model: str, path: PathName = "torch-fp32") -> Embedder:
        asked.append(path)
        return NamedEmbedder(onnx_int8_name(model) if path == "onnx-int8" else model, path)

    monkeypatch.setattr(embedding, "path_embedder", fake)
    monkeypatch.setattr(onnx_embeddings, "detect_capabilities", lambda: AMX)
    return asked


AMX = MachineCapabilities("a Xeon with AMX", frozenset({"avx512f", "amx_bf16", "avx512_bf16"}))


def test_stored_model_is_read_without_creating_anything(tmp_path: Path) -> None:
    assert stored_embedding_model(tmp_path / "none") is None
    assert not (tmp_path / "none").exists()
    assert stored_embedding_model(build(tmp_path / "c", INT8)) == INT8


@pytest.mark.usefixtures("loaded")
def test_auto_follows_the_corpus_and_uses_the_machine_path_for_a_new_one(tmp_path: Path) -> None:
    auto = settings(tmp_path, "auto")
    assert corpus_path(auto, None) == "torch-bf16-128"  # the AMX machine's import path
    assert corpus_path(auto, "onnx-int8") == "onnx-int8"
    assert corpus_path(auto, "torch-fp32") == "torch-fp32"
    assert corpus_path(settings(tmp_path, "torch"), "onnx-int8") == "torch-fp32"
    assert corpus_path(settings(tmp_path, "onnx-int8"), None) == "onnx-int8"


def test_a_corpus_records_its_path_and_an_old_one_reads_as_its_original(tmp_path: Path) -> None:
    assert stored_embedding_path(tmp_path / "none") is None
    new = build(tmp_path / "new", DEFAULT_MODEL, "torch-bf16-128")
    assert stored_embedding_path(new) == "torch-bf16-128"
    for name, original in ((INT8, "onnx-int8"), (DEFAULT_MODEL, "torch-fp32")):
        old = build(tmp_path / original, name, original)
        store = DocumentStore(old / DB_NAME)
        store._conn.execute("DELETE FROM meta WHERE key LIKE 'embedding_path'")  # as before
        store._conn.commit()
        store.close()
        assert stored_embedding_path(old) == original
        assert describe_corpus_embedding(old) == (
            f"embedding path {original} (recorded before paths: its original)"
        )


def test_an_import_records_its_embedding_rate(tmp_path: Path) -> None:
    articles = [
        PubmedArticle(pmid=str(n), title=f"Trial {n} of metformin", abstract_sections=[])
        for n in range(1, 41)
    ]
    with LocalCorpus(tmp_path / "c", NamedEmbedder(DEFAULT_MODEL, "torch-bf16-128")) as local:
        local.add_articles(articles[:5])  # too few texts to time
        assert "texts/s" not in describe_corpus_embedding(tmp_path / "c")
        local.add_articles(articles[5:])
    described = describe_corpus_embedding(tmp_path / "c")
    assert described.startswith("embedding path torch-bf16-128; last import embedded ")
    assert described.endswith(" texts/s (torch-bf16-128)")
    rate = float(described.split("embedded ")[1].split(" ")[0])
    assert rate > 0


def test_int8_corpus_is_searched_with_int8_vectors(tmp_path: Path, loaded: list[str]) -> None:
    directory = build(tmp_path / "c", INT8, "onnx-int8")
    run_embedder = NamedEmbedder(DEFAULT_MODEL)  # a run's torch embedder (screening)
    chosen = corpus_embedder(settings(directory, "auto"), directory, run_embedder)
    assert loaded == ["onnx-int8"]
    assert chosen is not run_embedder
    with LocalCorpus.open(directory, chosen) as local:
        assert local.search("metformin", 1)[0].article.pmid == "1"


def test_run_embedder_is_reused_when_it_made_the_corpus(tmp_path: Path, loaded: list[str]) -> None:
    directory = build(tmp_path / "c", DEFAULT_MODEL)
    run_embedder = NamedEmbedder(DEFAULT_MODEL)
    assert corpus_embedder(settings(directory, "auto"), directory, run_embedder) is run_embedder
    assert loaded == []


def test_an_exact_run_path_queries_a_corpus_of_another_exact_path(
    tmp_path: Path, loaded: list[str]
) -> None:
    """A torch-bf16-128 corpus (vectors in torch fp32's space) is queried by the run's
    torch-bf16 embedder: one model in memory, no second load."""
    directory = build(tmp_path / "c", DEFAULT_MODEL, "torch-bf16-128")
    run_embedder = NamedEmbedder(DEFAULT_MODEL, "torch-bf16")
    assert corpus_embedder(settings(directory, "auto"), directory, run_embedder) is run_embedder
    alone = corpus_embedder(settings(directory, "auto"), directory)  # corpus add, no run
    assert loaded == ["torch-bf16-128"]
    with LocalCorpus.open(directory, alone) as local:
        assert local.search("metformin", 1)[0].article.pmid == "1"


def test_explicit_other_backend_is_refused_not_mixed(tmp_path: Path, loaded: list[str]) -> None:
    directory = build(tmp_path / "c", INT8, "onnx-int8")
    torch = corpus_embedder(settings(directory, "torch"), directory)
    assert loaded == ["torch-fp32"]
    with pytest.raises(CorpusMismatchError, match="DEEPCRITICAL_EMBEDDING_BACKEND=auto"):
        LocalCorpus.open(directory, torch)
    with pytest.raises(CorpusMismatchError, match=r"embedded with '.*#onnx-int8'"):
        LocalCorpus(directory, NamedEmbedder(DEFAULT_MODEL))
