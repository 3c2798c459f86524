"""The main job on PubMedQA: one research run per dev question, with ``--llm none``.

Run: ``.venv/bin/python -m benchmarks.pubmedqa_runs [--n 20] [--data DIR]``.

Data: ``../shared/data/pubmedqa`` (``corpus.jsonl``: 1000 PubMedQA abstracts without titles;
``dev_questions.jsonl``: questions, each written from one "gold" abstract whose PMID it
carries; PubMedQA, Jin et al. 2019, MIT licence). Exits 0 with a message when the data is
absent.

The corpus is imported once into a temporary data directory (as ``deepcritical corpus add``
does), then for each of the first N questions the run goes through the same entry point as
``deepcritical research QUESTION --llm none`` (:func:`deepcritical.api.research` with the
default settings but ``llm="none"``, ``sources=["local"]``), in this process with one shared
all-MiniLM-L6-v2 embedder (the CLI loads it once per process, ~5-10 s, not counted here).

Prints, per question and in total: wall seconds of the run, evidence items collected,
references in the final report, whether the gold PMID is among the references, and the
references and inline citations that citation validation removed. Targets (issue 2): gold
cited in >= 17/20, zero invalid references left in the final reports (checked with
:func:`deepcritical.report.validation.citation_problems`), median run < 30 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.offline import use_offline_environment
from benchmarks.pubmedqa_data import DEFAULT_DATA, pubmedqa_files


@dataclass
class RunFigures:
    """What one research run produced (``error`` set when it ended without a report)."""

    pmid: str
    seconds: float
    evidence: int = 0
    references: int = 0
    gold_cited: bool = False
    references_removed: int = 0
    markers_removed: int = 0
    problems_left: int = 0
    error: str | None = None


def load_questions(path: Path, limit: int) -> list[dict[str, str]]:
    """The first ``limit`` dev questions as ``{"question", "pmid", ...}`` dicts."""
    rows: list[dict[str, str]] = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                rows.append({k: str(v) for k, v in json.loads(line).items()})
            if len(rows) >= limit:
                break
    return rows


async def run_one(question: dict[str, str], settings: Any, embedder: Any) -> RunFigures:
    """Research one question to its final report and measure it."""
    from deepcritical.api import research
    from deepcritical.report.validation import citation_problems

    start = time.perf_counter()
    result = None
    error: str | None = None
    async for event in research(question["question"], settings, embedder=embedder):
        if event.type == "done":
            result = event.result
        elif event.type == "error":
            error = event.message
    seconds = time.perf_counter() - start
    if result is None:
        return RunFigures(question["pmid"], seconds, error=error or "no report")
    report = result.report
    cv = report.metadata.citation_validation
    evidence_by_id = {e.id: e for e in result.evidence}
    return RunFigures(
        pmid=question["pmid"],
        seconds=seconds,
        evidence=len(result.evidence),
        references=len(report.references),
        gold_cited=any(r.citation.pmid == question["pmid"] for r in report.references),
        references_removed=cv.references_removed,
        markers_removed=cv.markers_removed,
        problems_left=len(citation_problems(report, evidence_by_id)),
    )


def print_table(figures: list[RunFigures]) -> None:
    """One line per question, then the totals against the issue's targets."""
    print(
        f"{'#':>3} {'PMID':>9} {'wall s':>7} {'evidence':>8} {'refs':>5} {'gold cited':>10} "
        f"{'refs removed':>12} {'cites removed':>13} {'invalid left':>12}"
    )
    for i, f in enumerate(figures, start=1):
        if f.error:
            print(f"{i:>3} {f.pmid:>9} {f.seconds:>7.1f}  ERROR: {f.error}")
            continue
        print(
            f"{i:>3} {f.pmid:>9} {f.seconds:>7.1f} {f.evidence:>8} {f.references:>5} "
            f"{'yes' if f.gold_cited else 'no':>10} {f.references_removed:>12} "
            f"{f.markers_removed:>13} {f.problems_left:>12}"
        )
    done = [f for f in figures if not f.error]
    seconds = [f.seconds for f in figures]
    print()
    print(f"runs: {len(figures)} ({len(figures) - len(done)} without a report)")
    print(f"gold PMID cited: {sum(f.gold_cited for f in done)}/{len(figures)} (target >= 17/20)")
    print(
        f"invalid references left in final reports: {sum(f.problems_left for f in done)} "
        f"(target 0); removed by validation: {sum(f.references_removed for f in done)} "
        f"references, {sum(f.markers_removed for f in done)} inline citations"
    )
    print(
        f"wall seconds per run: median {statistics.median(seconds):.1f} (target < 30), "
        f"mean {statistics.fmean(seconds):.1f}, max {max(seconds):.1f}"
    )
    print(
        f"evidence items per run: median {statistics.median([f.evidence for f in done] or [0])}"
        f"; references per run: median {statistics.median([f.references for f in done] or [0])}"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the figures; returns the process exit code."""
    use_offline_environment()
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="PubMedQA directory")
    parser.add_argument("--n", type=int, default=20, help="first N dev questions (default 20)")
    args = parser.parse_args(argv)
    files = pubmedqa_files(args.data)
    if files is None:
        return 0
    corpus_file, questions_file = files

    from deepcritical.logs import configure_logging

    configure_logging("ERROR", library_level="ERROR")  # errors only
    from deepcritical.config import Settings
    from deepcritical.corpus.index import LocalCorpus
    from deepcritical.evidence.onnx_embeddings import run_embedder

    questions = load_questions(questions_file, args.n)
    start = time.perf_counter()
    embedder = run_embedder()
    print(f"all-MiniLM-L6-v2 loaded in {time.perf_counter() - start:.1f} s")
    with tempfile.TemporaryDirectory(prefix="dc-bench-runs-") as tmp:
        settings = Settings(llm="none", sources=["local"], data_dir=Path(tmp))
        start = time.perf_counter()
        with LocalCorpus(settings.resolved_corpus_dir, embedder) as corpus:
            imported = corpus.add_file(corpus_file)
        print(
            f"corpus: {imported.added} abstracts imported in {time.perf_counter() - start:.0f} s;"
            f" {len(questions)} questions; max_rounds={settings.max_rounds}, "
            f"max_sources={settings.max_sources}"
        )
        figures = [asyncio.run(run_one(q, settings, embedder)) for q in questions]
    print_table(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
