"""Which way to run the embedding model on this machine: the embedding *paths* and the choice.

A path is one way of computing all-MiniLM-L6-v2's vectors: a runtime (torch or ONNX Runtime),
a number format, a device and the word pieces read per text (:class:`PathSpec`,
:data:`PATHS`). The paths differ in speed by machine and in how close their vectors are to
torch fp32 at 256 word pieces, on which the run's thresholds (screening, grounding, dedup)
were calibrated:

* ``torch-fp32``: torch fp32, 256 word pieces: the reference.
* ``onnx-fp32``: the fp32 ONNX export, 256: the reference's vectors to float rounding,
  without torch in memory; on the Intel Xeon with AMX about 0.8 times torch fp32's rate.
* ``torch-bf16``: torch with bf16 weights, 256 (cosine 0.9999 to the reference: thresholds
  hold). Fast where the CPU multiplies bf16 in hardware (AMX, AVX512_BF16) and on a GPU.
* ``torch-fp16``: the same in fp16, on a CUDA GPU without bf16 (compute capability < 8).
* ``torch-bf16-128``: torch-bf16 reading the first 128 word pieces of each text (the length
  the model was trained with); the corpus-import path of a bf16 CPU. A query or sentence under
  128 word pieces gets torch-bf16's vector, so its queries may use any exact path.
* ``onnx-int8``: the dynamically quantised ONNX export at 128 word pieces (cosine about 0.99
  to the reference): the corpus-import path of a CPU without bf16.

:func:`choose_paths` is a pure function of :class:`MachineCapabilities` (CPU model and flags,
CUDA), so the choice is testable with a fake machine; :func:`detect_capabilities` reads the
real one (``/proc/cpuinfo``; torch is imported to ask about CUDA only where an NVIDIA device
node exists). A corpus records the path it was built with (``meta.embedding_path``); one
built before paths existed is read as its original path (:func:`stored_path`).
"""

from __future__ import annotations

import os
import platform
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from deepcritical.config import EmbeddingBackend

__all__ = [
    "BF16_FLAGS",
    "EXACT_COSINE",
    "PATHS",
    "MachineCapabilities",
    "PathChoice",
    "PathName",
    "PathSpec",
    "choose_paths",
    "detect_capabilities",
    "parse_cpuinfo",
    "requested_paths",
    "stored_path",
]

PathName = Literal[
    "torch-fp32", "onnx-fp32", "torch-bf16", "torch-fp16", "torch-bf16-128", "onnx-int8"
]
Runtime = Literal["torch", "onnx"]
Precision = Literal["fp32", "bf16", "fp16", "int8"]

EXACT_COSINE = 0.999
"""The least cosine to torch fp32 (per text) of a path whose vectors may reuse the thresholds
calibrated on torch fp32 (checked by ``benchmarks/bench_import.py`` on the dev abstracts)."""

BF16_FLAGS = frozenset({"amx_bf16", "avx512_bf16"})
"""``/proc/cpuinfo`` flags of a CPU that multiplies bf16 in hardware (Intel AMX; AVX512_BF16
on Intel Cooper Lake and later, AMD Zen 4 and later)."""


@dataclass(frozen=True)
class PathSpec:
    """One embedding path.

    Attributes:
        name: the path's name (recorded by a corpus).
        runtime: ``"torch"`` (transformers / sentence-transformers) or ``"onnx"`` (ONNX Runtime).
        precision: the number format of the weights and the matrix products.
        max_tokens: word pieces read per text at most (the model's 256, or 128).
        exact: its vectors are torch fp32's to cosine >= :data:`EXACT_COSINE`, so the run's
            calibrated thresholds hold and a corpus of it may be queried by any exact path.
        cuda_only: it runs on a CUDA GPU only (fp16 on a CPU is slower than fp32).
    """

    name: PathName
    runtime: Runtime
    precision: Precision
    max_tokens: int
    exact: bool
    cuda_only: bool = False


