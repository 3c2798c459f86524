"""A scripted pydantic-ai model that plays every LLM role, for a scenario to fill in.

:class:`ScriptedRoles` is the function of a pydantic-ai ``FunctionModel``. Each request's
output tool says which role is asked (:func:`output_role`: the fields of the tool's JSON
schema, :data:`ROLE_OF_FIELD`), the role's answer is read from the request's first user prompt
(:func:`~deepcritical.testing.chat.first_prompt`) by the method named after the role, and the
answer comes back as a call of the output tool, as a model following the tool would give it.
The search agent's screening first calls its source tools (by default as
:class:`~deepcritical.testing.chat.RoleScript` does: save every record, check progress, check
completion), then answers. The calls answered are recorded (:class:`ScriptedCall`) unless the
scenario says not to.

A scenario subclasses it, names its model (:attr:`ScriptedRoles.model_name`) and overrides the
answers of the roles it plays (:meth:`ScriptedRoles.planner`, ...); a role it does not play,
or an output tool no role has, raises :class:`UnscriptedOutput`. The project's own scenarios:
``FirstNamesScript`` (tests/integration), ``FabricatingScript`` (tests/unit) and
``MisattributingScript`` (the PubMedQA benchmark's scripted arm).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from deepcritical.testing.chat import FENCED_ID, RoleScript, first_prompt

ROLE_OF_FIELD: tuple[tuple[str, str], ...] = (
    ("checklist", "planner"),
    ("hypotheses", "hypothesis"),
    ("mechanism_score", "judge"),
    ("outline", "outline"),
    ("content", "findings"),
    ("executive_summary", "summary"),
    ("follow_up_queries", "reflection"),
    ("rewritten_sentence", "rewriter"),
    ("screened", "screener"),
    ("queries", "queries"),  # last: the planner's output has "queries" too
)
"""``(field of the output tool's schema, role)``, checked in this order: the first field the
schema has names the role (the role names are those of :class:`ScriptedRoles`' methods)."""

QUESTION_LINE = re.compile(r"^Research question: (.+)$", re.MULTILINE)


class UnscriptedOutput(RuntimeError):
    """A request the scripted model has no answer for: an output tool whose fields name no
    role, or a role the scenario does not play."""


@dataclass(frozen=True)
class ScriptedCall:
    """One request a scripted model answered: the role, the first user prompt and the
    agent's instructions."""

    role: str
    prompt: str
    instructions: str


def output_role(properties: Iterable[str]) -> str | None:
    """The role whose output schema has the fields ``properties`` (:data:`ROLE_OF_FIELD`);
    ``None`` when none matches."""
    fields = set(properties)
    return next((role for name, role in ROLE_OF_FIELD if name in fields), None)


def research_question(prompt: str) -> str | None:
    """The question on a prompt's ``Research question: ...`` line; ``None`` without one."""
    m = QUESTION_LINE.search(prompt)
    return m.group(1).strip() if m else None


@dataclass
class ScriptedRoles:
    """Every LLM role's structured output, from a scenario's answers (see the module
    docstring). Call :meth:`model` for the pydantic-ai model to pass to ``research``.

    Args:
        record_calls: keep each answered request in :attr:`calls` (the screening's tool
            calls apart).
        calls: the requests answered, in order.
        screening: plays the search agent's source-tool calls
            (:meth:`RoleScript.screener_response`) and, unless the scenario overrides
            :meth:`screener`, its screening output.
    """

    model_name: ClassVar[str] = "scripted-roles"
    """The ``FunctionModel``'s name (the report's ``metadata.llm`` reads ``function:NAME``)."""

    record_calls: bool = True
    calls: list[ScriptedCall] = field(default_factory=list)
    screening: RoleScript = field(default_factory=RoleScript)

    def model(self) -> FunctionModel:
        """A pydantic-ai model answering with this script."""
        return FunctionModel(self, model_name=self.model_name)

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        """The answer to one request: the screening's tool calls while it makes them, else
        the role's output as a call of the output tool.

        Raises:
            UnscriptedOutput: the output tool names no role, or the scenario does not play it.
        """
        tool = info.output_tools[0]
        properties = tool.parameters_json_schema.get("properties", {})
        role = output_role(properties)
        if role is None:
            raise UnscriptedOutput(
                f"no scripted role has the output tool {tool.name} (fields {sorted(properties)})"
            )
        if role == "screener":
            steps = self.screening_steps(messages, info)
            if steps is not None:
                return steps
        prompt = first_prompt(messages)
        arguments = self.arguments(role, prompt)
        self.record(role, prompt, info)
        return ModelResponse(parts=[ToolCallPart(tool.name, arguments)])

    def screening_steps(
        self, messages: list[ModelMessage], info: AgentInfo
    ) -> ModelResponse | None:
        """The search agent's next source-tool calls; ``None`` once it is done with them (then
        :meth:`screener` answers). By default :attr:`screening`'s."""
        return self.screening.screener_response(messages, info)

    def arguments(self, role: str, prompt: str) -> str:
        """The output tool's arguments: :meth:`answer` as JSON."""
        return json.dumps(self.answer(role, prompt))

    def record(self, role: str, prompt: str, info: AgentInfo) -> None:
        """Keep an answered request in :attr:`calls` (when :attr:`record_calls`)."""
        if self.record_calls:
            self.calls.append(ScriptedCall(role, prompt, info.instructions or ""))

    def roles(self) -> set[str]:
        """The roles of the recorded calls."""
        return {c.role for c in self.calls}

    def ids_shown(self, *roles: str) -> set[str]:
        """The evidence ids fenced in the recorded prompts of ``roles``."""
        return {sid for c in self.calls if c.role in roles for sid in FENCED_ID.findall(c.prompt)}

    def answer(self, role: str, prompt: str) -> dict[str, Any]:
        """The answer of ``role`` (a name of :data:`ROLE_OF_FIELD`) to ``prompt``.

        Raises:
            UnscriptedOutput: the scenario does not play the role.
        """
        answers: dict[str, Callable[[str], dict[str, Any]]] = {
            "planner": self.planner,
            "queries": self.queries,
            "hypothesis": self.hypothesis,
            "judge": self.judge,
            "outline": self.outline,
            "findings": self.findings,
            "summary": self.summary,
            "reflection": self.reflection,
            "rewriter": self.rewriter,
            "screener": self.screener,
        }
        return answers[role](prompt)

    def unscripted(self, role: str) -> UnscriptedOutput:
        """The error for a role this scenario does not play."""
        return UnscriptedOutput(f"{type(self).__name__} does not script the {role}")

    # the answers: a scenario overrides those of the roles it plays
    def planner(self, prompt: str) -> dict[str, Any]:
        """``refined_question``, ``checklist`` (``key``, ``description``), ``queries``,
        ``key_terms``."""
        raise self.unscripted("planner")

    def queries(self, prompt: str) -> dict[str, Any]:
        """``queries`` of the search round named on the prompt's ``Search round:`` line."""
        raise self.unscripted("query generator")

    def hypothesis(self, prompt: str) -> dict[str, Any]:
        """``hypotheses`` (``statement``, ``confidence``, supporting and contradicting ids)."""
        raise self.unscripted("hypothesis generator")

    def judge(self, prompt: str) -> dict[str, Any]:
        """``mechanism_score``, ``clinical_evidence_score``, ``sufficient``,
        ``recommendation``, ``next_queries``, ``reasoning``."""
        raise self.unscripted("judge")

    def outline(self, prompt: str) -> dict[str, Any]:
        """The writer's ``title`` and ``outline`` (``heading``, ``evidence_ids``)."""
        raise self.unscripted("writer's outline")

    def findings(self, prompt: str) -> dict[str, Any]:
        """A findings section's ``content``, citing ids as ``[E1]``."""
        raise self.unscripted("writer's sections")

    def summary(self, prompt: str) -> dict[str, Any]:
        """``executive_summary``, ``limitations``, ``conclusion``."""
        raise self.unscripted("writer's summary")

    def reflection(self, prompt: str) -> dict[str, Any]:
        """``items`` (checklist status), ``follow_up_queries``, ``reasoning``."""
        raise self.unscripted("reflection")

    def rewriter(self, prompt: str) -> dict[str, Any]:
        """``rewritten_sentence`` ("" declines: grounding removes the sentence)."""
        raise self.unscripted("grounding rewriter")

    def screener(self, prompt: str) -> dict[str, Any]:
        """The search agent's ``screened``, ``next_queries``, ``progress`` (by default
        :attr:`screening`'s: every record relevant)."""
        return self.screening.answer("screener", prompt)
