"""Dense vectors of the corpus in a persistent Chroma collection (cosine space).

Vectors are computed by the caller (``embedding_function=None``: Chroma never loads a model)
and stored under ``<corpus dir>/chroma`` with the PMID as id. Chroma's HNSW index is
approximate; ``ef_search`` is raised to 200 so recall at depth 50 is near exact for corpora
of up to ~10^5 abstracts. Telemetry is off.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

COLLECTION = "abstracts"


class DenseIndex:
    """PMID -> vector store with nearest-neighbour search.

    Args:
        directory: the Chroma persistence directory (created when missing).

    Raises:
        chromadb errors (``Exception`` subclasses) when the directory holds an unreadable store.
    """

    def __init__(self, directory: Path) -> None:
        import chromadb
        from chromadb.api.collection_configuration import CreateCollectionConfiguration
        from chromadb.config import Settings

        directory.mkdir(parents=True, exist_ok=True)
        self._client: Any = chromadb.PersistentClient(
            path=str(directory), settings=Settings(anonymized_telemetry=False)
        )
        config: CreateCollectionConfiguration = {
            "hnsw": {"space": "cosine", "ef_construction": 200, "ef_search": 200}
        }
        self._collection: Any = self._client.get_or_create_collection(
            COLLECTION, embedding_function=None, configuration=config
        )
        self._max_batch = int(self._client.get_max_batch_size())

    def count(self) -> int:
        """Number of stored vectors."""
        return int(self._collection.count())

    def upsert(self, pmids: Sequence[str], vectors: NDArray[np.float32]) -> None:
        """Store one vector per PMID (replacing any vector already stored under that PMID).

        Raises:
            ValueError: ``vectors`` is not ``(len(pmids), d)``.
        """
        if vectors.ndim != 2 or vectors.shape[0] != len(pmids):
            raise ValueError(f"expected {len(pmids)} vectors, got shape {vectors.shape}")
        for start in range(0, len(pmids), self._max_batch):
            stop = start + self._max_batch
            self._collection.upsert(ids=list(pmids[start:stop]), embeddings=vectors[start:stop])

    def query(self, vector: NDArray[np.float32], k: int) -> list[tuple[str, float]]:
        """Up to ``k`` ``(pmid, cosine similarity)`` pairs nearest to ``vector``, best first."""
        n = min(k, self.count())
        if n <= 0:
            return []
        result = self._collection.query(
            query_embeddings=vector.reshape(1, -1), n_results=n, include=["distances"]
        )
        ids: list[str] = result["ids"][0]
        distances: list[float] = result["distances"][0]
        return [(str(i), 1.0 - float(d)) for i, d in zip(ids, distances, strict=True)]
