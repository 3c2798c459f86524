"""Which embedder a local corpus uses: the path it was built with, else this machine's choice.

A corpus records the embedding path that made its vectors (``meta.embedding_path``:
:mod:`deepcritical.evidence.embedding_paths`) and the name of their vector space
(``meta.embedding_model``): ``sentence-transformers/all-MiniLM-L6-v2`` for every exact path
(torch fp32, bf16, fp16, the fp32 ONNX graph: vectors torch fp32's to cosine 0.999),
``sentence-transformers/all-MiniLM-L6-v2#onnx-int8`` for the int8 ONNX export. A corpus built
before paths were recorded is read as its original path (``torch-fp32`` or ``onnx-int8``).

With ``embedding_backend="auto"`` an existing corpus gets the path it records, a new one this
machine's import path (:func:`~deepcritical.evidence.onnx_embeddings.machine_paths`). Its
queries use a compatible embedder: the run's own when it computes the same vector space (an
exact run path for a corpus of any exact path), else the corpus's path. An explicit backend
whose vectors differ from the corpus's is refused by :class:`~deepcritical.corpus.index.
LocalCorpus` (:class:`~deepcritical.corpus.corpus_errors.CorpusMismatchError`), never mixed.
"""

from __future__ import annotations

from pathlib import Path

from deepcritical.config import Settings
from deepcritical.corpus.documents import DB_NAME, read_only_row
from deepcritical.evidence.embedding_paths import PathName, stored_path
from deepcritical.evidence.embeddings import Embedder
from deepcritical.evidence.onnx_embeddings import machine_paths, path_embedder

_STORED_MODEL = "SELECT value FROM meta WHERE key = 'embedding_model'"
_STORED_META = "SELECT group_concat(key || '=' || value, char(10)) FROM meta"


def stored_embedding_model(directory: Path) -> str | None:
    """The ``embedding_model`` recorded by the corpus in ``directory`` (opened read-only);
    ``None`` when there is no corpus or it has embedded nothing yet, ``""`` when its
    embedder had no name."""
    row = read_only_row(Path(directory) / DB_NAME, _STORED_MODEL)
    return None if row is None else str(row[0])


def stored_meta(directory: Path) -> dict[str, str]:
    """Every ``meta`` key and value of the corpus in ``directory`` (opened read-only); empty
    when there is no corpus."""
    row = read_only_row(Path(directory) / DB_NAME, _STORED_META)
    if row is None or not row[0]:
        return {}
    pairs = (line.partition("=") for line in str(row[0]).split("\n"))
    return {key: value for key, _, value in pairs}


def stored_embedding_path(directory: Path) -> PathName | None:
    """The embedding path of the corpus in ``directory``: recorded, or (a corpus made before
    paths were recorded) its original one; ``None`` when it has embedded nothing."""
    meta = stored_meta(directory)
    return stored_path(meta.get("embedding_path"), meta.get("embedding_model"))


def corpus_path(settings: Settings, stored: PathName | None) -> PathName:
    """The path for a corpus built with ``stored`` (``None``: a new corpus): the settings'
    path unless ``embedding_backend`` is ``"auto"``; then ``stored``, or this machine's
    import path for a new corpus."""
    if settings.embedding_backend == "auto" and stored is not None:
        return stored
    return machine_paths(settings.embedding_backend).corpus


def corpus_embedder(
    settings: Settings, directory: Path | None = None, run_embedder: Embedder | None = None
) -> Embedder:
    """The embedder for the corpus in ``directory`` (``settings.resolved_corpus_dir`` when
    ``None``).

    ``run_embedder`` (a run's own embedder, for screening) is reused when the corpus's vectors
    are in its vector space (the same ``model_name``: any exact path for a corpus of exact
    vectors), or when either has no name (test embedders), so one model serves both;
    otherwise the embedder of :func:`corpus_path` is loaded
    (:func:`~deepcritical.evidence.onnx_embeddings.path_embedder`).
    """
    meta = stored_meta(directory or settings.resolved_corpus_dir)
    stored = meta.get("embedding_model")
    if run_embedder is not None:
        name = getattr(run_embedder, "model_name", None)
        if stored is None or not stored or not name or stored == name:
            return run_embedder
    path = corpus_path(settings, stored_path(meta.get("embedding_path"), stored))
    return path_embedder(settings.embedding_model, path)


def describe_corpus_embedding(directory: Path) -> str:
    """One line on how the corpus in ``directory`` was embedded, for ``corpus info`` and
    ``doctor``: ``"embedding path torch-bf16-128; last import embedded 85.3 texts/s
    (torch-bf16-128)"``; the rate is left out when no import recorded one (a corpus made
    before rates were recorded, or an import of fewer than 32 texts)."""
    meta = stored_meta(directory)
    path = stored_path(meta.get("embedding_path"), meta.get("embedding_model"))
    recorded = "" if meta.get("embedding_path") else " (recorded before paths: its original)"
    text = f"embedding path {path or 'none yet'}{recorded if path else ''}"
    rate = meta.get("embedding_rate")
    if rate:
        text += f"; last import embedded {rate} texts/s ({meta.get('embedding_rate_path') or '?'})"
    return text
