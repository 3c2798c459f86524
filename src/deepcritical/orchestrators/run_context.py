"""What the step modules of a run need of it: :class:`RunContext`.

:class:`~deepcritical.orchestrators.run.ResearchRun` holds a run's state and the sequence of
its steps; the larger steps live in modules of their own (screening, full texts, citation
tracking, model appraisal, the report). They take the run as a :class:`RunContext`, this
narrow protocol, so they never import the run module and the run module imports them: the
dependencies point one way.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from deepcritical.agents.search import SearchAgent
from deepcritical.config import Settings
from deepcritical.events import ResearchEvent, WarningData
from deepcritical.evidence.store import EvidenceStore
from deepcritical.models import Evidence, ResearchPlan, UsageReport
from deepcritical.orchestrators.agent_set import AgentSet
from deepcritical.orchestrators.channel import EventChannel
from deepcritical.orchestrators.deps import RunDeps
from deepcritical.orchestrators.flow import FlowLog
from deepcritical.orchestrators.progress import RunAccounting, RunState
from deepcritical.state.sources import SourceCollector

__all__ = ["RunContext"]

T = TypeVar("T")


class RunContext(Protocol):
    """A run as its step modules see it: its dependencies, settings, evidence store, state,
    accounting and flow of records; its plan; the events it emits (and its channel, for a
    step that publishes them itself); role calls with the
    extractive fallback; and the on-topic part of its store."""

    deps: RunDeps
    settings: Settings
    agents: AgentSet
    search: SearchAgent
    store: EvidenceStore
    state: RunState
    accounting: RunAccounting
    flow_log: FlowLog
    question: str
    source_names: list[str]
    orchestrator: str
    llm_label: str
    events: EventChannel

    @property
    def plan(self) -> ResearchPlan:
        """The research plan (the run has one once planning succeeded)."""
        ...

    def emit(self, event: ResearchEvent) -> None:
        """Emit ``event`` (the consumer gets it when the current step ends)."""
        ...

    def warn(self, note: str, *, data: WarningData | None = None) -> None:
        """Record ``note`` in the report metadata and emit it as a ``warning``."""
        ...

    async def guarded(
        self, role: str, call: Callable[[AgentSet], Awaitable[T]], stage: str | None = None
    ) -> T | None:
        """``call`` on the run's agents, falling back to the extractive ones with a warning;
        ``None`` when both fail."""
        ...

    def on_topic(self) -> list[Evidence]:
        """The store's items that are neither off-topic nor retracted, in store order."""
        ...

    def on_topic_ids(self) -> list[str]:
        """Ids of :meth:`on_topic`."""
        ...

    def retracted(self) -> list[Evidence]:
        """The store's items a source marks as retracted (not off-topic), in store order."""
        ...

    def elapsed(self) -> float:
        """Seconds since the run started."""
        ...

    def usage_report(self) -> UsageReport:
        """LLM, search and time usage of the run so far."""
        ...

    def source_collector(self) -> SourceCollector:
        """The run's source collector, its syllabus set from the plan's checklist."""
        ...
