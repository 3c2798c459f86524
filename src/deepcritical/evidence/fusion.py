"""Reciprocal rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009).

``score(d) = sum over rankings r containing d of 1 / (k + rank_r(d))``, ranks 1-based. With
k = 60 (the paper's value) a document first in one list scores 1/61 ≈ 0.0164; one first in
two lists 2/61 ≈ 0.0328. Only ranks matter, so BM25 scores and cosine similarities need no
calibration against each other.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

RRF_K = 60
"""The RRF constant k (damps the weight of the very first ranks)."""


def rrf_score(ranks: Iterable[int], k: int = RRF_K) -> float:
    """The fused score of a document from its 1-based ``ranks``: the sum of ``1 / (k + rank)``.

    The terms are added in the order given (the order of the rankings), so callers that give
    the ranks in the same order get the same float.
    """
    score = 0.0
    for rank in ranks:
        score += 1.0 / (k + rank)
    return score


@dataclass(frozen=True)
class FusedHit:
    """One fused result: ``ranks`` maps a ranking's name to the 1-based rank it gave ``id``."""

    id: str
    score: float
    ranks: dict[str, int] = field(default_factory=dict)


def reciprocal_rank_fusion(rankings: Mapping[str, Sequence[str]], k: int = RRF_K) -> list[FusedHit]:
    """Fuse named rankings (ids, best first) into one list, best first.

    A repeated id within one ranking counts at its first (best) rank only. Ties in score are
    broken by the best single rank, then by id, so the order is deterministic.

    Raises:
        ValueError: ``k`` < 0.
    """
    if k < 0:
        raise ValueError("RRF k must be >= 0")
    ranks: dict[str, dict[str, int]] = {}
    for name, ids in rankings.items():
        for rank, doc_id in enumerate(ids, start=1):
            ranks.setdefault(doc_id, {}).setdefault(name, rank)
    scores = {doc_id: rrf_score(by_name.values(), k) for doc_id, by_name in ranks.items()}
    ordered = sorted(scores, key=lambda d: (-scores[d], min(ranks[d].values()), d))
    return [FusedHit(d, scores[d], ranks[d]) for d in ordered]
