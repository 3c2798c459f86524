"""Checkpoints a run from its event stream: :class:`RunRecorder`.

After every :class:`~deepcritical.events.ResearchEvent` the recorder writes, in
one transaction: the run row (status, progress 0..1, stage, refined question, checklist with
per-item status and evidence ids, iterations, metrics) and every evidence item of the run's
store that is new or changed since the last checkpoint, through
:meth:`~deepcritical.state.sources.SourceCollector.save_in` (relevant questions = the checklist
items it was assigned to; citation id = its evidence id), and appends the event to the run's
event log (:mod:`~deepcritical.state.event_log`). So whatever kills the process, the
database holds everything up to the last event. A ``plan_ready`` or ``evidence_ready`` event
leaves the run ``awaiting_review`` (its stream ends there; the user's review continues it).

A failing checkpoint never ends the run: the recorder logs it, turns the first failure into a
``warning`` event, and tries again at the next event.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.orm import Session

from deepcritical.events import (
    DoneData,
    ErrorData,
    EvidenceAddedData,
    PlanningData,
    ResearchEvent,
    SearchingData,
)
from deepcritical.evidence.identifiers import identifier_keys
from deepcritical.evidence.store import EvidenceStore
from deepcritical.llm.model_cache import CachedModel
from deepcritical.logs import get_logger
from deepcritical.models import ChecklistItem, utc_now
from deepcritical.state.cache import CachedSource, CallCache
from deepcritical.state.event_log import append_event
from deepcritical.state.run_store import AWAITING_REVIEW, RunStore
from deepcritical.state.sources import SourceCollector
from deepcritical.state.syllabus import Syllabus

__all__ = ["RunRecorder"]

log = get_logger(__name__)

STAGES = {
    "started": "starting",
    "planning": "planning",
    "searching": "searching",
    "evidence_added": "searching",
    "hypothesis": "hypothesising",
    "judge_assessment": "judging",
    "manager": "managing",
    "writing": "writing",
    "report_section": "writing",
    "plan_ready": "review_plan",
    "evidence_ready": "review_evidence",
    "done": "done",
    "error": "failed",
}

_FINAL_STATUS = {"max_rounds": "max_iterations", "time_budget": "time_budget"}
"""The run's status after its report, by stop reason (any other: ``completed``). A run that
stopped on its time budget stays resumable (with a fresh budget)."""


def _status(count: int, minimum: int) -> str:
    if count >= minimum:
        return "satisfied"
    return "partial" if count else "unsatisfied"


class RunRecorder:
    """Writes a run's checkpoints (see the module docstring).

    Args:
        runs: the run database.
        run_id: the run's id (its row exists).
        store: the run's evidence store (new items are read from it by id).
        collector: the run's source collector (its syllabus is set from the plan unless the
            run has a fixed one).
        max_rounds: the run's round limit (for ``progress``).
        model: the run's cached LLM, for the LLM call and token metrics.
        sources: the run's cached search sources, for the live call metrics.
        cache: the call cache, for hit/miss metrics.
        resumed_progress: the progress stored before a resume (progress never goes back).
        fixed_syllabus: the run collects for a fixed syllabus (not the plan's checklist).
        trace: the run's trace (``trace_id``, ``trace_span_id``, ``earlier_traces``), kept
            in its metrics; empty when tracing is off.
    """

    def __init__(
        self,
        runs: RunStore,
        run_id: str,
        store: EvidenceStore,
        collector: SourceCollector,
        *,
        max_rounds: int,
        model: CachedModel | None = None,
        sources: Sequence[CachedSource] = (),
        cache: CallCache | None = None,
        resumed_progress: float = 0.0,
        fixed_syllabus: bool = False,
        trace: Mapping[str, Any] | None = None,
    ) -> None:
        self.trace = dict(trace or {})
        self.fixed_syllabus = fixed_syllabus
        self.runs = runs
        self.run_id = run_id
        self.store = store
        self.collector = collector
        self.max_rounds = max(max_rounds, 1)
        self.model = model
        self.sources = list(sources)
        self.cache = cache
        self.progress = resumed_progress
        self.iterations: list[dict[str, Any]] = []
        self.checklist_spec: list[ChecklistItem] = []
        self.refined_question: str | None = None
        self.queries_per_source: dict[str, int] = {}
        self.events = 0
        self.usage: dict[str, Any] | None = None
        # evidence id -> (checklist questions, identifier keys, passages) as last saved
        self._saved: dict[str, tuple[tuple[str, ...], tuple[str, ...], int]] = {}
        self._warned = False

    # --- lifecycle ----------------------------------------------------------------------

    def begin(self) -> None:
        """Mark the run ``in_progress`` and clear its error (a resume's attempt was counted
        when it claimed the run: :func:`~deepcritical.state.lease.claim_run`)."""

        def work(session: Session) -> None:
            row = self.runs.require_row(session, self.run_id)
            row.status = "in_progress"
            row.error = None
            row.finished_at = None
            row.updated_at = utc_now()

        self.runs.transact(work)

    def end(self, status: str, error: str | None = None) -> None:
        """Set a final ``status`` (``failed``, ``cancelled``) unless the run already finished
        or failed by an ``error`` event; never raises (logs instead)."""

        def work(session: Session) -> None:
            row = self.runs.require_row(session, self.run_id)
            if row.status != "in_progress":
                return
            row.status = status
            row.error = error
            row.updated_at = utc_now()
            row.finished_at = utc_now()

        try:
            self.runs.transact(work)
        except Exception:
            log.exception("could not record the end of the run", run_id=self.run_id)

    async def record(self, event: ResearchEvent) -> ResearchEvent | None:
        """Checkpoint after ``event`` (in a worker thread); a ``warning`` event to pass on
        when the first checkpoint fails, else ``None``."""
        try:
            await asyncio.to_thread(self.checkpoint, event)
        except Exception as exc:
            log.exception("checkpoint failed", run_id=self.run_id)
            if not self._warned:
                self._warned = True
                return ResearchEvent(
                    type="warning",
                    round=event.round,
                    message=f"could not save the run's progress: {type(exc).__name__}: {exc}"[:500],
                )
        return None

    # --- one checkpoint -----------------------------------------------------------------

    def checkpoint(self, event: ResearchEvent) -> None:
        """Fold ``event`` into the run's state and write it with the new sources; append it to
        the run's event log."""
        self.events += 1
        self._observe(event)
        pending = self._pending_sources()

        def work(session: Session) -> None:
            for evidence_id, questions, keys in pending:
                item = self.store.require(evidence_id)
                c = item.citation
                self.collector.save_in(
                    session,
                    c.source,
                    c.id,
                    c.url,
                    c.display_title(),
                    questions,
                    [item.snippet(300)] if item.content.strip() else [],
                    citation_id=item.id,
                    identifiers=keys,
                    evidence=item.model_dump(mode="json"),
                    allow_unassigned=True,
                )
            self._write_row(session, event)
            append_event(session, self.run_id, event)

        self.runs.transact(work)
        for evidence_id, questions, keys in pending:
            passages = len(self.store.require(evidence_id).passages)
            self._saved[evidence_id] = (tuple(questions), tuple(keys), passages)

    def _observe(self, event: ResearchEvent) -> None:
        data = event.data
        if isinstance(data, PlanningData):
            self.refined_question = data.refined_question
            self.checklist_spec = [c.model_copy(deep=True) for c in data.checklist]
            if self.collector.syllabus is None or not self.fixed_syllabus:
                self.collector.syllabus = Syllabus.from_checklist(self.checklist_spec)
        elif isinstance(data, SearchingData):
            queries, sources = list(data.queries), list(data.sources)
            for name in sources:
                self.queries_per_source[name] = self.queries_per_source.get(name, 0) + len(queries)
            self.iterations = [i for i in self.iterations if i["round"] != event.round]
            self.iterations.append({"round": event.round, "queries": queries, "sources": sources})
        elif isinstance(data, EvidenceAddedData):
            tracked = data.citation_tracking
            self._iteration(event.round).update(
                {
                    "results_per_source": dict(data.per_source),
                    "new_items": data.added,
                    "merged": data.merged,
                    "total_items": data.total,
                    "coverage": data.coverage,
                    "checklist": dict(data.checklist),
                    **(
                        {"citation_tracking": tracked.model_dump(mode="json")}
                        if tracked is not None
                        else {}
                    ),
                }
            )
        elif event.type == "judge_assessment":
            self._iteration(event.round)["judge"] = event.message[:500]
        elif isinstance(data, DoneData):
            self.usage = data.usage.model_dump(mode="json")
        self.progress = max(self.progress, self._progress_of(event))

    def _iteration(self, round_no: int) -> dict[str, Any]:
        for item in self.iterations:
            if item["round"] == round_no:
                return item
        entry: dict[str, Any] = {"round": round_no, "queries": [], "sources": []}
        self.iterations.append(entry)
        return entry

    def _progress_of(self, event: ResearchEvent) -> float:
        span = 0.75 / self.max_rounds
        r = max(event.round, 1)
        by_type = {
            "started": 0.02,
            "planning": 0.08,
            "searching": 0.1 + span * (r - 1),
            "evidence_added": 0.1 + span * (r - 0.5),
            "hypothesis": 0.1 + span * (r - 0.25),
            "judge_assessment": 0.1 + span * r,
            "writing": 0.87,
            "report_section": 0.9,
            "done": 1.0,
        }
        return min(by_type.get(event.type, 0.0), 1.0)

    def _pending_sources(self) -> list[tuple[str, list[str], list[str]]]:
        valid = set(self.collector.syllabus.keys) if self.collector.syllabus else set()
        pending = []
        for item in self.store.all():
            questions = [k for k in item.checklist_keys if k in valid]
            keys = identifier_keys(item.citation)
            saved = (tuple(questions), tuple(keys), len(item.passages))
            if self._saved.get(item.id) != saved:  # new, reassigned, or its full text read
                pending.append((item.id, questions, keys))
        return pending

    def _checklist(self) -> list[dict[str, Any]]:
        ids: dict[str, list[str]] = {}
        for item in self.store.all():
            for key in item.checklist_keys:
                ids.setdefault(key, []).append(item.id)
        return [
            {
                "key": c.key,
                "description": c.description,
                "min_evidence": c.min_evidence,
                "evidence_ids": ids.get(c.key, []),
                "status": _status(len(ids.get(c.key, [])), c.min_evidence),
            }
            for c in self.checklist_spec
        ]

    def metrics(self) -> dict[str, Any]:
        """Queries per source, articles processed, LLM calls and tokens, cache use, and the
        run's trace."""
        out: dict[str, Any] = {
            **self.trace,
            "queries_per_source": dict(self.queries_per_source),
            "articles_processed": len(self.store),
            "events": self.events,
            "live_search_calls": sum(s.live_calls for s in self.sources),
        }
        if self.model is not None:
            out.update(
                llm_calls=self.model.live_requests,
                llm_cached_calls=self.model.cached_requests,
                input_tokens=self.model.input_tokens,
                output_tokens=self.model.output_tokens,
            )
        if self.cache is not None:
            out["cache"] = {k: dict(v) for k, v in self.cache.stats.items()}
        if self.usage is not None:
            out["usage"] = self.usage
            total = self.usage.get("llm_total", {})
            out.setdefault("llm_calls", total.get("requests", 0))
            out.setdefault("input_tokens", total.get("input_tokens", 0))
            out.setdefault("output_tokens", total.get("output_tokens", 0))
        return out

    def _write_row(self, session: Session, event: ResearchEvent) -> None:
        row = self.runs.require_row(session, self.run_id)
        now = utc_now()
        row.updated_at = now
        row.stage = STAGES.get(event.type, row.stage)
        row.progress = round(self.progress, 4)
        if self.refined_question is not None:
            row.refined_question = self.refined_question
        if self.checklist_spec:
            row.checklist = self._checklist()
        if event.type == "planning" and not row.syllabus_fixed and self.collector.syllabus:
            row.syllabus = self.collector.syllabus.model_dump(mode="json")
        row.iterations = [dict(i) for i in self.iterations]
        row.metrics = self.metrics()
        if event.type == "done" and event.result is not None:
            stop = event.data.stop_reason if isinstance(event.data, DoneData) else None
            row.status = _FINAL_STATUS.get(str(stop), "completed")
            row.result = event.result.model_dump(mode="json")
            row.report_markdown = event.result.report.to_markdown()
            row.finished_at = now
            row.error = None
        elif event.type in {"plan_ready", "evidence_ready"}:
            row.status = AWAITING_REVIEW  # no process holds it now: it waits for the user
        elif event.type == "error":
            cancelled = isinstance(event.data, ErrorData) and event.data.cancelled
            row.status = "cancelled" if cancelled else "failed"
            row.error = event.message
            row.finished_at = now
