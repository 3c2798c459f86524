"""The history panel's helpers against a fake of the durable run store's interface."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from deepcritical.config import Settings
from deepcritical.state import RunNotFoundError
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


@dataclass
class FakeStore:
    records: list[Record]
    closed: int = 0
    limits: list[int] = field(default_factory=list)

    def list_runs(self, limit: int = 50) -> list[Any]:
        self.limits.append(limit)
        return self.records[:limit]

    def get_run(self, run_id: str) -> Any:
        return next((r for r in self.records if r.id == run_id), None)

    def export_run(self, run_id: str) -> dict[str, Any]:
        return {"id": run_id, "events": [{"type": "done"}], "at": T0}

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
        ]
    )


def test_rows_newest_first_plain_text(store: FakeStore) -> None:
    rows = hist.history_rows(store, limit=10)
    assert store.limits == [10]
    assert rows[0][0] == "r2"
    assert len(rows[0][1]) == 120
    assert rows[0][1].endswith("…")
    assert rows[0][2:] == ["failed", "searching", "40%", "2026-01-02 03:04"]
    assert rows[1][:3] == ["r1", "Q1", "completed"]
    assert len(hist.HEADERS) == len(rows[0])


def test_open_report_and_unknown_id(store: FakeStore) -> None:
    assert hist.open_report(store, " r1 ") == ("completed", "# Report\n")
    assert hist.open_report(store, "r2") == ("failed — boom", "")
    with pytest.raises(RunNotFoundError):
        hist.open_report(store, "nope")


def test_export_writes_json(store: FakeStore, tmp_path: Path) -> None:
    path = hist.export_to_file(store, "r1", tmp_path / "exports")
    assert path.name == "run-r1.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["id"] == "r1"
    assert data["events"] == [{"type": "done"}]
    with pytest.raises(RunNotFoundError):
        hist.export_to_file(store, "../etc/passwd", tmp_path)


def test_resume_events_resumes_the_stripped_id(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from deepcritical import api

    seen: list[tuple[str, Settings]] = []

    def fake_resume(run_id: str, settings: Settings) -> Any:
        seen.append((run_id, settings))
        return iter(())

    monkeypatch.setattr(api, "resume", fake_resume)
    settings = Settings(data_dir=tmp_path, _env_file=None)
    hist.resume_events(" r1 ", settings)
    assert seen == [("r1", settings)]
