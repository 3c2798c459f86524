"""Inline citation markers and the identifiers a citation may name: the one home of their
grammar.

- :data:`CITATION_MARKER`: the canonical marker, ``[E3]`` or ``[E3, E7]``, in report text;
  :func:`marker_ids` and :func:`numbered` read and renumber it.
- The pieces of every other citation grammar (the writer's variants parsed by
  :mod:`deepcritical.text.sentences`, validated by :mod:`deepcritical.report.validation`,
  rewritten by :mod:`deepcritical.report.citation_markers`): :data:`E_ID`, :data:`PMID_TOKEN`,
  :data:`PMCID_TOKEN`, :data:`NCT_ID`, :data:`DOI_PREFIX`, :data:`DOI_BODY` and
  :data:`DOI_TOKEN` (and :data:`DOI_WHOLE` for identifier fields), as regular-expression
  source strings.
- :func:`clean_doi`: a DOI as it is compared everywhere (prefix and trailing punctuation
  dropped, lower case).

Where a DOI ends in text (:data:`DOI_BODY`): at white space, ``[``, ``]``, ``,`` or ``;``
(the separators of a citation marker), and then before trailing sentence punctuation and an
unbalanced closing bracket (:func:`clean_doi`). Parentheses inside a DOI are kept
(``10.1016/S0140-6736(20)30183-5``), a closing one that ends a parenthesis of the prose is
not (``(doi:10.1/x)``). An identifier field holds one whole DOI (:data:`DOI_WHOLE`): an old
SICI DOI with a ``;`` (``...3.0.CO;2-A``) is read whole there, and cut at its ``;`` in text.
"""

from __future__ import annotations

import re

__all__ = [
    "CITATION_MARKER",
    "DOI_BODY",
    "DOI_PREFIX",
    "DOI_TOKEN",
    "DOI_WHOLE",
    "EVIDENCE_ID",
    "E_ID",
    "FOREIGN_MARKER_START",
    "LOOSE_E_ID",
    "MARKER_IDS",
    "MARKER_START",
    "NCT_ID",
    "NUMBERED_MARKER_IDS",
    "PMCID",
    "PMCID_LABEL",
    "PMCID_TOKEN",
    "PMID_LABEL",
    "PMID_TOKEN",
    "clean_doi",
    "marker_ids",
    "numbered",
]

EVIDENCE_ID = r"E\d+"
"""An evidence store id: ``E3`` (stores count from ``E1``)."""
MARKER_IDS = rf"{EVIDENCE_ID}(?:\s*,\s*{EVIDENCE_ID})*"
"""The ids inside a canonical marker: ``E3`` or ``E3, E7``."""
CITATION_MARKER = re.compile(rf"\[({MARKER_IDS})\]")
"""Inline citation marker: ``[E3]`` or ``[E3, E7]``; group 1 holds the comma-separated ids."""
NUMBERED_MARKER_IDS = r"\d+(?:\s*,\s*\d+)*"
"""The numbers inside a rendered marker (:func:`numbered`): ``1`` or ``1, 4``."""

E_ID = rf"{EVIDENCE_ID}(?:\s*[-–]\s*{EVIDENCE_ID})?"
"""An evidence id, or a range of them: ``E3``, ``E3-E5``."""
LOOSE_E_ID = r"[Ee]\s?\d+(?:\s*[-–]\s*[Ee]?\s?\d+)?"
"""An evidence id or range as a writer may mistype it: ``e3``, ``E 3``, ``E3-5``."""
PMID_LABEL = r"PMID\s*:?\s*"
"""The label before a cited PMID's digits: ``PMID:``, ``PMID ``."""
PMID_TOKEN = rf"{PMID_LABEL}\d+"
"""A PMID as cited: ``PMID: 123``, ``PMID 123`` (match case-insensitively)."""
PMCID_LABEL = r"(?:PMCID\s*:?\s*)?PMC"
"""What stands before a cited PMCID's digits: ``PMC``, ``PMCID: PMC``."""
PMCID_TOKEN = rf"{PMCID_LABEL}\d+"
"""A PMCID as cited: ``PMC123``, ``PMCID: PMC123`` (match case-insensitively)."""
PMCID = r"PMC\d+"
"""A PMCID itself: ``PMC`` and its digits."""
NCT_ID = r"NCT\d{8}"
"""A ClinicalTrials.gov NCT ID: ``NCT`` and eight digits."""
DOI_PREFIX = r"(?:doi\s*:?\s*|(?:https?://)?(?:www\.|dx\.)?doi\.org/)"
"""What may stand before a DOI: ``doi:``, ``doi ``, ``https://doi.org/``, ``dx.doi.org/``."""
DOI_BODY = r"10\.\d+(?:\.\d+)*/[^\s\[\],;]+"
"""A DOI itself, up to white space, a square bracket, a comma or a semicolon; its trailing
punctuation is dropped by :func:`clean_doi`."""
DOI_WHOLE = r"10\.\d+(?:\.\d+)*/\S+"
"""A whole DOI, as an identifier field holds it (any non-space after the ``/``)."""
DOI_TOKEN = rf"{DOI_PREFIX}{DOI_BODY}"
"""A DOI as cited in a marker: with its prefix (``[doi:10.1/x]``)."""
FOREIGN_MARKER_START = r"(?:PMID|PMCID|PMC\d|NCT\d|doi\b|https?://(?:dx\.)?doi\.org/)"
"""What opens a marker that names a paper by another identifier than its evidence id:
``[PMID: 1]``, ``[PMC1]``, ``[NCT01234567]``, ``[doi:10.1/x]``, ``[https://doi.org/10.1/x]``
(match case-insensitively)."""
MARKER_START = rf"(?:{EVIDENCE_ID}|PMID|PMC|NCT|doi)"
"""What opens any bracket citation validation reads as a marker (match case-insensitively)."""

_DOI_PREFIX = re.compile(rf"^{DOI_PREFIX}", re.IGNORECASE)
_CLOSERS = {")": "(", "]": "[", "}": "{", ">": "<"}


def clean_doi(doi: str) -> str:
    """``doi`` as DOIs are compared: without its prefix (``doi:``, ``https://doi.org/``...),
    without trailing sentence punctuation (``.``, ``,``, ``;``, ``:``, quotes) or an
    unbalanced closing bracket, lower case (DOIs are case-insensitive). ``""`` stays ``""``."""
    value = _DOI_PREFIX.sub("", doi.strip())
    while value:
        last = value[-1]
        unbalanced = last in _CLOSERS and value.count(last) > value.count(_CLOSERS[last])
        if last in ".,;:'\"" or unbalanced:
            value = value[:-1]
        else:
            break
    return value.lower()


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
