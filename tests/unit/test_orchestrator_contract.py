"""What both orchestrators promise, as one suite over both (issue 31): a run stopped by its
time budget still ends in a report that says so; a consumer that stops reading, or whose task
is cancelled, leaves no task behind; a failing role falls back to its extractive
implementation with a warning and a note; a failing source is named and the run goes on.

The iterative orchestrator runs scripted roles (``tests/unit/test_iterative_orchestrator.py``),
the Magentic one the real agent-framework classes on a scripted manager and pydantic-ai roles
(``tests/unit/test_magentic_orchestrator.py``); each builder below makes one from the same
sources and settings.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Literal

import pytest

from deepcritical.config import Settings
from deepcritical.events import ResearchEvent
from deepcritical.models import ResearchReport
from deepcritical.testing.chat import RoleScript
from deepcritical.testing.failing_sources import FailingSource, HangingSource
from tests.unit import test_iterative_orchestrator as iterative
from tests.unit import test_magentic_orchestrator as magentic

Kind = Literal["iterative", "magentic"]
KINDS: list[Kind] = ["iterative", "magentic"]
QUESTION = magentic.QUESTION


def run(
    kind: Kind,
    sources: Sequence[object],
    *,
    time_budget_seconds: float = 60,
    failing_role: bool = False,
) -> AsyncIterator[ResearchEvent]:
    """The event stream of a run of ``kind`` over ``sources``; ``failing_role``: one LLM role
    fails on every call (the planner of the iterative run, the hypothesis agent of the
    Magentic one), with the extractive set as the fallback."""
    if kind == "iterative":
        settings = Settings(
            max_rounds=3,
            results_per_query=3,
            sources=["local"],
            time_budget_seconds=time_budget_seconds,
        )
        orch, _ = iterative.orchestrator(
            sources,
            settings=settings,
            agent_set=iterative.agents(planner=iterative.Broken()) if failing_role else None,
            fallback=iterative.agents() if failing_role else None,
        )
        return orch.run(QUESTION)
    roles = RoleScript(fail_roles=frozenset({"hypothesis"})) if failing_role else None
    mag, _, _, _ = magentic.make(
        roles=roles,
        sources=sources,
        run_settings=magentic.settings(time_budget_seconds=time_budget_seconds),
    )
    return mag.run(QUESTION)


def report_of(events: list[ResearchEvent]) -> ResearchReport:
    assert events[-1].type == "done", [(e.type, e.message) for e in events[-8:]]
    assert events[-1].result is not None
    return events[-1].result.report


@pytest.mark.parametrize("kind", KINDS)
async def test_the_time_budget_ends_the_run_with_a_report_that_says_so(kind: Kind) -> None:
    before = asyncio.all_tasks()
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    events = [e async for e in run(kind, [HangingSource()], time_budget_seconds=0.5)]
    assert loop.time() - t0 < 10
    report = report_of(events)
    assert report.metadata.stop_reason == "time_budget"
    assert "ran out before any source was searched" in report.executive_summary
    assert report.references == []
    await asyncio.sleep(0)
    assert asyncio.all_tasks() - before == set()


@pytest.mark.parametrize("kind", KINDS)
async def test_a_consumer_that_stops_reading_leaves_no_task(kind: Kind) -> None:
    before = asyncio.all_tasks()
    stream = run(kind, [HangingSource()])
    async for event in stream:
        if event.type == "searching":
            break
    await stream.aclose()  # type: ignore[attr-defined]
    await asyncio.sleep(0)
    assert asyncio.all_tasks() - before == set()


@pytest.mark.parametrize("kind", KINDS)
async def test_cancelling_the_consumer_mid_search_stops_all_work(kind: Kind) -> None:
    before = asyncio.all_tasks()
    searching = asyncio.Event()

    async def consume() -> None:
        async for event in run(kind, [HangingSource()]):
            if event.type == "searching":
                searching.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(searching.wait(), 10)
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0)
    assert asyncio.all_tasks() - before == set()


@pytest.mark.parametrize("kind", KINDS)
async def test_a_failing_role_falls_back_to_extractive_with_a_warning_and_a_note(
    kind: Kind,
) -> None:
    source = iterative.CountingSource() if kind == "iterative" else magentic.PaperSource()
    events = [e async for e in run(kind, [source], failing_role=True)]
    report = report_of(events)
    assert any("failed" in n for n in report.metadata.notes)
    assert any(e.type == "warning" and "extractive" in e.message for e in events)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_failing_source_is_named_and_the_run_goes_on(kind: Kind) -> None:
    working = iterative.CountingSource() if kind == "iterative" else magentic.PaperSource()
    events = [e async for e in run(kind, [working, FailingSource()])]
    report = report_of(events)
    assert report.metadata.source_failures == {"broken": "HTTP 503 after 3 tries"}
    assert report.references  # the working source's evidence is cited
    assert any(e.type == "warning" and "503" in e.message for e in events)
