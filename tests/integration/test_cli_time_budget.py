"""The ``deepcritical`` command in-process (typer's ``CliRunner``) on a tiny local corpus
(issue 13): ``research --time-budget 0.001`` ends with exit 0 and a report in 20 of 20 tries,
``runs resume`` of a run stopped by its time budget ends the same way with a fresh budget, and
``runs resume`` of a run whose heartbeat is live is refused with a message, exit 2 and no
traceback."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy.orm import Session
from typer.testing import CliRunner, Result

from deepcritical.cli.main import app
from deepcritical.config import Settings
from deepcritical.models import utc_now
from deepcritical.state import RunStore
from tests.e2e.corpus import write_corpus

pytestmark = pytest.mark.slow

QUESTION = "Does metformin lower cancer incidence in type 2 diabetes?"
TRIES = 20
RAN_OUT = "The time budget (0.001 s) ran out before any source was searched."


def invoke(*args: str | Path) -> Result:
    """``deepcritical ARGS`` in this process; never raises (the exit code is in the result)."""
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=True)


def describe(result: Result) -> str:
    return f"exit {result.exit_code}\n{result.output[-3000:]}\n{result.exception!r}"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory with the tiny corpus imported (``corpus add``)."""
    root = tmp_path_factory.mktemp("budget")
    added = invoke("--data-dir", root / "data", "corpus", "add", write_corpus(root / "c.jsonl"))
    assert added.exit_code == 0, describe(added)
    return root / "data"


def research(data_dir: Path, out: Path) -> Result:
    return invoke(
        "--data-dir", data_dir, "research", QUESTION, "--llm", "none",
        "--corpus", data_dir / "corpus", "--time-budget", "0.001", "--out", out,
    )  # fmt: skip


def run_id_of(result: Result) -> str:
    found = re.search(r"run id\s+([0-9a-f]{32})", result.output)
    assert found, result.output
    return found.group(1)


def test_a_tiny_time_budget_ends_with_a_report_every_time(data_dir: Path, tmp_path: Path) -> None:
    ran_out = 0
    for attempt in range(TRIES):
        out = tmp_path / f"try{attempt}" / "report.md"
        result = research(data_dir, out)
        assert result.exit_code == 0, f"try {attempt}: {describe(result)}"
        assert "Traceback" not in result.output
        assert out.read_text(encoding="utf-8").startswith("# ")
        report = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))["report"]
        assert report["metadata"]["stop_reason"] in {"time_budget", "insufficient_evidence"}
        if not report["metadata"]["sources_searched"]:  # the budget ran out first
            assert report["executive_summary"].startswith(RAN_OUT)
            assert report["references"] == []
            ran_out += 1
    assert ran_out, "no try ran out of time before the search (1 ms cannot embed a query)"


def test_resume_of_a_run_stopped_by_its_time_budget_ends_the_same_way(
    data_dir: Path, tmp_path: Path
) -> None:
    first = research(data_dir, tmp_path / "first.md")
    assert first.exit_code == 0, describe(first)
    run_id = run_id_of(first)
    store = RunStore.open(Settings(data_dir=data_dir))
    try:
        record = store.get_run(run_id)
        assert record is not None
        if record.status != "time_budget":
            pytest.skip(f"the run ended as {record.status}, not on its time budget")
    finally:
        store.close()

    resumed = invoke(
        "--data-dir", data_dir, "runs", "resume", run_id, "--out", tmp_path / "resumed.md"
    )
    assert resumed.exit_code == 0, describe(resumed)
    assert "Traceback" not in resumed.output
    assert "with a fresh time budget of 0.001 s" in " ".join(resumed.output.split())
    assert (tmp_path / "resumed.md").read_text(encoding="utf-8").startswith("# ")
    report = json.loads((tmp_path / "resumed.json").read_text(encoding="utf-8"))["report"]
    assert report["metadata"]["stop_reason"] in {"time_budget", "insufficient_evidence"}


def test_resume_of_a_live_run_is_refused_with_a_message(data_dir: Path, tmp_path: Path) -> None:
    store = RunStore.open(Settings(data_dir=data_dir))
    try:
        run_id = store.create_run(QUESTION, Settings(llm="none", sources=["local"]).public_dict())

        def running(session: Session) -> None:
            row = store.require_row(session, run_id)
            row.status = "in_progress"
            row.updated_at = utc_now() - timedelta(seconds=3)

        store.transact(running)
    finally:
        store.close()
    out = tmp_path / "report.md"
    refused = invoke("--data-dir", data_dir, "runs", "resume", run_id[:10], "--out", out)
    assert refused.exit_code == 2, describe(refused)
    text = " ".join(refused.output.split())  # rich wraps long lines
    assert (
        f"Error: run {run_id} is still running in another process (last heartbeat 3 s ago); "
        "resume it after it goes stale (> 60 s)"
    ) in text, text
    assert "Traceback" not in refused.output
    assert not out.exists()
