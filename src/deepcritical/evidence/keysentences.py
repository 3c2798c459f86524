"""Extractive helpers: verbatim sentences of abstracts and full texts, their section labels,
cue words, and ranking by similarity to a question.

Every :class:`KeySentence` text is an exact substring of its evidence item's ``content``, or of
one passage of its full text (it is cut out by character offsets, never re-assembled), so a
quote built from it is verbatim. A full text's passages are too many to read whole: ranking
reads the sentences of the few passages that best answer the query
(:func:`deepcritical.evidence.passages.rank_passages`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

import numpy as np
from numpy.typing import NDArray

from deepcritical.evidence.embeddings import Embedder
from deepcritical.evidence.mmr import unit_rows
from deepcritical.evidence.passages import PASSAGES_PER_QUERY, rank_passages
from deepcritical.models import MARKER_START, Evidence
from deepcritical.text.sentences import prose_spans
from deepcritical.text.terms import matched_terms

__all__ = [
    "KeySentence",
    "LabelledParagraph",
    "SectionKind",
    "candidate_sentences",
    "has_conclusion_cue",
    "is_objective_like",
    "labelled_paragraphs",
    "mentioning_terms",
    "passage_sentences",
    "rank_sentences",
    "relevant_items",
    "section_kind",
    "sentences_of",
    "top_per_item",
]

MIN_SENTENCE_CHARS = 30
MAX_SENTENCE_CHARS = 600


class SectionKind(StrEnum):
    """What a structured-abstract section holds."""

    CONCLUSION = "conclusion"
    RESULTS = "results"
    SETUP = "setup"  # background, objective, methods, design, setting, participants
    OTHER = "other"


_CONCLUSION_LABELS = ("CONCLUSION", "INTERPRETATION", "IMPLICATION", "SIGNIFICANCE", "DISCUSSION")
_RESULTS_LABELS = ("RESULT", "FINDING")
_SETUP_LABELS = (
    "BACKGROUND",
    "INTRODUCTION",
    "CONTEXT",
    "OBJECTIVE",
    "AIM",
    "PURPOSE",
    "GOAL",
    "IMPORTANCE",
    "RATIONALE",
    "HYPOTHES",
    "METHOD",
    "DESIGN",
    "SETTING",
    "PARTICIPANT",
    "PATIENT",
    "SUBJECT",
    "POPULATION",
    "INTERVENTION",
    "MEASURE",
    "END POINT",
    "ENDPOINT",
    "MATERIAL",
    "STUDY SELECTION",
    "DATA SOURCE",
    "DATA EXTRACTION",
    "SEARCH",
    "ELIGIBILITY",
    "TRIAL REGISTRATION",
    "REGISTRATION",
    "FUNDING",
)
_KNOWN_LABEL_WORDS = tuple(
    w.lower() for w in (*_CONCLUSION_LABELS, *_RESULTS_LABELS, *_SETUP_LABELS, "OUTCOME")
)

# "CONCLUSIONS: ..." or "Conclusions: ..." at the start of a paragraph.
_LABEL_RE = re.compile(r"^[ \t]*([A-Za-z][A-Za-z /&,()-]{1,60}?)[ \t]*:[ \t]+")
_PARAGRAPH_RE = re.compile(r"[^\n]+")

CONCLUSION_CUES = re.compile(
    r"\b(?:in\s+conclusion|we\s+conclude|conclude[sd]?\s+that|in\s+summary|taken\s+together"
    r"|(?:these|our|the)\s+(?:results|findings|data|observations)\s+"
    r"(?:suggest|indicate|show|demonstrate|support|confirm|provide)"
    r"|(?:suggest|indicate|demonstrate|show|reveal|confirm)(?:s|ed)?\s+that"
    r"|(?:is|are|was|were)\s+(?:significantly\s+)?associated\s+with)\b",
    re.IGNORECASE,
)
"""Cues of a conclusion-type sentence in an unlabelled abstract."""

_OBJECTIVE_CUES = re.compile(
    r"^(?:to\s+(?:assess|determine|evaluate|investigate|examine|compare|describe|explore|test)"
    r"|we\s+(?:aimed|sought|investigated|examined|evaluated|assessed|hypothesi[sz]ed)"
    r"|the\s+(?:aim|purpose|objective|goal)\s+of|this\s+study\s+(?:aimed|aims|was\s+designed))",
    re.IGNORECASE,
)


def section_kind(label: str | None) -> SectionKind:
    """The kind of a structured-abstract label (``None``: unlabelled text)."""
    if not label:
        return SectionKind.OTHER
    upper = label.upper()
    if any(word in upper for word in _CONCLUSION_LABELS):
        return SectionKind.CONCLUSION
    if any(word in upper for word in _RESULTS_LABELS):
        return SectionKind.RESULTS
    if any(word in upper for word in _SETUP_LABELS):
        return SectionKind.SETUP
    if "OUTCOME" in upper:  # "OUTCOMES" (results); "MAIN OUTCOME MEASURES" is setup, above
        return SectionKind.RESULTS
    return SectionKind.OTHER


def has_conclusion_cue(text: str) -> bool:
    """True when ``text`` reads like a conclusion (see :data:`CONCLUSION_CUES`)."""
    return CONCLUSION_CUES.search(text) is not None


def is_objective_like(text: str) -> bool:
    """True when ``text`` opens like a study's objective ("To assess...", "We aimed...",
    "The aim of this study...")."""
    return _OBJECTIVE_CUES.match(text) is not None


@dataclass(frozen=True)
class KeySentence:
    """One sentence of an evidence item.

    Attributes:
        evidence_id: the item's store id (``E3``).
        text: the sentence, an exact substring of the item's content, or of its passage's
            text when ``passage`` is set (stripped).
        start: character offset of ``text`` in the content (in the passage's text).
        label: the structured-abstract label of its paragraph (``"CONCLUSIONS"``) or
            ``None`` (always for a passage's sentences: a body section is not an abstract's).
        position: 0-based index of the sentence within the item (a full text's passage
            sentences come after the abstract's, in passage order).
        similarity: cosine similarity to the ranking query (set by :func:`rank_sentences`).
        score: ranking score = similarity + section bonus (set by :func:`rank_sentences`).
        passage: index of its passage in ``Evidence.passages``; ``None`` in the abstract.
        locator: where its passage is (``"Results, paragraph 4"``); ``""`` in the abstract.
    """

    evidence_id: str
    text: str
    start: int
    label: str | None
    position: int
    similarity: float = 0.0
    score: float = 0.0
    passage: int | None = None
    locator: str = ""

    @property
    def kind(self) -> SectionKind:
        """Section kind of the label (:class:`SectionKind`)."""
        return section_kind(self.label)

    @property
    def is_conclusion(self) -> bool:
        """In a CONCLUSIONS-type section, or unlabelled with a conclusion cue."""
        return self.kind == SectionKind.CONCLUSION or (
            self.label is None and has_conclusion_cue(self.text)
        )

    @property
    def is_finding(self) -> bool:
        """In a results or conclusions section, or an unlabelled conclusion-like sentence."""
        return self.kind in {SectionKind.CONCLUSION, SectionKind.RESULTS} or self.is_conclusion


def _label_of(paragraph: str) -> tuple[str | None, int]:
    """(label, length of the ``LABEL: `` prefix) of a paragraph; ``(None, 0)`` if none."""
    m = _LABEL_RE.match(paragraph)
    if not m:
        return None, 0
    label = m.group(1).strip()
    letters = [c for c in label if c.isalpha()]
    all_caps = bool(letters) and all(c.isupper() for c in letters)
    known = any(label.lower().startswith(w) for w in _KNOWN_LABEL_WORDS)
    if not (all_caps or known) or len(label.split()) > 6:
        return None, 0
    return label, m.end()


@dataclass(frozen=True)
class LabelledParagraph:
    """One line of an abstract: its structured-abstract label (``None``: unlabelled) and the
    offsets of its text after the ``LABEL: `` prefix (``text[start:end]``)."""

    label: str | None
    start: int
    end: int


def labelled_paragraphs(text: str) -> list[LabelledParagraph]:
    """The non-empty lines of ``text`` with their labels, in reading order."""
    out: list[LabelledParagraph] = []
    for para in _PARAGRAPH_RE.finditer(text):
        label, skip = _label_of(para.group(0))
        out.append(LabelledParagraph(label, para.start() + skip, para.end()))
    return out


def sentences_of(evidence: Evidence) -> list[KeySentence]:
    """Every sentence of ``evidence.content`` with its section label, in reading order."""
    content = evidence.content
    out: list[KeySentence] = []
    for para in labelled_paragraphs(content):
        for start, stop in prose_spans(content, para.start, para.end):
            out.append(KeySentence(evidence.id, content[start:stop], start, para.label, len(out)))
    return out


def passage_sentences(
    evidence: Evidence, positions: Sequence[int], first_position: int = 0
) -> list[KeySentence]:
    """Every sentence of the passages of ``evidence`` at ``positions`` (indexes into
    ``Evidence.passages``), in that order, numbered from ``first_position``.

    Raises:
        IndexError: a position outside ``Evidence.passages``.
    """
    out: list[KeySentence] = []
    for index in positions:
        passage = evidence.passages[index]
        for start, stop in prose_spans(passage.text, 0, len(passage.text)):
            out.append(
                KeySentence(
                    evidence.id,
                    passage.text[start:stop],
                    start,
                    None,
                    first_position + len(out),
                    passage=index,
                    locator=passage.locator(),
                )
            )
    return out


def _usable(sentence: KeySentence) -> bool:
    n = len(sentence.text)
    return (
        MIN_SENTENCE_CHARS <= n <= MAX_SENTENCE_CHARS
        and sum(c.isalpha() for c in sentence.text) >= n // 2
    )


_UNQUOTABLE = re.compile(
    rf"\[\s*{MARKER_START}"  # anything our citation validation would read as a marker
    r"|\b(?:ignore|disregard|forget)\b[^.]{0,40}\b(?:instructions?|prompts?|rules)\b"
    r"|\b(?:system prompt|you are (?:an?|the) (?:ai|assistant|language model)|as an ai)\b",
    re.IGNORECASE,
)


def is_quotable(text: str) -> bool:
    """False for sentences that must never be quoted verbatim into a report: text that our
    citation validation would read as a marker (``[E3]``, ``[PMID: 1]``) and text that reads
    as instructions to a model ("ignore previous instructions", "system prompt"). Source text
    is data; such a sentence is either an injection attempt or would forge a citation."""
    return _UNQUOTABLE.search(text) is None


def candidate_sentences(evidence: Evidence) -> list[KeySentence]:
    """Sentences of ``evidence`` that may be quoted as findings.

    Sentences of setup sections (background, objective, methods...) and objective-like
    sentences ("To assess...", "We aimed...") are left out when the item has other usable
    sentences; sentences shorter than 30 or longer than 600 characters are left out, and so
    are sentences that are not :func:`is_quotable`.
    """
    usable = [s for s in sentences_of(evidence) if _usable(s) and is_quotable(s.text)]
    findings = [
        s for s in usable if s.kind != SectionKind.SETUP and not _OBJECTIVE_CUES.match(s.text)
    ]
    return findings or usable


def _bonus(sentence: KeySentence, n_sentences: int) -> float:
    if sentence.passage is not None:  # chosen from the body for the query: no section bonus
        return -0.15 if _OBJECTIVE_CUES.match(sentence.text) else 0.0
    bonus = 0.0
    kind = sentence.kind
    if kind == SectionKind.CONCLUSION:
        bonus += 0.15
    elif kind == SectionKind.RESULTS:
        bonus += 0.08
    elif kind == SectionKind.SETUP:
        bonus -= 0.15
    elif sentence.label is None and has_conclusion_cue(sentence.text):
        bonus += 0.1
    if _OBJECTIVE_CUES.match(sentence.text):
        bonus -= 0.15
    if n_sentences > 1:  # findings come late in abstracts
        bonus += 0.05 * sentence.position / (n_sentences - 1)
    return bonus


def _body_candidates(
    evidence: Evidence,
    query: str,
    query_vector: NDArray[np.float32],
    embedder: Embedder,
    first_position: int,
) -> list[KeySentence]:
    """Quotable sentences of the passages of ``evidence``'s full text that best answer
    ``query`` (:func:`~deepcritical.evidence.passages.rank_passages`)."""
    best = rank_passages(evidence, query, query_vector, embedder, PASSAGES_PER_QUERY)
    sentences = passage_sentences(evidence, [p.position for p in best], first_position)
    return [s for s in sentences if _usable(s) and is_quotable(s.text)]


def rank_sentences(
    evidence: Sequence[Evidence], query: str, embedder: Embedder
) -> list[KeySentence]:
    """Candidate sentences of all items, scored against ``query``, best first.

    An item's candidates are its abstract's (:func:`candidate_sentences`) and, for a full
    text, the quotable sentences of the :data:`~deepcritical.evidence.passages.PASSAGES_PER_QUERY`
    passages that best answer ``query``. ``similarity`` is the cosine similarity between
    sentence and query embeddings; ``score`` adds a section bonus to an abstract's sentences
    (conclusions +0.15, results +0.08, setup -0.15, up to +0.05 for late position) and -0.15
    to objective-like sentences.
    One embedding batch for all sentences (two when an item has a full text: the query first).
    """
    per_item = [candidate_sentences(e) for e in evidence]
    if any(e.passages for e in evidence):
        query_vector = unit_rows(np.asarray(embedder.embed([query]), dtype=np.float32))[0]
        per_item = [
            group + _body_candidates(e, query, query_vector, embedder, len(sentences_of(e)))
            for e, group in zip(evidence, per_item, strict=True)
        ]
        sentences = [s for group in per_item for s in group]
        if not sentences:
            return []
        vectors = np.asarray(embedder.embed([s.text for s in sentences]), dtype=np.float32)
        sims = unit_rows(vectors) @ query_vector
    else:
        sentences = [s for group in per_item for s in group]
        if not sentences:
            return []
        vectors = np.asarray(
            embedder.embed([query, *[s.text for s in sentences]]), dtype=np.float32
        )
        sims = vectors[1:] @ vectors[0]
    totals = {
        e.id: sum(s.passage is None for s in group)
        for e, group in zip(evidence, per_item, strict=True)
    }
    scored = [
        replace(
            s,
            similarity=float(sim),
            score=float(sim) + _bonus(s, max(totals[s.evidence_id], 1)),
        )
        for s, sim in zip(sentences, sims, strict=True)
    ]
    return sorted(scored, key=lambda s: (-s.score, s.evidence_id, s.position))


def top_per_item(ranked: Sequence[KeySentence], per_item: int = 2) -> dict[str, list[KeySentence]]:
    """The best ``per_item`` sentences of each item (from :func:`rank_sentences` output), in
    reading order within the item; items ordered by their best sentence."""
    picked: dict[str, list[KeySentence]] = {}
    for s in ranked:
        chosen = picked.setdefault(s.evidence_id, [])
        if len(chosen) < per_item:
            chosen.append(s)
    return {eid: sorted(group, key=lambda s: s.position) for eid, group in picked.items()}


def relevant_items(
    ranked: Sequence[KeySentence], min_similarity: float, relative_to_best: float
) -> dict[str, float]:
    """Items whose best sentence is close enough to the query: id -> best similarity.

    An item is kept when its best sentence similarity is at least ``min_similarity`` and at
    least ``relative_to_best`` times the best similarity of all items (0 disables the relative
    rule). Ordered by similarity, best first.
    """
    best: dict[str, float] = {}
    for s in ranked:
        if s.similarity > best.get(s.evidence_id, float("-inf")):
            best[s.evidence_id] = s.similarity
    if not best:
        return {}
    top = max(best.values())
    floor = max(min_similarity, relative_to_best * top if top > 0 else min_similarity)
    kept = {eid: sim for eid, sim in best.items() if sim >= floor}
    return dict(sorted(kept.items(), key=lambda kv: -kv[1]))


def mentioning_terms(
    evidence: Sequence[Evidence], terms: Sequence[str], needed: int
) -> list[Evidence]:
    """The items of ``evidence`` (in order) whose title, text, MeSH terms and full text (its
    passages, when it was read) together mention at least ``needed`` of ``terms`` (every word
    of a term, by stem: :func:`matched_terms`).

    An item that mentions fewer bears at best on a neighbouring topic, however similar its
    wording.
    """
    return [
        e
        for e in evidence
        if len(
            matched_terms(
                " ".join(
                    [e.citation.title, e.content, *e.mesh_terms, *(p.text for p in e.passages)]
                ),
                terms,
            )
        )
        >= needed
    ]
