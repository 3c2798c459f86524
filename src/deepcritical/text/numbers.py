"""Regular-expression pieces for numbers as papers write them: digits with thousands
separators ("1,024", "12 537") and English number words ("Sixty-seven", "One hundred and
twenty-two"). :func:`deepcritical.models.parse_number` reads what they match."""

from __future__ import annotations

from deepcritical.models._appraisal import NUMBER_WORDS

__all__ = ["DIGIT_NUMBER", "NUMBER", "WORD_NUMBER"]

_WORD = "|".join(sorted(NUMBER_WORDS, key=len, reverse=True))

WORD_NUMBER = rf"(?:{_WORD})(?:(?:[\s-]+|\s+and\s+)(?:{_WORD}))*"
"""A cardinal written in words ("Sixty-seven", "one hundred and twenty-two"); compile with
``re.IGNORECASE``."""

DIGIT_NUMBER = r"\d{1,3}(?:[,\u2009\u202f\u00a0 ]\d{3})+(?![\d.])|\d+(?![\d.,]\d)"
"""A whole number in digits, thousands separated by a comma or a (thin, narrow or
non-breaking) space ("1,024", "12 537"); not the integer part of a decimal."""

NUMBER = rf"(?:{DIGIT_NUMBER}|\b{WORD_NUMBER}\b)"
"""A whole number in digits or in words."""
