"""Errors the LLM agents raise, so the orchestrator can catch one family and fall back.

Every failure of a pydantic-ai run inside an agent of this package surfaces as an
:class:`AgentError` subclass (never a raw pydantic-ai exception):

- :class:`AgentOutputError`: the model kept returning output that does not validate (invalid
  JSON, missing fields, out-of-range values) after the configured retries.
- :class:`AgentModelError`: the model could not be reached or did not answer in time (provider
  HTTP error, authentication, rate limit, timeout, usage limit).

:func:`describe_error` is the one text of a failure that is shown, stored or logged: the body
of a model server's error answer is never in it (the server may be a visitor's, or an internal
one that answers with its internals).
"""

from __future__ import annotations

__all__ = [
    "AgentError",
    "AgentModelError",
    "AgentOutputError",
    "describe_error",
    "last_output_problem",
]

MAX_PROBLEM_CHARS = 300
"""Longest text of :func:`last_output_problem`."""

PROVIDER_MODULES = frozenset(
    {"openai", "anthropic", "httpx", "httpcore", "agent_framework", "agent_framework_openai"}
)
"""Top-level packages whose exceptions may carry a model server's answer."""

_SAFE_PYDANTIC_AI = frozenset({"UsageLimitExceeded", "UserError"})
"""pydantic-ai exceptions whose message is pydantic-ai's own (no server text)."""


def _status_code(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    if status is None:
        status = getattr(getattr(exc, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


def _from_provider(exc: BaseException) -> bool:
    package = type(exc).__module__.split(".", 1)[0]
    if package == "pydantic_ai":
        return type(exc).__name__ not in _SAFE_PYDANTIC_AI
    return package in PROVIDER_MODULES or package.startswith("agent_framework")


def _provider_cause(exc: BaseException) -> BaseException | None:
    """``exc`` or the first exception of its cause/context chain raised by a provider SDK."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if _from_provider(current):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def last_output_problem(exc: BaseException) -> str | None:
    """Why the last output of a failed structured call was sent back, or ``None``.

    Read from the retry pydantic-ai carries in ``exc``'s cause chain: the validation errors as
    ``"location: message"`` (the offending values are left out: they are the model's text),
    or the message a validator gave (:class:`pydantic_ai.ModelRetry`); at most
    :data:`MAX_PROBLEM_CHARS` characters.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        content = getattr(getattr(current, "tool_retry", None), "content", None)
        if isinstance(content, str) and content.strip():
            return _clip(" ".join(content.split()))
        if isinstance(content, list) and content:
            parts = [
                f"{'.'.join(str(x) for x in e.get('loc', ())) or 'output'}: {e.get('msg', '')}"
                for e in content
                if isinstance(e, dict)
            ]
            return _clip("; ".join(parts)) if parts else None
        current = current.__cause__ or current.__context__
    return None


def _clip(text: str) -> str:
    return text if len(text) <= MAX_PROBLEM_CHARS else text[: MAX_PROBLEM_CHARS - 1] + "…"


def describe_error(exc: BaseException) -> str:
    """``"TypeName: message"`` for ``exc``, safe to show to a visitor and to store or log.

    An :class:`AgentError` keeps its message (built from this function). An exception raised
    by a provider SDK or HTTP client (openai, anthropic, httpx, agent-framework, pydantic-ai's
    model errors), or caused by one, is reduced to its type and HTTP status: e.g.
    ``"ModelHTTPError: the model server answered HTTP 401 (its answer is not shown)"``. Any
    other exception is shown as ``"TypeName: str(exc)"``. Never raises.
    """
    name = type(exc).__name__
    if isinstance(exc, AgentError):
        return f"{name}: {exc}"
    provider = _provider_cause(exc)
    if provider is None:
        return f"{name}: {exc}"
    status = _status_code(provider)
    if status is not None:
        return f"{name}: the model server answered HTTP {status} (its answer is not shown)"
    return f"{name}: the model server request failed ({type(provider).__name__}; details not shown)"


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
