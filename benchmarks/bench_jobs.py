"""Runs as durable jobs (issue 14): throughput over 1, 2 and 4 worker processes, and the
latency overhead of the job path against an in-process run.

Run: ``.venv/bin/python -m benchmarks.bench_jobs [--n 20] [--workers 1,2,4] [--latency 5]``.

Data: ``../shared/data/pubmedqa`` (``corpus.jsonl``, ``dev_questions.jsonl``), imported once
into a temporary data directory; every run is ``--llm none --sources local``. Exits 0 with a
message when the data or Debian's PostgreSQL binaries are absent.

A throw-away PostgreSQL server on 127.0.0.1 (:mod:`scripts.postgres_local`) holds the run
database and DBOS's tables, a fresh database per measurement (no call cache shared between
them).

- **Throughput**: for each worker count W, W ``deepcritical worker --concurrency 1`` processes
  start; W warm-up runs (other questions) load their embedding models; then the first N dev
  questions are submitted at once and the wall time until all have finished gives runs per
  minute, and its ratio to 1 worker. The runs are CPU-bound: the ratio is bounded by this
  machine's cores.
- **Latency**: one warm worker runs the first ``--latency`` questions one at a time (submit ->
  the run is seen finished, wall clock; and the run's own ``finished_at - created_at``), against
  :func:`deepcritical.api.research` of the same questions in this process (warm embedder,
  recording to its own database on the same server). Overhead: median job / median in-process
  - 1 (target < 10%).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.offline import use_offline_environment
from benchmarks.pubmedqa_data import DEFAULT_DATA, pubmedqa_files
from benchmarks.pubmedqa_runs import load_questions

FINAL = {"completed", "max_iterations", "failed", "cancelled", "time_budget"}
LATENCY_TARGET = 0.10


@dataclass
class Bench:
    """The shared set-up: data directory (corpus), PostgreSQL server URL, embedder."""

    data_dir: Path
    server: str
    embedder: Any
    logs: Path

    def new_database(self) -> str:
        from sqlalchemy import create_engine, text

        name = f"bench_{uuid.uuid4().hex[:10]}"
        engine = create_engine(self.server, isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as conn:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
        finally:
            engine.dispose()
        return self.server.rsplit("/", 1)[0] + f"/{name}"

    def settings(self, url: str) -> Any:
        from deepcritical.config import Settings

        return Settings(llm="none", sources=["local"], data_dir=self.data_dir, database_url=url)

    def start_workers(self, url: str, count: int) -> list[subprocess.Popen[bytes]]:
        from scripts.serve_scaled import deepcritical_command

        env = dict(os.environ, DEEPCRITICAL_DATABASE_URL=url)
        procs = []
        for i in range(1, count + 1):
            args = ["--data-dir", str(self.data_dir), "worker", "--worker-id",
                    f"bench-{count}-{i}", "--concurrency", "1"]  # fmt: skip
            with (self.logs / f"worker-{count}-{i}.log").open("ab") as log:
                proc = subprocess.Popen(
                    [*deepcritical_command(), *args], env=env, stdout=log, stderr=subprocess.STDOUT
                )
            procs.append(proc)
        return procs


def stop_workers(procs: Sequence[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_finished(store: Any, run_ids: Sequence[str], limit: float = 1800.0) -> list[Any]:
    """Poll until every run has a final status; their records."""
    deadline = time.monotonic() + limit
    while True:
        records = [store.require_run(r) for r in run_ids]
        if all(r.status in FINAL for r in records):
            return records
        if time.monotonic() > deadline:
            raise TimeoutError(f"runs not finished after {limit:.0f} s")
        time.sleep(0.05)


def throughput(bench: Bench, questions: list[str], warmups: list[str], workers: int) -> float:
    """Runs per minute of ``questions`` submitted at once to ``workers`` warm workers."""
    from deepcritical.jobs import submit_run
    from deepcritical.state import RunStore

    url = bench.new_database()
    settings = bench.settings(url)
    procs = bench.start_workers(url, workers)
    store = RunStore.open_url(url)
    try:
        wait_finished(store, [submit_run(q, settings) for q in warmups[:workers]])
        start = time.perf_counter()
        records = wait_finished(store, [submit_run(q, settings) for q in questions])
        seconds = time.perf_counter() - start
    finally:
        store.close()
        stop_workers(procs)
    bad = [r.status for r in records if r.status not in {"completed", "max_iterations"}]
    used = len({r.worker for r in records})
    rate = len(questions) / seconds * 60
    print(
        f"  {workers} worker(s): {len(questions)} runs in {seconds:.1f} s = {rate:.1f} runs/min"
        f" (runs taken by {used} worker(s){f'; not completed: {bad}' if bad else ''})",
        flush=True,
    )
    return rate


def job_latencies(bench: Bench, questions: list[str], warmup: str) -> list[tuple[float, float]]:
    """(wall seconds submit -> seen finished, the run's own finished_at - created_at) per
    question, one at a time, on one warm worker."""
    from deepcritical.jobs import submit_run
    from deepcritical.state import RunStore

    url = bench.new_database()
    settings = bench.settings(url)
    procs = bench.start_workers(url, 1)
    store = RunStore.open_url(url)
    out: list[tuple[float, float]] = []
    try:
        wait_finished(store, [submit_run(warmup, settings)])
        for question in questions:
            start = time.perf_counter()
            (record,) = wait_finished(store, [submit_run(question, settings)])
            wall = time.perf_counter() - start
            own = (record.finished_at - record.created_at).total_seconds()
            out.append((wall, own))
    finally:
        store.close()
        stop_workers(procs)
    return out


def in_process_latencies(bench: Bench, questions: list[str], warmup: str) -> list[float]:
    """Wall seconds of :func:`deepcritical.api.research` per question, in this process."""
    from deepcritical.api import research

    settings = bench.settings(bench.new_database())

    async def one(question: str) -> float:
        start = time.perf_counter()
        async for _event in research(question, settings, embedder=bench.embedder):
            pass
        return time.perf_counter() - start

    asyncio.run(one(warmup))
    return [asyncio.run(one(q)) for q in questions]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the figures; returns the process exit code."""
    use_offline_environment()
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="PubMedQA directory")
    parser.add_argument("--n", type=int, default=20, help="runs per throughput round (20)")
    parser.add_argument("--workers", default="1,2,4", help="worker counts (default 1,2,4)")
    parser.add_argument("--latency", type=int, default=5, help="latency questions (default 5)")
    args = parser.parse_args(argv)
    counts = [int(c) for c in args.workers.split(",") if c.strip()]
    files = pubmedqa_files(args.data)
    if files is None:
        return 0
    corpus_file, questions_file = files
    from scripts.postgres_local import postgres_bin, postgres_server

    if postgres_bin() is None:
        print("skipped: PostgreSQL binaries absent (make postgresql)")
        return 0
    from deepcritical.logs import configure_logging

    configure_logging("ERROR", library_level="ERROR")  # errors only
    from deepcritical.corpus.index import LocalCorpus
    from deepcritical.evidence.onnx_embeddings import run_embedder

    spare = max(counts) + 1
    rows = load_questions(questions_file, max(args.n, args.latency) + spare)
    questions = [r["question"] for r in rows]
    measured, warmups = questions[: args.n], questions[-spare:]
    embedder = run_embedder()
    with tempfile.TemporaryDirectory(prefix="dc-bench-jobs-") as tmp:
        data_dir, logs = Path(tmp) / "data", Path(tmp) / "logs"
        logs.mkdir()
        start = time.perf_counter()
        from deepcritical.config import Settings

        corpus_dir = Settings(data_dir=data_dir).resolved_corpus_dir
        with LocalCorpus(corpus_dir, embedder) as corpus:
            imported = corpus.add_file(corpus_file)
        print(
            f"corpus: {imported.added} abstracts in {time.perf_counter() - start:.0f} s; "
            f"{os.cpu_count()} CPU cores; runs: --llm none --sources local",
            flush=True,
        )
        with postgres_server() as server:
            bench = Bench(data_dir=data_dir, server=server, embedder=embedder, logs=logs)
            print(f"throughput, {args.n} runs submitted at once:", flush=True)
            rates = {w: throughput(bench, measured, warmups, w) for w in counts}
            lat_questions = questions[: args.latency]
            jobs = job_latencies(bench, lat_questions, warmups[0])
            local = in_process_latencies(bench, lat_questions, warmups[0])
    report(rates, counts, jobs, local)
    return 0


def report(
    rates: dict[int, float], counts: list[int], jobs: list[tuple[float, float]], local: list[float]
) -> None:
    print()
    base = rates.get(1) or rates[counts[0]]
    cores = os.cpu_count() or 1
    for w in counts:
        print(
            f"throughput {w} worker(s): {rates[w]:.1f} runs/min, ratio to 1 worker "
            f"{rates[w] / base:.2f} (target: grows with workers up to min(workers, {cores} cores)"
            f" = {min(w, cores)})"
        )
    job_wall = statistics.median(j[0] for j in jobs)
    job_own = statistics.median(j[1] for j in jobs)
    in_proc = statistics.median(local)
    print(
        f"latency, median of {len(local)}: in-process {in_proc:.2f} s; job path {job_wall:.2f} s"
        f" (submit -> seen finished), {job_own:.2f} s (the run's created_at -> finished_at)"
    )
    print(
        f"latency overhead of the job path: {job_wall / in_proc - 1:+.1%} wall, "
        f"{job_own / in_proc - 1:+.1%} by the run's timestamps (target < {LATENCY_TARGET:.0%})"
    )


if __name__ == "__main__":
    sys.exit(main())
