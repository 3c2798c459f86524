"""``corpus info`` and ``doctor`` say which embedding path a corpus was built with, which one
this machine chooses and how fast it embeds (in-process, typer's ``CliRunner``; a fake AMX
machine and the hashing embedder, so no model loads)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray
from typer.testing import CliRunner, Result

from deepcritical.cli.main import app
from deepcritical.corpus.index import LocalCorpus
from deepcritical.evidence import embedding_paths, onnx_embeddings
from deepcritical.evidence.embedding_paths import MachineCapabilities
from deepcritical.evidence.embeddings import DEFAULT_MODEL
from deepcritical.formats.pubmed_xml import PubmedArticle
from deepcritical.testing.embedders import HashingEmbedder

AMX = MachineCapabilities("Fake Xeon 9999", frozenset({"avx2", "avx512f", "amx_bf16"}))


class PathEmbedder(HashingEmbedder):
    """The hashing embedder posing as a path's embedder of all-MiniLM-L6-v2."""

    def __init__(self, path: str) -> None:
        super().__init__(384)
        self.model_name = DEFAULT_MODEL
        self.path = path
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.calls += 1
        return super().embed(texts)


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=True)


@pytest.fixture
def run_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> PathEmbedder:
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("DEEPCRITICAL_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("COLUMNS", "600")  # rich's tables unwrapped
    monkeypatch.setattr(embedding_paths, "_DETECTED", [AMX])  # this machine, as detected
    embedder = PathEmbedder("torch-bf16")
    monkeypatch.setattr(onnx_embeddings, "run_embedder", lambda *_: embedder)
    monkeypatch.setattr(onnx_embeddings, "path_embedder", lambda *_: embedder)
    return embedder


def build(directory: Path, count: int) -> None:
    articles = [
        PubmedArticle(pmid=str(n), title=f"Metformin trial {n}", abstract_sections=[])
        for n in range(1, count + 1)
    ]
    with LocalCorpus(directory, PathEmbedder("torch-bf16-128")) as corpus:
        corpus.add_articles(articles)


def test_corpus_info_shows_the_path_and_the_last_import_rate(
    tmp_path: Path, run_path: PathEmbedder
) -> None:
    build(tmp_path / "data" / "corpus", 40)
    info = invoke("--data-dir", tmp_path / "data", "corpus", "info")
    assert info.exit_code == 0, info.output
    text = " ".join(info.output.split())
    assert "40 documents" in text
    assert "embedding path torch-bf16-128; last import embedded " in text
    assert "texts/s (torch-bf16-128)" in text


def test_doctor_shows_the_machine_the_choice_and_the_measured_rate(
    tmp_path: Path, run_path: PathEmbedder
) -> None:
    build(tmp_path / "data" / "corpus", 3)
    done = invoke("--data-dir", tmp_path / "data", "doctor", "--llm", "none", "--sources", "local")
    # the table wraps its cells at widths the temporary path decides: compare its text
    # without the cell borders and the white space
    flat = "".join(ch for ch in done.output if ch != "│" and not ch.isspace())

    def said(text: str) -> bool:
        return "".join(text.split()) in flat

    assert said("Fake Xeon 9999; flags avx2 avx512f amx_bf16; no CUDA GPU")
    assert said("new corpora torch-bf16-128, runs torch-bf16 (CPU with amx_bf16)")
    assert said("torch-bf16 embeds")
    assert said("abstracts/s")
    assert run_path.calls >= 2  # warmed up, then timed
    assert said("embedding path torch-bf16-128")  # the corpus's own
    assert done.exit_code == 0, done.output
