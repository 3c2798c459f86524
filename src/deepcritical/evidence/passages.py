"""Retrieval within one paper: the passages of a full text that bear on a query.

A full text (:attr:`Evidence.passages`, from JATS) holds tens to hundreds of paragraphs,
tables and figure captions; the writer, grounding and the supporting quotes read only the few
that answer the question or the sentence at hand. Passages are ranked by two signals fused
with reciprocal rank fusion (:mod:`deepcritical.evidence.fusion`), as the corpus ranks
documents:

- dense: cosine similarity of the passage's embedding (its section path and text) to the
  query's;
- lexical: BM25 (bm25s, ``lucene`` variant, k1 = 1.5, b = 0.75, the stop words of
  :mod:`deepcritical.text.stopwords` removed, Snowball stems) of the query over the paper's
  passages (section path, label and text), an index built per call (a paper has tens to
  hundreds of passages).

Passage embeddings are computed once per text and embedding model per process and kept in a
bounded cache (:data:`MAX_CACHED_VECTORS` vectors, oldest dropped first); they hold only the
vectors of public source text, so sharing them across runs leaks nothing between users.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import bm25s
import numpy as np
import Stemmer
from numpy.typing import NDArray

from deepcritical.evidence.embeddings import Embedder, embedder_name
from deepcritical.evidence.fusion import reciprocal_rank_fusion
from deepcritical.evidence.mmr import unit_rows
from deepcritical.models import Evidence, Passage
from deepcritical.text.stopwords import STOPWORDS

__all__ = [
    "MAX_CACHED_VECTORS",
    "PASSAGES_PER_QUERY",
    "ScoredPassage",
    "passage_vectors",
    "rank_passages",
]

PASSAGES_PER_QUERY = 5
"""Passages of one full text read for one query (the writer's question, a report sentence)."""

MAX_CACHED_VECTORS = 50_000
"""Passage embeddings kept per process (about 75 MB at 384 float32 dimensions)."""


@dataclass(frozen=True)
class ScoredPassage:
    """One passage of an item's full text, ranked for a query.

    Attributes:
        position: its index in ``Evidence.passages``.
        passage: the passage.
        similarity: cosine similarity of its embedding to the query's.
        score: its fused (RRF) score, the order of :func:`rank_passages`.
    """

    position: int
    passage: Passage
    similarity: float
    score: float


class _VectorCache:
    """Embeddings by (embedding model, SHA-256 of the text), least recently used dropped."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._rows: OrderedDict[tuple[str, str], NDArray[np.float32]] = OrderedDict()
        self._lock = threading.Lock()

    def vectors(self, embedder: Embedder, texts: Sequence[str]) -> NDArray[np.float32]:
        model = embedder_name(embedder)
        keys = [(model, hashlib.sha256(t.encode("utf-8")).hexdigest()) for t in texts]
        with self._lock:
            missing = [i for i, key in enumerate(keys) if key not in self._rows]
        fresh = (
            unit_rows(np.asarray(embedder.embed([texts[i] for i in missing]), dtype=np.float32))
            if missing
            else None
        )
        with self._lock:
            found: dict[tuple[str, str], NDArray[np.float32]] = {}
            if fresh is not None:
                for i, row in zip(missing, fresh, strict=True):
                    found[keys[i]] = row
                    self._rows[keys[i]] = row
            for key in keys:
                if key in self._rows:
                    self._rows.move_to_end(key)
                    found.setdefault(key, self._rows[key])
            while len(self._rows) > self._limit:
                self._rows.popitem(last=False)
        return np.stack([found[key] for key in keys]).astype(np.float32, copy=False)


_CACHE = _VectorCache(MAX_CACHED_VECTORS)


def _passage_text(passage: Passage) -> str:
    return " ".join([*passage.section, passage.label, passage.text]).strip()


_STOPWORDS = sorted(STOPWORDS)  # bm25s takes a language name or a list


def _bm25_ranking(texts: Sequence[str], query: str) -> list[int]:
    """Indexes of ``texts`` sharing a (stemmed, non-stopword) term with ``query``, by BM25
    score, best first (ties in text order)."""
    stemmer = Stemmer.Stemmer("english")  # not thread-safe: one per call
    retriever = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
    tokens = bm25s.tokenize(list(texts), stopwords=_STOPWORDS, stemmer=stemmer, show_progress=False)
    retriever.index(tokens, show_progress=False)
    words = bm25s.tokenize(
        [query], stopwords=_STOPWORDS, stemmer=stemmer, return_ids=False, show_progress=False
    )[0]
    known = [w for w in words if w in retriever.vocab_dict]
    if not known:
        return []
    scores = np.asarray(retriever.get_scores(known), dtype=np.float64)
    return [int(i) for i in np.argsort(-scores, kind="stable") if scores[i] > 0.0]


def passage_vectors(evidence: Evidence, embedder: Embedder) -> NDArray[np.float32]:
    """The embeddings of ``evidence``'s passages (section path, label and text of each):
    ``(len(evidence.passages), dim)`` float32, rows L2-normalised; ``(0, 1)`` without passages.
    Computed once per text and model per process."""
    if not evidence.passages:
        return np.zeros((0, 1), dtype=np.float32)
    return _CACHE.vectors(embedder, [_passage_text(p) for p in evidence.passages])


def rank_passages(
    evidence: Evidence,
    query: str,
    query_vector: NDArray[np.float32],
    embedder: Embedder,
    k: int = PASSAGES_PER_QUERY,
) -> list[ScoredPassage]:
    """The ``k`` passages of ``evidence``'s full text that best answer ``query``, best first
    (``[]`` for an abstract-only item or ``k <= 0``).

    ``query_vector`` is ``query``'s embedding by ``embedder`` (L2-normalised), passed in so
    callers that rank many items embed the query once. Dense and lexical rankings are fused
    with RRF; a passage sharing no content word with the query still ranks by its embedding.
    """
    if not evidence.passages or k <= 0:
        return []
    vectors = passage_vectors(evidence, embedder)
    sims = vectors @ np.asarray(query_vector, dtype=np.float32).reshape(-1)
    dense = [str(i) for i in np.argsort(-sims, kind="stable")]
    lexical = [str(i) for i in _bm25_ranking([_passage_text(p) for p in evidence.passages], query)]
    fused = reciprocal_rank_fusion({"dense": dense, "lexical": lexical})[:k]
    return [
        ScoredPassage(int(h.id), evidence.passages[int(h.id)], float(sims[int(h.id)]), h.score)
        for h in fused
    ]
