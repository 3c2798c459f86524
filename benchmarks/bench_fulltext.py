"""Full text against abstracts only, on 24 questions answered only in the body of six real PMC
open-access articles (issue 15).

Run: ``.venv/bin/python -m benchmarks.bench_fulltext [--distractors N] [--n 24]``.

Data: the six JATS articles of ``../shared/fixtures/fulltext/pmc_oa_jats`` and the questions of
``src/deepcritical/testing/fulltext_questions.json`` (4 per article, each written from one
body passage that the abstract lacks; :mod:`deepcritical.testing.fulltext_questions`).
Distractors: the first N PubMedQA
abstracts of ``../shared/data/pubmedqa/corpus.jsonl`` (default 1000, all of them), so that
search must find the paper among many. Exits 0 with a message when the data is absent.

Two local corpora are built in a temporary directory, each holding the distractors and the
six articles:

- **full text**: the articles imported as JATS (``deepcritical corpus add`` on the directory:
  record + passages, every passage a search row);
- **abstracts only**: the same six records (title, abstract, ids) without their passages.

Each question then goes through the main job, ``deepcritical research QUESTION --llm none
--sources local`` (:func:`deepcritical.api.research`), on each corpus. Per arm it prints:

- *paper cited*: the article the question was written from is among the references;
- *answer passage retrieved and cited*: the report cites the article, and one of the
  supporting quotes of that reference is text of the answer passage (the passage holding the
  question's answer phrase), with its section shown;
- *answer in the report*: the answer phrase appears in the report's text.

And: passages per paper and parse time per article (:func:`deepcritical.formats.jats.read_jats`,
median of 5), and the median run time per arm.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.offline import use_offline_environment
from deepcritical.testing.fulltext_questions import (
    FULLTEXT_DIR,
    FulltextQuestion,
    answer_passage,
    load_questions,
)

PUBMEDQA_CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "pubmedqa"
ARMS = ("full text", "abstracts only")


@dataclass
class Outcome:
    """What one run produced for one question in one arm."""

    arm: str
    pmcid: str
    seconds: float
    paper_cited: bool = False
    passage_cited: bool = False
    answer_in_report: bool = False
    locator: str = ""
    error: str | None = None


def parse_times(paths: list[Path]) -> list[tuple[str, int, float]]:
    """``(file name, passages, median parse seconds over 5 parses)`` per article."""
    from deepcritical.formats.jats import read_jats

    out = []
    for path in paths:
        times = []
        for _ in range(5):
            start = time.perf_counter()
            article = read_jats(path)
            passages = article.passages()
            times.append(time.perf_counter() - start)
        out.append((path.name, len(passages), statistics.median(times)))
    return out


def distractor_lines(limit: int) -> list[str]:
    """The first ``limit`` PubMedQA corpus lines (JSONL), ``[]`` when the data is absent."""
    path = PUBMEDQA_CORPUS / "corpus.jsonl"
    if limit <= 0 or not path.is_file():
        return []
    with path.open(encoding="utf-8") as handle:
        return [line for line in itertools.islice(handle, limit) if line.strip()]


def build_corpora(root: Path, embedder: Any, distractors: list[str]) -> dict[str, Path]:
    """The two corpora (arm -> corpus directory) under ``root``."""
    from deepcritical.corpus.index import LocalCorpus
    from deepcritical.corpus.readers import read_full_text

    extra = root / "distractors.jsonl"
    extra.write_text("".join(distractors), encoding="utf-8")
    records = [read_full_text(p)[0] for p in sorted(FULLTEXT_DIR.glob("*.nxml"))]
    dirs = {arm: root / arm.replace(" ", "-") for arm in ARMS}
    for arm, directory in dirs.items():
        start = time.perf_counter()
        with LocalCorpus(directory, embedder) as corpus:
            if distractors:
                corpus.add_file(extra)
            if arm == "full text":
                for path in sorted(FULLTEXT_DIR.glob("*.nxml")):
                    corpus.add_file(path)
            else:
                corpus.add_articles(records)
            size = corpus.count()
        print(f"corpus '{arm}': {size} records in {time.perf_counter() - start:.0f} s")
    return dirs


async def run_one(
    question: FulltextQuestion, arm: str, settings: Any, embedder: Any, articles: dict[str, Any]
) -> Outcome:
    """One research run; the outcome measured against the question's answer passage."""
    from deepcritical.api import research

    article = articles[question.pmcid]
    gold = answer_passage(article, question)
    start = time.perf_counter()
    result = None
    error: str | None = None
    async for event in research(question.question, settings, embedder=embedder):
        if event.type == "done":
            result = event.result
        elif event.type == "error":
            error = event.message
    outcome = Outcome(arm, question.pmcid, time.perf_counter() - start, error=error)
    if result is None:
        outcome.error = outcome.error or "no report"
        return outcome
    report = result.report
    cited = {r.evidence_id for r in report.references if r.citation.pmcid == question.pmcid}
    outcome.paper_cited = bool(cited)
    for claim in report.grounding:
        for quote in claim.quotes:
            if (
                quote.evidence_id in cited
                and quote.supports
                and not claim.removed
                and quote.quote in gold.text
                and quote.locator == gold.locator()
            ):
                outcome.passage_cited = True
                outcome.locator = quote.locator
    outcome.answer_in_report = question.answer_phrase.lower() in report.to_markdown().lower()
    return outcome


