"""The frameworks' own OpenTelemetry instrumentation, switched on when tracing is
(:mod:`deepcritical.telemetry.tracing`): pydantic-ai's spans of every agent run and model
request (the OTel GenAI conventions: model, tokens, ``gen_ai.agent.name`` = the role) and
agent-framework's spans of the Magentic manager's agents and workflow. Prompt and completion
text only with ``DEEPCRITICAL_TRACE_CONTENT=1``."""

from __future__ import annotations

from agent_framework.observability import enable_instrumentation
from pydantic_ai import Agent
from pydantic_ai.models.instrumented import InstrumentationSettings

from deepcritical.telemetry.tracing import trace_content, tracer_provider

__all__ = ["instrument_frameworks"]

_applied: tuple[object, bool] | None = None
"""The provider and content flag the frameworks were last set up for."""


def instrument_frameworks() -> None:
    """Point pydantic-ai (every agent) and agent-framework at the installed provider, or
    switch pydantic-ai's instrumentation off when tracing is off. Cheap when nothing changed
    (called at the start of every run)."""
    global _applied
    provider = tracer_provider()
    content = trace_content()
    if _applied == (provider, content):
        return
    _applied = (provider, content)
    if provider is None:
        Agent.instrument_all(False)
        return
    Agent.instrument_all(
        InstrumentationSettings(
            tracer_provider=provider,
            include_content=content,
            include_binary_content=content,
        )
    )
    enable_instrumentation(enable_sensitive_data=content)
