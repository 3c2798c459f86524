"""``deepcritical research --clarify``: before the run, the clarification the question needs
(:func:`deepcritical.api.clarify`: the rules offline, the model with ``--llm``), asked on the
terminal.

On a terminal each question is shown with its numbered choices: a number picks a choice,
other text is the user's own answer, Enter skips the question. When standard input is not a
terminal (a script, a pipe, CI) the questions are printed and the run goes on without
answers. The answers are appended to the run's context
(:func:`~deepcritical.models.clarified_context`), which the planner reads and the run
records; the report's methodology says what was clarified. Messages go to standard error.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable

from rich.markup import escape

from deepcritical.cli.context import console, fail
from deepcritical.config import Settings
from deepcritical.models import Clarification, ClarifyingQuestion, clarified_context

__all__ = ["ask_clarification", "clarified_run_context", "stdin_is_terminal"]

NOT_A_TERMINAL = (
    "Standard input is not a terminal: going on without answers (put them in --context to "
    "use them)."
)


def _read_answer(question: ClarifyingQuestion, read: Callable[[str], str]) -> str:
    """The user's answer to ``question``: a choice by its number, their own text, or ``""``
    (Enter, or end of input: skipped)."""
    console.print(f"[bold]{escape(question.prompt)}[/bold]")
    for n, choice in enumerate(question.choices, 1):
        console.print(f"  {n}. {escape(choice)}")
    try:
        raw = read("Number, your own answer, or Enter to skip: ").strip()
    except EOFError:
        return ""
    if raw.isdigit() and 1 <= int(raw) <= len(question.choices):
        return question.choices[int(raw) - 1]
    return raw


def stdin_is_terminal() -> bool:
    """Whether standard input is a terminal (the user can answer)."""
    return sys.stdin.isatty()


def ask_clarification(
    clarification: Clarification,
    context: str | None,
    *,
    interactive: bool,
    read: Callable[[str], str] = input,
) -> str | None:
    """``context`` with the user's answers to ``clarification`` appended (unchanged when every
    question is skipped, or when not ``interactive``: then the questions are only printed).
    ``read`` reads one line after a prompt (``input``; tests pass their own)."""
    console.print("[bold]Before planning, the question could be clearer:[/bold]")
    if not interactive:
        for q in clarification.questions:
            choices = "; ".join(q.choices)
            console.print(f"- {escape(q.prompt)} ({escape(choices)})")
        console.print(NOT_A_TERMINAL)
        return context
    answers: dict[str, str] = {q.element: _read_answer(q, read) for q in clarification.questions}
    given = clarification.answer(answers)
    if given:
        console.print("Clarified: " + escape("; ".join(a.text() for a in given)))
    else:
        console.print("Skipped: the question is researched as asked.")
    return clarified_context(context, given)


def clarified_run_context(question: str, settings: Settings, context: str | None) -> str | None:
    """The run's context after ``research --clarify``: the clarification of ``question``
    asked on the terminal (see the module docstring), or ``context`` unchanged when the
    question needs none.

    Raises:
        typer.Exit: code 2 for a bad question or model setting (the message printed).
    """
    from deepcritical.api import clarify
    from deepcritical.llm.providers import ModelSpecError
    from deepcritical.orchestrators.deps import QuestionError

    try:
        clarification = asyncio.run(clarify(question, settings))
    except (QuestionError, ModelSpecError) as exc:
        raise fail(str(exc), 2) from exc
    if clarification is None:
        console.print("The question states what its type needs: no clarification asked.")
        return context
    return ask_clarification(clarification, context, interactive=stdin_is_terminal())
