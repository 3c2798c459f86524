"""Dense vectors of the corpus in a Chroma collection (cosine space): on a server (a shared
corpus), or embedded in a corpus made before the compressed index (:mod:`.ivf_index`).

Vectors are computed by the caller (``embedding_function=None``: Chroma never loads a model)
with the index id (a PMID, or ``"<pmid>#<n>"`` for a full text's passage) as Chroma id.
Embedded, the collection persists under ``<corpus dir>/chroma``; with a server URL
(``DEEPCRITICAL_CORPUS_URL``, a ``chroma run`` server) it lives there, so several machines
search one set of vectors. Telemetry is off.

HNSW settings of a new collection, sized to hold recall at 10^6 vectors: ``max_neighbors``
(M) 32 (Chroma's default 16 loses recall past ~10^5 vectors of 384 dimensions),
``ef_construction`` 200, ``ef_search`` 200 (near-exact recall at depth 50; a collection made
with other settings keeps them).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from chromadb.api.collection_configuration import HNSWConfiguration

COLLECTION = "abstracts"
HNSW_SETTINGS: HNSWConfiguration = {
    "space": "cosine",
    "ef_construction": 200,
    "ef_search": 200,
    "max_neighbors": 32,
}
"""Chroma 1.5 ``configuration["hnsw"]`` of a new collection (see module docs)."""


def _server_client(url: str) -> Any:
    """A ``chromadb.HttpClient`` for ``http(s)://[user:token@]host[:port]``: a password (or a
    user without one) is sent as ``Authorization: Bearer <token>``, never logged.

    Raises:
        ValueError: not an http(s) URL with a host (the message never holds the URL).
    """
    import chromadb
    from chromadb.config import Settings

    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("DEEPCRITICAL_CORPUS_URL must be http(s)://host:port of a Chroma server")
    token = parts.password or parts.username
    headers = {"Authorization": f"Bearer {unquote(token)}"} if token else None
    ssl = parts.scheme == "https"
    return chromadb.HttpClient(
        host=parts.hostname,
        port=parts.port or (443 if ssl else 8000),
        ssl=ssl,
        headers=headers,
        settings=Settings(anonymized_telemetry=False),
    )


class ChromaIndex:
    """Index id -> vector store with nearest-neighbour search, in a Chroma collection.

    Args:
        directory: the Chroma persistence directory (created when missing), used when
            ``server_url`` is ``None``.
        server_url: a Chroma server's URL (``http://127.0.0.1:8000``); then ``directory`` is
            not used and ``collection`` names the corpus's collection on that server.
        collection: the collection's name.

    Raises:
        ValueError: a malformed ``server_url``.
        chromadb errors (``Exception`` subclasses) when the store is unreadable or the server
            unreachable.
    """

    def __init__(
        self,
        directory: Path,
        *,
        server_url: str | None = None,
        collection: str = COLLECTION,
    ) -> None:
        import chromadb
        from chromadb.api.collection_configuration import CreateCollectionConfiguration
        from chromadb.config import Settings

        self._remote = bool(server_url)
        if server_url:
            self._client: Any = _server_client(server_url)
        else:
            directory.mkdir(parents=True, exist_ok=True)
            self._client = chromadb.PersistentClient(
                path=str(directory), settings=Settings(anonymized_telemetry=False)
            )
        config: CreateCollectionConfiguration = {"hnsw": HNSW_SETTINGS}
        self._collection: Any = self._client.get_or_create_collection(
            collection, embedding_function=None, configuration=config
        )
        self._max_batch = int(self._client.get_max_batch_size())

    def close(self) -> None:
        """Release the client (a server client's HTTP connections; an embedded store's files
        once no other client in this process uses them)."""
        if self._remote:  # chromadb 1.5's close() leaves the httpx connection pools open
            for client in (self._client, getattr(self._client, "_admin_client", None)):
                session = getattr(getattr(client, "_server", None), "_session", None)
                if session is not None:
                    session.close()
        self._client.close()

    def count(self) -> int:
        """Number of stored vectors."""
        return int(self._collection.count())

    def upsert(self, pmids: Sequence[str], vectors: NDArray[np.float32]) -> None:
        """Store one vector per id (replacing any vector already stored under that id), in
        upserts of Chroma's maximum batch size.

        Raises:
            ValueError: ``vectors`` is not ``(len(pmids), d)``.
        """
        if vectors.ndim != 2 or vectors.shape[0] != len(pmids):
            raise ValueError(f"expected {len(pmids)} vectors, got shape {vectors.shape}")
        for start in range(0, len(pmids), self._max_batch):
            stop = start + self._max_batch
            self._collection.upsert(ids=list(pmids[start:stop]), embeddings=vectors[start:stop])

    def delete(self, ids: Sequence[str]) -> None:
        """Remove the vectors of ``ids`` (ids not stored are ignored)."""
        for start in range(0, len(ids), self._max_batch):
            self._collection.delete(ids=list(ids[start : start + self._max_batch]))

    def query(self, vector: NDArray[np.float32], k: int) -> list[tuple[str, float]]:
        """Up to ``k`` ``(id, cosine similarity)`` pairs nearest to ``vector``, best first."""
        n = min(k, self.count())
        if n <= 0:
            return []
        result = self._collection.query(
            query_embeddings=vector.reshape(1, -1), n_results=n, include=["distances"]
        )
        ids: list[str] = result["ids"][0]
        distances: list[float] = result["distances"][0]
        return [(str(i), 1.0 - float(d)) for i, d in zip(ids, distances, strict=True)]