PATHS: dict[PathName, PathSpec] = {
    "torch-fp32": PathSpec("torch-fp32", "torch", "fp32", 256, exact=True),
    "onnx-fp32": PathSpec("onnx-fp32", "onnx", "fp32", 256, exact=True),
    "torch-bf16": PathSpec("torch-bf16", "torch", "bf16", 256, exact=True),
    "torch-fp16": PathSpec("torch-fp16", "torch", "fp16", 256, exact=True, cuda_only=True),
    "torch-bf16-128": PathSpec("torch-bf16-128", "torch", "bf16", 128, exact=True),
    "onnx-int8": PathSpec("onnx-int8", "onnx", "int8", 128, exact=False),
}
"""Every path by name."""


@dataclass(frozen=True)
class MachineCapabilities:
    """What the choice of a path reads about a machine.

    Attributes:
        cpu_model: the CPU's ``model name`` (for reports only).
        cpu_flags: the CPU's ``/proc/cpuinfo`` flags (lower case), e.g. ``amx_bf16``.
        cuda: a CUDA GPU that torch can use.
        cuda_name: that GPU's name, ``None`` without one.
        cuda_bf16: the GPU multiplies bf16 (compute capability 8.0 or later).
    """

    cpu_model: str
    cpu_flags: frozenset[str]
    cuda: bool = False
    cuda_name: str | None = None
    cuda_bf16: bool = False

    @property
    def cpu_bf16(self) -> bool:
        """The CPU has AMX or AVX512_BF16 (:data:`BF16_FLAGS`)."""
        return bool(self.cpu_flags & BF16_FLAGS)

    def describe(self) -> str:
        """One line: ``"Intel(R) Xeon(R) ...; flags avx2 avx512_bf16 amx_bf16; no CUDA GPU"``,
        naming only the flags the choice reads or a reader wants to see."""
        shown = [f for f in ("avx2", "avx512f", "avx512_vnni", *sorted(BF16_FLAGS), "amx_int8")]
        flags = " ".join(f for f in shown if f in self.cpu_flags) or "none of " + " ".join(shown)
        gpu = f"CUDA {self.cuda_name or 'GPU'}" if self.cuda else "no CUDA GPU"
        return f"{self.cpu_model}; flags {flags}; {gpu}"


@dataclass(frozen=True)
class PathChoice:
    """The paths chosen for a machine.

    Attributes:
        corpus: the path of a new corpus's import (and of its queries).
        run: the path of a run's embedder (screening, evidence store, grounding); always an
            exact one (:attr:`PathSpec.exact`).
        reason: why, in a few words (printed by ``doctor`` and ``bench_import``).
    """

    corpus: PathName
    run: PathName
    reason: str


def choose_paths(machine: MachineCapabilities) -> PathChoice:
    """The fastest exact-enough paths for ``machine``; a pure function.

    * CUDA GPU: ``torch-bf16`` (``torch-fp16`` without bf16) for imports and runs: at 256
      word pieces, since the GPU's forward pass outruns the tokenizer.
    * CPU with AMX or AVX512_BF16: ``torch-bf16-128`` for imports (exact vectors at the
      length the model was trained with), ``torch-bf16`` for runs.
    * any other CPU: ``onnx-int8`` for imports, ``torch-fp32`` for runs (measured 1.25 times
      the fp32 ONNX graph's rate, so runs are never slower than torch fp32).
    """
    if machine.cuda:
        name: PathName = "torch-bf16" if machine.cuda_bf16 else "torch-fp16"
        return PathChoice(name, name, f"CUDA GPU ({'bf16' if machine.cuda_bf16 else 'fp16'})")
    if machine.cpu_bf16:
        found = " and ".join(sorted(machine.cpu_flags & BF16_FLAGS))
        return PathChoice("torch-bf16-128", "torch-bf16", f"CPU with {found}")
    return PathChoice("onnx-int8", "torch-fp32", "CPU without bf16 (AMX, AVX512_BF16)")


