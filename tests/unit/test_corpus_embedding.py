"""Which embedder a corpus gets: ``embedding_backend="auto"`` follows the corpus, an explicit
backend that differs from the corpus's is refused, a run's embedder is reused when it fits."""

from __future__ import annotations

from pathlib import Path

import pytest

from deepcritical.config import EmbeddingBackend, Settings
from deepcritical.corpus import embedding
from deepcritical.corpus.corpus_errors import CorpusMismatchError
from deepcritical.corpus.embedding import corpus_backend, corpus_embedder, stored_embedding_model
from deepcritical.corpus.index import LocalCorpus
from deepcritical.evidence.embeddings import DEFAULT_MODEL, Embedder
from deepcritical.evidence.onnx_embeddings import onnx_int8_name
from deepcritical.formats.pubmed_xml import AbstractSection, PubmedArticle
from deepcritical.testing.embedders import HashingEmbedder

INT8 = onnx_int8_name(DEFAULT_MODEL)


class NamedEmbedder(HashingEmbedder):
    def __init__(self, model_name: str) -> None:
        super().__init__()
        self.model_name = model_name


def build(directory: Path, model_name: str) -> Path:
    article = PubmedArticle(
        pmid="1",
        title="Metformin in type 2 diabetes",
        abstract_sections=[AbstractSection(label="RESULTS", text="Metformin lowered HbA1c.")],
    )
    with LocalCorpus(directory, NamedEmbedder(model_name)) as local:
        assert local.add_articles([article]).added == 1
    return directory


def settings(directory: Path, backend: EmbeddingBackend) -> Settings:
    return Settings(corpus_dir=directory, embedding_backend=backend)


@pytest.fixture
def loaded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The backends asked of backend_embedder (which returns an embedder named after them)."""
    asked: list[str] = []

    def fake(model: str, backend: EmbeddingBackend = "auto") -> Embedder:
        asked.append(backend)
        return NamedEmbedder(onnx_int8_name(model) if backend == "onnx-int8" else model)

    monkeypatch.setattr(embedding, "backend_embedder", fake)
    return asked


def test_stored_model_is_read_without_creating_anything(tmp_path: Path) -> None:
    assert stored_embedding_model(tmp_path / "none") is None
    assert not (tmp_path / "none").exists()
    assert stored_embedding_model(build(tmp_path / "c", INT8)) == INT8


def test_auto_follows_the_corpus_and_uses_int8_for_a_new_one(tmp_path: Path) -> None:
    auto = settings(tmp_path, "auto")
    assert corpus_backend(auto, None) == "onnx-int8"
    assert corpus_backend(auto, INT8) == "onnx-int8"
    assert corpus_backend(auto, DEFAULT_MODEL) == "torch"
    assert corpus_backend(settings(tmp_path, "torch"), INT8) == "torch"


def test_int8_corpus_is_searched_with_int8_vectors(tmp_path: Path, loaded: list[str]) -> None:
    directory = build(tmp_path / "c", INT8)
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


def test_explicit_other_backend_is_refused_not_mixed(tmp_path: Path, loaded: list[str]) -> None:
    directory = build(tmp_path / "c", INT8)
    torch = corpus_embedder(settings(directory, "torch"), directory)
    assert loaded == ["torch"]
    with pytest.raises(CorpusMismatchError, match="DEEPCRITICAL_EMBEDDING_BACKEND=auto"):
        LocalCorpus.open(directory, torch)
    with pytest.raises(CorpusMismatchError, match=r"embedded with '.*#onnx-int8'"):
        LocalCorpus(directory, NamedEmbedder(DEFAULT_MODEL))
