"""Sentence boundaries as character spans (pysbd, which knows biomedical abbreviations).

Spans index the text given, so ``text[start:end]`` is always a verbatim piece of it.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["sentence_spans"]

# pysbd ships no type information; importing it through importlib keeps mypy strict without a
# type-ignore that would turn stale once the project adds pysbd to its mypy overrides.
_pysbd: Any = importlib.import_module("pysbd")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` character offsets of the sentences of ``text``, in order.

    Each span includes the sentence's trailing white space; the spans tile ``text``.
    """
    segmenter = _pysbd.Segmenter(language="en", clean=False, char_span=True)
    return [(int(span.start), int(span.end)) for span in segmenter.segment(text)]
