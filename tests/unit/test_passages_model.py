"""Passages of a full text as parts of their one evidence item (models, no I/O)."""

from __future__ import annotations

import pydantic
import pytest

from deepcritical.models import Citation, Evidence, Passage, PassageKind


def _item(**extra: object) -> Evidence:
    return Evidence.model_validate(
        {"content": "An abstract.", "citation": Citation(source="local", id="1"), **extra}
    )


def test_offsets_must_span_the_text() -> None:
    Passage(start=10, end=14, text="abcd")
    with pytest.raises(pydantic.ValidationError, match="do not span"):
        Passage(start=10, end=12, text="abcd")


def test_locator_names_section_and_one_based_paragraph() -> None:
    p = Passage(section=["Results", "Adverse events"], index=3, start=0, end=2, text="ok")
    assert p.locator() == "Results › Adverse events, paragraph 4"
    table = Passage(
        kind=PassageKind.TABLE, section=["Results"], start=0, end=2, text="ok", label="Table 2"
    )
    assert table.locator() == "Results, Table 2"
    figure = Passage(kind=PassageKind.FIGURE, start=0, end=2, text="ok")
    assert figure.locator() == "Figure"
    assert Passage(start=0, end=2, text="ok").locator() == "Body, paragraph 1"


def test_records_without_passages_load_as_abstract_only() -> None:
    old = _item()
    assert old.passages == []
    assert not old.full_text
    full = _item(passages=[Passage(section=["Methods"], start=0, end=2, text="ok")])
    assert full.full_text
    again = Evidence.model_validate_json(full.model_dump_json())
    assert again.passages == full.passages
