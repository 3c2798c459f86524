"""Reciprocal rank fusion: scores, ordering, ties, repeated ids."""

from __future__ import annotations

import pytest

from deepcritical.evidence.fusion import RRF_K, reciprocal_rank_fusion, rrf_score


def test_scores_are_sums_of_reciprocal_ranks() -> None:
    fused = reciprocal_rank_fusion({"bm25": ["a", "b", "c"], "dense": ["b", "d"]})
    by_id = {h.id: h for h in fused}
    assert RRF_K == 60
    assert by_id["b"].score == pytest.approx(1 / 62 + 1 / 61)
    assert by_id["a"].score == pytest.approx(1 / 61)
    assert by_id["d"].score == pytest.approx(1 / 62)
    assert by_id["b"].ranks == {"bm25": 2, "dense": 1}
    assert by_id["c"].ranks == {"bm25": 3}
    # found by both lists beats first in one list
    assert [h.id for h in fused] == ["b", "a", "d", "c"]


def test_ties_break_by_best_rank_then_id() -> None:
    fused = reciprocal_rank_fusion({"x": ["q", "p"], "y": ["p", "q"], "z": ["s", "r"]})
    # p and q tie (1/61 + 1/62 each); s (rank 1) and r (rank 2) differ
    assert [h.id for h in fused] == ["p", "q", "s", "r"]
    assert fused[0].score == fused[1].score


def test_repeated_id_counts_once_at_its_best_rank() -> None:
    (hit,) = reciprocal_rank_fusion({"bm25": ["a", "a", "a"]})
    assert hit.score == pytest.approx(1 / 61)
    assert hit.ranks == {"bm25": 1}


def test_k_changes_the_weighting_and_must_be_non_negative() -> None:
    fused = reciprocal_rank_fusion({"one": ["a", "b"]}, k=0)
    assert [h.score for h in fused] == [1.0, 0.5]
    assert reciprocal_rank_fusion({}) == []
    with pytest.raises(ValueError, match="k must be"):
        reciprocal_rank_fusion({"one": ["a"]}, k=-1)


def test_rrf_score_is_the_sum_of_reciprocal_ranks() -> None:
    assert rrf_score([1, 2]) == 1 / 61 + 1 / 62
    assert rrf_score([], k=0) == 0.0
    assert rrf_score([1], k=0) == 1.0
