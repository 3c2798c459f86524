"""Where the benchmarks find the PubMedQA data (never copied into the repository), and how
they read its lines.

``../shared/data/pubmedqa`` beside the checkout holds ``corpus.jsonl`` (the 1,000 abstracts)
and ``dev_questions.jsonl`` (the 500 dev questions with their gold PMIDs). Its JSON lines are
split on "\n" only: ``str.splitlines()`` also splits at U+2028 inside JSON strings.
"""

from __future__ import annotations

import json
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "pubmedqa"
"""The shared PubMedQA directory next to the checkout."""


def pubmedqa_files(directory: Path) -> tuple[Path, Path] | None:
    """``(corpus.jsonl, dev_questions.jsonl)`` in ``directory``; ``None`` (and a "skipped"
    line on standard output) when either is missing, so a benchmark exits cleanly."""
    corpus_file = directory / "corpus.jsonl"
    questions_file = directory / "dev_questions.jsonl"
    if not corpus_file.is_file() or not questions_file.is_file():
        print(f"skipped: PubMedQA data not found in {directory}")
        return None
    return corpus_file, questions_file


def read_dev_questions(path: Path, limit: int | None) -> list[dict[str, str]]:
    """The rows of ``dev_questions.jsonl`` at ``path`` (``question``, ``pmid``, ``answer``,
    ...), the first ``limit`` when given."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]
    return rows[:limit] if limit else rows


def corpus_lines_without(text: str, pmids: set[str]) -> list[str]:
    """The non-empty lines of a PubMedQA ``corpus.jsonl`` text whose record's PMID is not in
    ``pmids``, unchanged (split on "\\n" only, as :func:`read_dev_questions` does)."""
    return [
        line
        for line in text.split("\n")
        if line.strip() and str(json.loads(line)["pmid"]) not in pmids
    ]
