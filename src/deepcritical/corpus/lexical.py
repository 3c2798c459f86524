"""BM25 keyword index over the corpus (bm25s, PyStemmer English stemmer, English stopwords).

Scoring is bm25s' ``lucene`` variant with k1 = 1.5, b = 0.75. Text is lower-cased and split
on ``\\b\\w\\w+\\b`` (scikit-learn's pattern), bm25s' English stopword list is removed and
each token is reduced by the Snowball English stemmer. The index is immutable: the corpus
rebuilds it from its documents after each import (:meth:`LexicalIndex.build`) and saves it
under a directory of its own (:meth:`save`, :meth:`load`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import Stemmer

TOKENIZER_ID = "bm25s-0.3/lucene-k1.5-b0.75/stopwords-en/snowball-english"
"""Names the tokenizer and scoring; an index saved with another id is rebuilt, not loaded."""

_STOPWORDS = "en"
_IDS_FILE = "pmids.json"


def _stemmer() -> Any:
    return Stemmer.Stemmer("english")


def _tokenize(texts: Sequence[str], stemmer: Any) -> Any:
    return bm25s.tokenize(list(texts), stopwords=_STOPWORDS, stemmer=stemmer, show_progress=False)


class LexicalIndex:
    """An immutable BM25 index of documents identified by PMID.

    Not thread-safe (the stemmer is not); the corpus serialises calls.
    """

    def __init__(self, retriever: Any, pmids: list[str], generation: int) -> None:
        self._retriever = retriever
        self.pmids = pmids
        self.generation = generation
        self._stemmer = _stemmer()

    def __len__(self) -> int:
        return len(self.pmids)

    @classmethod
    def build(cls, pmids: list[str], texts: Sequence[str], generation: int) -> LexicalIndex:
        """Index ``texts`` (one per PMID, same order); ``generation`` labels the corpus state.

        Raises:
            ValueError: no documents, or ``pmids`` and ``texts`` differ in length.
        """
        if not pmids:
            raise ValueError("cannot build a BM25 index of no documents")
        if len(pmids) != len(texts):
            raise ValueError(f"{len(pmids)} PMIDs for {len(texts)} texts")
        retriever = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
        retriever.index(_tokenize(texts, _stemmer()), show_progress=False)
        return cls(retriever, list(pmids), generation)

    def save(self, directory: Path) -> None:
        """Write the index into ``directory`` (created; it should be new and private)."""
        directory.mkdir(parents=True, exist_ok=True)
        self._retriever.save(str(directory), show_progress=False)
        payload = {"tokenizer": TOKENIZER_ID, "generation": self.generation, "pmids": self.pmids}
        (directory / _IDS_FILE).write_text(json.dumps(payload), encoding="utf-8")

    @classmethod
    def load(cls, directory: Path) -> LexicalIndex:
        """Read an index written by :meth:`save`.

        Raises:
            FileNotFoundError: the directory or one of its files is missing.
            ValueError: the files are unreadable, from another tokenizer, or inconsistent.
        """
        payload = json.loads((directory / _IDS_FILE).read_text(encoding="utf-8"))
        if payload.get("tokenizer") != TOKENIZER_ID:
            raise ValueError(f"BM25 index in {directory} uses another tokenizer")
        retriever = bm25s.BM25.load(str(directory), show_progress=False)
        pmids = [str(p) for p in payload["pmids"]]
        if int(retriever.scores["num_docs"]) != len(pmids):
            raise ValueError(f"BM25 index in {directory} does not match its PMID list")
        return cls(retriever, pmids, int(payload["generation"]))

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """Up to ``k`` ``(pmid, BM25 score)`` pairs, best first; only documents sharing at
        least one (stemmed, non-stopword) term with ``query`` (score > 0). Ties keep index
        order."""
        if k <= 0:
            return []
        tokens = bm25s.tokenize(
            [query],
            stopwords=_STOPWORDS,
            stemmer=self._stemmer,
            return_ids=False,
            show_progress=False,
        )[0]
        known = [t for t in tokens if t in self._retriever.vocab_dict]
        if not known:
            return []
        scores = np.asarray(self._retriever.get_scores(known), dtype=np.float64)
        k = min(k, scores.shape[0])
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.lexsort((top, -scores[top]))]
        return [(self.pmids[i], float(scores[i])) for i in top if scores[i] > 0.0]
