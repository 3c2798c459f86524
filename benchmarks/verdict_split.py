"""The tuning and test halves of the PubMedQA dev questions (``verdict_split.json``).

The split was made once, at random (the file says how). Rules that read conclusions (stance
cues, the verdict's confidence) are fitted on the tuning half only; the test half is measured,
never tuned on.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

__all__ = ["HALVES", "SPLIT", "Half", "half_of", "questions_of"]

SPLIT = Path(__file__).with_name("verdict_split.json")
Half = Literal["tuning", "test"]
HALVES: tuple[Half, ...] = ("tuning", "test")


def half_of(half: Half) -> list[str]:
    """The gold PMIDs of the questions of ``half``, in the dev file's order."""
    data = json.loads(SPLIT.read_text(encoding="utf-8"))
    pmids: list[str] = data[half]
    return pmids


def questions_of(
    questions: Sequence[dict[str, str]], half: Half, limit: int | None = None
) -> list[dict[str, str]]:
    """The dev questions of ``half`` (the first ``limit`` of them, in file order)."""
    wanted = set(half_of(half))
    rows = [q for q in questions if str(q["pmid"]) in wanted]
    return rows[:limit] if limit else rows
