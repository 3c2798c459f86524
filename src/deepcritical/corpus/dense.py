"""The dense index of a corpus (:class:`DenseIndex`): index id -> vector, nearest-neighbour
search by cosine similarity; and which one a corpus uses (:func:`open_dense_index`).

Two implementations, recorded per corpus in ``meta.dense_index``:

* ``"faiss-ivf-sq8"`` (:class:`~deepcritical.corpus.ivf_index.IvfIndex`), every new embedded
  corpus: exact below 10^5 vectors, IVF with 8-bit scalar quantisation above (384 bytes a
  vector), over a vector log in SQLite; built for 10^7 documents on one machine;
* ``"chroma"`` (:class:`~deepcritical.corpus.chroma_index.ChromaIndex`): a corpus whose vectors
  are on a Chroma server (``DEEPCRITICAL_CORPUS_URL``, shared by several machines), and an
  embedded corpus made before the compressed index (it keeps its Chroma collection).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal, Protocol

import numpy as np
from numpy.typing import NDArray

DenseKind = Literal["faiss-ivf-sq8", "chroma"]
"""The dense index a corpus was built with (``meta.dense_index``)."""


DENSE_KINDS: dict[DenseKind, str] = {
    "faiss-ivf-sq8": "FAISS: exact below 100,000 vectors, IVF-SQ8 above",
    "chroma": "Chroma HNSW",
}
"""What each kind is, for ``corpus info``."""


class DenseIndex(Protocol):
    """Index id (a PMID, or ``"<pmid>#<n>"`` for a full text's passage) -> vector, with
    nearest-neighbour search."""

    def count(self) -> int:
        """Number of stored vectors."""
        ...

    def upsert(self, pmids: Sequence[str], vectors: NDArray[np.float32]) -> None:
        """Store one vector per id, replacing any stored under that id.

        Raises:
            ValueError: ``vectors`` is not ``(len(pmids), d)``.
        """
        ...

    def delete(self, ids: Sequence[str]) -> None:
        """Remove the vectors of ``ids`` (ids not stored are ignored)."""
        ...

    def query(self, vector: NDArray[np.float32], k: int) -> list[tuple[str, float]]:
        """Up to ``k`` ``(id, cosine similarity)`` pairs nearest to ``vector``, best first."""
        ...

    def close(self) -> None:
        """Persist what is pending and release the store."""
        ...


def open_dense_index(
    kind: DenseKind, directory: Path, *, server_url: str | None, collection: str
) -> DenseIndex:
    """The dense index of the corpus in ``directory`` (the corpus directory itself).

    ``"faiss-ivf-sq8"`` lives in ``<directory>/dense``; ``"chroma"`` in ``<directory>/chroma``,
    or on the server at ``server_url`` in ``collection``.

    Raises:
        ValueError: a malformed ``server_url``.
        sqlite3.Error, chromadb errors: an unreadable store or an unreachable server.
    """
    if kind == "chroma":
        from deepcritical.corpus.chroma_index import ChromaIndex

        return ChromaIndex(directory / "chroma", server_url=server_url, collection=collection)
    from deepcritical.corpus.ivf_index import IvfIndex

    return IvfIndex(directory / "dense")
