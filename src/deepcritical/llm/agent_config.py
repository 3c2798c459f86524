"""Settings shared by every LLM agent (model, retries, timeout, usage tracker) and the one
place that builds a role's :class:`~deepcritical.llm.runner.StructuredAgent` from them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

from pydantic_ai.models import Model

from deepcritical.llm.runner import StructuredAgent
from deepcritical.llm.structured import OutputStrategy
from deepcritical.llm.usage import UsageTracker

__all__ = ["LLMConfig"]

DepsT = TypeVar("DepsT")
OutputT = TypeVar("OutputT")

NO_DEPS: type[None] = type(None)
"""The ``deps_type`` of a role whose calls carry no context (``deps`` is ``None``)."""


@dataclass
class LLMConfig:
    """How LLM agents call their model.

    Attributes:
        model: the pydantic-ai model (:func:`deepcritical.llm.providers.build_model`).
        retries: invalid outputs sent back to the model before :class:`AgentOutputError`.
        timeout_seconds: wall-clock limit of one agent call, retries included.
        usage: tracker shared by the agents of one :class:`AgentSet`.
        output: how structured output is asked for (:mod:`deepcritical.llm.structured`;
            ``auto`` already resolved).
        context_tokens: the model's context window in tokens (``None``: unknown, no check).
        max_output_tokens: most tokens of one answer (``None``: the provider's default).
    """

    model: Model
    retries: int = 2
    timeout_seconds: float | None = 120.0
    usage: UsageTracker = field(default_factory=UsageTracker)
    output: OutputStrategy = "tool"
    context_tokens: int | None = None
    max_output_tokens: int | None = None

    @overload
    def structured(
        self,
        role: str,
        output_type: type[OutputT],
        *,
        validator: Callable[[None, OutputT], OutputT] | None = None,
    ) -> StructuredAgent[None, OutputT]: ...

    @overload
    def structured(
        self,
        role: str,
        output_type: type[OutputT],
        deps_type: type[DepsT],
        *,
        validator: Callable[[DepsT, OutputT], OutputT] | None = None,
    ) -> StructuredAgent[DepsT, OutputT]: ...

    def structured(
        self,
        role: str,
        output_type: type[Any],
        deps_type: type[Any] = NO_DEPS,
        *,
        validator: Callable[[Any, Any], Any] | None = None,
    ) -> StructuredAgent[Any, Any]:
        """The structured-output agent of one role, calling :attr:`model` with this
        config's retries, timeout and usage tracker.

        Args:
            role: name in errors, logs and usage records (``"judge"``, ``"writer.outline"``).
            output_type: pydantic model the output must validate against.
            deps_type: type of the per-call context handed to ``validator`` (default: none,
                the call's ``deps`` is ``None``).
            validator: extra check ``(deps, output) -> output`` after pydantic validation; it
                may fix the output or raise :class:`pydantic_ai.ModelRetry`.

        Returns:
            A :class:`StructuredAgent` whose ``run`` raises ``AgentOutputError`` (output still
            invalid after ``retries``) or ``AgentModelError`` (provider error, timeout).
        """
        return StructuredAgent(
            role,
            self.model,
            output_type,
            deps_type,
            retries=self.retries,
            timeout_seconds=self.timeout_seconds,
            usage=self.usage,
            validator=validator,
            output=self.output,
            context_tokens=self.context_tokens,
            max_output_tokens=self.max_output_tokens,
        )
