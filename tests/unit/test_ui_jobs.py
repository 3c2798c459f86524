"""The web app and MCP tool in jobs mode (``Settings.jobs``), on a fake job backend: the mode
switch, a click submitting a job and rendering its followed event log, Stop cancelling the
job, History following a queued or running run live, ``deep_research`` waiting on a job,
``serve --jobs``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from deepcritical.config import Settings
from deepcritical.events import ResearchEvent
from deepcritical.state.event_log import LoggedEvent
from deepcritical.ui.app import build_app
from deepcritical.ui.jobs_mode import FOLLOWERS, JOB_KEY_REFUSED, job_research
from deepcritical.ui.mcp_tool import parse_output, run_deep_research
from deepcritical.ui.progress_view import ProgressView, fold
from tests.unit.test_ui_app import handler
from tests.unit.test_ui_history import FakeStore, Record
from tests.unit.ui_fixtures import (
    OPEN_REPORT,
    OPEN_STATUS,
    PANEL_RUN_ID,
    FakeResearch,
    run_result,
    script,
)


@dataclass
class FakeJobs:
    """A job backend whose every run's log is ``events``; records what was asked of it."""

    events: Sequence[ResearchEvent]
    submitted: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    followed: list[tuple[str, str | None, int]] = field(default_factory=list)
    cancelled: list[tuple[str, str | None]] = field(default_factory=list)
    woken: list[tuple[str, int]] = field(default_factory=list)
    closed: int = 0
    block_after: int | None = None

    def submit(
        self, question: str, settings: Settings, *, context: str | None, owner: str | None
    ) -> str:
        self.submitted.append((question, context, owner))
        return f"job-{len(self.submitted)}"

    def follow(
        self, run_id: str, settings: Settings, *, owner: str | None, after_seq: int = 0
    ) -> AsyncIterator[LoggedEvent]:
        self.followed.append((run_id, owner, after_seq))
        return self._log(after_seq)

    async def _log(self, after_seq: int) -> AsyncIterator[LoggedEvent]:
        try:
            for seq, event in enumerate(self.events, start=1):
                if self.block_after is not None and seq > self.block_after:
                    await asyncio.Event().wait()  # a run that goes on
                if seq > after_seq:
                    yield LoggedEvent(seq=seq, event=event)
        finally:
            self.closed += 1

    def cancel(self, run_id: str, settings: Settings, *, owner: str | None) -> str:
        self.cancelled.append((run_id, owner))
        return "in_progress"

    def wake(self, run_id: str, number: int, settings: Settings) -> None:
        self.woken.append((run_id, number))


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, sources=["local"], jobs=True, _env_file=None)


