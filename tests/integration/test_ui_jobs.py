"""The web app in jobs mode (``Settings.jobs``) with one real ``deepcritical worker`` process
on the embedded SQLite default (no server), the stub of the search APIs and ``--llm none``:

- a click on Research (the app's handler) submits a job, which the worker runs, and follows
  its event log to the report: progress with the run id, report, answer card, evidence,
  downloads, as an in-process run shows them;
- a page closed mid-run (the handler stopped after its first outputs) leaves the run going
  in the worker; opening the run in History follows it live to the same report;
- ``deep_research`` (the MCP tool) waits on a job and returns its answer.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from deepcritical.config import Settings
from deepcritical.state import RunStore
from deepcritical.testing.api_stub import StubAPI, StubData
from deepcritical.ui.app import build_app
from deepcritical.ui.mcp_tool import parse_output
from deepcritical.ui.progress_view import ProgressView
from tests.integration.test_cli_research import cli_command, user_env
from tests.unit.test_ui_app import handler
from tests.unit.ui_fixtures import OPEN_REPORT, OPEN_STATUS, PANEL_RUN_ID

pytestmark = pytest.mark.slow

SOURCES = ["pubmed", "europepmc"]
QUESTION = "Does MEK inhibition improve survival in BRAF-mutant melanoma?"
FINAL = {"completed", "max_iterations", "failed", "cancelled", "time_budget"}


@dataclass
class Worker:
    settings: Settings
    log: Path
    process: subprocess.Popen[str]

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory, api_fixtures: Path) -> Iterator[Worker]:
    root = tmp_path_factory.mktemp("ui-jobs")
    data_dir = root / "data"
    log = root / "worker.log"
    with StubAPI(StubData(api_fixtures)) as stub, log.open("w") as out:
        process = subprocess.Popen(
            [*cli_command(), "--data-dir", str(data_dir), "worker", "--worker-id", "ui-w1"],
            cwd=root, env=user_env(), stdout=out, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        settings = Settings(
            data_dir=data_dir,
            jobs=True,
            llm="none",
            sources=SOURCES,
            max_rounds=1,
            max_sources=40,
            max_full_texts=0,
            http_timeout_seconds=120,
            source_base_urls={"pubmed": stub.eutils_url, "europepmc": stub.europepmc_url},
            _env_file=None,
        )
        try:
            yield Worker(settings, log, process)
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        assert not stub.errors, stub.errors


def run_args(question: str = QUESTION) -> tuple[Any, ...]:
    return (question, "", "none", "", SOURCES, 1, 40, "iterative")


async def collect(stream: AsyncIterator[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [out async for out in stream]


def record_of(settings: Settings, run_id: str) -> Any:
    store = RunStore.open(settings)
    try:
        return store.require_run(run_id)
    finally:
        store.close()


def check_report(out: tuple[Any, ...], worker: Worker) -> str:
    """The run id of a final output tuple that shows a report (else fail with the log)."""
    view = out[10]
    assert isinstance(view, ProgressView)
    assert view.finished, (view, worker.tail())
    assert not view.failed, (view.error, worker.tail())
    assert 'class="dc-report' in str(out[2]) or "<h1>" in str(out[2]), str(out[2])[:500]
    assert 'id="dc-answer"' in str(out[6])
    assert "dc-evidence-row" in str(out[3])
    assert str(out[5]).count('href="dc/download/') == 6  # .md, .json, .html and references
    assert view.run_id
    return view.run_id


async def test_a_click_submits_a_job_that_the_worker_runs_to_its_report(
    worker: Worker, tmp_path: Path
) -> None:
    demo = build_app(worker.settings, downloads_dir=tmp_path / "dl")
    started = time.monotonic()
    outs = await collect(handler(demo, "run")(*run_args()))
    run_id = check_report(outs[-1], worker)
    assert run_id in str(outs[1][1])  # shown at once, while queued
    record = record_of(worker.settings, run_id)
    assert record.status in {"completed", "max_iterations"}
    assert record.worker == "ui-w1"  # run in the worker, not in this process
    assert time.monotonic() - started < 120


async def test_a_closed_page_reattaches_from_history_and_sees_the_run_finish(
    worker: Worker, tmp_path: Path
) -> None:
    demo = build_app(worker.settings, downloads_dir=tmp_path / "dl")

    async def submit_and_close(question: str) -> str:
        stream = handler(demo, "run")(*run_args(question))
        first = [await anext(stream), await anext(stream)]
        await stream.aclose()  # the page is closed: its handler ends, the job goes on
        run_id = first[1][10].run_id
        assert run_id
        return str(run_id)

    # the worker runs one job at a time: the second run waits in the queue meanwhile
    ahead = await submit_and_close("Does metformin reduce cancer incidence in diabetes?")
    run_id = await submit_and_close("Does aspirin prevent colorectal cancer?")
    # reopened: History lists the runs with their live status; opening one follows it
    rows, ids = handler(demo, "refresh")()
    assert ids[:2] == [run_id, ahead]
    assert rows[0][0] in {"queued", "in_progress"}, rows[0]
    outs = await collect(handler(demo, "open_run")(run_id))
    assert "following it live" in str(outs[1][OPEN_STATUS])
    ended, panel = outs[-2], outs[-1]  # the run's end, then the follow-up panel opens on it
    assert check_report(ended, worker) == run_id
    assert "Followed to its end" in str(ended[OPEN_STATUS])
    assert ended[OPEN_REPORT] == ended[2]  # the report below the table too
    assert panel[PANEL_RUN_ID] == run_id
    for rid in (ahead, run_id):
        record = record_of(worker.settings, rid)
        assert record.status in {"completed", "max_iterations"}, record.error
        assert record.worker == "ui-w1"


async def test_deep_research_waits_on_a_job(worker: Worker) -> None:
    demo = build_app(worker.settings)
    text = await handler(demo, "deep_research")(
        "Is statin therapy associated with lower dementia risk?", None, 1
    )
    out = parse_output(text)
    assert out["status"] in {"completed", "max_iterations_reached"}
    assert out["answer"]
    record = record_of(worker.settings, out["trace_id"])
    assert record.worker == "ui-w1"
    assert record.status in FINAL


async def test_stop_cancels_the_job_in_the_worker(worker: Worker) -> None:
    demo = build_app(worker.settings)
    # a long run (more rounds, no source limit) the worker is busy with
    stream = handler(demo, "run")(
        "Does vitamin D supplementation reduce fractures?", "", "none", "", SOURCES, 3, 300, ""
    )
    view: ProgressView | None = None
    async for out in stream:
        view = out[10]
        if view is not None and view.run_id and view.stage not in {"Waiting", "Starting"}:
            break  # the worker is running it
    await stream.aclose()
    assert view is not None
    assert view.run_id
    stopped = time.monotonic()
    panel, _, _ = await handler(demo, "stop")(view)
    assert "Stopped" in panel
    deadline = stopped + 5
    while record_of(worker.settings, view.run_id).status not in FINAL:
        assert time.monotonic() < deadline, worker.tail()
        await asyncio.sleep(0.1)
    record = record_of(worker.settings, view.run_id)
    assert record.status == "cancelled", (record.status, worker.tail())
