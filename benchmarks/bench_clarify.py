"""How often the offline clarify rules ask, on the PubMedQA dev questions.

Run: ``.venv/bin/python -m benchmarks.bench_clarify [--show]``.

Every dev question (``../shared/data/pubmedqa/dev_questions.jsonl``; PubMedQA questions are
article titles, specific and well formed) goes through
:func:`deepcritical.text.clarify_rules.missing_elements`. Printed: the rate at which a
clarification would be asked, for all questions and for each half of
``benchmarks/verdict_split.json`` (the rules were written looking at all 500 questions, so
neither half is held out), by question type and by missing element; ``--show`` lists the
questions asked about. No model, no network; well under a second.
Data: ``../shared/data/pubmedqa``; exits 0 with a message when it is absent.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.pubmedqa_data import DEFAULT_DATA, read_dev_questions
from benchmarks.verdict_split import questions_of
from deepcritical.text.clarify_rules import missing_elements
from deepcritical.text.question_type import classify_question


@dataclass(frozen=True)
class ClarifyRate:
    """How many of ``questions`` the rules would ask about (``asked``), and the counts by
    question type and by missing element of those asked about."""

    questions: int
    asked: int
    by_type: Counter[str]
    by_element: Counter[str]
    examples: tuple[tuple[str, tuple[str, ...]], ...]

    @property
    def rate(self) -> float:
        """``asked / questions`` (0.0 for no question)."""
        return self.asked / self.questions if self.questions else 0.0


def measure(questions: Sequence[str]) -> ClarifyRate:
    """The clarify rate of ``questions`` (plain question strings)."""
    by_type: Counter[str] = Counter()
    by_element: Counter[str] = Counter()
    examples: list[tuple[str, tuple[str, ...]]] = []
    for question in questions:
        missing = missing_elements(question)
        if missing:
            by_type[classify_question(question)[0].value] += 1
            by_element.update(missing)
            examples.append((question, tuple(missing)))
    return ClarifyRate(len(questions), len(examples), by_type, by_element, tuple(examples))


def report(name: str, result: ClarifyRate) -> None:
    """Print ``result``'s rate and counts under ``name``."""
    print(
        f"{name}: clarification asked for {result.asked} of {result.questions} questions "
        f"({result.rate:.1%})"
    )
    print("  by type: " + ", ".join(f"{k} {v}" for k, v in result.by_type.most_common()))
    print("  by element: " + ", ".join(f"{k} {v}" for k, v in result.by_element.most_common()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--show", action="store_true", help="list the questions asked about")
    args = parser.parse_args()
    questions_file = args.data / "dev_questions.jsonl"
    if not questions_file.exists():
        print(f"PubMedQA data not found under {args.data}; nothing to measure")
        return 0
    rows = read_dev_questions(questions_file, None)
    everything = measure([r["question"] for r in rows])
    report("all dev questions", everything)
    for half in ("tuning", "test"):
        report(f"{half} half", measure([r["question"] for r in questions_of(rows, half)]))
    if args.show:
        for question, missing in everything.examples:
            print(f"  {', '.join(missing):<12} {question}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
