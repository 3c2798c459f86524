"""The per-run event log and the job columns of the run database (migration 0004), on SQLite
and PostgreSQL: events read from any offset exactly once and in order; a queued job's first
claim is attempt 1; cancelling a queued job ends it with a last event; a dead worker's runs
are found once stale, and the restarted worker gives up their heartbeat."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy.orm import Session

from deepcritical.events import (
    DoneData,
    EvidenceAddedData,
    ManagerData,
    PlanningData,
    ResearchEvent,
    WarningData,
)
from deepcritical.state import RunInProgressError, RunStore
from deepcritical.state.lease import abandon_runs, claim_run, dead_workers
from deepcritical.state.schema import RunEventRow, aware


def event(n: int) -> ResearchEvent:
    return ResearchEvent(type="warning", message=f"event {n}")


def test_events_read_from_any_offset_once_in_order(runs: RunStore) -> None:
    run_id = runs.create_run("Q?", {})
    other = runs.create_run("R?", {})
    seqs = [runs.append_event(run_id, event(n)) for n in range(1, 8)]
    runs.append_event(other, event(99))
    assert seqs == list(range(1, 8))
    assert [e.seq for e in runs.events(run_id)] == seqs
    seen: list[int] = []
    after = 0
    for limit in (2, 3, 10):  # a follower reading in pieces, reconnecting in between
        batch = runs.events(run_id, after, limit=limit)
        seen += [int(e.event.message.removeprefix("event ")) for e in batch]
        after = batch[-1].seq if batch else after
    assert seen == list(range(1, 8))
    assert runs.events(run_id, 7) == []
    assert [e.event.message for e in runs.events(other)] == ["event 99"]


def test_queued_job_claim_and_cancel(runs: RunStore) -> None:
    queued = runs.create_run("Q?", {}, status="queued")
    assert runs.require_run(queued).status == "queued"
    assert claim_run(runs, queued) == 1  # the first start is not a resume
    record = runs.require_run(queued)
    assert (record.status, record.attempts) == ("in_progress", 1)

    waiting = runs.create_run("W?", {}, status="queued")
    assert runs.request_cancel(waiting) == "cancelled"
    assert runs.cancel_requested(waiting)
    logged = runs.events(waiting)
    assert [e.event.type for e in logged] == ["error"]
    running = runs.request_cancel(queued)
    assert running == "in_progress"
    assert runs.cancel_requested(queued)
    runs.end_cancelled(queued, "stopped")
    final = runs.require_run(queued)
    assert final.status == "cancelled"
    assert final.finished_at is not None
    assert runs.events(queued)[-1].event.message == "stopped"


def _age(runs: RunStore, run_id: str, seconds: float) -> None:
    def work(session: Any) -> None:
        row = runs.require_row(session, run_id)
        row.updated_at = aware(row.updated_at) - timedelta(seconds=seconds)

    runs.transact(work)


def test_dead_workers_and_restarted_worker(runs: RunStore) -> None:
    run_id = runs.create_run("Q?", {}, status="queued")
    claim_run(runs, run_id)
    runs.set_worker(run_id, "w1")
    assert dead_workers(runs, "w2") == []  # heartbeat fresh
    _age(runs, run_id, 120)
    assert dead_workers(runs, "w2") == ["w1"]
    assert dead_workers(runs, "w1") == []  # never itself
    # a worker restarted as w1 gives the heartbeat up, so the run is taken over at once
    fresh = runs.create_run("F?", {}, status="queued")
    claim_run(runs, fresh)
    runs.set_worker(fresh, "w1")
    with pytest.raises(RunInProgressError):
        claim_run(runs, fresh)
    assert abandon_runs(runs, "w2") == []  # another worker's runs: untouched
    with pytest.raises(RunInProgressError):
        claim_run(runs, fresh)
    assert sorted(abandon_runs(runs, "w1")) == sorted([run_id, fresh])
    assert runs.require_run(fresh).status == "in_progress"
    assert claim_run(runs, fresh) == 2


# Rows as the event log stored them before events were typed: ``data`` without its ``type``,
# one shape per kind of event the orchestrators wrote (key for key as the old code built them).
_UNTYPED_ROWS: list[dict[str, Any]] = [
    {
        "type": "started",
        "message": "Researching: Q?",
        "data": {"sources": ["local"], "llm": "none", "orchestrator": "iterative", "run_id": "x"},
    },
    {
        "type": "planning",
        "message": "Plan: 1 checklist items",
        "data": {
            "refined_question": "Q?",
            "question_type": "",
            "pico": {"population": "", "intervention": "", "comparator": "", "outcome": ""},
            "checklist": [{"key": "a", "description": "A", "status": "unsatisfied"}],
            "queries": ["q"],
            "scope_in": [],
            "scope_out": [],
            "mesh_terms": [],
            "sub_questions": [],
            "preferences": {"audience": "", "length": "standard", "focus": ""},
        },
    },
    {"type": "searching", "round": 1, "message": "Round 1", "data": {"queries": ["q"]}},
    {
        "type": "evidence_added",
        "round": 1,
        "message": "2 new",
        "data": {
            "added": 2,
            "added_ids": ["e1", "e2"],
            "merged": 0,
            "near_duplicates": 0,
            "per_source": {"local": 2},
            "off_topic": 1,
            "full_texts": 0,
            "full_texts_total": 0,
            "citation_tracking": {"seeds": ["PMID 1"], "skipped": "no room"},
            "on_topic_total": 1,
            "total": 2,
            "coverage": 0.5,
            "checklist": {"a": "partial"},
        },
    },
    {
        "type": "warning",
        "message": "PubMed unavailable: 503",
        "data": {"source": "pubmed", "reason": "503"},
    },
    {
        "type": "manager",
        "message": "Manager → SearchAgent: more",
        "data": {"kind": "progress", "next_speaker": "SearchAgent", "satisfied": False},
    },
    {"type": "error", "message": "planning failed", "data": {}},
    {
        "type": "done",
        "message": "Report ready",
        "data": {
            "stop_reason": "max_rounds",
            "usage": {"search": {"pubmed": {"calls": 3}}, "search_calls": 3},
            "workflow": None,
        },
    },
]


def test_events_stored_before_typed_data_still_load(runs: RunStore) -> None:
    """Migration: rows written before ``data`` carried its ``type`` load as typed events."""
    run_id = runs.create_run("Q?", {})

    def insert(session: Session) -> None:
        for seq, payload in enumerate(_UNTYPED_ROWS, start=1):
            row = RunEventRow(run_id=run_id, seq=seq, type=payload["type"], payload=payload)
            session.add(row)

    runs.transact(insert)
    events = [logged.event for logged in runs.events(run_id)]
    assert [e.type for e in events] == [row["type"] for row in _UNTYPED_ROWS]
    assert [e.data.type for e in events] == [e.type for e in events]
    assert events[0].run_id == "x"
    assert events[1].data_as(PlanningData).checklist[0].description == "A"
    added = events[3].data_as(EvidenceAddedData)
    assert added.per_source == {"local": 2}
    assert added.citation_tracking is not None
    assert added.citation_tracking.skipped == "no room"
    assert events[4].data_as(WarningData).source == "pubmed"
    assert events[5].data_as(ManagerData).next_speaker == "SearchAgent"
    assert events[7].data_as(DoneData).usage.search_calls == 3
    # and a typed event written now reads back equal
    again = runs.append_event(run_id, events[3])
    assert runs.events(run_id, again - 1)[0].event.data == added
