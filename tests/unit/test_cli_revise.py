"""``deepcritical runs revise ID "INSTRUCTION"``, ``runs versions ID`` and ``runs export ID
--version N`` in-process (typer's ``CliRunner``) over a stored finished offline run, the run
embedder replaced by the hashing one: "shorter" writes version 2 (markdown and JSON) and both
versions can be exported; bad input exits 2 with one clear line and stores nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from deepcritical.cli.main import app
from deepcritical.config import Settings
from deepcritical.evidence import onnx_embeddings
from deepcritical.models import RunResult
from deepcritical.state import RunStore
from deepcritical.testing.embedders import HashingEmbedder
from tests.state.revision_run import finished_run
from tests.state.test_ask_api import store_run


def invoke(*args: str | Path) -> Result:
    """``deepcritical ARGS`` in this process; never raises (the exit code is in the result)."""
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=True)


def flat(result: Result) -> str:
    """Everything the command printed, white space collapsed (rich wraps lines)."""
    return " ".join(result.output.split())


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    return finished_run(tmp_path_factory.mktemp("revision-run"))


@pytest.fixture(autouse=True)
def _hermetic(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No ``.env`` or DEEPCRITICAL_ settings of the caller; the hashing embedder as the run
    embedder (no model is loaded)."""
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("DEEPCRITICAL_")]:
        monkeypatch.delenv(name)
    monkeypatch.setattr(onnx_embeddings, "run_embedder", lambda *_: HashingEmbedder())


def stored(data_dir: Path, result: RunResult | None) -> str:
    store = RunStore.open(Settings(data_dir=data_dir))
    try:
        return store_run(store, result, "completed" if result else "failed", "boom")
    finally:
        store.close()


def test_revise_shorter_then_list_and_export_both_versions(
    tmp_path: Path, result: RunResult
) -> None:
    data = tmp_path / "data"
    run_id = stored(data, result)
    revised = invoke("--data-dir", data, "runs", "revise", run_id[:8], "shorter")
    assert revised.exit_code == 0, revised.output
    assert f"Version 2 of run {run_id}: report-v2.md and report-v2.json" in flat(revised)
    markdown = (tmp_path / "report-v2.md").read_text(encoding="utf-8")
    assert 'revised at the user\'s instruction "shorter"' in " ".join(markdown.split())
    as_json = RunResult.model_validate_json((tmp_path / "report-v2.json").read_text("utf-8"))
    assert as_json.report.to_markdown() == markdown
    assert as_json.evidence == result.evidence

    listed = invoke("--data-dir", data, "runs", "versions", run_id)
    assert listed.exit_code == 0, listed.output
    assert "(the run's report)" in flat(listed)
    assert "2 " in flat(listed)
    assert "shorter" in flat(listed)

    first = invoke(
        "--data-dir", data, "runs", "export", run_id, "--format", "markdown", "--version", "1"
    )
    assert first.exit_code == 0, first.output
    assert first.stdout == result.report.to_markdown()
    latest = invoke("--data-dir", data, "runs", "export", run_id, "--format", "markdown")
    assert latest.stdout == markdown  # the latest version by default
    exported = invoke("--data-dir", data, "runs", "export", run_id, "--out", tmp_path / "v2.json")
    assert exported.exit_code == 0, exported.output
    whole = json.loads((tmp_path / "v2.json").read_text(encoding="utf-8"))
    assert whole["report_version"] == {"version": 2, "instruction": "shorter"}
    assert whole["report_markdown"] == markdown
    ris = invoke("--data-dir", data, "runs", "export", run_id, "--format", "ris", "--version", "1")
    assert ris.exit_code == 0, ris.output
    assert ris.stdout.count("TY  -") == len(result.report.references)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("runs", "revise", "f" * 32, "shorter"), f"no run with id '{'f' * 32}'"),
        (("runs", "revise", "{run}", "  "), "the instruction is empty"),
        (("runs", "revise", "{run}", "make it funnier"), "'funnier' are not understood"),
        (("runs", "revise", "{run}", "shorter and longer"), "two lengths at once"),
        (("runs", "revise", "{failed}", "shorter"), "failed: boom; it has no report to revise"),
        (("runs", "export", "{run}", "--version", "2"), "has no version 2 (it has only version 1)"),
        (("runs", "versions", "{failed}"), "has no report yet"),
    ],
)
def test_bad_input_exits_2_with_one_clear_line_and_stores_nothing(
    tmp_path: Path, result: RunResult, args: tuple[str, ...], says: str
) -> None:
    data = tmp_path / "data"
    run_id, failed = stored(data, result), stored(data, None)
    filled = [a.format(run=run_id, failed=failed) for a in args]
    outcome = invoke("--data-dir", data, *filled)
    assert outcome.exit_code == 2, outcome.output
    assert says in flat(outcome)
    assert "Traceback" not in outcome.output
    store = RunStore.open(Settings(data_dir=data))
    try:
        assert [v.version for v in store.report_versions(run_id)] == [1]
    finally:
        store.close()
    assert not list(tmp_path.glob("report-v*"))
