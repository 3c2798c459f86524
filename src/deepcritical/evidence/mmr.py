"""Maximal Marginal Relevance: pick documents that are relevant to a query and unlike each other.

Used to choose the small, diverse evidence slice an agent or the report writer sees.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

__all__ = ["mmr", "unit_rows"]


def unit_rows(matrix: NDArray[np.float32]) -> NDArray[np.float32]:
    """``matrix`` (``(n, d)``) with every non-zero row scaled to L2 norm 1 (new float32 array)."""
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    out: NDArray[np.float32] = (matrix / norms).astype(np.float32, copy=False)
    return out


def mmr(
    query_vector: NDArray[np.floating],
    doc_vectors: NDArray[np.floating],
    k: int,
    lambda_: float = 0.7,
) -> list[int]:
    """Indices of up to ``k`` documents chosen by Maximal Marginal Relevance, in pick order.

    Greedily picks ``argmax lambda_ * sim(q, d) - (1 - lambda_) * max_{s in picked} sim(d, s)``
    where ``sim`` is cosine similarity (vectors are L2-normalised here, so already-normalised
    embeddings are unchanged and ``sim`` is the dot product; zero vectors have similarity 0).
    The first pick is the most relevant document (for any ``lambda_``); ties go to the lower
    index. ``lambda_ = 1`` gives pure relevance order, ``lambda_ = 0`` pure diversity after
    the first pick.

    Args:
        query_vector: shape ``(d,)``.
        doc_vectors: shape ``(n, d)``.
        k: how many to pick; ``k >= n`` returns all ``n`` indices (in MMR order), ``k <= 0``
            or ``n == 0`` returns ``[]``.
        lambda_: relevance/diversity trade-off in ``[0, 1]``.

    Returns:
        Distinct indices into ``doc_vectors``, ``min(k, n)`` of them.

    Raises:
        ValueError: ``lambda_`` outside ``[0, 1]`` (or NaN); ``query_vector`` not 1-D;
            ``doc_vectors`` not 2-D; dimensions that differ.
    """
    if not (isinstance(lambda_, int | float) and not math.isnan(lambda_) and 0.0 <= lambda_ <= 1.0):
        raise ValueError(f"lambda_ must be in [0, 1], got {lambda_!r}")
    query = np.asarray(query_vector, dtype=np.float32)
    docs = np.asarray(doc_vectors, dtype=np.float32)
    if query.ndim != 1:
        raise ValueError(f"query_vector must have shape (d,), got {query.shape}")
    if docs.ndim != 2:
        raise ValueError(f"doc_vectors must have shape (n, d), got {docs.shape}")
    n = docs.shape[0]
    if n == 0 or k <= 0:
        return []
    if docs.shape[1] != query.shape[0]:
        raise ValueError(
            f"dimension mismatch: query has {query.shape[0]}, documents have {docs.shape[1]}"
        )
    query = unit_rows(query.reshape(1, -1))[0]
    docs = unit_rows(docs)
    relevance = docs @ query  # (n,)
    picks = min(k, n)

    first = int(np.argmax(relevance))
    selected = [first]
    available = np.ones(n, dtype=bool)
    available[first] = False
    redundancy = docs @ docs[first]  # (n,) max similarity to any picked document
    while len(selected) < picks:
        scores = lambda_ * relevance - (1.0 - lambda_) * redundancy
        scores = np.where(available, scores, -np.inf)
        best = int(np.argmax(scores))
        selected.append(best)
        available[best] = False
        np.maximum(redundancy, docs @ docs[best], out=redundancy)
    return selected
