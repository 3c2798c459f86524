"""A clarification asked before planning, and the user's answer to it.

A :class:`Clarification` is one short message of at most :data:`MAX_CLARIFYING_QUESTIONS`
questions, each naming the element of the research question it asks for (population,
intervention, comparator, outcome or time frame) and offering 2-4 suggested answers; the
user may pick one, type their own, or skip. It is decided by rules
(:func:`deepcritical.text.clarify_rules.clarify_by_rules`) or proposed by a model
(:class:`deepcritical.agents.clarifier.LLMClarifier`).

The answer travels as the run's ``context`` (the background the planner receives, stored
with the run and used again by ``resume``): :func:`clarified_context` appends a block ::

    Clarified by the user:
    - population: adults over 65
    - time frame: 5 years

and :func:`clarified_elements` reads it back, so the planners can fill the plan's elements
and the methodology can say what the user clarified (``ResearchPlan.clarified``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "CLARIFIED_HEADER",
    "ELEMENT_LABELS",
    "MAX_CLARIFYING_QUESTIONS",
    "Clarification",
    "ClarifiedElement",
    "ClarifyElement",
    "ClarifyingQuestion",
    "clarified_context",
    "clarified_elements",
]

ClarifyElement = Literal["population", "intervention", "comparator", "outcome", "time_frame"]
"""The element of a question a clarification asks for (``intervention`` also stands for an
exposure, an index test or a drug; ``outcome`` for a target condition or disease)."""

ELEMENT_LABELS: dict[ClarifyElement, str] = {
    "population": "population",
    "intervention": "intervention",
    "comparator": "comparator",
    "outcome": "outcome",
    "time_frame": "time frame",
}
"""How each element is written in the context block and the methodology."""

MAX_CLARIFYING_QUESTIONS = 3
MAX_VALUE_CHARS = 200
"""Longest answer (characters) kept for one element; a longer one is cut."""
CLARIFIED_HEADER = "Clarified by the user:"
"""The first line of the context block that carries a clarification's answers."""

_BY_LABEL = {label: element for element, label in ELEMENT_LABELS.items()}
_BLOCK = re.compile(
    rf"^{re.escape(CLARIFIED_HEADER)}[ \t]*\n(?P<lines>(?:[ \t]*- [^\n]*(?:\n|$))+)",
    re.MULTILINE,
)
_LINE = re.compile(
    r"^[ \t]*- (?P<label>[a-z ]+?):[ \t]*(?P<value>\S[^\n]*?)[ \t]*$",
    re.MULTILINE | re.IGNORECASE,
)


def _one_line(text: str) -> str:
    """``text`` with its white space collapsed to single spaces."""
    return " ".join(text.split())


class ClarifyingQuestion(BaseModel):
    """One question of a clarification.

    ``element``: what it asks for; ``prompt``: the short question shown to the user (3-200
    characters); ``choices``: 2-4 distinct suggested answers (1-80 characters each); the user
    may also type an answer of their own.

    Raises:
        pydantic.ValidationError: an empty prompt, fewer than 2 or more than 4 choices, an
            empty, over-long or repeated choice.
    """

    model_config = ConfigDict(frozen=True)

    element: ClarifyElement
    prompt: str = Field(min_length=3, max_length=200)
    choices: list[str] = Field(min_length=2, max_length=4)

    @field_validator("prompt", mode="before")
    @classmethod
    def _prompt_one_line(cls, value: object) -> object:
        return _one_line(value) if isinstance(value, str) else value

    @field_validator("choices")
    @classmethod
    def _check_choices(cls, choices: list[str]) -> list[str]:
        cleaned = [_one_line(c) for c in choices]
        if any(not c or len(c) > 80 for c in cleaned):
            raise ValueError("each choice has 1 to 80 characters")
        if len({c.lower() for c in cleaned}) != len(cleaned):
            raise ValueError("the choices must differ")
        return cleaned


class Clarification(BaseModel):
    """One clarifying message about ``question``: 1-3 questions, each about another element,
    decided by ``by`` (``"rules"`` or ``"model"``).

    Raises:
        pydantic.ValidationError: no question, more than three, or two about one element.
    """

    model_config = ConfigDict(frozen=True)

    question: str
    questions: list[ClarifyingQuestion] = Field(min_length=1, max_length=MAX_CLARIFYING_QUESTIONS)
    by: Literal["rules", "model"] = "rules"

    @model_validator(mode="after")
    def _distinct_elements(self) -> Clarification:
        elements = [q.element for q in self.questions]
        if len(set(elements)) != len(elements):
            raise ValueError("each clarifying question asks for another element")
        return self

    def answer(
        self, answers: Mapping[ClarifyElement, str] | Mapping[str, str]
    ) -> list[ClarifiedElement]:
        """The user's answers, keyed by element (``{"population": "adults over 65"}``), as
        :class:`ClarifiedElement` in the order of the questions; an element this
        clarification did not ask for, or an empty answer, is left out (skipped)."""
        out: list[ClarifiedElement] = []
        for q in self.questions:
            value = _one_line(dict(answers).get(q.element, ""))
            if value:
                out.append(ClarifiedElement(element=q.element, value=value))
        return out


class ClarifiedElement(BaseModel):
    """One element of the question as the user clarified it (``value``: one line, at most
    :data:`MAX_VALUE_CHARS` characters, longer answers cut)."""

    model_config = ConfigDict(frozen=True)

    element: ClarifyElement
    value: str = Field(min_length=1)

    @field_validator("value", mode="before")
    @classmethod
    def _value_one_line(cls, value: object) -> object:
        return _one_line(value)[:MAX_VALUE_CHARS].strip() if isinstance(value, str) else value

    def text(self) -> str:
        """``"population = adults over 65"``, as the methodology writes it."""
        return f"{ELEMENT_LABELS[self.element]} = {self.value}"


def clarified_context(context: str | None, answers: Iterable[ClarifiedElement]) -> str | None:
    """``context`` with the block of ``answers`` appended (see the module docstring);
    ``context`` unchanged (``None`` when empty) when there is no answer (the user skipped)."""
    lines = [f"- {ELEMENT_LABELS[a.element]}: {a.value}" for a in answers]
    base = (context or "").strip()
    if not lines:
        return base or None
    block = "\n".join([CLARIFIED_HEADER, *lines])
    return f"{base}\n\n{block}" if base else block


def clarified_elements(context: str | None) -> list[ClarifiedElement]:
    """The elements clarified in ``context``'s blocks (:func:`clarified_context`), the last
    answer for an element winning, in the order first given; ``[]`` without a block. Lines
    of a block whose label is not an element are ignored."""
    found: dict[ClarifyElement, str] = {}
    for block in _BLOCK.finditer(context or ""):
        for line in _LINE.finditer(block.group("lines")):
            element = _BY_LABEL.get(line.group("label").strip().lower())
            if element is not None:
                found[element] = line.group("value")
    return [ClarifiedElement(element=e, value=v) for e, v in found.items()]
