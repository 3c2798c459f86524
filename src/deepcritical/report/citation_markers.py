"""Inline citation markers in model-written text: normalising them and keeping only ids of
the evidence the writer was shown.

Markers are ``[E3]`` or ``[E3, E7]`` (:data:`deepcritical.models.CITATION_MARKER`), placed
before a sentence's final punctuation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from deepcritical.models import (
    CITATION_MARKER,
    DOI_BODY,
    FOREIGN_MARKER_START,
    LOOSE_E_ID,
    MARKER_IDS,
    NCT_ID,
    PMCID,
    Evidence,
    Reference,
    clean_doi,
    marker_ids,
)
from deepcritical.text.sentences import sentence_tiles

__all__ = [
    "MarkerCleanup",
    "PaperIds",
    "add_marker",
    "normalise_markers",
    "references_for",
    "restrict_markers",
]

# "[e3]", "[E3; E7]", "[E 3,E7]", "[E3-E5]" (never parentheses: "(E2)" is estradiol)
_LOOSE_MARKER = re.compile(rf"\[\s*({LOOSE_E_ID}(?:\s*[,;]\s*(?:and\s+)?{LOOSE_E_ID})*)\s*\]")
# markers naming a paper by another identifier: [PMID: 1], [PMID 1, 2], [PMC1], [NCT01234567],
# [doi:10.1/x], [https://doi.org/10.1/x]
_FOREIGN_MARKER = re.compile(rf"\[\s*{FOREIGN_MARKER_START}[^\[\]]*\]", re.IGNORECASE)
_FOREIGN_TOKEN = re.compile(
    rf"(?P<pmc>{PMCID})|(?P<nct>{NCT_ID})|(?P<doi>{DOI_BODY})|(?P<num>\d+)",
    re.IGNORECASE,
)
_ADJACENT = re.compile(rf"\[({MARKER_IDS})\]\s*[,;]?\s*\[({MARKER_IDS})\]")
_LEADING_MARKERS = re.compile(rf"^((?:\s*\[{MARKER_IDS}\])+)\s*")
_UNRESOLVED = "E0"  # never a store id (stores count from E1): stands for a foreign id
_MAX_RANGE = 50


def _ids_in(group: str) -> list[str]:
    ids: list[str] = []
    for token in re.split(r"[,;]|\band\b", group):
        numbers = [int(n) for n in re.findall(r"\d+", token)]
        if len(numbers) == 2 and 0 <= numbers[1] - numbers[0] < _MAX_RANGE:
            ids.extend(f"E{n}" for n in range(numbers[0], numbers[1] + 1))
        elif len(numbers) == 2:
            ids.append(_UNRESOLVED)  # an absurd range is a typo, not a citation
        else:
            ids.extend(f"E{n}" for n in numbers)
    return ids


@dataclass(frozen=True)
class PaperIds:
    """Identifiers of the evidence a writer was shown: identifier -> evidence id.

    Keys: PMIDs (digits), PMCIDs (``PMC123``, upper case), NCT IDs (upper case), DOIs (lower
    case).
    """

    by_id: Mapping[str, str]

    @classmethod
    def of(cls, evidence: Sequence[Evidence]) -> PaperIds:
        """The identifiers of ``evidence`` (first item wins on a clash)."""
        found: dict[str, str] = {}
        for e in evidence:
            c = e.citation
            for value in (c.pmid, c.pmcid, c.nct_id):
                if value and value.strip():
                    found.setdefault(value.strip().upper(), e.id)
            if c.doi and c.doi.strip():
                found.setdefault(clean_doi(c.doi), e.id)
        return cls(found)

    def resolve(self, marker: str) -> list[str]:
        """Evidence ids cited by a foreign marker (``[PMID: 1, 2]``); ``E0`` for unknown ones."""
        out: list[str] = []
        for m in _FOREIGN_TOKEN.finditer(marker):
            doi = m.group("doi")
            key = clean_doi(doi) if doi else m.group(0).upper()
            out.append(self.by_id.get(key, _UNRESOLVED))
        return out or [_UNRESOLVED]


def _marker(ids: Iterable[str]) -> str:
    unique = list(dict.fromkeys(ids))
    return "[" + ", ".join(unique) + "]" if unique else ""


def normalise_markers(
    text: str, papers: PaperIds | None = None, unresolved: list[str] | None = None
) -> str:
    """``text`` with citation markers in canonical form ``[E3, E7]``.

    ``[e3]``, ``[E3; E7]``, ``[E 3]``, ranges ``[E3-E5]`` and adjacent ``[E3][E7]`` /
    ``[E3], [E7]`` become ``[E3]``/``[E3, E7]``. Markers naming papers by another identifier
    (``[PMID: 123]``, ``[PMC1]``, ``[NCT01234567]``, ``[doi:10.1/x]``) become the evidence ids
    ``papers`` maps them to, and ``[E0]`` (an id no store uses) when they map to nothing, so
    they are removed as unknown; the text of such markers is appended to ``unresolved``.
    Parenthesised ``(E2)`` is never touched (estradiol).
    """
    out = _LOOSE_MARKER.sub(lambda m: _marker(_ids_in(m.group(1))), text)
    resolver = papers if papers is not None else PaperIds({})

    def foreign(m: re.Match[str]) -> str:
        ids = resolver.resolve(m.group(0))
        if _UNRESOLVED in ids and unresolved is not None:
            unresolved.append(m.group(0).strip("[] "))
        return _marker(ids)

    out = _FOREIGN_MARKER.sub(foreign, out)
    while True:
        merged = _ADJACENT.sub(
            lambda m: _marker([*m.group(1).split(", "), *m.group(2).split(", ")]), out
        )
        if merged == out:
            return out
        out = merged


@dataclass
class MarkerCleanup:
    """What :func:`restrict_markers` removed: ids not allowed, and sentences dropped because
    every id they cited was not allowed."""

    removed_ids: list[str] = field(default_factory=list)
    dropped_sentences: list[str] = field(default_factory=list)


def _reattach_leading_markers(sentences: list[str]) -> list[str]:
    """Move markers that open a sentence ("... tau. [E3] Next") to the sentence before."""
    out: list[str] = []
    for sentence in sentences:
        m = _LEADING_MARKERS.match(sentence)
        if m and out:
            out[-1] = out[-1].rstrip() + " " + m.group(1).strip() + " "
            sentence = sentence[m.end() :]
        if sentence.strip():
            out.append(sentence)
    return out


def restrict_markers(
    text: str,
    allowed: Iterable[str],
    cleanup: MarkerCleanup | None = None,
    papers: PaperIds | None = None,
) -> str:
    """``text`` citing only ``allowed`` ids.

    Markers are first normalised; in each marker the ids not allowed are removed; a sentence
    whose markers all cite ids not allowed is dropped (it claims something only an unknown
    source would support). Sentences without markers are kept (citation validation judges
    them). ``cleanup`` (if given) collects what was removed; ``papers`` resolves markers that
    name a shown paper by PMID, PMCID, NCT ID or DOI (:func:`normalise_markers`); other such
    markers count as unknown ids. Paragraph breaks are kept.
    """
    allowed_ids = set(allowed)
    record = cleanup if cleanup is not None else MarkerCleanup()
    paragraphs: list[str] = []
    foreign: list[str] = []
    normalised = normalise_markers(text, papers, foreign)
    for label in foreign:
        if label not in record.removed_ids:
            record.removed_ids.append(label)
    for paragraph in normalised.split("\n"):
        if not CITATION_MARKER.search(paragraph):
            paragraphs.append(paragraph)
            continue
        kept: list[str] = []
        for sentence in _reattach_leading_markers(sentence_tiles(paragraph)):
            cited = marker_ids(sentence)
            good = [i for i in cited if i in allowed_ids]
            bad = [i for i in cited if i not in allowed_ids]
            for i in bad:
                if i != _UNRESOLVED and i not in record.removed_ids:
                    record.removed_ids.append(i)
            if cited and not good:
                record.dropped_sentences.append(sentence.strip())
                continue

            def keep_allowed(m: re.Match[str]) -> str:
                return _marker(i.strip() for i in m.group(1).split(",") if i.strip() in allowed_ids)

            fixed = CITATION_MARKER.sub(keep_allowed, sentence)
            fixed = re.sub(r"\s+([.,;:!?])", r"\1", fixed) if bad else fixed
            kept.append(fixed)
        paragraphs.append("".join(kept).strip())
    return "\n".join(paragraphs).strip()


def add_marker(sentence: str, evidence_id: str) -> str:
    """``sentence`` with ``[evidence_id]`` before its final punctuation (after it otherwise)."""
    text = sentence.rstrip()
    if text and text[-1] in ".!?":
        return f"{text[:-1]} [{evidence_id}]{text[-1]}"
    return f"{text} [{evidence_id}]"


def references_for(texts: Sequence[str], evidence: Sequence[Evidence]) -> list[Reference]:
    """References of the ids cited in ``texts`` that are in ``evidence``, in order of first
    citation, each with the evidence item's own citation."""
    by_id = {e.id: e for e in evidence}
    cited: dict[str, None] = {}
    for text in texts:
        for eid in marker_ids(text):
            if eid in by_id:
                cited.setdefault(eid, None)
    return [Reference(evidence_id=eid, citation=by_id[eid].citation) for eid in cited]
