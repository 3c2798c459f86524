"""Calibrate the offline stance rules on the PubMedQA dev questions.

Run: ``.venv/bin/python -m benchmarks.fit_stance [--show wrong|all]``.

For each dev question, the abstract it was written from (its gold PMID) is read as the run
reads a source: :func:`deepcritical.evidence.stance.read_stance` (its conclusion sentences,
the first one the main one). The stance
is compared with the label: yes -> supports, no -> contradicts, maybe -> neutral (a decisive
stance on a "maybe" question is counted wrong). Printed for the tuning half of the dev
questions (``benchmarks/verdict_split.json``; the cue lists and rules of
:mod:`deepcritical.evidence.stance` are tuned on it, and ``--show`` lists its questions only)
and, as totals only, for the test half: the confusion table, the precision of the decisive
stances (supports or contradicts right / decisive) and their coverage (decisive /
questions). Nothing is fitted automatically: the rules are edited by hand and this script
measures them. No full runs, no network; a few seconds.
Data: ``../shared/data/pubmedqa``; exits 0 with a message when it is absent.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.pubmedqa_data import DEFAULT_DATA
from benchmarks.verdict_split import questions_of
from deepcritical.corpus.readers import read_jsonl
from deepcritical.evidence.stance import StanceReading, read_stance
from deepcritical.formats.pubmed_xml import PubmedArticle, article_to_evidence
from deepcritical.models import SourceName, Stance

EXPECTED = {"yes": Stance.SUPPORTS, "no": Stance.CONTRADICTS, "maybe": Stance.NEUTRAL}


@dataclass(frozen=True)
class Judged:
    """One dev question: its index, text, label and the gold abstract's stance reading."""

    index: int
    question: str
    answer: str
    reading: StanceReading

    @property
    def decisive(self) -> bool:
        """The stance is supports or contradicts."""
        return self.reading.stance is not Stance.NEUTRAL

    @property
    def right(self) -> bool:
        """The stance is the one the label expects."""
        return self.reading.stance is EXPECTED.get(self.answer)


@dataclass(frozen=True)
class Figures:
    """Decisive-stance precision and coverage of a set of questions."""

    questions: int
    decisive: int
    right: int

    @property
    def precision(self) -> float:
        """Right / decisive (0 when none is decisive)."""
        return self.right / self.decisive if self.decisive else 0.0

    @property
    def coverage(self) -> float:
        """Decisive / questions (0 with no question)."""
        return self.decisive / self.questions if self.questions else 0.0


def judge(articles: dict[str, PubmedArticle], questions: Sequence[dict[str, str]]) -> list[Judged]:
    """The stance of each gold abstract of ``questions`` (their index is their dev line)."""
    out: list[Judged] = []
    for index, row in enumerate(questions):
        article = articles.get(row["pmid"])
        if article is None:
            continue
        item = article_to_evidence(article, source=SourceName.LOCAL.value, relevance=1.0)
        item = item.model_copy(update={"id": "E1"})
        out.append(
            Judged(index, row["question"], row["answer"], read_stance(item, row["question"]))
        )
    return out


def figures(judged: Sequence[Judged]) -> Figures:
    """Precision and coverage of the decisive stances in ``judged``."""
    decisive = [j for j in judged if j.decisive]
    return Figures(len(judged), len(decisive), sum(j.right for j in decisive))


def report(name: str, judged: Sequence[Judged]) -> None:
    """Print the confusion table (label x stance) and the figures of ``judged``."""
    table = Counter((j.answer, j.reading.stance.value) for j in judged)
    stances = [s.value for s in Stance]
    print(f"\n{name}: {len(judged)} questions")
    print(f"{'label':>8} " + " ".join(f"{s:>12}" for s in stances))
    for answer in ("yes", "no", "maybe"):
        print(f"{answer:>8} " + " ".join(f"{table[(answer, s)]:>12}" for s in stances))
    f = figures(judged)
    print(
        f"decisive-stance precision {f.precision:.1%} ({f.right}/{f.decisive}), "
        f"coverage {f.coverage:.1%} ({f.decisive}/{f.questions})"
    )
    for stance in (Stance.SUPPORTS, Stance.CONTRADICTS):
        group = [j for j in judged if j.reading.stance is stance]
        right = sum(j.right for j in group)
        share = right / len(group) if group else 0.0
        print(f"  {stance.value:>12}: {share:.1%} right ({right}/{len(group)})")


def show(judged: Sequence[Judged], which: str) -> None:
    """Print the questions (all, or the decisive ones judged wrong) with their reasons."""
    for j in judged:
        if which == "wrong" and (j.right or not j.decisive):
            continue
        print(f"[{j.index}] {j.answer} -> {j.reading.stance.value}: {j.question}")
        print(f"      {j.reading.reason} | {j.reading.sentence[:200]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--show", choices=["wrong", "all"], help="list tuning questions")
    parser.add_argument("--tuning-only", action="store_true", help="do not measure the test half")
    args = parser.parse_args()
    corpus_file, questions_file = args.data / "corpus.jsonl", args.data / "dev_questions.jsonl"
    if not corpus_file.exists() or not questions_file.exists():
        print(f"PubMedQA data not found under {args.data}; nothing to measure")
        return 0
    lines = questions_file.read_text(encoding="utf-8").split("\n")
    questions = [json.loads(line) for line in lines if line]
    articles = {a.pmid: a for a in read_jsonl(corpus_file)}
    tuning = judge(articles, questions_of(questions, "tuning"))
    report("tuning half (fit on these)", tuning)
    if args.show:
        show(tuning, args.show)
    if not args.tuning_only:
        report("test half (never tuned on)", judge(articles, questions_of(questions, "test")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
