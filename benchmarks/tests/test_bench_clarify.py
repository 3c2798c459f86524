"""The clarify rules on the PubMedQA dev questions: they rarely ask about well-formed
questions (the rate is printed; run pytest with ``-s`` to see it)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.bench_clarify import measure
from benchmarks.pubmedqa_data import read_dev_questions


def test_clarify_rarely_asks_about_pubmedqa_questions(pubmedqa_dir: Path) -> None:
    rows = read_dev_questions(pubmedqa_dir / "dev_questions.jsonl", None)
    result = measure([r["question"] for r in rows])
    print(f"clarify rate on {result.questions} PubMedQA dev questions: {result.rate:.1%}")
    assert result.questions == 500
    assert result.asked > 0
    assert result.rate < 0.12
    assert all(1 <= len(missing) <= 3 for _, missing in result.examples)
