"""A pure fold of :class:`~deepcritical.events.ResearchEvent` into what the web
app shows while a run streams: stage, round, queries issued per source, evidence found,
checklist coverage and the hypotheses as they form.

No Gradio here: :func:`fold` is a plain function from (view, event) to a new view, unit-tested
on its own; :mod:`deepcritical.ui.render` turns a view into HTML.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from deepcritical.events import ResearchEvent
from deepcritical.models import Screening

STAGES: dict[str, str] = {
    "started": "Starting",
    "planning": "Planning",
    "searching": "Searching",
    "evidence_added": "Screening evidence",
    "hypothesis": "Forming hypotheses",
    "judge_assessment": "Judging the evidence",
    "writing": "Writing the report",
    "report_section": "Writing the report",
    "done": "Report ready",
    "error": "Failed",
    "stopped": "Stopped",
}
"""Event type -> the stage label shown; ``manager`` and ``warning`` keep the current stage."""

MAX_LOG = 12
"""Recent event messages kept in the view (oldest dropped first)."""


class HypothesisView(BaseModel):
    """A hypothesis as shown while the run streams (counts of evidence ids)."""

    id: str
    statement: str
    confidence: float = 0.0
    supporting: int = 0
    contradicting: int = 0


class ProgressView(BaseModel):
    """What the progress panel shows; built only by :func:`fold` (and ended by :func:`fail`
    or :func:`stop`).

    ``queries_per_source``: search queries sent to each source so far (a query sent to 4
    sources counts once per source). ``hits_per_source``: results each source returned in
    the last round that reported them, summed over rounds. ``sources_found``: evidence items
    in the run's store (the unique records, duplicates merged); ``on_topic``: those screening
    kept. ``coverage``: fraction (0..1) of checklist items satisfied. ``judge_sufficient``
    and ``judge_reason``: the judge's last verdict on the evidence and its one-line reason
    (``None`` before the first).
    ``checklist``: item key -> status (``unsatisfied``, ``partial``, ``satisfied``).
    ``hypotheses``: the current set (each round re-emits the whole set, which replaces the
    previous round's). ``stopped``: the user stopped the run (not a failure: no error; the
    run id stays, so the run can be resumed).
    """

    run_id: str | None = None
    stage: str = "Waiting"
    round: int = 0
    max_rounds: int | None = None
    queries_per_source: dict[str, int] = Field(default_factory=dict)
    hits_per_source: dict[str, int] = Field(default_factory=dict)
    sources_found: int = 0
    on_topic: int = 0
    coverage: float = 0.0
    judge_sufficient: bool | None = None
    judge_reason: str = ""
    checklist: dict[str, str] = Field(default_factory=dict)
    hypotheses: list[HypothesisView] = Field(default_factory=list)
    hypotheses_round: int = -1
    warnings: list[str] = Field(default_factory=list)
    log: list[str] = Field(default_factory=list)
    finished: bool = False
    failed: bool = False
    stopped: bool = False
    error: str | None = None
    events: int = 0


def _checklist(items: Any) -> dict[str, str]:
    """``planning`` carries ``[{"key":..., "status":...}, ...]``; ``evidence_added`` a dict."""
    if isinstance(items, dict):
        return {str(k): str(v) for k, v in items.items()}
    if isinstance(items, list):
        return {
            str(i["key"]): str(i.get("status", "unsatisfied"))
            for i in items
            if isinstance(i, dict) and "key" in i
        }
    return {}


def _coverage(checklist: dict[str, str]) -> float:
    if not checklist:
        return 0.0
    return sum(1 for s in checklist.values() if s == "satisfied") / len(checklist)


# Complexity: one branch per event type.
def fold(view: ProgressView, event: ResearchEvent) -> ProgressView:  # noqa: C901
    """The view after ``event``; ``view`` is not modified.

    Reads the ``data`` each orchestrator event type carries (see
    :mod:`deepcritical.events`); unknown or malformed data is ignored, never
    raised, because a display must not kill a run.
    """
    v = view.model_copy(deep=True)
    data = event.data or {}
    v.events += 1
    v.stage = STAGES.get(event.type, v.stage)
    v.round = max(v.round, event.round)
    if event.type not in {"report_section"}:
        v.log = [*v.log, event.message][-MAX_LOG:]
    if event.type == "started":
        run_id = data.get("run_id")
        v.run_id = str(run_id) if run_id else v.run_id
    elif event.type == "planning":
        v.checklist = _checklist(data.get("checklist"))
        v.coverage = _coverage(v.checklist)
    elif event.type == "searching":
        queries = data.get("queries") or []
        for source in data.get("sources") or []:
            v.queries_per_source[str(source)] = v.queries_per_source.get(str(source), 0) + len(
                queries
            )
    elif event.type == "evidence_added":
        for source, hits in (data.get("per_source") or {}).items():
            if isinstance(hits, int):
                v.hits_per_source[str(source)] = v.hits_per_source.get(str(source), 0) + hits
        if isinstance(data.get("total"), int):
            v.sources_found = data["total"]
        if isinstance(data.get("on_topic_total"), int):
            v.on_topic = data["on_topic_total"]
        checklist = _checklist(data.get("checklist"))
        if checklist:
            v.checklist = checklist
        coverage = data.get("coverage")
        v.coverage = float(coverage) if isinstance(coverage, int | float) else _coverage(checklist)
    elif event.type == "hypothesis":
        h = HypothesisView(
            id=str(data.get("id") or event.message),
            statement=str(data.get("statement") or event.message),
            confidence=float(data.get("confidence") or 0.0),
            supporting=len(data.get("supporting_evidence_ids") or []),
            contradicting=len(data.get("contradicting_evidence_ids") or []),
        )
        if event.round != v.hypotheses_round:  # a new round's set replaces the last one
            v.hypotheses, v.hypotheses_round = [], event.round
        others = [x for x in v.hypotheses if x.id != h.id]
        index = next((i for i, x in enumerate(v.hypotheses) if x.id == h.id), len(others))
        v.hypotheses = [*others[:index], h, *others[index:]]
    elif event.type == "judge_assessment":
        coverage = data.get("coverage")
        if isinstance(coverage, int | float) and not v.checklist:
            v.coverage = float(coverage)
        v.judge_sufficient = bool(data.get("sufficient"))
        v.judge_reason = str(data.get("reason") or "")
    elif event.type == "warning":
        v.warnings = [*v.warnings, event.message][-MAX_LOG:]
    elif event.type == "done":
        v.finished = True
        result = event.result
        if result is not None:
            v.sources_found = max(v.sources_found, len(result.evidence))
            v.on_topic = sum(e.screening != Screening.OFF_TOPIC for e in result.evidence)
            if result.plan is not None:
                v.checklist = {c.key: c.status.value for c in result.plan.checklist}
                v.coverage = result.plan.coverage()
    elif event.type == "error":
        v.finished = True
        v.failed = True
        v.error = event.message
    return v


def fail(view: ProgressView, message: str) -> ProgressView:
    """The view of a run that ended with ``message`` outside the event stream (an exception
    before the first event, a cancelled run)."""
    return view.model_copy(
        update={"finished": True, "failed": True, "error": message, "stage": STAGES["error"]}
    )


def stop(view: ProgressView) -> ProgressView:
    """The view of a run the user stopped (*Stop*): stage "Stopped", finished, not failed and
    without an error, everything else (run id, counts, hypotheses) kept as it was."""
    return view.model_copy(
        update={"finished": True, "stopped": True, "failed": False, "error": None}
        | {"stage": STAGES["stopped"]}
    )
