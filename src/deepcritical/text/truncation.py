"""Cutting a long text to a size limit where a reader would: after a sentence, else between
words, never inside a word when that can be helped."""

from __future__ import annotations

import re

__all__ = ["cut_at_boundary"]

# The end of a sentence: terminal punctuation, optionally a closing quote or bracket, then
# white space. The text up to and including the punctuation is kept.
_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]?(?=\s)")
_SPACES = (" ", "\n", "\t")


def cut_at_boundary(text: str, max_chars: int) -> str:
    """``text`` when it has at most ``max_chars`` characters, else its longest prefix of at
    most ``max_chars`` characters that ends at a boundary, in this order of preference:

    1. the end of a sentence (``.``, ``!`` or ``?``, with a closing quote or bracket, before
       white space), when that keeps at least half of ``max_chars``;
    2. the end of a word (before a space, tab or line break), when that keeps at least half
       of ``max_chars``;
    3. exactly ``max_chars`` characters (one unbroken run of characters).

    Trailing white space of the prefix is removed. Nothing is added (no ellipsis): the result
    is a verbatim prefix of ``text``, so quotes taken from it are quotes of the original.
    ``max_chars <= 0`` gives ``""``. Never raises.

    >>> cut_at_boundary("One sentence. Another one here.", 20)
    'One sentence.'
    """
    if len(text) <= max_chars:
        return text
    if max_chars <= 0:
        return ""
    window = text[: max_chars + 1]  # one more: a boundary right at the limit counts
    floor = max_chars // 2
    sentence_end = -1
    for match in _SENTENCE_END.finditer(window):
        if match.end() <= max_chars:
            sentence_end = match.end()
    if sentence_end >= floor:
        return window[:sentence_end]
    word_end = max(window.rfind(space) for space in _SPACES)
    if word_end >= floor:
        return window[:word_end].rstrip()
    return text[:max_chars]
