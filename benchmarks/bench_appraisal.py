"""Appraisal: study-record extraction scored against hand labels, and certainty over runs.

Run: ``PYTHONPATH=. python -u -m benchmarks.bench_appraisal [--n 50] [--data DIR]
[--no-runs] [--misses]``.

Data: ``../shared/data/pubmedqa`` (``corpus.jsonl``, ``dev_questions.jsonl``; PubMedQA, Jin
et al. 2019, MIT licence), ``../shared/fixtures/fulltext/pmc_oa_jats`` (six JATS full texts)
and ``benchmarks/appraisal_labels.json`` (275 abstracts and the six full texts, read and
labelled by hand without the extractor: sample size, number analysed, every effect estimate
with its CI and outcome, design; the rules are in the file). Each label is in the ``dev``
half (the rules are tuned on it) or the ``test`` half (never tuned on). Exits 0 with a
message when the data is absent.

Prints, for each half and each field, precision (of the values shown, the share equal to
the label) and recall (of the labelled values, the share shown right); see
:mod:`benchmarks.appraisal_scoring`. Targets, on the test half (issue 28): sample size
precision >= 97% and recall >= 75%; effect estimate with CI precision >= 97% and recall >=
85%; the outcome named for >= 80% of the effects with a CI shown. ``--misses`` lists the dev
half's misses only (the test half's are never shown, so they cannot be tuned on).

Then the distribution of certainty levels (:mod:`deepcritical.evidence.certainty`) of the
verdict's evidence over the first N dev questions, each a research run as ``deepcritical
research QUESTION --llm none --sources local`` (skipped with ``--no-runs``).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.appraisal_scoring import FIELDS, Scores, score_record, total
from benchmarks.offline import use_offline_environment
from benchmarks.pubmedqa_data import DEFAULT_DATA
from benchmarks.pubmedqa_runs import load_questions

LABELS = Path(__file__).with_name("appraisal_labels.json")
FULL_TEXTS = DEFAULT_DATA.parents[1] / "fixtures" / "fulltext" / "pmc_oa_jats"
TARGETS = {
    "sample size": (0.97, 0.75),
    "effect with CI": (0.97, 0.85),
    "outcome named": (0.80, None),
}
"""Field -> (precision, recall) targets on the test half (``None``: no target)."""


def load_labels() -> dict[str, Any]:
    """The hand labels (``labels``: abstracts; ``full_texts``: JATS articles)."""
    data: dict[str, Any] = json.loads(LABELS.read_text(encoding="utf-8"))
    return data


def abstract_items(corpus_file: Path, pmids: set[str]) -> dict[str, Any]:
    """PMID -> the evidence item the local source makes of that corpus record."""
    from deepcritical.corpus.readers import read_jsonl
    from deepcritical.formats.pubmed_xml import article_to_evidence

    return {
        a.pmid: article_to_evidence(a, source="local")
        for a in read_jsonl(corpus_file)
        if a.pmid in pmids
    }


def _full_text_item(path: Path) -> Any:
    """The evidence item of a JATS article as the local corpus gives it (with passages)."""
    from deepcritical.corpus.readers import read_full_text
    from deepcritical.formats.pubmed_xml import article_to_evidence

    record, passages = read_full_text(path)
    item = article_to_evidence(record, source="local")
    return item.model_copy(update={"passages": passages})


def extraction_scores(corpus_file: Path, full_texts: Path = FULL_TEXTS) -> dict[str, Scores]:
    """Scores of the rules' study records per half (``"dev"``, ``"test"``) over the labelled
    abstracts and, when ``full_texts`` holds them, the labelled JATS articles."""
    from deepcritical.evidence.study_extraction import extract_study

    data = load_labels()
    items = abstract_items(corpus_file, {label["pmid"] for label in data["labels"]})
    pairs = [(items[label["pmid"]], label) for label in data["labels"]]
    for label in data.get("full_texts", []):
        if (full_texts / label["file"]).is_file():
            pairs.append((_full_text_item(full_texts / label["file"]), label))
    halves: dict[str, list[Scores]] = {"dev": [], "test": []}
    for item, label in pairs:
        halves[label["split"]].append(score_record(extract_study(item), label))
    return {half: total(scores) for half, scores in halves.items()}


async def _certainty_of_run(question: dict[str, str], settings: Any, embedder: Any) -> str:
    from deepcritical.api import research

    async for event in research(question["question"], settings, embedder=embedder):
        if event.type == "done" and event.result is not None:
            certainty = event.result.report.metadata.certainty
            return certainty.level.value if certainty is not None else "not rated"
        if event.type == "error":
            return "no report"
    return "no report"


def certainty_distribution(data: Path, n: int) -> collections.Counter[str]:
    """Certainty level of each of the first ``n`` dev questions' runs (offline, local)."""
    from deepcritical.config import Settings
    from deepcritical.corpus.index import LocalCorpus
    from deepcritical.evidence.onnx_embeddings import run_embedder

    questions = load_questions(data / "dev_questions.jsonl", n)
    embedder = run_embedder()
    levels: collections.Counter[str] = collections.Counter()
    with tempfile.TemporaryDirectory(prefix="dc-bench-appraisal-") as tmp:
        settings = Settings(llm="none", sources=["local"], data_dir=Path(tmp))
        with LocalCorpus(settings.resolved_corpus_dir, embedder) as corpus:
            corpus.add_file(data / "corpus.jsonl")
        for q in questions:
            levels[asyncio.run(_certainty_of_run(q, settings, embedder))] += 1
    return levels


