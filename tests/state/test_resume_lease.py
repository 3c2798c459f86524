"""The resume lease (issue 13): a run whose heartbeat is live is not resumed, a stale one is
taken over by exactly one resumer, on SQLite and on PostgreSQL; and a run stopped by its time
budget resumes with a fresh budget to a report."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import Session

import deepcritical.state.lease as lease
from deepcritical.api import research, resume
from deepcritical.cli.run_output import error_line
from deepcritical.config import Settings
from deepcritical.corpus.index import CorpusNotFoundError
from deepcritical.events import ResearchEvent
from deepcritical.models import Evidence, SearchFilters, utc_now
from deepcritical.state import (
    RunInProgressError,
    RunNotFoundError,
    RunNotResumableError,
    RunStore,
)
from deepcritical.state.lease import claim_run, release_run
from deepcritical.state.run_store import STALE_AFTER_SECONDS
from deepcritical.testing.embedders import HashingEmbedder
from tests.state.test_state_store import RunSource

LIVE_MESSAGE = (
    r"run [0-9a-f]{32} is still running in another process \(last heartbeat \d+ s ago\); "
    r"resume it after it goes stale \(> 60 s\)"
)


def settings_for(database_url: str, tmp_path: Path, **more: Any) -> Settings:
    return Settings(
        llm="none",
        sources=["pubmed"],
        data_dir=tmp_path,
        database_url=database_url,
        max_rounds=1,
        results_per_query=3,
        **more,
    )


def stored_run(runs: RunStore, settings: Settings, status: str, heartbeat_age: float) -> str:
    """A run row in ``status`` whose last heartbeat was ``heartbeat_age`` seconds ago."""
    run_id = runs.create_run("Does aspirin prevent stroke?", settings.public_dict())

    def set_row(session: Session) -> None:
        row = runs.require_row(session, run_id)
        row.status = status
        row.updated_at = utc_now() - timedelta(seconds=heartbeat_age)

    runs.transact(set_row)
    return run_id


def test_a_live_run_is_refused_and_a_stale_one_taken_over(
    runs: RunStore, database_url: str, tmp_path: Path
) -> None:
    settings = settings_for(database_url, tmp_path)
    live = stored_run(runs, settings, "in_progress", 5.0)
    with pytest.raises(RunInProgressError, match=LIVE_MESSAGE) as refused:
        claim_run(runs, live)
    assert 4.0 <= refused.value.heartbeat_age < 30.0
    assert refused.value.stale_after == STALE_AFTER_SECONDS
    record = runs.get_run(live)
    assert record is not None
    assert (record.status, record.attempts) == ("in_progress", 1)  # untouched

    fresh = stored_run(runs, settings, "pending", 1.0)  # created, not started yet
    with pytest.raises(RunInProgressError):
        claim_run(runs, fresh)

    stale = stored_run(runs, settings, "in_progress", STALE_AFTER_SECONDS + 5)
    assert claim_run(runs, stale) == 2
    record = runs.get_run(stale)
    assert record is not None
    assert (record.status, record.attempts, record.interrupted) == ("in_progress", 2, False)
    assert utc_now() - record.updated_at < timedelta(seconds=10)
    with pytest.raises(RunInProgressError):  # now it is the resumer's live run
        claim_run(runs, stale)

    for status in ("failed", "cancelled", "time_budget"):  # no process works on these
        run_id = stored_run(runs, settings, status, 0.0)
        assert claim_run(runs, run_id) == 2
    done = stored_run(runs, settings, "completed", 0.0)
    with pytest.raises(RunNotResumableError, match="already finished") as finished:
        claim_run(runs, done)
    with pytest.raises(RunNotFoundError) as missing:
        claim_run(runs, "0" * 32)
    # the messages are for any reader (the web app, the API): a command appears only in the
    # hint the command line adds
    for error in (finished.value, missing.value):
        assert "deepcritical" not in str(error)
        assert "deepcritical runs" in error_line(error)


def test_a_released_claim_fails_the_run_so_it_can_be_resumed_again(
    runs: RunStore, database_url: str, tmp_path: Path
) -> None:
    run_id = stored_run(runs, settings_for(database_url, tmp_path), "failed", 0.0)
    claim_run(runs, run_id)
    release_run(runs, run_id, "the resume stopped before the run restarted")
    record = runs.get_run(run_id)
    assert record is not None
    assert (record.status, record.error) == (
        "failed",
        "the resume stopped before the run restarted",
    )
    assert claim_run(runs, run_id) == 3


@pytest.mark.parametrize("attempt", range(5))
def test_two_resumers_of_one_stale_run_one_wins(
    runs: RunStore,
    database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    attempt: int,
) -> None:
    """Both resumers read the stale row before either writes (a barrier right after the
    read, where the database lets them: PostgreSQL; SQLite's BEGIN IMMEDIATE makes the second
    wait for the first's commit); the conditional UPDATE lets exactly one take it over."""
    run_id = stored_run(
        runs, settings_for(database_url, tmp_path), "in_progress", STALE_AFTER_SECONDS * 3
    )
    barrier = threading.Barrier(2, timeout=1.0)

    def read_then_wait() -> Any:
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait()
        return utc_now()

    monkeypatch.setattr(lease, "utc_now", read_then_wait)
    outcomes: list[str] = []

    def resume_once() -> None:
        try:
            claim_run(runs, run_id)
            outcomes.append("won")
        except RunInProgressError as exc:
            outcomes.append(str(exc))

    threads = [threading.Thread(target=resume_once) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(outcomes)[-1] == "won", outcomes
    assert outcomes.count("won") == 1, outcomes
    assert "still running in another process" in min(outcomes)
    record = runs.get_run(run_id)
    assert record is not None
    assert (record.status, record.attempts) == ("in_progress", 2)


class GatedSource(RunSource):
    """A :class:`RunSource` whose searches wait until :attr:`gate` is set."""

    def __init__(self, tag: str) -> None:
        super().__init__(tag)
        self.gate = asyncio.Event()

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        await self.gate.wait()
        return await super().search(query, limit)


async def _drain(events: Any) -> list[ResearchEvent]:
    return [e async for e in events]


async def test_resuming_a_running_run_is_refused_until_it_ends(
    database_url: str, runs: RunStore, tmp_path: Path
) -> None:
    settings = settings_for(database_url, tmp_path)
    source = GatedSource("live")
    events = research(
        "Does aspirin prevent stroke?", settings, sources=[source], embedder=HashingEmbedder()
    )
    first = await anext(events)
    assert first.type == "started"
    run_id = str(first.run_id)
    rest = asyncio.create_task(_drain(events))
    await asyncio.sleep(0.2)  # the run is now searching, held by the gate
    with pytest.raises(RunInProgressError, match=LIVE_MESSAGE):
        await anext(resume(run_id, settings, sources=[RunSource("b")], embedder=HashingEmbedder()))
    source.gate.set()
    finished = await rest
    assert finished[-1].type == "done"
    record = runs.get_run(run_id)
    assert record is not None
    assert record.attempts == 1  # the refused resume changed nothing
    assert record.report_markdown


async def test_two_concurrent_resumes_of_an_interrupted_run_one_refused(
    database_url: str, runs: RunStore, tmp_path: Path
) -> None:
    settings = settings_for(database_url, tmp_path)
    run_id = stored_run(runs, settings, "in_progress", STALE_AFTER_SECONDS * 2)

    async def one(tag: str) -> str:
        try:
            got = await _drain(
                resume(run_id, settings, sources=[RunSource(tag)], embedder=HashingEmbedder())
            )
        except RunInProgressError as exc:
            return f"refused: {exc}"
        except RunNotResumableError as exc:  # the other one had already finished it
            return f"refused: {exc}"
        return got[-1].type

    outcomes = sorted(await asyncio.gather(one("a"), one("b")))
    assert outcomes[0] == "done", outcomes
    assert outcomes[1].startswith("refused: run ")
    # refused while the other resume holds the run, or (on a loaded machine, where the first
    # resume may finish before the second reads the run) because it is finished: never both
    assert "still running" in outcomes[1] or "already finished" in outcomes[1], outcomes
    record = runs.get_run(run_id)
    assert record is not None
    assert record.attempts == 2
    assert record.status in {"completed", "max_iterations"}


class StalledSource(RunSource):
    """A source that answers only after far longer than the run's time budget."""

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        await asyncio.sleep(30)
        return await super().search(query, limit)


async def test_a_run_stopped_by_its_time_budget_resumes_with_a_fresh_budget(
    database_url: str, runs: RunStore, tmp_path: Path
) -> None:
    """A budget that runs out before any source answers gives the plain "ran out" report
    (no citation); its resume with the same budget ends the same way, and a resume with a
    larger one searches and reports."""
    settings = settings_for(database_url, tmp_path, time_budget_seconds=0.05)
    events = await _drain(
        research(
            "Does aspirin prevent stroke?",
            settings,
            sources=[StalledSource("slow")],
            embedder=HashingEmbedder(),
        )
    )
    last = events[-1]
    assert last.type == "done"
    assert last.result is not None
    report = last.result.report
    assert report.metadata.stop_reason == "time_budget"
    assert report.executive_summary.startswith(
        "The time budget (0.05 s) ran out before any source was searched."
    )
    assert report.references == []
    assert report.findings == []
    assert report.metadata.sources_searched == []
    assert "hold no evidence" not in report.to_markdown()
    run_id = str(events[0].run_id)

    again = await _drain(
        resume(run_id, settings, sources=[StalledSource("slow")], embedder=HashingEmbedder())
    )
    assert again[-1].type == "done"
    assert again[-1].result is not None
    assert again[-1].result.report.metadata.stop_reason == "time_budget"
    assert "ran out before any source was searched" in again[-1].result.report.executive_summary

    more = await _drain(
        resume(
            run_id,
            settings,
            sources=[RunSource("fast")],
            embedder=HashingEmbedder(),
            time_budget_seconds=120.0,
        )
    )
    assert more[-1].type == "done"
    assert more[-1].result is not None
    assert more[-1].result.report.metadata.stop_reason != "time_budget"
    assert more[-1].result.report.metadata.sources_searched == ["pubmed"]
    record = runs.get_run(run_id)
    assert record is not None
    assert record.attempts == 3
    assert record.status in {"completed", "max_iterations"}
    assert record.settings["time_budget_seconds"] == 0.05  # the stored run keeps its own


async def test_a_resume_that_fails_before_the_run_restarts_gives_the_run_back(
    database_url: str, runs: RunStore, tmp_path: Path
) -> None:
    """The stored run searches a local corpus that is gone: the resume claims the run, fails
    while building its sources and releases it, so a next resume need not wait 60 s."""
    settings = settings_for(database_url, tmp_path).model_copy(update={"sources": ["local"]})
    run_id = stored_run(runs, settings, "in_progress", STALE_AFTER_SECONDS * 2)
    with pytest.raises(CorpusNotFoundError):
        await _drain(resume(run_id, settings, embedder=HashingEmbedder()))
    record = runs.get_run(run_id)
    assert record is not None
    assert (record.status, record.attempts) == ("failed", 2)
    assert record.error == "the resume stopped before the run restarted"
    assert claim_run(runs, run_id) == 3  # at once: no live heartbeat is left behind


async def test_the_web_apps_resume_shows_the_refusal(
    database_url: str, runs: RunStore, tmp_path: Path
) -> None:
    from deepcritical.ui.app import build_app

    settings = settings_for(database_url, tmp_path)
    run_id = stored_run(runs, settings, "in_progress", 2.0)
    demo = build_app(settings, downloads_dir=tmp_path / "downloads")
    resume_handler = next(
        fn.fn for fn in demo.fns.values() if getattr(fn.fn, "__name__", "") == "resume_run"
    )
    assert resume_handler is not None
    outputs = [out async for out in resume_handler(run_id)]
    progress = str(outputs[-1][1])
    assert f"run {run_id} is still running in another process" in progress
    assert "resume it after it goes stale" in progress
    assert 'href="dc/download/' not in str(outputs[-1][5])  # no report, no downloads
