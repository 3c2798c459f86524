"""all-MiniLM-L6-v2 on torch in bf16 or fp16, reading up to a path's word pieces per text.

The embedder of the ``torch-bf16``, ``torch-bf16-128`` and ``torch-fp16`` paths
(:mod:`deepcritical.evidence.embedding_paths`). It runs the transformer of the shipped model
(``transformers.AutoModel``, weights cast to bf16 or fp16) and pools as sentence-transformers
does for this model (mean over the word pieces, then L2 normalisation), in fp32. Texts are
tokenised (``tokenizers``, truncated to the path's word pieces), sorted by length and cut into
batches each padded only to its own longest text; the vectors come back in input order.

On the Intel Xeon with AMX (2 cores) bf16 weights at 256 word pieces gave cosine 0.99993 (the
least over 96 dev abstracts) to torch fp32, about twice its rate; at 128 word pieces about four
times it. On a CPU without bf16 in hardware torch emulates bf16 and is slower than fp32: the
path chooser never picks it there.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from deepcritical.evidence.embedding_paths import PathSpec
from deepcritical.evidence.embeddings import (
    EmbeddingModelError,
    length_batches,
    model_max_tokens,
    resolve_model_path,
)

__all__ = ["CPU_BATCH", "GPU_BATCH", "TorchPathEmbedder"]

CPU_BATCH = 32
"""Texts per forward pass on a CPU."""
GPU_BATCH = 256
"""Texts per forward pass on a GPU."""


class TorchPathEmbedder:
    """Embedder of a torch path in bf16 or fp16 (the model loads on first use).

    Args:
        model_name: hub name or directory of the model; also this embedder's ``model_name``
            (its vectors are the fp32 model's to cosine 0.999).
        spec: the path (``runtime == "torch"``, precision ``bf16`` or ``fp16``).
        device: ``"cuda"`` or ``"cpu"``; ``None``: CUDA when torch sees a GPU.
        batch_size: texts per forward pass; ``None``: :data:`GPU_BATCH` on a GPU (which is
            idle between small batches), :data:`CPU_BATCH` on the CPU.
        max_chars: each text is cut to this many characters first (as the other embedders).

    Raises:
        ValueError: ``spec`` is not a bf16 / fp16 torch path.
    """

    def __init__(
        self,
        model_name: str,
        spec: PathSpec,
        *,
        device: str | None = None,
        batch_size: int | None = None,
        max_chars: int = 2000,
    ) -> None:
        if spec.runtime != "torch" or spec.precision not in ("bf16", "fp16"):
            raise ValueError(f"{spec.name} is not a bf16 / fp16 torch path")
        self.model_name = model_name
        self.path = spec.name
        self.spec = spec
        self._batch_size = batch_size
        self.max_chars = max_chars
        self.dimension = 384
        self.device = device
        self._lock = threading.Lock()
        self._model: Any = None
        self._tokenizer: Any = None

    @property
    def batch_size(self) -> int:
        """Texts per forward pass (known once the device is: :data:`CPU_BATCH` until then)."""
        return self._batch_size or CPU_BATCH

    def _load(self) -> None:
        """Load the tokenizer and the model (cast to the path's dtype) once."""
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import torch
        from tokenizers import Tokenizer
        from transformers import AutoModel
        from transformers.utils import logging as hf_logging

        directory = Path(resolve_model_path(self.model_name))
        if self.device is None:
            self.device = "cuda" if torch.cuda.is_available() else "cpu"
        dtype = torch.bfloat16 if self.spec.precision == "bf16" else torch.float16
        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        try:
            model = AutoModel.from_pretrained(str(directory)).eval()
            tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        except (OSError, ValueError) as exc:
            raise EmbeddingModelError(
                f"cannot load embedding model {self.model_name!r} from {directory}: {exc}"
            ) from exc
        tokenizer.enable_truncation(min(self.spec.max_tokens, model_max_tokens(directory)))
        tokenizer.no_padding()
        self._model = model.to(device=self.device, dtype=dtype)
        if self._batch_size is None:
            self._batch_size = GPU_BATCH if self.device.startswith("cuda") else CPU_BATCH
        self.dimension = int(model.config.hidden_size)
        self._tokenizer = tokenizer

    def _batch(self, encodings: list[Any]) -> NDArray[np.float32]:
        """Vectors of one batch of encodings, padded to its longest."""
        import torch

        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        ids_t = torch.from_numpy(ids).to(self.device)
        mask_t = torch.from_numpy(mask).to(self.device)
        hidden = self._model(
            input_ids=ids_t, attention_mask=mask_t, token_type_ids=torch.zeros_like(ids_t)
        ).last_hidden_state.float()
        weights = mask_t.unsqueeze(-1).float()
        pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
        vectors = torch.nn.functional.normalize(pooled, p=2.0, dim=1)
        return np.asarray(vectors.cpu().numpy(), dtype=np.float32)

    def tokenize(self, texts: Sequence[str]) -> list[Any]:
        """``tokenizers`` encodings of ``texts`` (each cut to ``max_chars`` characters, then
        to the path's word pieces), in order; loads the model on first use."""
        with self._lock:
            if self._model is None:
                self._load()
        return list(self._tokenizer.encode_batch([t[: self.max_chars] for t in texts]))

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts`` -> ``(len(texts), dimension)`` float32, rows L2-normalised, in the
        order given.

        Raises:
            EmbeddingModelError: the model cannot be loaded.
        """
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        import torch

        encodings = self.tokenize(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        with self._lock, torch.inference_mode():
            for batch in length_batches([len(e.ids) for e in encodings], self.batch_size):
                out[batch] = self._batch([encodings[i] for i in batch])
        return out
