"""The bf16 torch paths against torch fp32 on the real model (slow: loads it): at 256 word
pieces the vectors are fp32's to cosine 0.999 (the runs' thresholds hold); at 128 a short
text gets the same vector as at 256 and a long one is read only to its 128th word piece."""

from __future__ import annotations

import numpy as np
import pytest

from deepcritical.evidence.embedding_paths import EXACT_COSINE, PATHS
from deepcritical.evidence.embeddings import DEFAULT_MODEL, SentenceTransformerEmbedder
from deepcritical.evidence.torch_embeddings import TorchPathEmbedder
from tests.unit.test_onnx_embeddings import SENTENCES, long_abstracts


def test_only_bf16_and_fp16_torch_paths_are_accepted() -> None:
    with pytest.raises(ValueError, match="onnx-int8 is not a bf16"):
        TorchPathEmbedder(DEFAULT_MODEL, PATHS["onnx-int8"])
    with pytest.raises(ValueError, match="torch-fp32 is not a bf16"):
        TorchPathEmbedder(DEFAULT_MODEL, PATHS["torch-fp32"])
    empty = TorchPathEmbedder(DEFAULT_MODEL, PATHS["torch-bf16"]).embed([])
    assert empty.shape == (0, 384)


@pytest.mark.slow
def test_bf16_vectors_are_fp32_ones_to_the_exact_cosine(
    minilm_embedder: SentenceTransformerEmbedder,
) -> None:
    texts = SENTENCES + long_abstracts(8)
    reference = minilm_embedder.embed(texts)
    bf16 = TorchPathEmbedder(DEFAULT_MODEL, PATHS["torch-bf16"], batch_size=4)
    vectors = bf16.embed(texts)
    assert vectors.shape == reference.shape
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert float((vectors * reference).sum(1).min()) >= EXACT_COSINE
    # the order given is kept although batches are sorted by length
    assert float((bf16.embed(texts[::-1]) * reference[::-1]).sum(1).min()) >= EXACT_COSINE
    short = TorchPathEmbedder(DEFAULT_MODEL, PATHS["torch-bf16-128"])
    cut = short.embed(texts)
    n = len(SENTENCES)
    assert float((cut[:n] * vectors[:n]).sum(1).min()) > 0.9999  # short texts: the same
    if len(texts) > n:  # long abstracts: only their first 128 word pieces are read
        assert {len(e.ids) for e in short.tokenize(texts[n:])} == {128}
        assert float((cut[n:] * vectors[n:]).sum(1).max()) < 0.999