async def collect(stream: AsyncIterator[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [out async for out in stream]


def run_args(key: str = "") -> tuple[Any, ...]:
    return ("Q?", "some context", "", key, [], 2, 10, "iterative")


def test_the_setting_reads_deepcritical_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings(_env_file=None).jobs is False
    monkeypatch.setenv("DEEPCRITICAL_JOBS", "1")
    assert Settings(_env_file=None).jobs is True


def test_in_jobs_mode_the_queue_follows_many_runs_at_once(settings: Settings) -> None:
    plain = settings.model_copy(update={"jobs": False})
    assert build_app(plain, concurrency=3)._queue.default_concurrency_limit == 3
    jobs = build_app(settings, concurrency=3, jobs=FakeJobs([]))
    assert jobs._queue.default_concurrency_limit == FOLLOWERS
    assert (
        build_app(settings, concurrency=50, jobs=FakeJobs([]))._queue.default_concurrency_limit
        == 50
    )


async def test_without_the_setting_research_runs_in_process(tmp_path: Path) -> None:
    plain = Settings(data_dir=tmp_path, sources=["local"], _env_file=None)
    jobs = FakeJobs(script(run_result()))
    fake = FakeResearch(script(run_result()))
    demo = build_app(plain, research_fn=fake, jobs=jobs, downloads_dir=tmp_path / "dl")
    outs = await collect(handler(demo, "run")(*run_args()))
    assert "Metformin review" in str(outs[-1][2])
    assert len(fake.calls) == 1
    assert jobs.submitted == []
    assert jobs.followed == []
    await handler(demo, "stop")(outs[1][10])
    assert jobs.cancelled == []


async def test_a_click_submits_a_job_and_renders_its_event_log(
    settings: Settings, tmp_path: Path
) -> None:
    jobs = FakeJobs(script(run_result()))
    fake = FakeResearch([])
    demo = build_app(settings, research_fn=fake, jobs=jobs, downloads_dir=tmp_path / "dl")
    outs = await collect(handler(demo, "run")(*run_args()))
    assert fake.calls == []  # never in-process
    assert jobs.submitted == [("Q?", "some context", None)]
    assert jobs.followed == [("job-1", None, 0)]
    # Gradio may send no key at all (None)
    await collect(handler(demo, "run")("Q?", "", "", None, [], 2, 10, "iterative"))
    assert len(jobs.submitted) == 2
    assert jobs.closed == 2
    assert "job-1" in str(outs[1][1])  # the run id shows at once, before a worker takes it
    last = outs[-1]
    assert "Report ready" in str(last[1])
    assert "<h1>Metformin review</h1>" in str(last[2])
    assert 'id="dc-answer"' in str(last[6])
    assert str(last[5]).count('href="dc/download/') == 6  # the downloads
    view = last[10]
    assert isinstance(view, ProgressView)
    assert view.finished
    assert view.run_id == "run-42"  # the worker's started event names the run


async def test_a_session_key_is_refused_in_jobs_mode(settings: Settings) -> None:
    jobs = FakeJobs(script(run_result()))
    demo = build_app(settings, jobs=jobs)
    outs = await collect(handler(demo, "run")(*run_args(key="sk-session-key-1234")))
    assert len(outs) == 1
    assert "API key empty" in str(outs[0][1])
    assert "sk-session-key-1234" not in str(outs[0])
    assert jobs.submitted == []
    assert "server's API keys" in JOB_KEY_REFUSED


async def test_stop_cancels_the_job_in_its_worker(settings: Settings) -> None:
    jobs = FakeJobs(script(run_result()))
    demo = build_app(settings, jobs=jobs)
    view = fold(ProgressView(), script(run_result())[0])  # started, run-42
    panel, button, kept = await handler(demo, "stop")(view)
    assert jobs.cancelled == [("run-42", None)]
    assert "Stopped" in panel
    assert "dc-error" not in panel
    assert button["visible"] is True
    assert kept is view
    await handler(demo, "stop")(None)  # nothing to cancel
    done = fold(view, ResearchEvent(type="done", message="x", result=run_result()))
    await handler(demo, "stop")(done)  # ended: nothing to cancel
    assert jobs.cancelled == [("run-42", None)]
    # Stop also cancels History's live following and the runs continued after a review
    names = {i: getattr(fn.fn, "__name__", "") for i, fn in demo.fns.items()}
    cancels = next(fn.cancels for fn in demo.fns.values() if fn.cancels)
    assert sorted(names[i] for i in cancels) == [
        "continue_run",
        "continue_run",
        "continue_run",
        "open_run",
        "open_run",
        "resume_run",
        "resume_stopped",
        "run",
        "run",
        "run_unless_asked",
        "run_unless_asked",
    ]


async def test_a_failed_cancel_still_shows_stopped(settings: Settings) -> None:
    class Broken(FakeJobs):
        def cancel(self, run_id: str, settings: Settings, *, owner: str | None) -> str:
            raise RuntimeError("job database down")

    demo = build_app(settings, jobs=Broken([]))
    panel, _, _ = await handler(demo, "stop")(fold(ProgressView(), script(run_result())[0]))
    assert "Stopped" in panel


async def test_history_follows_a_running_job_live_until_its_report(
    settings: Settings, tmp_path: Path
) -> None:
    store = FakeStore([Record("r-live", "Q?", status="in_progress", report_markdown=None)])
    jobs = FakeJobs(script(run_result()))
    demo = build_app(
        settings, jobs=jobs, store_opener=lambda s: store, downloads_dir=tmp_path / "dl"
    )

    def finished(_: Any) -> Any:  # the worker ends the run while it is followed
        store.records[0].status = "completed"
        store.results["r-live"] = run_result()

    outs: list[tuple[Any, ...]] = []
    async for out in handler(demo, "open_run")("r-live"):
        outs.append(out)
        if len(outs) == 3:
            finished(out)
    assert jobs.followed == [("r-live", None, 0)]
    assert "following it live" in str(outs[1][OPEN_STATUS])
    assert outs[1][PANEL_RUN_ID] is None  # no follow-up question while it runs
    ended, panel = outs[-2], outs[-1]
    assert "Report ready" in str(ended[1])
    assert "<h1>Metformin review</h1>" in str(ended[2])
    assert ended[OPEN_REPORT] == ended[2]  # the report below the table too
    assert "completed" in str(ended[OPEN_STATUS])
    assert "Followed to its end" in str(ended[OPEN_STATUS])
    assert isinstance(ended[10], ProgressView)  # kept for Stop
    assert panel[PANEL_RUN_ID] == "r-live"  # then the follow-up panel opens on the run
    # a queued run is followed too (and Stop can cancel it before a worker takes it); a
    # finished one is opened from the store as before
    store.records.append(Record("r-queued", "Q2", status="queued", report_markdown=None))
    empty = FakeJobs([])
    queued_demo = build_app(settings, jobs=empty, store_opener=lambda s: store)
    outs = await collect(handler(queued_demo, "open_run")("r-queued"))
    assert empty.followed == [("r-queued", None, 0)]
    assert outs[1][10].run_id == "r-queued"
    assert "r-queued" in str(outs[1][1])
    await collect(handler(demo, "open_run")("r-queued"))
    assert jobs.followed[-1] == ("r-queued", None, 0)
    await collect(handler(demo, "open_run")("r-live"))
    assert len(jobs.followed) == 2


async def test_history_following_stops_when_its_handler_is_cancelled(settings: Settings) -> None:
    store = FakeStore([Record("r-live", "Q?", status="in_progress", report_markdown=None)])
    jobs = FakeJobs(script(run_result()), block_after=2)
    demo = build_app(settings, jobs=jobs, store_opener=lambda s: store)
    seen: list[tuple[Any, ...]] = []
    attached = asyncio.Event()

    async def follow() -> None:
        async for out in handler(demo, "open_run")("r-live"):
            seen.append(out)
            if len(seen) >= 3:
                attached.set()

    task = asyncio.create_task(follow())
    await asyncio.wait_for(attached.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert jobs.closed == 1  # following stopped; the job itself is not cancelled
    assert jobs.cancelled == []


async def test_without_the_setting_history_shows_a_running_runs_stored_state(
    tmp_path: Path,
) -> None:
    plain = Settings(data_dir=tmp_path, sources=["local"], _env_file=None)
    store = FakeStore([Record("r-live", "Q?", status="in_progress", report_markdown=None)])
    jobs = FakeJobs(script(run_result()))
    demo = build_app(plain, jobs=jobs, store_opener=lambda s: store)
    outs = await collect(handler(demo, "open_run")("r-live"))
    assert len(outs) == 1
    assert "No report yet" in str(outs[0][OPEN_STATUS])
    assert jobs.followed == []


async def test_deep_research_waits_on_the_job(settings: Settings) -> None:
    jobs = FakeJobs(script(run_result()))
    out = await run_deep_research("Q?", None, 3, settings, job_research(jobs), owner="alice")
    assert out.status == "completed"
    assert out.trace_id == "run-42"
    assert "Metformin review" in out.answer
    assert jobs.submitted == [("Q?", None, "alice")]
    # the tool the app exposes uses the jobs too
    demo = build_app(settings, research_fn=FakeResearch([]), jobs=jobs)
    text = await handler(demo, "deep_research")("Q?", None, 2)
    assert parse_output(text)["status"] == "completed"
    assert len(jobs.submitted) == 2


def test_serve_jobs_flag_turns_the_mode_on(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    import deepcritical.ui.app as app_module
    import deepcritical.ui.launch as launch_module
    import deepcritical.ui.source_check as reach_module
    from deepcritical.cli.main import app as cli_app

    built: list[Settings] = []

    class NoCheck:
        def __init__(self, settings: Settings) -> None:
            pass

        def start(self) -> NoCheck:
            return self

    def fake_build(settings: Settings, **_: Any) -> object:
        built.append(settings)
        return object()

    monkeypatch.chdir(tmp_path)  # no .env of the checkout
    monkeypatch.setattr(app_module, "build_app", fake_build)
    monkeypatch.setattr(launch_module, "launch", lambda *a, **k: None)
    monkeypatch.setattr(reach_module, "SourceCheck", NoCheck)
    for name in ("DEEPCRITICAL_JOBS", "DEEPCRITICAL_UI_AUTH", "DEEPCRITICAL_UI_AUTH_FILE"):
        monkeypatch.delenv(name, raising=False)
    runner = CliRunner()
    base = ["--data-dir", str(tmp_path), "serve"]
    assert runner.invoke(cli_app, [*base, "--jobs"]).exit_code == 0
    assert runner.invoke(cli_app, base).exit_code == 0
    monkeypatch.setenv("DEEPCRITICAL_JOBS", "true")
    assert runner.invoke(cli_app, base).exit_code == 0
    assert runner.invoke(cli_app, [*base, "--no-jobs"]).exit_code == 0
    assert [s.jobs for s in built] == [True, False, True, False]
