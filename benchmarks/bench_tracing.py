"""What tracing costs an offline research run (issue 34): the same questions run with
tracing off and on, median wall seconds each way.

Run: ``.venv/bin/python -m benchmarks.bench_tracing [--n 3] [--data DIR]``.

The PubMedQA corpus (``../shared/data/pubmedqa``, see :mod:`benchmarks.pubmedqa_runs`) is
imported once into a temporary data directory; then each of the first N dev questions is
researched with ``llm="none"``, ``sources=["local"]`` (as ``deepcritical research --llm
none``) three times, in this order: tracing off, on, off again (the two "off" runs show the
noise). "On" is the SDK as in production: a :class:`~opentelemetry.sdk.trace.TracerProvider`
with a batch processor behind the redaction guard (:func:`build_provider`), exporting to the
SDK's in-memory exporter (no network, but every span made, processed and exported). One
run, not counted, warms the process up first. Prints the CPU, the medians of wall and of
process CPU seconds (CPU time is the steadier figure on a shared machine), and the ratios
on/off against the target (+10%).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.offline import use_offline_environment
from benchmarks.pubmedqa_data import DEFAULT_DATA, pubmedqa_files
from benchmarks.pubmedqa_runs import load_questions, run_one

TARGET_RATIO = 1.10
"""Tracing on may cost at most 10% of a run's wall time (issue 34)."""


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), with the number of cores."""
    name = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{name}, {os.cpu_count()} cores"


def timed_run(
    question: dict[str, str], settings: Any, embedder: Any, traced: bool
) -> tuple[float, float]:
    """One research run's wall and CPU seconds (this process's, every thread: the batch
    exporter's too), tracing on (into memory) or off; spans counted."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from deepcritical.telemetry.tracing import build_provider, install_provider

    exporter = InMemorySpanExporter()
    provider = build_provider(exporter) if traced else None
    install_provider(provider)
    cpu = time.process_time()
    try:
        figures = asyncio.run(run_one(question, settings, embedder))
    finally:
        install_provider(None)
        if provider is not None:
            provider.shutdown()  # flushes the batch: the spans are all exported
        cpu = time.process_time() - cpu
    if figures.error:
        print(f"  {question['pmid']}: ERROR {figures.error}")
    spans = len(exporter.get_finished_spans())
    print(
        f"  {question['pmid']} tracing {'on ' if traced else 'off'}: "
        f"{figures.seconds:6.2f} s wall, {cpu:6.2f} s CPU" + (f" ({spans} spans)" if traced else "")
    )
    return figures.seconds, cpu


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the figures; returns the process exit code."""
    use_offline_environment()
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        os.environ.pop(name, None)  # "off" must be off
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="PubMedQA directory")
    parser.add_argument("--n", type=int, default=3, help="first N dev questions (default 3)")
    args = parser.parse_args(argv)
    files = pubmedqa_files(args.data)
    if files is None:
        return 0
    corpus_file, questions_file = files

    from deepcritical.config import Settings
    from deepcritical.corpus.index import LocalCorpus
    from deepcritical.evidence.onnx_embeddings import run_embedder
    from deepcritical.logs import configure_logging

    configure_logging("ERROR", library_level="ERROR")
    questions = load_questions(questions_file, args.n)
    embedder = run_embedder()
    print(f"CPU: {cpu_model()}")
    off: list[tuple[float, float]] = []
    on: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory(prefix="dc-bench-tracing-") as tmp:
        settings = Settings(llm="none", sources=["local"], data_dir=Path(tmp))
        start = time.perf_counter()
        with LocalCorpus(settings.resolved_corpus_dir, embedder) as corpus:
            corpus.add_file(corpus_file)
        print(f"corpus imported in {time.perf_counter() - start:.0f} s")
        print("warm-up (not counted):")
        timed_run(questions[0], settings, embedder, traced=False)
        for question in questions:
            off.append(timed_run(question, settings, embedder, traced=False))
            on.append(timed_run(question, settings, embedder, traced=True))
            off.append(timed_run(question, settings, embedder, traced=False))
    print(f"\nruns: {len(on)} questions x (off, on, off)")
    print_figures("wall", [w for w, _ in off], [w for w, _ in on])
    print_figures("CPU", [c for _, c in off], [c for _, c in on])
    return 0


def print_figures(what: str, off: list[float], on: list[float]) -> None:
    """The medians of ``what`` seconds, the noise between the two "off" runs of each
    question, and the ratio on/off against the target."""
    first, second = off[0::2], off[1::2]
    noise = [abs(a - b) / min(a, b) for a, b in zip(first, second, strict=True)]
    median_off, median_on = statistics.median(off), statistics.median(on)
    ratio = median_on / median_off
    verdict = "within" if ratio <= TARGET_RATIO else "OVER"
    print(
        f"median {what} s: off {median_off:.2f} (n={len(off)}), on {median_on:.2f} "
        f"(n={len(on)}); off vs off again: median {100 * statistics.median(noise):.1f}%; "
        f"ratio on/off {ratio:.3f} ({verdict} the +{100 * (TARGET_RATIO - 1):.0f}% target)"
    )


if __name__ == "__main__":
    sys.exit(main())
