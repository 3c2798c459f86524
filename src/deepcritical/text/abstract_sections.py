"""The labelled paragraphs of an abstract as :mod:`deepcritical.formats.pubmed_xml` keeps them
("METHODS: text" lines) and the sentences within them, as character spans, for the rules that
read a study's own figures (:mod:`deepcritical.evidence.study_extraction`)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["Section", "sections_of", "sentence_around", "sentence_spans"]

_LABEL = re.compile(r"([A-Z][A-Z0-9 &/,()'-]{1,60}):\s")

_METHODS_LABELS = (
    "METHOD",
    "PATIENT",
    "PARTICIPANT",
    "SUBJECT",
    "SETTING",
    "DESIGN",
    "POPULATION",
    "SAMPLE",
    "MATERIAL",
    "RESULT",
    "FINDING",
    "MEASURE",
    "INTERVENTION",
    "OUTCOME",
    "OBSERVATION",
    "DATA",
    "PROCEDURE",
)
_LATE_LABELS = ("CONCLUSION", "DISCUSSION", "INTERPRETATION", "IMPLICATION", "COMMENT")


@dataclass(frozen=True)
class Section:
    """One paragraph of a text: its label (``"METHODS"``; ``""`` unlabelled) and the
    character offsets of its body (after ``LABEL: ``) in the text."""

    label: str
    start: int
    end: int

    @property
    def rank(self) -> int:
        """0 for methods, participants and results (and unlabelled text), 1 for background
        and aims, 2 for conclusions: where a study's own figures are read first."""
        if not self.label or any(k in self.label for k in _METHODS_LABELS):
            return 0
        return 2 if any(k in self.label for k in _LATE_LABELS) else 1

    def has(self, *keys: str) -> bool:
        """True when the label contains one of ``keys`` (upper case)."""
        return any(k in self.label for k in keys)


def sections_of(text: str) -> list[Section]:
    """The paragraphs of ``text`` (split at line feeds) with their labels."""
    out: list[Section] = []
    for m in re.finditer(r"[^\n]+", text):
        start, end = m.start(), m.end()
        label = ""
        lm = _LABEL.match(text, start, end)
        if lm:
            label = lm.group(1).strip().upper()
            start = lm.end()
        if text[start:end].strip():
            out.append(Section(label, start, end))
    return out


_SENTENCE_END = re.compile(
    r"(?<!\bvs)(?<!\bal)(?<!\be\.g)(?<!\bi\.e)(?<!\bca)(?<!\bapprox)(?<!\bno)(?<!\bFig)"
    r"[.!?](?=\s+[(\"'‘“]?[A-Z0-9])"
)


def sentence_spans(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """The sentences of ``text[start:end]`` as ``(start, end)`` offsets in ``text`` (end
    after the full stop), split at a stop followed by a capital or a digit ("vs.", "et al.",
    "e.g.", "i.e." and "Fig." are not ends). Fast (one regular expression), for rules."""
    at = start
    for m in _SENTENCE_END.finditer(text, start, end):
        yield at, m.end()
        at = m.end()
        while at < end and text[at].isspace():
            at += 1
    if text[at:end].strip():
        yield at, end


def sentence_around(text: str, index: int) -> tuple[int, int]:
    """The ``(start, end)`` offsets of the sentence of ``text`` holding character ``index``
    (:func:`sentence_spans` within its paragraph); ``(index, index)`` when it is in none."""
    for section in sections_of(text):
        if section.start <= index < section.end:
            for start, end in sentence_spans(text, section.start, section.end):
                if start <= index < end:
                    return start, end
    return index, index
