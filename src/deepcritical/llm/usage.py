"""Token and request accounting per agent role, read by the orchestrator and the UI.

The LLM agents record the pydantic-ai ``RunUsage`` of every run (failed runs included, with
what they consumed before failing) into one :class:`UsageTracker` shared by an
:class:`~deepcritical.orchestrators.agent_set.AgentSet`.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass

from pydantic_ai.usage import RunUsage

__all__ = ["RoleUsage", "UsageTracker", "reasoning_tokens"]


def reasoning_tokens(usage: RunUsage) -> int:
    """Reasoning tokens of ``usage``: pydantic-ai's ``output_reasoning_tokens``, else the
    ``reasoning_tokens`` detail (OpenAI ``completion_tokens_details.reasoning_tokens``)."""
    counted = int(getattr(usage, "output_reasoning_tokens", 0) or 0)
    return counted or int(usage.details.get("reasoning_tokens", 0))


@dataclass
class RoleUsage:
    """Usage of one role, summed over its runs.

    Attributes:
        runs: agent runs started (one per agent call; a run may make several requests).
        failures: runs that ended in an error.
        requests: model requests made (retries included).
        input_tokens: prompt tokens, as reported by the provider.
        output_tokens: completion tokens, as reported by the provider (reasoning included).
        reasoning_tokens: the part of ``output_tokens`` spent reasoning (OpenAI's
            ``completion_tokens_details.reasoning_tokens``; 0 when the provider does not say).
    """

    runs: int = 0
    failures: int = 0
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def add(self, other: RoleUsage) -> None:
        """Add ``other`` into this record, field by field."""
        self.runs += other.runs
        self.failures += other.failures
        self.requests += other.requests
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.reasoning_tokens += other.reasoning_tokens


class UsageTracker:
    """Per-role usage of the LLM agents of one run (thread-safe; extractive agents record none)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._roles: dict[str, RoleUsage] = {}

    def record(self, role: str, usage: RunUsage, *, failed: bool = False) -> None:
        """Add one run's ``usage`` to ``role`` (``failed``: the run raised)."""
        with self._lock:
            entry = self._roles.setdefault(role, RoleUsage())
            entry.runs += 1
            entry.failures += int(failed)
            entry.requests += usage.requests
            entry.input_tokens += usage.input_tokens
            entry.output_tokens += usage.output_tokens
            entry.reasoning_tokens += reasoning_tokens(usage)

    def by_role(self) -> dict[str, RoleUsage]:
        """Role -> a copy of its usage, in order of first use."""
        with self._lock:
            return {role: RoleUsage(**asdict(u)) for role, u in self._roles.items()}

    def total(self) -> RoleUsage:
        """Usage summed over every role."""
        out = RoleUsage()
        for usage in self.by_role().values():
            out.add(usage)
        return out

    def as_dict(self) -> dict[str, dict[str, int]]:
        """JSON-ready ``{role: {runs, failures, requests, input_tokens, output_tokens,
        reasoning_tokens}}``, plus
        a ``"total"`` entry."""
        roles = self.by_role()
        data = {role: asdict(u) for role, u in roles.items()}
        data["total"] = asdict(self.total())
        return data
