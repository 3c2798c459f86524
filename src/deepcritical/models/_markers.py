"""Inline citation markers: ``[E3]`` or ``[E3, E7]`` in report text."""

from __future__ import annotations

import re

__all__ = ["CITATION_MARKER", "marker_ids", "numbered"]

CITATION_MARKER = re.compile(r"\[(E\d+(?:\s*,\s*E\d+)*)\]")
"""Inline citation marker: ``[E3]`` or ``[E3, E7]``; group 1 holds the comma-separated ids."""


def marker_ids(text: str) -> list[str]:
    """Evidence ids cited in ``text``, in order of appearance, with repeats."""
    return [i.strip() for m in CITATION_MARKER.finditer(text) for i in m.group(1).split(",")]


def numbered(text: str, numbers: dict[str, int]) -> str:
    """``text`` with ``[E3, E7]`` markers replaced by display numbers (``[1, 2]``); ids
    without a number are dropped (an emptied marker disappears)."""

    def repl(m: re.Match[str]) -> str:
        ids = [i.strip() for i in m.group(1).split(",")]
        nums = sorted({numbers[i] for i in ids if i in numbers})
        return "[" + ", ".join(str(n) for n in nums) + "]" if nums else ""

    return CITATION_MARKER.sub(repl, text)
