"""``deepcritical runs ask ID "QUESTION"`` in-process (typer's ``CliRunner``) over a stored
finished run, the run embedder replaced by the hashing one: a cited answer with its numbered
references, or the "does not answer" message and the new-run command, both exit 0 and are
listed by ``runs show``; an unknown run, a failed run and an empty question exit 2 with one
clear line and store nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from deepcritical.cli.main import app
from deepcritical.config import Settings
from deepcritical.evidence import onnx_embeddings
from deepcritical.state import RunStore
from deepcritical.testing.embedders import HashingEmbedder
from deepcritical.writing.follow_up import NOT_ANSWERED
from tests.state.test_ask_api import QUESTION, store_run
from tests.unit.test_follow_up_answer import RUN


def invoke(*args: str | Path) -> Result:
    """``deepcritical ARGS`` in this process; never raises (the exit code is in the result)."""
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=True)


def flat(result: Result) -> str:
    """Everything the command printed, white space collapsed (rich wraps lines)."""
    return " ".join(result.output.split())


@pytest.fixture(autouse=True)
def _hermetic(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No ``.env`` or DEEPCRITICAL_ settings of the caller; the hashing embedder as the run
    embedder (no model is loaded)."""
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("DEEPCRITICAL_")]:
        monkeypatch.delenv(name)
    monkeypatch.setattr(onnx_embeddings, "run_embedder", lambda *_: HashingEmbedder())


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


def stored(data_dir: Path, status: str = "completed") -> tuple[RunStore, str]:
    store = RunStore.open(Settings(data_dir=data_dir))
    result = RUN if status == "completed" else None
    return store, store_run(store, result, status, "boom" if status == "failed" else None)


def test_ask_prints_a_cited_answer_and_show_lists_it(data_dir: Path) -> None:
    store, run_id = stored(data_dir)
    store.close()
    answered = invoke("--data-dir", data_dir, "runs", "ask", run_id[:8], QUESTION)
    assert answered.exit_code == 0, answered.output
    assert f"**Question:** {QUESTION}" in answered.stdout
    assert "[1]" in answered.stdout
    assert "## References" in answered.stdout
    assert "PMID: 111" in answered.stdout
    assert "[E1]" not in answered.stdout
    unanswered = invoke(
        "--data-dir", data_dir, "runs", "ask", run_id, "Is the moon made of basalt?"
    )
    assert unanswered.exit_code == 0, unanswered.output
    assert NOT_ANSWERED in unanswered.stdout
    assert "deepcritical research 'Is the moon made of basalt?'" in unanswered.stdout
    shown = invoke("--data-dir", data_dir, "runs", "show", run_id)
    assert shown.exit_code == 0, shown.output
    assert "Follow-up questions (2):" in shown.stdout
    assert f"1. {QUESTION}" in flat(shown)
    assert "Metformin use was associated" in flat(shown)
    assert f"2. Is the moon made of basalt? {NOT_ANSWERED}" in flat(shown)


@pytest.mark.parametrize(
    ("status", "run", "question", "says"),
    [
        ("completed", "f" * 32, QUESTION, f"no run with id '{'f' * 32}'"),
        ("failed", "", QUESTION, "failed: boom; it has no report to ask a question about"),
        ("completed", "", " \t ", "the research question is empty"),
    ],
)
def test_bad_input_exits_2_with_a_clear_line_and_stores_nothing(
    data_dir: Path, status: str, run: str, question: str, says: str
) -> None:
    store, run_id = stored(data_dir, status)
    try:
        result = invoke("--data-dir", data_dir, "runs", "ask", run or run_id, question)
        assert result.exit_code == 2, result.output
        assert says in flat(result)
        assert result.stdout == ""
        assert store.follow_ups(run_id) == []
    finally:
        store.close()
