"""The text of an exported reference value: one line of data (:func:`clean_text`).

Every value the reference-manager export writes (titles, names, journals, identifiers, notes)
passes through :func:`clean_text` first, so no value can start a new RIS line, hide text
behind a bidi override or carry a character a reference manager chokes on.
"""

from __future__ import annotations

import unicodedata

__all__ = ["clean_text"]

_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def clean_text(text: str | None) -> str:
    """``text`` as one line of data: control characters (C0, C1), lone surrogates and bidi
    embedding/override/isolate characters removed, every run of white space (tabs, line
    feeds, ``U+2028``... included) one space, stripped; ``""`` for ``None``."""
    if not text:
        return ""
    kept = "".join(
        ch
        for ch in text
        if ch.isspace()
        or (unicodedata.category(ch) not in {"Cc", "Cs"} and ch not in _BIDI_CONTROLS)
    )
    return " ".join(kept.split())
