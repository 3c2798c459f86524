"""Maximal Marginal Relevance on hand-made vectors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.typing import NDArray

from deepcritical.evidence.mmr import mmr


def unit(*rows: list[float]) -> NDArray[np.float32]:
    m = np.asarray(rows, dtype=np.float32)
    out: NDArray[np.float32] = m / np.linalg.norm(m, axis=1, keepdims=True)
    return out


QUERY = unit([1.0, 0.0, 0.0])[0]
# 0 and 1 are near-identical and most relevant; 2 is relevant but different; 3 is irrelevant.
DOCS = unit([0.8, 0.6, 0.0], [0.8, 0.59, 0.02], [0.75, -0.66, 0.0], [0.0, 0.0, 1.0])


def test_picks_one_twin_and_the_different_relevant_doc() -> None:
    picked = mmr(QUERY, DOCS, k=2, lambda_=0.7)
    assert picked[0] in {0, 1}
    assert picked[1] == 2


def test_lambda_one_is_pure_relevance_order() -> None:
    relevance = DOCS @ QUERY
    expected = [int(i) for i in np.argsort(-relevance, kind="stable")]
    assert mmr(QUERY, DOCS, k=4, lambda_=1.0) == expected
    assert mmr(QUERY, DOCS, k=2, lambda_=1.0) == expected[:2]
    assert set(expected[:2]) == {0, 1}  # pure relevance keeps both twins


def test_lambda_zero_maximises_diversity_after_the_most_relevant() -> None:
    picked = mmr(QUERY, DOCS, k=2, lambda_=0.0)
    assert picked[0] == int(np.argmax(DOCS @ QUERY))
    # the doc least similar to the first pick is the irrelevant, orthogonal one
    assert picked[1] == 3


def test_k_larger_than_n_returns_every_index_once() -> None:
    picked = mmr(QUERY, DOCS, k=10)
    assert sorted(picked) == [0, 1, 2, 3]


@pytest.mark.parametrize("k", [0, -1])
def test_non_positive_k_returns_nothing(k: int) -> None:
    assert mmr(QUERY, DOCS, k=k) == []


def test_no_documents() -> None:
    assert mmr(QUERY, np.zeros((0, 3), dtype=np.float32), k=3) == []


@pytest.mark.parametrize("lam", [-0.1, 1.5, math.nan])
def test_lambda_out_of_range_raises(lam: float) -> None:
    with pytest.raises(ValueError, match="lambda_"):
        mmr(QUERY, DOCS, k=2, lambda_=lam)


def test_shape_errors() -> None:
    with pytest.raises(ValueError, match="dimension mismatch"):
        mmr(QUERY, np.ones((2, 4), dtype=np.float32), k=1)
    with pytest.raises(ValueError, match=r"shape \(n, d\)"):
        mmr(QUERY, np.ones(3, dtype=np.float32), k=1)
    with pytest.raises(ValueError, match=r"shape \(d,\)"):
        mmr(DOCS, DOCS, k=1)


def test_unnormalised_inputs_are_treated_as_cosine() -> None:
    assert mmr(QUERY * 5, DOCS * 3, k=2) == mmr(QUERY, DOCS, k=2)


def test_redundancy_uses_max_over_all_picks() -> None:
    # Three clusters along x, y, z; the query sits between all of them. After picking one per
    # cluster, the next pick must not repeat a cluster while another is unused.
    q = unit([1.0, 1.0, 1.0])[0]
    docs = unit([1, 0.05, 0], [1, 0, 0.05], [0.05, 1, 0], [0, 1, 0.05], [0, 0.05, 1], [0.05, 0, 1])
    picked = mmr(q, docs, k=3, lambda_=0.5)
    clusters = {i // 2 for i in picked}
    assert clusters == {0, 1, 2}


def test_selection_is_greedy_mmr_score() -> None:
    rng = np.random.default_rng(7)
    docs = rng.normal(size=(30, 8)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    q = rng.normal(size=8).astype(np.float32)
    q /= np.linalg.norm(q)
    lam = 0.6
    picked = mmr(q, docs, k=8, lambda_=lam)
    # reference implementation, written the slow, obvious way
    rel = docs @ q
    expected: list[int] = [int(np.argmax(rel))]
    while len(expected) < 8:
        best, best_score = -1, -math.inf
        for i in range(len(docs)):
            if i in expected:
                continue
            score = lam * rel[i] - (1 - lam) * max(float(docs[i] @ docs[j]) for j in expected)
            if score > best_score:
                best, best_score = i, score
        expected.append(best)
    assert picked == expected
