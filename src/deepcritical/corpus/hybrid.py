"""Hybrid search of the local corpus (:class:`HybridSearch`): BM25 and dense rankings fused.

The top ``N = max(5 * limit, 50)`` rows by BM25 (the corpus's FTS5 index,
:mod:`deepcritical.corpus.lexical`) and the top ``N`` by cosine similarity of the corpus's
embeddings (:class:`~deepcritical.corpus.dense.DenseIndex`; the query is the only text
embedded) are fused with reciprocal rank fusion (k = 60, :mod:`deepcritical.evidence.fusion`).
A row is a document (title + abstract) or, for a full-text article (JATS), one of its passages
(section path + paragraph, table or figure caption), with the id ``"<pmid>#<position>"``: a
hit is the document of its best-ranked row, and names the passage when that row is one
(:attr:`ScoredDocument.passage`). Records are fetched in rank order; a vector whose record is
missing (an import that crashed between its two writes) is passed over.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from deepcritical.corpus.corpus_errors import CorpusMismatchError, EmptyCorpusError
from deepcritical.corpus.dense import DenseIndex
from deepcritical.corpus.documents import DocumentStore, split_index_id
from deepcritical.evidence.embeddings import Embedder
from deepcritical.evidence.fusion import RRF_K, FusedHit, reciprocal_rank_fusion
from deepcritical.formats.pubmed_xml import PubmedArticle
from deepcritical.models import Passage

__all__ = ["HybridSearch", "ScoredDocument", "SearchMode"]

SearchMode = Literal["hybrid", "bm25", "dense"]
"""``"hybrid"``: BM25 and dense fused; ``"bm25"`` or ``"dense"``: one ranking alone."""


class ScoredDocument(BaseModel):
    """A search hit: the record, its RRF score, and its 1-based rank in each list.

    ``score`` = sum of ``1 / (60 + rank)`` over the lists that ranked its best row (at most
    2/61 ≈ 0.033). ``bm25_rank`` / ``dense_rank`` are that row's ranks, ``None`` when it was
    not in that list's top N. ``passages`` is the full text of a JATS article (``[]`` for an
    abstract); ``passage`` is the one that matched when the best row was a passage, else
    ``None`` (the title and abstract matched best).
    """

    model_config = ConfigDict(frozen=True)

    article: PubmedArticle
    score: float
    bm25_rank: int | None = None
    dense_rank: int | None = None
    passages: list[Passage] = Field(default_factory=list)
    passage: Passage | None = None


class HybridSearch:
    """The search of one open corpus: the corpus's document store (records, passages and the
    BM25 index), its dense index (``dense()`` opens it on first use), the ``embedder`` its
    queries are embedded with, and the lock every search takes (the corpus's, shared with its
    imports). ``directory`` only names the corpus in errors.
    :class:`~deepcritical.corpus.index.LocalCorpus` builds one and delegates its searches to it.
    """

    def __init__(
        self,
        *,
        directory: Path,
        docs: DocumentStore,
        dense: Callable[[], DenseIndex],
        embedder: Embedder,
        lock: threading.RLock,
    ) -> None:
        self._directory = directory
        self._docs = docs
        self._dense_index = dense
        self._embedder = embedder
        self._lock = lock

    def search(
        self, query: str, limit: int, *, mode: SearchMode = "hybrid"
    ) -> list[ScoredDocument]:
        """The ``limit`` best documents for ``query``, best first; the contract (modes,
        depth, the errors raised) is
        :meth:`LocalCorpus.search <deepcritical.corpus.index.LocalCorpus.search>`'s."""
        if limit <= 0 or not query.strip():
            return []
        depth = max(5 * limit, 50)
        with self._lock:
            if self._docs.count() == 0:
                raise EmptyCorpusError(self._directory)
            rankings: dict[str, list[str]] = {}
            if mode in ("hybrid", "bm25"):
                rankings["bm25"] = [p for p, _ in self._docs.lexical_search(query, depth)]
            if mode in ("hybrid", "dense"):
                rankings["dense"] = [p for p, _ in self._dense_search(query, depth)]
            fused = reciprocal_rank_fusion(rankings, k=RRF_K)
            # each document once, at the rank of its best row (itself or a passage)
            best: dict[str, tuple[int | None, FusedHit]] = {}
            for hit in fused:
                pmid, position = split_index_id(hit.id)
                best.setdefault(pmid, (position, hit))
            order = list(best)
            hits: list[ScoredDocument] = []
            # fetch records in rank order; a vector whose record is missing (an import that
            # crashed between the two writes) is passed over
            for start in range(0, len(order), limit):
                if len(hits) >= limit:
                    break
                chunk = order[start : start + limit]
                docs = self._docs.get_many(chunk)
                hits.extend(self._scored(docs[pmid], *best[pmid]) for pmid in chunk if pmid in docs)
        return hits[:limit]

    def _scored(
        self, article: PubmedArticle, position: int | None, hit: FusedHit
    ) -> ScoredDocument:
        passages = self._docs.passages(article.pmid)
        matched = passages[position] if position is not None and position < len(passages) else None
        return ScoredDocument(
            article=article,
            score=hit.score,
            bm25_rank=hit.ranks.get("bm25"),
            dense_rank=hit.ranks.get("dense"),
            passages=passages,
            passage=matched,
        )

    def _dense_search(self, query: str, k: int) -> list[tuple[str, float]]:
        vector = self._embedder.embed([query])[0]
        stored_dim = self._docs.meta("embedding_dimension")
        if stored_dim is not None and int(stored_dim) != vector.shape[0]:
            raise CorpusMismatchError(
                f"the corpus in {self._directory} holds {stored_dim}-dimensional vectors; "
                f"the embedder gives {vector.shape[0]}"
            )
        return self._dense_index().query(vector, k)
