"""Follow-up questions on finished runs (issue 32 item 4): ``ask`` on PubMedQA dev questions.

Run: ``.venv/bin/python -m benchmarks.bench_follow_up [--n 50] [--data DIR]``.

For each of the first N dev questions, a research run offline as ``deepcritical research
QUESTION --llm none --sources local`` over the PubMedQA corpus (imported once into a
temporary data directory, as :mod:`benchmarks.pubmedqa_runs` does; the runs are recorded in
its run database), then :func:`deepcritical.api.ask` on that run with the same question,
answered again as a follow-up from the run's evidence only. Exits 0 with a message when the
data is absent.

Prints, next to the targets: citations valid (share of answers in which
:func:`~deepcritical.report.validation.citation_problems` finds nothing against the run's
on-topic evidence; target 100%), the gold abstract cited whenever the report cited it (of the
runs whose report cites the gold PMID, the share whose answer cites it too; target 100%),
the share answered, and the seconds per ``ask`` (the embedder loaded once, not counted). The
CPU model is printed too: timings are this machine's.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.offline import use_offline_environment
from benchmarks.pubmedqa_data import DEFAULT_DATA, pubmedqa_files
from benchmarks.pubmedqa_runs import load_questions


@dataclass(frozen=True)
class AskFigures:
    """One question's run and follow-up (``error`` set when the run gave no report)."""

    pmid: str
    report_cites_gold: bool = False
    answer_cites_gold: bool = False
    answered: bool = False
    citations_valid: bool = False
    ask_seconds: float = 0.0
    error: str | None = None


@dataclass(frozen=True)
class Scores:
    """The benchmark's figures over every question that got a report.

    ``citations_valid``, ``gold_kept`` and ``answered`` are shares (0..1; ``gold_kept`` is
    ``None`` when no report cited its gold abstract); ``seconds_per_ask`` the mean wall
    seconds of one ``ask``; ``gold_runs`` how many reports cited their gold abstract.
    """

    runs: int
    failed: int
    citations_valid: float
    gold_runs: int
    gold_kept: float | None
    answered: float
    seconds_per_ask: float


def score(figures: list[AskFigures]) -> Scores:
    """The :class:`Scores` of ``figures`` (runs without a report counted apart)."""
    done = [f for f in figures if f.error is None]
    gold = [f for f in done if f.report_cites_gold]
    n = max(len(done), 1)
    return Scores(
        runs=len(figures),
        failed=len(figures) - len(done),
        citations_valid=sum(f.citations_valid for f in done) / n,
        gold_runs=len(gold),
        gold_kept=sum(f.answer_cites_gold for f in gold) / len(gold) if gold else None,
        answered=sum(f.answered for f in done) / n,
        seconds_per_ask=statistics.fmean([f.ask_seconds for f in done]) if done else 0.0,
    )


async def ask_one(question: dict[str, str], settings: Any, embedder: Any) -> AskFigures:
    """Research ``question`` offline to its report, then ask it again as a follow-up."""
    from deepcritical.api import ask, research
    from deepcritical.report.validation import citation_problems
    from deepcritical.writing.follow_up import on_topic

    result, run_id, error = None, None, None
    async for event in research(question["question"], settings, embedder=embedder):
        run_id = run_id or event.run_id
        if event.type == "done":
            result = event.result
        elif event.type == "error":
            error = event.message
    if result is None or run_id is None:
        return AskFigures(question["pmid"], error=error or "no report")
    start = time.perf_counter()
    follow_up = await ask(run_id, question["question"], settings, embedder=embedder)
    seconds = time.perf_counter() - start
    by_id = {e.id: e for e in on_topic(result)}
    gold = question["pmid"]
    return AskFigures(
        pmid=gold,
        report_cites_gold=any(r.citation.pmid == gold for r in result.report.references),
        answer_cites_gold=any(r.citation.pmid == gold for r in follow_up.references),
        answered=follow_up.answered,
        citations_valid=not citation_problems(follow_up.as_report(), by_id),
        ask_seconds=seconds,
    )


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what :mod:`platform` says."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def print_scores(figures: list[AskFigures]) -> None:
    """One line per question, then the figures next to their targets."""
    print(
        f"{'#':>3} {'PMID':>9} {'report gold':>11} {'answer gold':>11} {'answered':>8} {'valid':>5}"
    )
    for i, f in enumerate(figures, start=1):
        if f.error:
            print(f"{i:>3} {f.pmid:>9}  ERROR: {f.error}")
            continue
        print(
            f"{i:>3} {f.pmid:>9} {'yes' if f.report_cites_gold else 'no':>11} "
            f"{'yes' if f.answer_cites_gold else 'no':>11} {'yes' if f.answered else 'no':>8} "
            f"{'yes' if f.citations_valid else 'NO':>5}"
        )
    s = score(figures)
    kept = "n/a" if s.gold_kept is None else f"{s.gold_kept:.0%}"
    print()
    print(f"CPU: {cpu_model()}")
    print(f"runs: {s.runs} ({s.failed} without a report)")
    print(f"citations valid: {s.citations_valid:.0%} of answers (target 100%)")
    print(
        f"gold abstract cited whenever the report cited it: {kept} of {s.gold_runs} (target 100%)"
    )
    print(f"answered: {s.answered:.0%}")
    print(f"seconds per ask: {s.seconds_per_ask:.2f}")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the figures; returns the process exit code."""
    use_offline_environment()
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="PubMedQA directory")
    parser.add_argument("--n", type=int, default=50, help="first N dev questions (default 50)")
    args = parser.parse_args(argv)
    files = pubmedqa_files(args.data)
    if files is None:
        return 0
    corpus_file, questions_file = files

    from deepcritical.logs import configure_logging

    configure_logging("ERROR", library_level="ERROR")
    from deepcritical.config import Settings
    from deepcritical.corpus.index import LocalCorpus
    from deepcritical.evidence.onnx_embeddings import run_embedder

    questions = load_questions(questions_file, args.n)
    embedder = run_embedder()
    with tempfile.TemporaryDirectory(prefix="dc-bench-ask-") as tmp:
        settings = Settings(llm="none", sources=["local"], data_dir=Path(tmp))
        with LocalCorpus(settings.resolved_corpus_dir, embedder) as corpus:
            corpus.add_file(corpus_file)
        figures = [asyncio.run(ask_one(q, settings, embedder)) for q in questions]
    print_scores(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
