"""The history panel's helpers against a fake of the durable run store's interface: each
helper sees only the caller's runs."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from deepcritical.config import Settings
from deepcritical.events import ResearchEvent
from deepcritical.state import RunInProgressError, RunNotFoundError
from deepcritical.ui import history as hist

T0 = datetime(2026, 1, 2, 3, 4, tzinfo=UTC)


@dataclass
class Record:
    id: str
    question: str
    status: str = "completed"
    progress: Any = 1.0
    stage: Any = "done"
    created_at: datetime = T0
    updated_at: datetime = T0
    error: str | None = None
    report_markdown: str | None = "# Report\n"
    owner: str | None = None

    @property
    def resumable(self) -> bool:
        return self.status not in {"completed", "max_iterations"}


@dataclass
class FakeStore:
    records: list[Record]
    closed: int = 0
    limits: list[int] = field(default_factory=list)
    results: dict[str, Any] = field(default_factory=dict)
    asked: dict[str, list[Any]] = field(default_factory=dict)

    def list_runs(self, limit: int = 50, *, owner: str | None = None) -> list[Any]:
        self.limits.append(limit)
        return [r for r in self.records if r.owner == owner][:limit]

    def get_run(self, run_id: str, *, owner: str | None = None) -> Any:
        return next((r for r in self.records if r.id == run_id and r.owner == owner), None)

    def result(self, run_id: str, *, owner: str | None = None) -> Any:
        record = self.get_run(run_id, owner=owner)
        if record is None:
            raise RunNotFoundError(run_id)
        return self.results.get(run_id)

    def export_run(self, run_id: str, *, owner: str | None = None) -> dict[str, Any]:
        if self.get_run(run_id, owner=owner) is None:
            raise RunNotFoundError(run_id)
        return {"id": run_id, "events": [{"type": "done"}], "at": T0}

    def follow_ups(self, run_id: str, *, owner: str | None = None) -> list[Any]:
        if self.get_run(run_id, owner=owner) is None:
            raise RunNotFoundError(run_id)
        return list(self.asked.get(run_id, []))

    def report_versions(self, run_id: str, *, owner: str | None = None) -> list[Any]:
        return []

    def report_version(
        self, run_id: str, version: int | None = None, *, owner: str | None = None
    ) -> Any:
        return None

    def close(self) -> None:
        self.closed += 1


@pytest.fixture
def store() -> FakeStore:
    return FakeStore(
        [
            Record(
                "r2",
                "Q2 " + "x" * 200,
                status="failed",
                progress=0.4,
                stage="searching",
                error="boom",
                report_markdown=None,
            ),
            Record("r1", "Q1"),
            Record("a1", "Alice's question", owner="user:alice"),
        ]
    )


def test_rows_newest_first_status_and_time_first(store: FakeStore) -> None:
    rows = hist.history_rows(store, None, limit=10)
    assert store.limits == [10]
    assert hist.HEADERS[:3] == ["Status", "Updated (UTC)", "Run"]
    assert rows[0][:3] == ["failed", "2026-01-02 03:04", "r2"]
    assert len(rows[0][3]) == 120
    assert rows[0][3].endswith("…")
    assert rows[0][4:] == ["searching", "40%"]
    assert rows[1][:4] == ["completed", "2026-01-02 03:04", "r1", "Q1"]
    assert len(rows) == 2  # the local user's runs only
    assert len(hist.HEADERS) == len(rows[0])
    assert [r[2] for r in hist.history_rows(store, "user:alice")] == ["a1"]
    assert hist.history_rows(store, "user:bob") == []


def test_table_shows_short_ids_and_keeps_the_full_ones() -> None:
    long_ids = ["0123456789abcdef", "fedcba9876543210"]
    store = FakeStore([Record(long_ids[0], "Q0"), Record(long_ids[1], "Q1", status="cancelled")])
    rows, ids = hist.history_table(store, None)
    assert ids == long_ids
    assert [r[2] for r in rows] == ["01234567", "fedcba98"]
    assert all(len(r[2]) == hist.SHORT_ID for r in rows)


def test_selected_run_id_maps_a_clicked_row_to_its_full_id() -> None:
    ids = ["0123456789abcdef", "fedcba9876543210"]
    row = ["cancelled", "2026-01-02 03:04", "fedcba98", "Q1", "", ""]
    assert hist.selected_run_id(ids, 1, row) == ids[1]
    # a sorted table: the row's own short id wins over its index
    assert hist.selected_run_id(ids, 0, row) == ids[1]
    assert hist.selected_run_id(ids, 0, None) == ids[0]
    assert hist.selected_run_id(ids, 5, None) is None
    assert hist.selected_run_id(ids, None, ["x", "y", "nomatch"]) is None
    assert hist.selected_run_id([], 0, row) is None


async def test_stored_run_and_its_replay(store: FakeStore) -> None:
    from tests.unit.ui_fixtures import run_result

    result = run_result()
    store.results["r1"] = result
    record, got = hist.stored_run(store, " r1 ", None)
    assert record.id == "r1"
    assert got is result
    assert hist.stored_run(store, "r2", None)[1] is None  # no report yet
    for run_id, owner in [("nope", None), ("", None), ("a1", None), ("r1", "user:alice")]:
        with pytest.raises(RunNotFoundError):
            hist.stored_run(store, run_id, owner)
    events = [e async for e in hist.replay_events(record, result)]
    assert [e.type for e in events] == ["started", "done"]
    assert events[0].run_id == "r1"
    assert events[1].result is result


def test_status_line_names_status_time_id_and_error(store: FakeStore) -> None:
    failed = store.get_run("r2")
    assert hist.status_line(failed) == "failed · updated 2026-01-02 03:04 UTC · run r2 — boom"


def test_open_report_and_unknown_id(store: FakeStore) -> None:
    assert hist.open_report(store, " r1 ", None) == ("completed", "# Report\n")
    assert hist.open_report(store, "r2", None) == ("failed — boom", "")
    assert hist.open_report(store, "a1", "user:alice") == ("completed", "# Report\n")
    for run_id, owner in [("nope", None), ("a1", None), ("a1", "user:bob"), ("r1", "user:alice")]:
        with pytest.raises(RunNotFoundError):
            hist.open_report(store, run_id, owner)


def test_export_writes_json(store: FakeStore, tmp_path: Path) -> None:
    rid, data = hist.export_of(store, " r1 ", None)
    assert rid == "r1"
    path = hist.write_export(rid, data, tmp_path / "exports")
    assert path == tmp_path / "exports" / "run-r1.json"
    exported = json.loads(path.read_text(encoding="utf-8"))
    assert exported["id"] == "r1"
    assert exported["events"] == [{"type": "done"}]
    with pytest.raises(RunNotFoundError):
        hist.export_of(store, "../etc/passwd", None)
    with pytest.raises(RunNotFoundError):
        hist.export_of(store, "a1", "user:bob")  # another owner's run
    assert hist.write_export("../../x", {}, tmp_path).name == "run-x.json"


async def test_resume_events_resumes_the_stripped_id(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from deepcritical import api

    seen: list[tuple[str, Settings, str | None]] = []

    async def fake_resume(run_id: str, settings: Settings, owner: str | None) -> Any:
        seen.append((run_id, settings, owner))
        yield ResearchEvent(type="started", message="again", data={"run_id": run_id})

    monkeypatch.setattr(api, "resume", fake_resume)
    settings = Settings(data_dir=tmp_path, _env_file=None)
    events = [e async for e in hist.resume_events(" r1 ", settings, "user:alice")]
    assert seen == [("r1", settings, "user:alice")]
    assert [e.run_id for e in events] == ["r1"]


async def test_resume_waits_for_a_run_just_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    from deepcritical import api

    tries: list[str] = []

    async def still_running(run_id: str, settings: Settings, owner: str | None) -> Any:
        tries.append(run_id)
        if len(tries) < 3:
            raise RunInProgressError(run_id, 1.0, 60.0)
        yield ResearchEvent(type="started", message="resumed", data={"run_id": run_id})

    monkeypatch.setattr(api, "resume", still_running)
    settings = Settings(_env_file=None)
    events = [e async for e in hist.resume_events("r1", settings, None, pause=0.01)]
    assert len(tries) == 3
    assert [e.message for e in events] == ["resumed"]
    tries.clear()
    with pytest.raises(RunInProgressError):
        _ = [e async for e in hist.resume_events("r1", settings, None, tries=2, pause=0.01)]
    assert len(tries) == 2


async def test_resuming_a_run_that_finished_meanwhile_opens_its_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A Stop that came as the report was being saved leaves a finished run behind a
    Resume button: Resume opens that report instead of failing; a finished run without a
    readable report still raises."""
    from deepcritical import api
    from deepcritical.state import RunNotResumableError
    from tests.unit.ui_fixtures import run_result

    async def finished(run_id: str, settings: Settings, owner: str | None) -> Any:
        raise RunNotResumableError(f"run {run_id} already finished (completed)")
        yield  # an async generator, as api.resume is

    monkeypatch.setattr(api, "resume", finished)
    result = run_result()
    stored = (Record(id="r1", question="Q?", status="completed"), result)
    monkeypatch.setattr(hist, "_finished_run", lambda run_id, settings, owner: stored)
    events = [e async for e in hist.resume_events("r1", Settings(_env_file=None), None)]
    assert [e.type for e in events] == ["started", "done"]
    assert events[-1].result is result
    monkeypatch.setattr(hist, "_finished_run", lambda run_id, settings, owner: None)
    with pytest.raises(RunNotResumableError):
        _ = [e async for e in hist.resume_events("r1", Settings(_env_file=None), None)]
