"""A pure fold of :class:`~deepcritical.events.ResearchEvent` into what the web
app shows while a run streams: stage, round, queries issued per source, evidence found,
checklist coverage and the hypotheses as they form.

No Gradio here: :func:`fold` is a plain function from (view, event) to a new view, unit-tested
on its own; :mod:`deepcritical.ui.render` turns a view into HTML.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from deepcritical.events import (
    DoneData,
    ErrorData,
    EvidenceAddedData,
    EvidenceReadyData,
    HypothesisData,
    JudgeAssessmentData,
    PlanningData,
    PlanReadyData,
    ResearchEvent,
    SearchingData,
    StartedData,
    WarningData,
)
from deepcritical.models import RunResult, Screening

STAGES: dict[str, str] = {
    "started": "Starting",
    "planning": "Planning",
    "searching": "Searching",
    "evidence_added": "Screening evidence",
    "hypothesis": "Forming hypotheses",
    "judge_assessment": "Judging the evidence",
    "writing": "Writing the report",
    "report_section": "Writing the report",
    "plan_ready": "Waiting for the plan's review",
    "evidence_ready": "Waiting for the evidence's review",
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
    run id stays, so the run can be resumed). ``awaiting``: the review the run stopped
    for (``"plan"``, ``"evidence"``; ``""`` when none): such a run is ``finished`` for this
    page's stream (not failed) and waits for the user's decision.
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
    awaiting: str = ""
    error: str | None = None
    events: int = 0


def _coverage(checklist: dict[str, str]) -> float:
    if not checklist:
        return 0.0
    return sum(1 for s in checklist.values() if s == "satisfied") / len(checklist)


def _evidence_added(v: ProgressView, data: EvidenceAddedData) -> None:
    for source, hits in data.per_source.items():
        v.hits_per_source[source] = v.hits_per_source.get(source, 0) + hits
    v.sources_found = data.total
    v.on_topic = data.on_topic_total
    if data.checklist:
        v.checklist = dict(data.checklist)
    v.coverage = data.coverage


def _hypothesis(v: ProgressView, round_no: int, data: HypothesisData, message: str) -> None:
    h = HypothesisView(
        id=data.id or message,
        statement=data.statement or message,
        confidence=data.confidence,
        supporting=len(data.supporting_evidence_ids),
        contradicting=len(data.contradicting_evidence_ids),
    )
    if round_no != v.hypotheses_round:  # a new round's set replaces the last one
        v.hypotheses, v.hypotheses_round = [], round_no
    others = [x for x in v.hypotheses if x.id != h.id]
    index = next((i for i, x in enumerate(v.hypotheses) if x.id == h.id), len(others))
    v.hypotheses = [*others[:index], h, *others[index:]]


def _done(v: ProgressView, result: RunResult | None) -> None:
    v.finished = True
    if result is None:
        return
    v.sources_found = max(v.sources_found, len(result.evidence))
    v.on_topic = sum(e.screening != Screening.OFF_TOPIC for e in result.evidence)
    if result.plan is not None:
        v.checklist = {c.key: c.status.value for c in result.plan.checklist}
        v.coverage = result.plan.coverage()


def _apply(v: ProgressView, event: ResearchEvent) -> None:
    """Fold the typed data of ``event`` into ``v`` (one case per event type that changes
    more than the stage and the log)."""
    match event.data:
        case StartedData(run_id=run_id):
            v.run_id = run_id or v.run_id
        case PlanningData(checklist=items):
            v.checklist = {c.key: c.status.value for c in items}
            v.coverage = _coverage(v.checklist)
        case SearchingData(queries=queries, sources=sources):
            for source in sources:
                v.queries_per_source[source] = v.queries_per_source.get(source, 0) + len(queries)
        case EvidenceAddedData() as data:
            _evidence_added(v, data)
        case HypothesisData() as data:
            _hypothesis(v, event.round, data, event.message)
        case JudgeAssessmentData() as data:
            if not v.checklist:
                v.coverage = data.coverage
            v.judge_sufficient = data.sufficient
            v.judge_reason = data.reason
        case WarningData():
            v.warnings = [*v.warnings, event.message][-MAX_LOG:]
        case PlanReadyData():
            v.finished, v.awaiting = True, "plan"
        case EvidenceReadyData():
            v.finished, v.awaiting = True, "evidence"
        case DoneData():
            _done(v, event.result)
        case ErrorData():
            v.finished = True
            v.failed = True
            v.error = event.message


def fold(view: ProgressView, event: ResearchEvent) -> ProgressView:
    """The view after ``event``; ``view`` is not modified.

    Reads the typed ``data`` of each orchestrator event type (see
    :mod:`deepcritical.events`); a type that carries nothing to show only moves the stage,
    the round and the log.
    """
    v = view.model_copy(deep=True)
    v.events += 1
    if v.awaiting:  # the run goes on after its review
        v.finished, v.awaiting = False, ""
    v.stage = STAGES.get(event.type, v.stage)
    v.round = max(v.round, event.round)
    if event.type != "report_section":
        v.log = [*v.log, event.message][-MAX_LOG:]
    _apply(v, event)
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
