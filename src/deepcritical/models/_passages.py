"""Passages: the paragraphs, tables and figure captions of one full text, as parts of its one
evidence item (never items of their own)."""

from __future__ import annotations

from enum import StrEnum
from typing import Self

from pydantic import BaseModel, Field, model_validator

__all__ = ["SECTION_SEPARATOR", "Passage", "PassageKind"]

SECTION_SEPARATOR = " › "
"""What joins the titles of a section path when it is shown: ``"Results › Adverse events"``."""


class PassageKind(StrEnum):
    """What a passage is: a body paragraph, a table (caption and rows) or a figure caption."""

    PARAGRAPH = "paragraph"
    TABLE = "table"
    FIGURE = "figure"


class Passage(BaseModel):
    """One passage of a full text.

    ``section`` is the path of section titles from the outermost in (``["Results", "Adverse
    events"]``; empty for text outside any section). ``index`` counts the passages of that
    section from 0, in document order. ``start``/``end`` are character offsets of ``text`` in
    the item's full text, which is every passage's text in order joined by a blank line
    (``"\\n\\n"``); ``end - start == len(text)``. ``label`` is a table's or figure's label
    (``"Table 2"``), ``""`` for paragraphs.

    Raises:
        pydantic.ValidationError: negative offsets or ``end - start != len(text)``.
    """

    kind: PassageKind = PassageKind.PARAGRAPH
    section: list[str] = Field(default_factory=list)
    index: int = Field(default=0, ge=0)
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    text: str
    label: str = ""

    @model_validator(mode="after")
    def _offsets_match_text(self) -> Self:
        if self.end - self.start != len(self.text):
            raise ValueError(
                f"offsets {self.start}..{self.end} do not span the {len(self.text)}-character text"
            )
        return self

    def section_label(self) -> str:
        """The section path shown to readers: ``"Results › Adverse events"``; ``"Body"`` for
        text outside any section."""
        return SECTION_SEPARATOR.join(self.section) or "Body"

    def locator(self) -> str:
        """Where the passage is, for a supporting quote: ``"Results › Adverse events, paragraph
        4"`` (1-based), or the section and label of a table or figure (``"Results, Table 2"``)."""
        if self.kind is PassageKind.PARAGRAPH:
            return f"{self.section_label()}, paragraph {self.index + 1}"
        what = self.label or self.kind.value.capitalize()
        return f"{self.section_label()}, {what}" if self.section else what
