"""Small hand-made runs for the UI unit tests: evidence (one hostile), a plan, a report citing
them, and fake ``research`` functions streaming scripted events."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from deepcritical.config import Settings
from deepcritical.events import ResearchEvent
from deepcritical.models import (
    ChecklistItem,
    ChecklistStatus,
    Citation,
    Evidence,
    Hypothesis,
    Reference,
    ReportMetadata,
    ReportSection,
    ResearchPlan,
    ResearchReport,
    RunResult,
)

OPEN_STATUS, OPEN_REPORT, OPEN_FOLLOW_UPS = -9, -8, -7
"""Where History's open handler puts, after the run outputs, its status line, the report below
the table and that report's follow-ups (then the six values of the follow-up panel)."""
PANEL_RUN_ID, PANEL_NOTE, PANEL_BOX, PANEL_ASK, PANEL_STATUS, PANEL_ANSWERS = range(-6, 0)
"""Where the follow-up panel's values end History's open handler's tuples."""

HOSTILE = "<script>window.__xss=1</script><img src=x onerror=alert(1)>"


def evidence(n: int, title: str, content: str, url: str | None = None) -> Evidence:
    return Evidence(
        id=f"E{n}",
        content=content,
        citation=Citation(source="local", id=str(9000 + n), title=title, year=2020, url=url),
        relevance=n / 10,
        sources=["local"],
        checklist_keys=["incidence"] if n == 1 else [],
    )


def run_result(stop_reason: str = "sufficient", iterations: int = 2) -> RunResult:
    ev = [
        evidence(
            1,
            f"Metformin and cancer {HOSTILE}",
            "Metformin users had fewer cancers. " * 20,
            url="javascript:alert(1)",
        ),
        evidence(2, "AMPK and mTOR", "AMPK inhibits mTOR.", url="https://example.org/2"),
    ]
    plan = ResearchPlan(
        question="Q?",
        refined_question="Q?",
        checklist=[
            ChecklistItem(
                key="incidence", description="Cancer incidence", status=ChecklistStatus.SATISFIED
            ),
            ChecklistItem(key="trials", description="Randomised trials"),
        ],
    )
    report = ResearchReport(
        title="Metformin review",
        research_question="Does metformin lower cancer risk?",
        executive_summary="Metformin lowers risk [E1].",
        hypotheses_tested=[
            Hypothesis(
                id="H1",
                statement="AMPK activation",
                supporting_evidence_ids=["E1", "E2"],
                contradicting_evidence_ids=["E2"],
            ),
        ],
        findings=[ReportSection(heading="Mechanism", content="AMPK inhibits mTOR [E2].")],
        references=[
            Reference(evidence_id="E1", citation=ev[0].citation),
            Reference(evidence_id="E2", citation=ev[1].citation),
        ],
        metadata=ReportMetadata(stop_reason=stop_reason, iterations=iterations),
    )
    return RunResult(report=report, plan=plan, evidence=ev)


def script(result: RunResult | None, run_id: str | None = "run-42") -> list[ResearchEvent]:
    started: dict[str, Any] = {"sources": ["local"]}
    if run_id:
        started["run_id"] = run_id
    events = [
        ResearchEvent(type="started", message="Researching", data=started),
        ResearchEvent(
            type="planning",
            message="Plan",
            data={
                "refined_question": "How common is it?",
                "checklist": [
                    {"key": "incidence", "description": "incidence", "status": "unsatisfied"},
                    {"key": "trials", "description": "trials"},
                ],
            },
        ),
        ResearchEvent(
            type="searching",
            round=1,
            message="Round 1",
            data={"queries": ["a", "b"], "sources": ["local", "pubmed"]},
        ),
        ResearchEvent(
            type="evidence_added",
            round=1,
            message="2 new",
            data={
                "per_source": {"local": 2},
                "total": 2,
                "on_topic_total": 1,
                "coverage": 0.5,
                "checklist": {"incidence": "satisfied", "trials": "unsatisfied"},
            },
        ),
    ]
    if result is None:
        return [*events, ResearchEvent(type="error", message="writing failed: boom")]
    return [*events, ResearchEvent(type="done", message="Report ready", result=result)]


@dataclass
class FakeResearch:
    """A ``research(question, settings, context=..., owner=...)`` streaming ``events``;
    records calls, their owners and whether its generator was closed."""

    events: Sequence[ResearchEvent]
    raise_at: int | None = None
    calls: list[tuple[str, Settings, str | None]] = field(default_factory=list)
    owners: list[str | None] = field(default_factory=list)
    closed: int = 0

    def __call__(
        self,
        question: str,
        settings: Settings,
        *,
        context: str | None = None,
        owner: str | None = None,
    ) -> AsyncIterator[ResearchEvent]:
        self.calls.append((question, settings, context))
        self.owners.append(owner)
        return self._stream()

    async def _stream(self) -> AsyncIterator[ResearchEvent]:
        try:
            for i, event in enumerate(self.events):
                if self.raise_at == i:
                    raise RuntimeError("source exploded")
                yield event
        finally:
            self.closed += 1
