"""Settings shared by every LLM agent: model, retries, timeout, usage tracker."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic_ai.models import Model

from deepcritical.llm.usage import UsageTracker

__all__ = ["LLMConfig"]


@dataclass
class LLMConfig:
    """How LLM agents call their model.

    Attributes:
        model: the pydantic-ai model (:func:`deepcritical.llm.providers.build_model`).
        retries: invalid outputs sent back to the model before :class:`AgentOutputError`.
        timeout_seconds: wall-clock limit of one agent call, retries included.
        usage: tracker shared by the agents of one :class:`AgentSet`.
    """

    model: Model
    retries: int = 2
    timeout_seconds: float | None = 120.0
    usage: UsageTracker = field(default_factory=UsageTracker)
