"""Key terms of a research question, without a model.

A small RAKE-like extractor: the question is cut into candidate phrases at stop words
(:mod:`deepcritical.text.stopwords`), generic research words and punctuation; phrases keep
biomedical multiword terms together ("type 2 diabetes", "Alzheimer's disease"), acronyms and
gene/drug-like tokens ("SGLT2", "IL-6", "COVID-19") stay as they are written. Used by the
extractive planner, query generator and judge.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

from deepcritical.text.stopwords import STOPWORDS

__all__ = [
    "GENERIC_WORDS",
    "content_stems",
    "extract_key_terms",
    "key_term_query",
    "matched_terms",
    "required_term_count",
    "slugify",
    "stems",
]

_GENERIC_TEXT = """
    effect effects affect affects affected role roles impact impacts use used uses using
    repurpose repurposed repurposing association associations associated associate relation
    relationship relationships related evidence study studies research question questions
    influence influences benefit benefits beneficial help helps helpful improve improves
    improved improving increase increases increased decrease decreases decreased reduce reduces
    reduced reduction risk risks safe safety effective effectiveness efficacy efficacious
    useful possible potential potentially current currently new novel role whether really
    good bad better worse best worst cause causes caused lead leads linked link links
    compared comparison outcome outcomes result results work works make makes made really
    patient patients people person persons individual individuals subject subjects human
    humans there way ways factor factors value values predict predicts predictor role
    treat treated treating treatment treatments therapy therapies management managing manage
    know known knows need needs needed get gets clinical clinically
"""
GENERIC_WORDS = frozenset(_GENERIC_TEXT.split())
"""Words too general to be key terms on their own (they still join queries via the question)."""

_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’\-/+.]*[A-Za-z0-9+]|[A-Za-z0-9]")
_SPLIT = re.compile(r"[,;:!?()\[\]{}\"“”]|\.(?=\s|$)|\s-\s|\s–\s")
_MAX_PHRASE_WORDS = 4


def _is_acronym(token: str) -> bool:
    """``SGLT2``, ``IL-6``, ``COVID-19``, ``mTOR``, ``BRCA1``: upper case or letters+digits."""
    letters = [c for c in token if c.isalpha()]
    if not letters:
        return False
    upper = sum(c.isupper() for c in letters)
    has_digit = any(c.isdigit() for c in token)
    return (upper >= 2 and upper >= len(letters) - 1) or (has_digit and len(letters) >= 2)


def _is_break(token: str) -> bool:
    low = token.lower().strip("'’")
    if _is_acronym(token):
        return False
    return low in STOPWORDS or low in GENERIC_WORDS


def _phrases(text: str) -> list[list[str]]:
    phrases: list[list[str]] = []
    for chunk in _SPLIT.split(text):
        current: list[str] = []
        for token in _TOKEN.findall(chunk):
            if _is_break(token):
                if current:
                    phrases.append(current)
                current = []
                continue
            current.append(token)
        if current:
            phrases.append(current)
    return phrases


def _keep(phrase: list[str]) -> bool:
    """A phrase is a term unless it is only digits or one short ordinary word."""
    if all(t.replace(".", "").isdigit() for t in phrase):
        return False
    if len(phrase) == 1:
        token = phrase[0]
        return _is_acronym(token) or len(token) >= 4
    return True


def _normalise_case(token: str, first: bool) -> str:
    """Lower-case a sentence-initial capital of an ordinary word ("Metformin" -> "metformin")."""
    if first and token[:1].isupper() and token[1:].islower() and "'" not in token:
        return token.lower()
    return token


def extract_key_terms(text: str, max_terms: int = 6) -> list[str]:
    """Up to ``max_terms`` key terms of ``text``, in order of appearance, distinct.

    Phrases longer than four words are cut into runs of at most four. Case is kept except for
    a capitalised first word of the text ("Does Metformin..." -> "metformin").

    >>> extract_key_terms("Can metformin be repurposed for Alzheimer's disease?")
    ['metformin', "Alzheimer's disease"]
    """
    terms: list[str] = []
    seen: set[str] = set()
    first_token = True
    for phrase in _phrases(text.strip()):
        words = [_normalise_case(t, first_token and i == 0) for i, t in enumerate(phrase)]
        first_token = False
        for start in range(0, len(words), _MAX_PHRASE_WORDS):
            chunk = words[start : start + _MAX_PHRASE_WORDS]
            if not _keep(chunk):
                continue
            term = " ".join(chunk)
            key = term.lower()
            if key not in seen:
                seen.add(key)
                terms.append(term)
    return terms[:max_terms]


def key_term_query(terms: list[str], max_terms: int = 4) -> str:
    """A plain keyword query from the first ``max_terms`` terms (sources AND the words)."""
    return " ".join(terms[:max_terms])


def slugify(text: str, max_chars: int = 40) -> str:
    """Short snake_case key: lower case, runs of other characters become ``_``.

    Returns ``"item"`` for text with no letters or digits.
    """
    slug = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:max_chars].rstrip("_")
    return slug or "item"


_WORD = re.compile(r"[a-z0-9]+")


@functools.lru_cache(maxsize=1)
def _stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer("english")


def stems(text: str) -> set[str]:
    """Snowball (English) stems of the words of ``text`` longer than one character."""
    words = [w for w in _WORD.findall(text.lower()) if len(w) > 1]
    return set(_stemmer().stemWords(words))


def content_stems(text: str) -> set[str]:
    """:func:`stems` of the words of ``text`` that are neither stop words
    (:data:`~deepcritical.text.stopwords.STOPWORDS`) nor :data:`GENERIC_WORDS`: what a
    sentence must share with a question to be about it.

    >>> sorted(content_stems("Does metformin reduce the risk of cancer?"))
    ['cancer', 'metformin']
    """
    words = [
        w
        for w in _WORD.findall(text.lower())
        if len(w) > 1 and w not in STOPWORDS and w not in GENERIC_WORDS
    ]
    return set(_stemmer().stemWords(words))


def matched_terms(text: str, terms: Sequence[str]) -> list[str]:
    """The ``terms`` that ``text`` mentions: every word of the term occurs (stemmed) in it.

    >>> matched_terms("Decline in cognitive function on MRI", ["cognitive decline", "MRI", "PET"])
    ['cognitive decline', 'MRI']
    """
    present = stems(text)
    out = []
    for term in terms:
        needed = stems(term)
        if needed and needed <= present:
            out.append(term)
    return out


def required_term_count(n_terms: int) -> int:
    """How many of ``n_terms`` key terms an item must mention to bear on the whole question:
    all of them up to three, all but one beyond."""
    return n_terms if n_terms <= 3 else n_terms - 1
