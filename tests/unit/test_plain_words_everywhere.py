"""No internal identifier reaches a reader: for every stop reason, the rendered page (answer
card, report, progress panel, evidence table), the Markdown report and the command line's
event log and summary read in words: no ``no_new_evidence``, no event type such as
``evidence_added``, no exception class name, and counts agree in number."""

from __future__ import annotations

import io
import re
import typing
from pathlib import Path

import pytest
from rich.console import Console

import deepcritical.cli.run_output as run_output
from deepcritical.models import StopReason
from deepcritical.models._words import STOP_REASON_TEXT
from deepcritical.ui.answer import answer_card_html
from deepcritical.ui.citation_links import report_html
from deepcritical.ui.progress_view import ProgressView, fail, fold
from deepcritical.ui.render import evidence_rows, evidence_table_html, progress_html
from tests.unit.ui_fixtures import run_result, script

REASONS = typing.get_args(StopReason)
IDENTIFIER = re.compile(r"\b[a-z]+(?:_[a-z]+)+\b")  # snake_case: no_new_evidence, evidence_added
CLASS_NAME = re.compile(r"\b[A-Z][A-Za-z]*(?:Error|Exception)\b")
BAD_COUNT = re.compile(r"\b1 (?:references|citations|sentences|sources|studies|records)\b")


def words_only(text: str) -> list[str]:
    """What reads as an identifier, a class name or a count out of number in ``text`` (its
    markup, URLs and CSS classes left out)."""
    visible = re.sub(r"<[^>]+>", " ", text)  # tags and their attributes (class names...)
    visible = re.sub(r"https?://\S+|`[^`]*`|\(#dc-ref-\d+\)", " ", visible)
    return IDENTIFIER.findall(visible) + CLASS_NAME.findall(visible) + BAD_COUNT.findall(visible)


def test_every_stop_reason_has_its_words() -> None:
    assert set(REASONS) == set(STOP_REASON_TEXT)


@pytest.mark.parametrize("reason", REASONS)
def test_the_page_and_the_markdown_read_in_words(reason: str) -> None:
    result = run_result(stop_reason=reason)
    view = ProgressView()
    for event in script(result):
        view = fold(view, event)
    pages = {
        "answer card": answer_card_html(result),
        "report": report_html(result),
        "progress": progress_html(view),
        "evidence": evidence_table_html(evidence_rows(result)),
        "markdown": result.report.to_markdown(),
    }
    for where, text in pages.items():
        assert words_only(text) == [], (where, words_only(text))
    failed = progress_html(fail(view, "the source answered 500"))
    assert words_only(failed) == []


@pytest.mark.parametrize("reason", REASONS)
def test_the_command_line_reads_in_words(
    reason: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    buffer = io.StringIO()
    monkeypatch.setattr(run_output, "console", Console(file=buffer, width=200, no_color=True))
    result = run_result(stop_reason=reason)
    for event in script(result):
        run_output._print_event(event)
    run_output._print_summary(result, tmp_path / "r.md", tmp_path / "r.json", [])
    text = buffer.getvalue()
    assert words_only(text) == [], words_only(text)
    assert "stopped because" in text