def share(outcomes: list[Outcome], attribute: str) -> str:
    """``"45.8% (11/24)"`` of the outcomes whose ``attribute`` is true."""
    hits = sum(bool(getattr(o, attribute)) for o in outcomes)
    return f"{100 * hits / max(len(outcomes), 1):.1f}% ({hits}/{len(outcomes)})"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the figures; returns the process exit code."""
    use_offline_environment()
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=24, help="first N questions (default 24)")
    parser.add_argument(
        "--distractors", type=int, default=1000, help="PubMedQA abstracts added (default 1000)"
    )
    parser.add_argument("--json", type=Path, help="write every outcome to this JSON file")
    args = parser.parse_args(argv)
    paths = sorted(FULLTEXT_DIR.glob("*.nxml"))
    if len(paths) != 6:
        print(f"skipped: the six JATS articles are not in {FULLTEXT_DIR}")
        return 0

    from deepcritical.logs import configure_logging

    configure_logging("ERROR", library_level="ERROR")  # errors only
    from deepcritical.config import Settings
    from deepcritical.evidence.onnx_embeddings import run_embedder
    from deepcritical.formats.jats import read_jats

    print("article | passages | parse time (median of 5)")
    for name, passages, seconds in parse_times(paths):
        print(f"{name} | {passages} | {1000 * seconds:.1f} ms")
    articles = {a.pmcid or p.name: a for p, a in ((p, read_jats(p)) for p in paths)}
    questions = load_questions()[: args.n]
    embedder = run_embedder()
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="dc-bench-fulltext-") as tmp:
        corpora = build_corpora(Path(tmp), embedder, distractor_lines(args.distractors))
        for arm, directory in corpora.items():
            settings = Settings(
                llm="none",
                sources=["local"],
                data_dir=Path(tmp) / f"data-{arm.replace(' ', '-')}",
                corpus_dir=directory,
            )
            for q in questions:
                outcome = asyncio.run(run_one(q, arm, settings, embedder, articles))
                outcomes.append(outcome)
                print(
                    f"[{arm}] {q.pmcid} cited={outcome.paper_cited} "
                    f"passage={outcome.passage_cited} {outcome.locator or '-'} "
                    f"({outcome.seconds:.1f} s){' ' + outcome.error if outcome.error else ''}"
                )
    print()
    print("figure | full text | abstracts only | target")
    by_arm = {arm: [o for o in outcomes if o.arm == arm] for arm in ARMS}
    full, abstracts = by_arm["full text"], by_arm["abstracts only"]
    print(
        f"answer passage retrieved and cited | {share(full, 'passage_cited')} | "
        f"{share(abstracts, 'passage_cited')} | full text above abstracts"
    )
    print(
        f"paper cited | {share(full, 'paper_cited')} | {share(abstracts, 'paper_cited')} | "
        "full text not below abstracts"
    )
    print(
        f"answer phrase in the report | {share(full, 'answer_in_report')} | "
        f"{share(abstracts, 'answer_in_report')} | -"
    )
    medians = {arm: statistics.median(o.seconds for o in group) for arm, group in by_arm.items()}
    print(f"median run | {medians['full text']:.1f} s | {medians['abstracts only']:.1f} s | < 10 s")
    print(f"runs without a report | {sum(o.error is not None for o in outcomes)} | 0")
    if args.json:
        args.json.write_text(json.dumps([o.__dict__ for o in outcomes], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
