"""Appraisal: study-record extraction against hand labels, and certainty levels over runs.

Run: ``PYTHONPATH=. python -u -m benchmarks.bench_appraisal [--n 50] [--data DIR]
[--no-runs]``.

Data: ``../shared/data/pubmedqa`` (``corpus.jsonl``, ``dev_questions.jsonl``; PubMedQA, Jin
et al. 2019, MIT licence) and ``benchmarks/appraisal_labels.json`` (65 abstracts of that corpus
labelled by hand: the sample size and the first effect estimate reported with a CI, as
written; the rules are in the file). Exits 0 with a message when the data is absent.

Prints, each next to its target (issue 20):

- extraction precision: the share of the values the study records show (every text value,
  estimate, CI bound and p) found verbatim in their source at the span their proof names,
  re-checked here independently of the extractor. Target 100%.
- recall of the sample size: the labelled count equals the record's sample size or number
  analysed, as numbers ("1,024" = "1024", "Sixty-seven" = "67"). Target >= 85%.
- recall of the primary effect estimate with its CI: the labelled estimate's value and both
  CI bounds equal those of the record's primary estimate (the first given with a CI; numbers
  compared; the measure code is not required to match, and is reported separately).
  Target >= 80%.
- the distribution of certainty levels (:mod:`deepcritical.evidence.certainty`) of the
  verdict's evidence over the first N dev questions, each a research run as
  ``deepcritical research QUESTION --llm none --sources local`` (as
  ``benchmarks/pubmedqa_runs.py`` does; skipped with ``--no-runs``).
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

from benchmarks.offline import use_offline_environment
from benchmarks.pubmedqa_data import DEFAULT_DATA
from benchmarks.pubmedqa_runs import load_questions

LABELS = Path(__file__).with_name("appraisal_labels.json")


def _labelled_items(corpus_file: Path, pmids: set[str]) -> dict[str, Any]:
    """PMID -> the evidence item the local source makes of that corpus record."""
    from deepcritical.corpus.readers import read_jsonl
    from deepcritical.formats.pubmed_xml import article_to_evidence

    return {
        a.pmid: article_to_evidence(a, source="local")
        for a in read_jsonl(corpus_file)
        if a.pmid in pmids
    }


def _same(a: str | None, b: str | None) -> bool:
    from deepcritical.models import parse_number

    if a is None or b is None:
        return False
    x, y = parse_number(a), parse_number(b)
    return x is not None and y is not None and abs(x - y) < 1e-9


def _shown_values(record: Any) -> list[tuple[Any, str]]:
    """(proof, value) for every value a record shows."""
    out: list[tuple[Any, str]] = []
    for v in record.values():
        if hasattr(v, "measure"):
            out += [(v.proof, x) for x in (v.value, v.ci_low, v.ci_high, v.p_value) if x]
        else:
            out.append((v.proof, v.value))
    return out


def extraction_figures(corpus_file: Path) -> dict[str, Any]:
    """Precision, recalls and per-abstract misses over the hand labels."""
    from deepcritical.evidence.study_extraction import extract_study, proof_text

    labels = json.loads(LABELS.read_text(encoding="utf-8"))["labels"]
    items = _labelled_items(corpus_file, {label["pmid"] for label in labels})
    shown = verbatim = dropped = 0
    n_hit = n_total = e_hit = e_total = measure_hit = n_extra = e_extra = 0
    misses: list[str] = []
    start = time.perf_counter()
    for label in labels:
        item = items[label["pmid"]]
        record = extract_study(item)
        dropped += record.values_dropped
        for proof, value in _shown_values(record):
            text = proof_text(item, proof) or ""
            shown += 1
            verbatim += text[proof.start : proof.end] == proof.quote and value in proof.quote
        if label["sample_size"] is not None:
            n_total += 1
            got = [v.value for v in (record.sample_size, record.analysed) if v is not None]
            if any(_same(g, label["sample_size"]) for g in got):
                n_hit += 1
            else:
                misses.append(f"{label['pmid']} n: gold {label['sample_size']!r}, got {got}")
        elif record.sample_size is not None or record.analysed is not None:
            n_extra += 1
        gold = label["effect"]
        if gold is None and any(e.has_ci for e in record.effects):
            e_extra += 1
        if gold is not None:
            e_total += 1
            candidates = [e for e in record.effects if e.has_ci][:1]
            match = next(
                (
                    e
                    for e in candidates
                    if _same(e.value, gold["value"])
                    and _same(e.ci_low, gold["ci_low"])
                    and _same(e.ci_high, gold["ci_high"])
                ),
                None,
            )
            if match is not None:
                e_hit += 1
                measure_hit += match.measure.lower() == gold["measure"].lower()
            else:
                got_e = [e.short() for e in candidates]
                misses.append(f"{label['pmid']} effect: gold {gold}, got {got_e}")
    return {
        "abstracts": len(labels),
        "seconds": time.perf_counter() - start,
        "shown": shown,
        "verbatim": verbatim,
        "dropped": dropped,
        "n": (n_hit, n_total),
        "effect": (e_hit, e_total),
        "measure": measure_hit,
        "n_extra": (n_extra, len(labels) - n_total),
        "effect_extra": (e_extra, len(labels) - e_total),
        "misses": misses,
    }


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


def _pct(hit: int, total: int) -> str:
    return f"{hit}/{total} = {hit / total:.1%}" if total else "n/a"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the figures; returns the process exit code."""
    use_offline_environment()
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="PubMedQA directory")
    parser.add_argument("--n", type=int, default=50, help="dev questions run (default 50)")
    parser.add_argument("--no-runs", action="store_true", help="extraction figures only")
    parser.add_argument("--misses", action="store_true", help="list each miss")
    args = parser.parse_args(argv)
    corpus_file = args.data / "corpus.jsonl"
    if not corpus_file.is_file():
        print(f"skipped: PubMedQA data not found in {args.data}")
        return 0
    import logging

    logging.disable(logging.WARNING)
    f = extraction_figures(corpus_file)
    print(f"hand-labelled abstracts: {f['abstracts']} (read in {f['seconds']:.2f} s)")
    print(
        f"extraction precision (shown values found verbatim at their proof): "
        f"{_pct(f['verbatim'], f['shown'])} (target 100%); values dropped without proof: "
        f"{f['dropped']}"
    )
    print(f"recall of sample size: {_pct(*f['n'])} (target >= 85%)")
    print(f"recall of primary effect estimate with its CI: {_pct(*f['effect'])} (target >= 80%)")
    print(f"  of those, measure code as labelled: {_pct(f['measure'], f['effect'][0])}")
    print(
        f"shown where the label has none (no target): sample size {_pct(*f['n_extra'])}, "
        f"effect with CI {_pct(*f['effect_extra'])}"
    )
    if args.misses:
        print("\n".join(f"  miss {m}" for m in f["misses"]))
    if args.no_runs:
        return 0
    start = time.perf_counter()
    levels = certainty_distribution(args.data, args.n)
    total = sum(levels.values())
    print(
        f"certainty of the verdict's evidence over {total} dev questions "
        f"({time.perf_counter() - start:.0f} s; automated GRADE-style rating, no target):"
    )
    for level in ("High", "Moderate", "Low", "Very low", "not rated", "no report"):
        if levels[level]:
            print(f"  {level}: {_pct(levels[level], total)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
