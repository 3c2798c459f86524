"""The GPU benchmark without a GPU: it says so and exits 0; its CPU smoke run goes through
every stage, and its pipeline gives each text the vector the forward pass alone gives it, with
every record written."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
import torch

from benchmarks import bench_import_gpu
from benchmarks.bench_import_gpu import SqliteWriter, Stages, load_texts, model_directory, pipelined


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present: the real run applies")
def test_without_a_gpu_it_says_so_and_exits_cleanly(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_import_gpu.main([]) == 0
    assert "no CUDA GPU" in capsys.readouterr().out


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present: the real run applies")
def test_the_cpu_smoke_run_prints_every_stage(
    pubmedqa_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert bench_import_gpu.main(["--cpu-smoke", "--data", str(pubmedqa_dir)]) == 0
    out = capsys.readouterr().out
    for stage in (
        "1. tokenization alone",
        "2. forward pass alone",
        "3. end-to-end embedding",
        "4. end-to-end import incl. writes",
    ):
        assert stage in out
    assert out.count("abstracts/s") == 4


def test_the_pipeline_keeps_each_vector_with_its_text_and_writes_every_row(
    pubmedqa_dir: Path, tmp_path: Path
) -> None:
    stages = Stages(model_directory(None), "cpu", "fp32", 64, batch=4)
    texts = load_texts(pubmedqa_dir, 10)
    assert len(set(texts)) == 10  # distinct abstracts: a swapped vector would show
    alone = stages.forward(stages.tokenize(texts))
    got = np.zeros_like(alone)

    def sink(first: int, vectors: np.ndarray) -> None:
        got[first : first + len(vectors)] = vectors

    pipelined(stages, texts, 3, sink)  # chunks of 3: the last one short
    np.testing.assert_allclose(got, alone, atol=1e-5)
    writer = SqliteWriter(tmp_path / "w.sqlite3", texts)
    pipelined(stages, texts, 4, writer.put)
    writer.close()
    with sqlite3.connect(tmp_path / "w.sqlite3") as conn:
        rows = conn.execute("SELECT pmid, text, vector FROM docs ORDER BY CAST(pmid AS INT)")
        stored = list(rows)
    assert [r[1] for r in stored] == texts
    vectors = np.stack([np.frombuffer(r[2], dtype=np.float32) for r in stored])
    np.testing.assert_allclose(vectors, alone, atol=1e-5)
