"""Which embedder a local corpus uses: the backend of the settings, or the one it was built with.

A corpus records the name of the embedder that made its vectors (``meta.embedding_model`` in
``corpus.sqlite3``): ``sentence-transformers/all-MiniLM-L6-v2`` for torch (fp32),
``sentence-transformers/all-MiniLM-L6-v2#onnx-int8`` for the int8 ONNX export. Its queries
must be embedded the same way, so with ``embedding_backend="auto"`` an existing corpus gets
the embedder named there and a new one gets int8 ONNX (the fast import path). An explicit
backend that differs from the corpus's is refused by :class:`~deepcritical.corpus.index.
LocalCorpus` (:class:`~deepcritical.corpus.corpus_errors.CorpusMismatchError`), never mixed.
"""

from __future__ import annotations

from pathlib import Path

from deepcritical.config import EmbeddingBackend, Settings
from deepcritical.corpus.documents import DB_NAME, read_only_row
from deepcritical.evidence.embeddings import Embedder
from deepcritical.evidence.onnx_embeddings import backend_embedder, onnx_int8_name

_STORED_MODEL = "SELECT value FROM meta WHERE key = 'embedding_model'"


def stored_embedding_model(directory: Path) -> str | None:
    """The ``embedding_model`` recorded by the corpus in ``directory`` (opened read-only);
    ``None`` when there is no corpus or it has embedded nothing yet, ``""`` when its
    embedder had no name."""
    row = read_only_row(Path(directory) / DB_NAME, _STORED_MODEL)
    return None if row is None else str(row[0])


def corpus_backend(settings: Settings, stored: str | None) -> EmbeddingBackend:
    """The backend for a corpus whose recorded embedder is ``stored``: the settings' one,
    unless it is ``"auto"``; then int8 ONNX for a new corpus or one built with it, torch for
    any other."""
    if settings.embedding_backend != "auto":
        return settings.embedding_backend
    if not stored or stored == onnx_int8_name(settings.embedding_model):
        return "onnx-int8"
    return "torch"


def corpus_embedder(
    settings: Settings, directory: Path | None = None, run_embedder: Embedder | None = None
) -> Embedder:
    """The embedder for the corpus in ``directory`` (``settings.resolved_corpus_dir`` when
    ``None``).

    ``run_embedder`` (a run's own embedder, for screening) is reused when the corpus was built
    with an embedder of the same ``model_name``, or when either has no name (test
    embedders), so one model serves both; otherwise the embedder of :func:`corpus_backend`
    is loaded (:func:`~deepcritical.evidence.onnx_embeddings.backend_embedder`).
    """
    stored = stored_embedding_model(directory or settings.resolved_corpus_dir)
    if run_embedder is not None:
        name = getattr(run_embedder, "model_name", None)
        if stored is None or not stored or not name or stored == name:
            return run_embedder
    return backend_embedder(settings.embedding_model, corpus_backend(settings, stored))
