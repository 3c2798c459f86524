"""The persistent local corpus of PubMed abstracts: import (JSONL, PubMed XML) and hybrid search.

``LocalCorpus(directory, embedder).add_file(path)`` imports a file; ``.search(query, limit)``
returns :class:`ScoredDocument` hits fused from BM25 and dense retrieval. See
:mod:`deepcritical.corpus.index` for the on-disk layout.
"""

from deepcritical.corpus.corpus_errors import (
    CorpusError,
    CorpusFormatError,
    CorpusMismatchError,
    CorpusNotFoundError,
    EmptyCorpusError,
)
from deepcritical.corpus.hybrid import ScoredDocument
from deepcritical.corpus.index import LocalCorpus
from deepcritical.corpus.ingest import ImportResult
from deepcritical.corpus.readers import read_corpus_file

__all__ = [
    "CorpusError",
    "CorpusFormatError",
    "CorpusMismatchError",
    "CorpusNotFoundError",
    "EmptyCorpusError",
    "ImportResult",
    "LocalCorpus",
    "ScoredDocument",
    "read_corpus_file",
]
