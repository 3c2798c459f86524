"""Where the benchmarks find the PubMedQA data (never copied into the repository).

``../shared/data/pubmedqa`` beside the checkout holds ``corpus.jsonl`` (the 1,000 abstracts)
and ``dev_questions.jsonl`` (the 500 dev questions with their gold PMIDs).
"""

from __future__ import annotations

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
