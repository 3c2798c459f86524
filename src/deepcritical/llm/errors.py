"""Errors the LLM agents raise, so the orchestrator can catch one family and fall back.

Every failure of a pydantic-ai run inside an agent of this package surfaces as an
:class:`AgentError` subclass (never a raw pydantic-ai exception):

- :class:`AgentOutputError`: the model kept returning output that does not validate (invalid
  JSON, missing fields, out-of-range values) after the configured retries.
- :class:`AgentModelError`: the model could not be reached or did not answer in time (provider
  HTTP error, authentication, rate limit, timeout, usage limit).
"""

from __future__ import annotations

__all__ = ["AgentError", "AgentModelError", "AgentOutputError"]


class AgentError(RuntimeError):
    """An LLM agent failed. ``role`` names the agent (``"planner"``, ``"judge"``, ...)."""

    def __init__(self, role: str, message: str) -> None:
        super().__init__(f"{role}: {message}")
        self.role = role
        self.reason = message


class AgentOutputError(AgentError):
    """The model's output stayed invalid after all retries (e.g. it keeps returning bad JSON)."""


class AgentModelError(AgentError):
    """The model call itself failed: provider/API error, timeout or usage limit."""
