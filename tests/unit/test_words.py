"""Run facts in plain words: errors as their message, never their class name."""

from __future__ import annotations

from deepcritical.models import error_text
from deepcritical.orchestrators.deps import QuestionError


def test_an_error_reads_as_its_message_without_its_class() -> None:
    text = error_text(QuestionError("the research question is empty"))
    assert text == "the research question is empty"
    assert "QuestionError" not in text


def test_a_message_less_error_still_reads_as_a_sentence() -> None:
    assert error_text(RuntimeError()) == "an unexpected error (see the server log)"
    assert error_text(ValueError("  two\n lines ")) == "two lines"
