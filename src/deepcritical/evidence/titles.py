"""Derived titles: what an untitled record is called wherever it is shown.

Some records have no title: every PubMedQA corpus record (its contexts carry labels such as
``OBJECTIVE`` and ``BACKGROUND`` but no title), some web pages, the odd Europe PMC or OpenAlex
record. Such a record is shown under a title derived from its text rather than under its
identifier (never "PubMed record 9444542"):

1. the first sentence of an objective section (a label with OBJECTIVE, AIM, PURPOSE or GOAL:
   ``OBJECTIVE``, ``AIMS``, ``BACKGROUND AND PURPOSE``...), an objective-like sentence of it
   ("To assess...", "We aimed...") first when it has one;
2. else the same from a background section (BACKGROUND, INTRODUCTION, CONTEXT, RATIONALE);
3. else the first sentence of the text (unlabelled text, a web page).

Sentences come from the project's one splitter (:mod:`deepcritical.text.sentences`, through
:func:`~deepcritical.evidence.keysentences.labelled_paragraphs`); a sentence is skipped when it
has fewer than three letters or is not
:func:`~deepcritical.evidence.keysentences.is_quotable` (it would read as a citation marker or
as instructions). The sentence is shortened to :data:`TITLE_MAX_CHARS` characters at a word
boundary, with ``"…"``.

The derived title is made in one place, :func:`with_derived_title`, which the run's
:class:`~deepcritical.evidence.store.EvidenceStore` applies to every item it stores, merges or
updates (so every display path reads the same one, following the stored content), and which
the local and web sources apply to the items they build (so they are titled outside a run
too). It is kept in ``Citation.derived_title``, apart from ``Citation.title``: a title is
display data, and identifiers, deduplication (the embedded text and the content hash read
``title``), design grading and grounding passages never see a derived one; citation validation
compares references with the store's citations, derived title included, as before.
``Citation.display_title()`` shows it marked as derived,
``"[derived title] To assess quality of storage of vaccines in the community"``
(:data:`~deepcritical.models.DERIVED_TITLE_MARK`).
"""

from __future__ import annotations

import re

from deepcritical.evidence.keysentences import (
    LabelledParagraph,
    is_objective_like,
    is_quotable,
    labelled_paragraphs,
)
from deepcritical.models import Evidence
from deepcritical.text.sentences import prose_spans

__all__ = ["TITLE_MAX_CHARS", "derive_title", "shorten_title", "with_derived_title"]

TITLE_MAX_CHARS = 120
"""Most characters of a derived title (the ``"…"`` included)."""

_OBJECTIVE_WORDS = ("OBJECT", "AIM", "PURPOSE", "GOAL")
_BACKGROUND_WORDS = ("BACKGROUND", "INTRODUCTION", "CONTEXT", "RATIONALE")
_WORD = re.compile(r"[A-Za-z]+")
_TRAILING = " \t,;:–—-(/"


def _tier(label: str | None) -> int:
    """0 for an objective section, 1 for a background section, 2 for anything else."""
    words = _WORD.findall(label.upper()) if label else []
    if any(w.startswith(_OBJECTIVE_WORDS) for w in words):
        return 0
    if any(w.startswith(_BACKGROUND_WORDS) for w in words):
        return 1
    return 2


def _usable(sentence: str) -> bool:
    return sum(c.isalpha() for c in sentence) >= 3 and is_quotable(sentence)


def _sentence_of(text: str, paragraph: LabelledParagraph, tier: int) -> str | None:
    sentences = [
        text[b:e]
        for b, e in prose_spans(text, paragraph.start, paragraph.end)
        if _usable(text[b:e])
    ]
    if not sentences:
        return None
    if tier < 2:
        return next((s for s in sentences if is_objective_like(s)), sentences[0])
    return sentences[0]


def shorten_title(sentence: str, max_chars: int = TITLE_MAX_CHARS) -> str:
    """``sentence`` as a title: whitespace collapsed, a final full stop dropped, and when longer
    than ``max_chars`` cut at the last word boundary that leaves room for ``"…"``."""
    text = " ".join(sentence.split())
    if len(text) <= max_chars:
        return text[:-1] if text.endswith(".") and not text.endswith("..") else text
    cut = text[: max_chars - 1]
    if text[max_chars - 1] != " " and " " in cut:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(_TRAILING + ".") + "…"


def derive_title(text: str, max_chars: int = TITLE_MAX_CHARS) -> str:
    """The title derived from ``text`` (an abstract, a page's text); ``""`` when it has no
    usable sentence. See the module docstring for the choice of sentence."""
    paragraphs = labelled_paragraphs(text)
    for paragraph in sorted(paragraphs, key=lambda p: _tier(p.label)):  # stable: reading order
        tier = _tier(paragraph.label)
        sentence = _sentence_of(text, paragraph, tier)
        if sentence is not None:
            return shorten_title(sentence, max_chars)
    return ""


def with_derived_title(evidence: Evidence) -> Evidence:
    """``evidence`` with ``citation.derived_title`` following its text: derived from
    ``content`` when the citation has no title, ``""`` when it has one.

    The item is changed in place (its ``citation`` replaced by an updated copy, never mutated,
    as citations may be shared) and returned; nothing else about it changes.
    """
    citation = evidence.citation
    derived = "" if citation.title.strip() else derive_title(evidence.content)
    if derived != citation.derived_title:
        evidence.citation = citation.model_copy(update={"derived_title": derived})
    return evidence
