"""Embedders for hermetic tests: deterministic vectors without a model."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = ["HashingEmbedder"]


class HashingEmbedder:
    """Deterministic bag-of-words embedder for fast hermetic tests (no model).

    Each lower-cased word is hashed into one of ``dimension`` buckets; vectors are
    L2-normalised, so texts sharing words have positive cosine similarity.
    """

    def __init__(self, dimension: int = 256) -> None:
        self.dimension = dimension

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                h = int(hashlib.md5(word.encode()).hexdigest(), 16)
                out[i, h % self.dimension] += 1.0
            norm = np.linalg.norm(out[i])
            if norm > 0:
                out[i] /= norm
        return out
