"""The clarify step: before planning, one short message asking for what the question lacks.

:class:`RuleClarifier` asks what the offline rules find missing
(:func:`~deepcritical.text.clarify_rules.clarify_by_rules`). :class:`LLMClarifier` lets the
model propose the clarification instead (see ``prompts/clarifier.md``): a structured output
of at most :data:`~deepcritical.models.MAX_CLARIFYING_QUESTIONS` questions, each about
another element with 2-4 choices, validated into a
:class:`~deepcritical.models.Clarification` (an invalid answer is sent back to the model
within the config's retries); an empty list means the question needs none. When the
model's output stays invalid, or the call fails, the rules decide. The question is fenced as
data (:mod:`deepcritical.llm.fencing`).
"""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, Field, ValidationError

from deepcritical.llm.agent_config import LLMConfig
from deepcritical.llm.fencing import new_fence
from deepcritical.llm.lenient import LenientStrList
from deepcritical.llm.llm_errors import AgentModelError, AgentOutputError, describe_error
from deepcritical.llm.runner import ModelRetry
from deepcritical.llm.structured import string_list_bounds
from deepcritical.llm.templates import render_prompt
from deepcritical.logs import get_logger
from deepcritical.models import (
    MAX_CLARIFYING_QUESTIONS,
    Clarification,
    ClarifyElement,
    ClarifyingQuestion,
)
from deepcritical.text.clarify_rules import clarify_by_rules, missing_elements

__all__ = [
    "Clarifier",
    "ClarifierOutput",
    "ClarifyingQuestionOutput",
    "LLMClarifier",
    "RuleClarifier",
    "clarification_of",
]

log = get_logger(__name__)


class Clarifier(Protocol):
    """Decides the clarification a question needs before planning (``None``: none)."""

    async def clarify(self, question: str) -> Clarification | None:
        """The clarification ``question`` needs, or ``None``."""
        ...


class ClarifyingQuestionOutput(BaseModel):
    """One clarifying question as the model writes it."""

    element: ClarifyElement = Field(description="the element of the question it asks for")
    prompt: str = Field(
        description="the short question shown", json_schema_extra={"maxLength": 200}
    )
    choices: LenientStrList = Field(
        description="2 to 4 suggested answers", json_schema_extra=string_list_bounds(4, 80)
    )


class ClarifierOutput(BaseModel):
    """The structured output of the clarifier: no item when the question needs none."""

    clarifying_questions: list[ClarifyingQuestionOutput] = Field(
        default_factory=list, json_schema_extra={"maxItems": MAX_CLARIFYING_QUESTIONS}
    )


def clarification_of(question: str, output: ClarifierOutput) -> Clarification | None:
    """The :class:`Clarification` of the model's ``output`` about ``question`` (``None`` for
    an empty list).

    Raises:
        pydantic.ValidationError: more than three questions, two about one element, a
            question with fewer than 2 or more than 4 distinct choices, an empty prompt.
    """
    if not output.clarifying_questions:
        return None
    return Clarification(
        question=" ".join(question.split()),
        questions=[
            ClarifyingQuestion(element=q.element, prompt=q.prompt, choices=q.choices)
            for q in output.clarifying_questions
        ],
        by="model",
    )


def _validate(_: None, output: ClarifierOutput) -> ClarifierOutput:
    try:
        clarification_of("question", output)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise ModelRetry(f"the clarification is invalid: {problems}") from exc
    return output


class RuleClarifier:
    """The offline clarifier: :func:`~deepcritical.text.clarify_rules.clarify_by_rules`."""

    async def clarify(self, question: str) -> Clarification | None:
        """The rules' clarification of ``question`` (never raises)."""
        return clarify_by_rules(question)


class LLMClarifier:
    """Asks the model for the clarification (see the module docstring).

    Args:
        config: model, retries (invalid answers sent back), timeout, usage tracker.
    """

    role = "clarifier"

    def __init__(self, config: LLMConfig) -> None:
        self._agent = config.structured(self.role, ClarifierOutput, validator=_validate)

    async def clarify(self, question: str) -> Clarification | None:
        """The model's clarification of ``question`` (``None``: it needs none); the rules'
        when the model's answer stays invalid or the call fails (logged). Never raises but
        for cancellation."""
        fence = new_fence()
        missing = missing_elements(question)
        rules_note = (
            "they find it lacks " + ", ".join(m.replace("_", " ") for m in missing) + "."
            if missing
            else "they find nothing essential missing."
        )
        instructions = render_prompt("clarifier", rules_note=rules_note, nonce=fence.nonce)
        prompt = "Research question:\n" + fence.wrap("user_question", question)
        try:
            output = await self._agent.run(instructions, prompt, None)
            return clarification_of(question, output)
        except (AgentOutputError, AgentModelError, ValidationError) as exc:
            log.warning("clarifier fell back to the rules", reason=describe_error(exc))
            return clarify_by_rules(question)