def _pct(part: int, whole: int) -> str:
    return f"{part}/{whole} = {part / whole:.1%}" if whole else "n/a"


def _target(value: float | None, target: float | None) -> str:
    if target is None:
        return ""
    met = value is not None and value >= target
    return f" (target >= {target:.0%}: {'met' if met else 'MISSED'})"


def print_scores(half: str, scores: Scores) -> None:
    """One line per field: precision and recall (with the targets on the test half)."""
    print(f"\n{half} half: {scores.records} labelled records")
    for name in FIELDS:
        f = scores.fields[name]
        p_target, r_target = TARGETS.get(name, (None, None)) if half == "test" else (None, None)
        print(
            f"  {name:<20} precision {_pct(f.right, f.shown)}{_target(f.precision, p_target)}; "
            f"recall {_pct(f.found, f.labelled)}{_target(f.recall, r_target)}"
        )
    matched = scores.fields["effect with CI"].right + scores.fields["effect without CI"].right
    agree = _pct(scores.measure_agrees, matched)
    print(f"  measure code as labelled, of the estimates shown right: {agree}")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the figures; returns the process exit code."""
    use_offline_environment()
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="PubMedQA directory")
    parser.add_argument("--n", type=int, default=50, help="dev questions run (default 50)")
    parser.add_argument("--no-runs", action="store_true", help="extraction figures only")
    parser.add_argument("--misses", action="store_true", help="list the dev half's misses")
    args = parser.parse_args(argv)
    corpus_file = args.data / "corpus.jsonl"
    if not corpus_file.is_file():
        print(f"skipped: PubMedQA data not found in {args.data}")
        return 0
    from deepcritical.logs import configure_logging

    configure_logging("ERROR", library_level="ERROR")  # errors only
    start = time.perf_counter()
    halves = extraction_scores(corpus_file)
    print(f"study records read by rules in {time.perf_counter() - start:.2f} s")
    for half in ("dev", "test"):
        print_scores(half, halves[half])
    if args.misses:
        print("\ndev half misses:")
        print("\n".join(f"  {m}" for m in halves["dev"].misses))
    if args.no_runs:
        return 0
    start = time.perf_counter()
    levels = certainty_distribution(args.data, args.n)
    count = sum(levels.values())
    print(
        f"certainty of the verdict's evidence over {count} dev questions "
        f"({time.perf_counter() - start:.0f} s; automated GRADE-style rating, no target):"
    )
    for level in ("High", "Moderate", "Low", "Very low", "not rated", "no report"):
        if levels[level]:
            print(f"  {level}: {_pct(levels[level], count)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
