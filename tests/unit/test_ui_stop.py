"""Stop and Resume in the web app: a stopped run shows "Stopped" (no error) with its run id
and counts, Resume applies to runs that ended without their report, and the view kept in the
session has the run's keys redacted."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import gradio as gr
import pytest

from deepcritical import api
from deepcritical.config import Settings
from deepcritical.events import ResearchEvent
from deepcritical.ui.app import build_app
from deepcritical.ui.progress_view import ProgressView, fail, fold, stop
from deepcritical.ui.stop_resume import RunWatch, resumable, stopped_html
from tests.unit.test_ui_app import handler
from tests.unit.ui_fixtures import FakeResearch, run_result, script

KEY = "sk-unit-stop-secret-123"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, sources=["local"], _env_file=None)


def running_view() -> ProgressView:
    view = ProgressView(max_rounds=3)
    for event in script(run_result())[:4]:  # started (run-42) .. evidence_added
        view = fold(view, event)
    return view


def test_stop_keeps_the_view_and_is_not_a_failure() -> None:
    view = running_view()
    stopped = stop(view)
    assert stopped.stage == "Stopped"
    assert stopped.stopped
    assert stopped.finished
    assert not stopped.failed
    assert stopped.error is None
    assert (stopped.run_id, stopped.sources_found, stopped.round) == ("run-42", 2, 1)
    assert not view.stopped  # the view given is not modified


def test_stopped_panel_shows_stopped_with_the_run_id_and_no_error() -> None:
    panel = stopped_html(running_view())
    assert 'class="dc-stage">Stopped<' in panel
    assert "<code>run-42</code>" in panel
    assert 'class="dc-stopped"' in panel
    assert f"<strong>Stopped at {running_view().stage.lower()}.</strong>" in panel
    assert "Resume continues it" in panel
    assert "dc-error" not in panel
    assert "Failed" not in panel
    assert panel.endswith("</div>")
    early = stopped_html(None)  # stopped before the run was recorded
    assert "Stopped" in early
    assert "start it again" in early
    assert "dc-error" not in early
    # a run that already ended keeps its panel
    failed = fail(running_view(), "boom")
    assert "Stopped" not in stopped_html(failed)


def test_resumable_only_without_a_report() -> None:
    view = running_view()
    assert resumable(view)  # cut off while running
    assert resumable(stop(view))
    assert resumable(fail(view, "boom"))
    done = fold(view, script(run_result())[-1])
    assert not resumable(done)
    assert not resumable(ProgressView())  # no run id
    assert not resumable(None)


async def test_run_watch_folds_scrubs_and_marks_failures() -> None:
    async def events() -> AsyncIterator[ResearchEvent]:
        yield ResearchEvent(type="started", message="go", data={"run_id": "r9"})
        yield ResearchEvent(type="warning", message=f"bad key {KEY}")
        raise RuntimeError(f"exploded with {KEY}")

    watch = RunWatch(2, lambda text: text.replace(KEY, "[redacted]"))
    seen: list[str] = []

    async def consume() -> None:
        async for event in watch.watch(events()):
            seen.append(event.type)

    with pytest.raises(RuntimeError):
        await consume()
    assert seen == ["started", "warning"]
    assert watch.view.failed
    assert watch.view.run_id == "r9"
    assert KEY in str(watch.view.model_dump())
    assert KEY not in str(watch.shown.model_dump())
    assert "bad key [redacted]" in watch.shown.warnings


async def test_run_handler_keeps_the_view_and_offers_resume_after_a_failure(
    settings: Settings,
) -> None:
    demo = build_app(settings, research_fn=FakeResearch(script(run_result())))
    outs = [o async for o in handler(demo, "run")("Q?", "", "", "", [], 2, 10, "iterative")]
    assert all(len(o) == 13 for o in outs)
    view, button = outs[-1][10], outs[-1][11]
    assert isinstance(view, ProgressView)
    assert view.run_id == "run-42"
    assert view.finished
    assert button["visible"] is False  # the report came: nothing to resume
    # Stop is enabled while the run runs, and disabled once it ended
    assert all(o[12]["interactive"] is True for o in outs[:-1])
    assert outs[-1][12]["interactive"] is False

    failing = build_app(settings, research_fn=FakeResearch(script(None)))
    outs = [o async for o in handler(failing, "run")("Q?", "", "", "", [], 2, 10, "iterative")]
    assert outs[-1][10].failed
    assert outs[-1][11]["visible"] is True
    assert all(o[11]["visible"] is False for o in outs[:-2])  # hidden while it runs
    assert outs[-1][12]["interactive"] is False


async def test_stop_handler_shows_stopped_and_the_resume_button(settings: Settings) -> None:
    demo = build_app(settings, research_fn=FakeResearch([]))
    panel, button, kept = await handler(demo, "stop")(running_view())
    assert "Stopped" in panel
    assert "run-42" in panel
    assert "dc-error" not in panel
    assert button["visible"] is True
    assert kept.run_id == "run-42"
    panel, button, _ = await handler(demo, "stop")(None)
    assert "Stopped" in panel
    assert button["visible"] is False
    # Stop cancels the runs: Research and Enter (after the clarify card asked), the card's
    # Continue and Skip, Resume, History's Resume and the runs continued after a review
    names = {i: getattr(fn.fn, "__name__", "") for i, fn in demo.fns.items()}
    cancels = next(fn.cancels for fn in demo.fns.values() if fn.cancels)
    assert sorted(names[i] for i in cancels) == [
        *["continue_run"] * 3,  # the runs continued after a review
        "resume_run",
        "resume_stopped",
        "run",
        "run",
        "run_unless_asked",
        "run_unless_asked",
    ]


async def test_resume_continues_the_stopped_run_to_its_report(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    resumed: list[tuple[str, str | None]] = []

    def fake_resume(run_id: str, settings: Settings, owner: str | None) -> Any:
        resumed.append((run_id, owner))
        return FakeResearch(script(run_result()))("Q?", settings)

    monkeypatch.setattr(api, "resume", fake_resume)
    demo = build_app(settings, research_fn=FakeResearch([]))
    outs = [o async for o in handler(demo, "resume_stopped")(stop(running_view()))]
    assert resumed == [("run-42", None)]
    assert "Report ready" in outs[-1][1]
    assert "<h1>Metformin review</h1>" in outs[-1][2]
    assert str(outs[-1][5]).count('href="dc/download/') == 6  # the downloads
    assert outs[-1][11]["visible"] is False
    # nothing to resume: said in the panel, no call
    outs = [o async for o in handler(demo, "resume_stopped")(None)]
    assert "No run to resume" in outs[-1][1]
    assert len(resumed) == 1


async def test_after_stop_the_run_shows_nothing_but_stopped_and_is_closed(
    settings: Settings,
) -> None:
    """Gradio's cancellation of a run's handler can land after the run's next update (a
    browser test saw "Searching" replace "Stopped" 40 ms after it). Once Stop is pressed in
    a session, its run's next update is "Stopped" and the run is closed; a run of another
    session streams on."""
    fake = FakeResearch(script(run_result()))
    demo = build_app(settings, research_fn=fake)
    run, stop_fn = handler(demo, "run"), handler(demo, "stop")
    mine, theirs = gr.Request(session_hash="s1"), gr.Request(session_hash="s2")
    args: tuple[Any, ...] = ("Q?", "", "", "", [], 2, 10, "iterative")
    stream = run(*args, mine)
    other = run(*args, theirs)
    first = [await anext(stream), await anext(stream)]
    await anext(other)
    assert "Starting" in first[-1][1]
    panel, _, _ = await stop_fn(first[-1][10], mine)
    assert "Stopped" in panel
    rest = [o async for o in stream]
    assert len(rest) == 1  # one last update, then the stream ends
    assert "<strong>Stopped at " in rest[0][1]
    assert "Report ready" not in rest[0][1]
    assert rest[0][11]["visible"] is True  # Resume
    assert rest[0][12]["interactive"] is False  # Stop
    assert all(isinstance(o, type(gr.skip())) for o in (rest[0][0], *rest[0][2:10]))
    assert fake.closed == 1  # the stopped run was closed
    others = [o async for o in other]
    assert "Report ready" in others[-1][1]  # the other session's run was not stopped
    # a new run in the stopped session streams to its report
    again = [o async for o in run(*args, mine)]
    assert "Report ready" in again[-1][1]
