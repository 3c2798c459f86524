"""Citation keys of exported records: ``<first author><year><first title word>``.

A key (BibTeX key, CSL ``id``, RIS ``ID``) is written in lower-case ASCII letters and digits
(``muller2020effect``: the first author's family name, or the first word of a literal name;
the year; the first word of the title that is not a stop word of
:mod:`deepcritical.text.stopwords`), each part at most 24
characters, ``anon`` and ``nd`` standing in for a missing author or year
(:func:`base_key`). Keys shared by several records of one list get ``a``, ``b``... suffixes in
order (:func:`unique_keys`), so the keys of a list are unique and the same for the same list.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence

from deepcritical.formats.author_names import Name
from deepcritical.text.stopwords import STOPWORDS

__all__ = ["base_key", "unique_keys"]


def _ascii_word(text: str) -> str:
    """``text`` folded to lower-case ASCII letters and digits (``Müller`` -> ``muller``)."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]", "", folded.lower())


def base_key(record_names: Sequence[Name], year: int | None, title: str) -> str:
    """The key of a record with these authors, year and (clean) title before it is made
    unique: ``[a-z0-9]`` only (see the module docstring)."""
    first = record_names[0] if record_names else Name()
    author = _ascii_word(first.family) or _ascii_word((first.literal.split() or [""])[0])
    words = [_ascii_word(w) for w in title.split()]
    word = next((w for w in words if w and w not in STOPWORDS), "")
    return f"{(author or 'anon')[:24]}{year or 'nd'}{word[:24]}"


def _letters(n: int) -> str:
    """1 -> ``a``, 26 -> ``z``, 27 -> ``aa``..."""
    out = ""
    while n > 0:
        n, rest = divmod(n - 1, 26)
        out = chr(ord("a") + rest) + out
    return out


def unique_keys(bases: Sequence[str]) -> list[str]:
    """``bases`` (from :func:`base_key`), in order, made unique: a base shared by several
    records gets ``a``, ``b``... in order, skipping a suffixed key that is another base."""
    counts = Counter(bases)
    used = {b for b in bases if counts[b] == 1}
    suffix: Counter[str] = Counter()
    keys: list[str] = []
    for base in bases:
        if counts[base] == 1:
            keys.append(base)
            continue
        while True:
            suffix[base] += 1
            key = base + _letters(suffix[base])
            if key not in used:
                break
        used.add(key)
        keys.append(key)
    return keys