def requested_paths(backend: EmbeddingBackend, choice: PathChoice) -> PathChoice:
    """The paths of the ``embedding_backend`` setting: ``"auto"`` is ``choice``; ``"torch"``
    is ``torch-fp32`` for both (as before paths existed); a path name is the corpus's path,
    and the run's too when it is exact at 256 word pieces (``torch-bf16-128`` runs on
    ``torch-bf16``; ``onnx-int8`` leaves runs on ``choice.run``)."""
    if backend == "auto":
        return choice
    if backend == "torch" or backend == "torch-fp32":
        return PathChoice("torch-fp32", "torch-fp32", f"embedding_backend={backend!r}")
    spec = PATHS[backend]
    if spec.exact and spec.max_tokens >= PATHS["torch-fp32"].max_tokens:
        run: PathName = spec.name
    elif spec.name == "torch-bf16-128":
        run = "torch-bf16"
    else:
        run = choice.run
    return PathChoice(spec.name, run, f"embedding_backend={backend!r}")


def stored_path(path: str | None, model: str | None) -> PathName | None:
    """The path of a corpus whose ``meta`` records ``embedding_path`` = ``path`` and
    ``embedding_model`` = ``model``: the recorded path when it is known; for a corpus built
    before paths were recorded, ``onnx-int8`` when the model name ends in ``#onnx-int8``, else
    ``torch-fp32``; ``None`` when the corpus has embedded nothing."""
    if path in PATHS:
        return PATHS[path].name
    if not model:
        return None
    return "onnx-int8" if model.endswith("#onnx-int8") else "torch-fp32"


def parse_cpuinfo(text: str) -> tuple[str, frozenset[str]]:
    """``(model name, flags)`` of the first processor in ``/proc/cpuinfo``'s ``text``
    (``("", frozenset())`` for text without them, e.g. on an ARM machine's ``Features``)."""
    model = ""
    flags: frozenset[str] = frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key == "model name" and not model:
            model = value.strip()
        elif key in ("flags", "features") and not flags:
            flags = frozenset(value.lower().split())
    return model, flags


def _nvidia_present(nodes: Iterable[str] = ("/dev/nvidia0", "/proc/driver/nvidia/version")) -> bool:
    return any(Path(node).exists() for node in nodes)


def _cuda() -> tuple[bool, str | None, bool]:
    """``(available, name, bf16)`` of the first CUDA GPU; torch is imported only when an
    NVIDIA device node exists (importing it costs seconds and hundreds of MB)."""
    if not _nvidia_present():
        return False, None, False
    try:
        import torch
    except ImportError:
        return False, None, False
    if not torch.cuda.is_available():
        return False, None, False
    return True, str(torch.cuda.get_device_name(0)), bool(torch.cuda.is_bf16_supported())


_DETECTED: list[MachineCapabilities] = []


def detect_capabilities(cpuinfo: Path = Path("/proc/cpuinfo")) -> MachineCapabilities:
    """This machine's capabilities (read once per process): CPU model and flags from
    ``cpuinfo`` (``platform.processor()`` and no flags where it cannot be read), CUDA from
    torch where an NVIDIA device exists. ``DEEPCRITICAL_CPU_FLAGS`` (space-separated), when
    set, replaces the flags read (to try a path choice on another machine's flags)."""
    if _DETECTED and cpuinfo == Path("/proc/cpuinfo"):
        return _DETECTED[0]
    try:
        model, flags = parse_cpuinfo(cpuinfo.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        model, flags = "", frozenset()
    override = os.environ.get("DEEPCRITICAL_CPU_FLAGS")
    if override is not None:
        flags = frozenset(override.lower().split())
    cuda, name, bf16 = _cuda()
    found = MachineCapabilities(
        model or platform.processor() or "unknown CPU", flags, cuda, name, bf16
    )
    if cpuinfo == Path("/proc/cpuinfo"):
        _DETECTED.append(found)
    return found
