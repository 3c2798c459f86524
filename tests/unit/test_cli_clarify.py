"""``deepcritical research --clarify`` in-process (typer's ``CliRunner``): the clarification
asked on a terminal (a number picks a choice, Enter skips), printed when not on a terminal,
and the answer in the context the run gets. The run itself is a stand-in that records its
context (this tests the command, not a run)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

import deepcritical.api
from deepcritical.cli import clarify_prompt
from deepcritical.cli.main import app
from deepcritical.events import ResearchEvent

METFORMIN = "Does metformin reduce mortality?"


@pytest.fixture
def contexts(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """The contexts the (stand-in) runs were started with."""
    seen: list[str | None] = []

    async def fake_research(
        question: str, settings: Any, **kw: Any
    ) -> AsyncIterator[ResearchEvent]:
        seen.append(kw.get("context"))
        yield ResearchEvent(type="error", message="stand-in run")

    monkeypatch.setattr(deepcritical.api, "research", fake_research)
    return seen


def invoke(tmp_path: Path, *args: str, stdin: str | None = None) -> Result:
    command = ["--data-dir", str(tmp_path), "research", *args, "--llm", "none"]
    command += ["--sources", "pubmed", "--out", str(tmp_path / "report.md")]
    return CliRunner().invoke(app, command, input=stdin, catch_exceptions=False)


def test_a_terminal_user_picks_a_choice(
    tmp_path: Path, contexts: list[str | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(clarify_prompt, "stdin_is_terminal", lambda: True)
    result = invoke(tmp_path, METFORMIN, "--clarify", "--context", "Trials only.", stdin="2\n")
    assert "Which population is the question about?" in result.output
    assert "2. Older adults (65 and over)" in result.output
    assert contexts == [
        "Trials only.\n\nClarified by the user:\n- population: Older adults (65 and over)"
    ]


def test_own_text_is_an_answer_and_enter_skips(
    tmp_path: Path, contexts: list[str | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(clarify_prompt, "stdin_is_terminal", lambda: True)
    invoke(tmp_path, "Is metformin effective?", "--clarify", stdin="people with gout\n\n")
    assert contexts == ["Clarified by the user:\n- population: people with gout"]
    invoke(tmp_path, METFORMIN, "--clarify", stdin="\n")
    assert contexts[-1] is None


def test_not_a_terminal_prints_the_questions_and_goes_on(
    tmp_path: Path, contexts: list[str | None]
) -> None:
    result = invoke(tmp_path, METFORMIN, "--clarify", "--context", "notes")
    assert "Which population is the question about?" in result.output
    assert "not a terminal" in result.output
    assert contexts == ["notes"]


def test_without_clarify_or_when_nothing_is_missing_nothing_is_asked(
    tmp_path: Path, contexts: list[str | None]
) -> None:
    result = invoke(tmp_path, METFORMIN)
    assert "population" not in result.output
    result = invoke(tmp_path, "Does metformin reduce mortality in older adults?", "--clarify")
    assert "no clarification asked" in result.output
    assert contexts == [None, None]


def test_a_bad_question_exits_2(tmp_path: Path, contexts: list[str | None]) -> None:
    result = invoke(tmp_path, "   ", "--clarify")
    assert result.exit_code == 2
    assert contexts == []
