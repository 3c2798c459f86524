"""The texts the rules read for a study record, and the values they make, each with its
verbatim proof.

A :class:`StudyText` is an item's abstract or one passage of its full text; a value read from
it is an :class:`~deepcritical.models.ExtractedValue` whose proof is a span of that text
(:func:`~deepcritical.evidence.proofs.text_span`), which
:func:`~deepcritical.evidence.proofs.checked_record` then verifies.
"""

from __future__ import annotations

from dataclasses import dataclass

from deepcritical.evidence.proofs import text_span
from deepcritical.evidence.sample_size import CountSpan
from deepcritical.models import ExtractedValue
from deepcritical.text.abstract_sections import sentence_around

__all__ = ["MAX_VALUE_CHARS", "StudyText"]

MAX_VALUE_CHARS = 240
"""Longest quote kept for a text value (population, setting, outcomes): a longer sentence is
cut to its first 240 characters (still a verbatim span)."""


@dataclass(frozen=True)
class StudyText:
    """One text the rules read: the abstract (``passage`` None) or one passage (``table``:
    a table's caption and rows); ``where`` says where it is for a reader. It makes the values
    read from it, each with its proof."""

    text: str
    passage: int | None
    where: str
    table: bool = False

    def value(self, start: int, end: int, value: str | None = None) -> ExtractedValue:
        """``value`` (default: the quote itself) proven by ``text[start:end]``, cut to its first
        :data:`MAX_VALUE_CHARS` characters."""
        quote_end = min(end, start + MAX_VALUE_CHARS)
        proof = text_span(self.text, start, quote_end, self.passage, self.where)
        return ExtractedValue(value=value if value is not None else proof.quote, proof=proof)

    def count(self, count: CountSpan) -> ExtractedValue:
        """A count as written, proven by its sentence (at most :data:`MAX_VALUE_CHARS`
        characters of it around the count), so a reader sees what it counts."""
        start, end = sentence_around(self.text, count.start)
        start = max(start, min(count.start, end - MAX_VALUE_CHARS))
        end = max(min(end, start + MAX_VALUE_CHARS), count.clause_end, count.end)
        proof = text_span(self.text, start, end, self.passage, self.where)
        return ExtractedValue(value=self.text[count.start : count.end], proof=proof)
