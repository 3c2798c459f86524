"""The event model both orchestrators emit while a run streams.

Consumers (CLI, web UI, Python callers) iterate ``async for event in research(...)``; the last
event is ``done`` (carrying the :class:`~deepcritical.models.RunResult`) or ``error``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from deepcritical.models import RunResult, utc_now

EventType = Literal[
    "started",
    "planning",
    "searching",
    "evidence_added",
    "hypothesis",
    "judge_assessment",
    "reflection",
    "writing",
    "report_section",
    "manager",
    "warning",
    "error",
    "done",
]


class ResearchEvent(BaseModel):
    """One progress event.

    ``message`` is a short human-readable line; ``data`` holds the structured details of the
    type (e.g. ``searching``: ``{"queries": [...], "per_source": {"pubmed": 10}}``). ``round``
    is the 1-based search round, 0 before the first. ``result`` is set on ``done`` only.

    ``writing`` marks the start of the report's writing (``{"evidence": n}``: the items
    chosen for it); ``report_section`` events follow, one per finding section, once the report
    is checked.

    ``manager`` events come from the ``magentic`` orchestrator only: its manager's plan and
    each of its decisions (``{"next_speaker": ..., "instruction": ..., "satisfied": ...}``).
    The ``done`` event's ``data`` holds ``stop_reason`` and ``usage`` (see
    :class:`~deepcritical.models.UsageReport`), for either orchestrator.
    """

    type: EventType
    message: str
    round: int = 0
    data: dict[str, Any] = Field(default_factory=dict)
    timestamp: datetime = Field(default_factory=utc_now)
    result: RunResult | None = None
