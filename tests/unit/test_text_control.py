"""Control characters out of questions, context and imported text (issue 13 item 7)."""

from __future__ import annotations

import pytest

from deepcritical.orchestrators.deps import QuestionError, check_context, check_question
from deepcritical.text.control import strip_control_chars


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain text, kept as it is", "plain text, kept as it is"),
        ("NUL\x00 byte", "NUL byte"),
        ("\x1b[31mred\x1b[0m", "[31mred[0m"),
        ("del\x7f and C1\x9b", "del and C1"),
        ("lines\r\nand\rbreaks\n", "lines\nand\nbreaks\n"),
        ("tab\tkept", "tab\tkept"),
        ("vertical\x0btab form\x0cfeed nel\x85", "vertical tab form feed nel "),
        ("unit\x1fseparator", "unit separator"),
        ("lone \ud800surrogate", "lone surrogate"),
        ("Ünïcødé — αβγ 中文 soft\u00adhyphen", "Ünïcødé — αβγ 中文 soft\u00adhyphen"),
    ],
)
def test_strip_control_chars(text: str, expected: str) -> None:
    assert strip_control_chars(text) == expected


def test_every_c0_and_c1_control_but_tab_and_line_feed_is_gone() -> None:
    controls = "".join(chr(c) for c in [*range(0x20), *range(0x7F, 0xA0)])
    cleaned = strip_control_chars(f"a{controls}b")
    assert set(cleaned) <= {"a", "b", "\t", "\n", " "}
    cleaned.encode("utf-8")  # nothing left that UTF-8 cannot encode


def test_a_question_loses_its_control_characters() -> None:
    question = "Does\x00 metformin\x1b reduce\r\ncancer risk?\x00"
    assert check_question(question, 200) == "Does metformin reduce cancer risk?"


def test_a_question_of_control_characters_only_is_empty() -> None:
    with pytest.raises(QuestionError, match="empty"):
        check_question("\x00\x01\x1b\x7f", 200)


def test_the_context_loses_its_control_characters_but_keeps_its_lines() -> None:
    assert check_context("Background:\x00\n\tadults only\x1b") == "Background:\n\tadults only"
    assert check_context("\x00 ") is None
    assert check_context(None) is None
