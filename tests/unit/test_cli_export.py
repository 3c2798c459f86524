"""The reference-manager export on the command line, in-process (typer's ``CliRunner``) with
a scripted run: ``research --export ris,bibtex,csljson`` writes the files next to ``--out`` and
lists them, a bad format name is a usage error before the run, and ``runs export --format``
writes a stored run's references or evidence (``json``, the whole run, stays the default)."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import rispy
from bibtexparser.entrypoint import parse_string
from sqlalchemy.orm import Session
from typer.testing import CliRunner, Result

from deepcritical.cli.main import app
from deepcritical.config import Settings
from deepcritical.events import ResearchEvent
from deepcritical.models import RunResult
from deepcritical.state import RunStore
from tests.unit.test_reference_export import HOSTILE_TITLE, REPORT_ORDER, _run


def invoke(*args: str | Path) -> Result:
    """``deepcritical ARGS`` in this process; never raises (the exit code is in the result)."""
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=True)


def flat(result: Result) -> str:
    """Everything the command printed, white space collapsed (rich wraps lines)."""
    return " ".join(result.output.split())


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No ``.env`` of the checkout and no DEEPCRITICAL_ settings of the caller."""
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("DEEPCRITICAL_")]:
        monkeypatch.delenv(name)


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """``deepcritical.api.research`` replaced by a run that streams a started and a done
    event with :func:`_run`'s result; returns the questions it is called with."""
    calls: list[str] = []

    def research(question: str, settings: Settings, **_: Any) -> AsyncIterator[ResearchEvent]:
        calls.append(question)

        async def events() -> AsyncIterator[ResearchEvent]:
            yield ResearchEvent(type="started", message="Researching")
            yield ResearchEvent(type="done", message="done", result=_run())

        return events()

    monkeypatch.setattr("deepcritical.api.research", research)
    return calls


def research(tmp_path: Path, *options: str | Path) -> Result:
    return invoke(
        "--data-dir", tmp_path / "data", "research", "Does metformin lower cancer risk?",
        "--sources", "pubmed", "--llm", "none", *options,
    )  # fmt: skip


def test_research_export_writes_every_format_next_to_out_and_lists_them(
    tmp_path: Path, scripted: list[str]
) -> None:
    out = Path("out") / "review.md"  # relative to tmp_path (the working directory): short
    result = research(tmp_path, "--out", out, "--export", "ris, BibTeX,csljson,ris")
    assert result.exit_code == 0, result.output
    assert scripted == ["Does metformin lower cancer risk?"]
    ris = out.with_suffix(".ris")
    bib = out.with_suffix(".bib")
    csl = out.parent / "review.csl.json"
    text = flat(result)
    for label, path in [("RIS", ris), ("BibTeX", bib), ("CSL-JSON", csl)]:
        assert f"References ({label})" in text
        assert str(path) in text
    titles = [e.get("title", "") for e in rispy.loads(ris.read_text(encoding="utf-8"))]
    assert titles[0] == REPORT_ORDER[0]
    assert titles[1] == HOSTILE_TITLE
    assert len(parse_string(bib.read_text(encoding="utf-8")).entries) == 4
    items = json.loads(csl.read_text(encoding="utf-8"))
    assert "title" not in items[-1]  # the untitled record: no title cut from its text
    assert out.read_text(encoding="utf-8").startswith("# Metformin review")


@pytest.mark.parametrize(
    ("value", "message"),
    [("ris,endnote", "unknown format endnote"), (" , ", "no format given")],
)
def test_a_bad_export_format_is_a_usage_error_before_the_run(
    tmp_path: Path, scripted: list[str], value: str, message: str
) -> None:
    out = tmp_path / "report.md"
    result = research(tmp_path, "--out", out, "--export", value)
    assert result.exit_code == 2
    assert message in flat(result)
    assert "choose among ris, bibtex, csljson" in flat(result)
    assert scripted == []
    assert list(tmp_path.glob("report.*")) == []


def test_out_cannot_be_an_export_file(tmp_path: Path, scripted: list[str]) -> None:
    result = research(tmp_path, "--out", tmp_path / "refs.ris", "--export", "ris")
    assert result.exit_code == 2
    assert "would overwrite an --export file" in flat(result)
    assert scripted == []


# ------------------------------------------------------------------------------ runs export


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Path, str, str]:
    """A data directory whose run database holds a finished run (with :func:`_run`'s
    result) and a pending one; returns the directory and both ids."""
    data_dir = tmp_path / "data"
    store = RunStore.open(Settings(data_dir=data_dir, _env_file=None))
    try:
        done = store.create_run("Does metformin lower cancer risk?", {})
        pending = store.create_run("Unfinished?", {})
        payload = _run().model_dump(mode="json")

        def finish(session: Session) -> None:
            row = store.require_row(session, done)
            row.result = payload
            row.status = "done"

        store.transact(finish)
    finally:
        store.close()
    return data_dir, done, pending


def test_runs_export_writes_references_or_evidence_in_each_format(
    tmp_path: Path, stored: tuple[Path, str, str]
) -> None:
    data_dir, run_id, _ = stored
    ris = tmp_path / "refs.ris"
    written = invoke("--data-dir", data_dir, "runs", "export", run_id, "--format", "ris",
                     "--out", ris)  # fmt: skip
    assert written.exit_code == 0, written.output
    assert f"run {run_id} exported (ris, references) to" in flat(written)
    entries = rispy.loads(ris.read_text(encoding="utf-8"))
    assert [e.get("title", "") for e in entries][1] == HOSTILE_TITLE
    assert len(entries) == 4

    bib = invoke("--data-dir", data_dir, "runs", "export", run_id[:8], "--format", "bibtex",
                 "--scope", "evidence")  # fmt: skip
    assert bib.exit_code == 0, bib.output
    assert len(parse_string(bib.stdout).entries) == 5

    csl = invoke("--data-dir", data_dir, "runs", "export", run_id, "--format", "csljson")
    assert csl.exit_code == 0, csl.output
    items = json.loads(csl.stdout)
    assert [i["PMID"] for i in items if "PMID" in i] == ["111", "333"]

    whole = invoke("--data-dir", data_dir, "runs", "export", run_id)
    assert whole.exit_code == 0, whole.output
    data = json.loads(whole.stdout)
    assert data["run"]["id"] == run_id
    assert RunResult.model_validate({"report": data["report"]}).report.title == "Metformin review"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--format", "endnote"], "choose json, markdown, ris, bibtex or csljson"),
        (["--format", "ris", "--scope", "all"], "choose references or evidence"),
        (["--scope", "evidence"], "--scope applies to --format ris, bibtex or csljson"),
    ],
)
def test_runs_export_refuses_bad_options(
    stored: tuple[Path, str, str], options: list[str], message: str
) -> None:
    data_dir, run_id, _ = stored
    result = invoke("--data-dir", data_dir, "runs", "export", run_id, *options)
    assert result.exit_code == 2
    assert message in flat(result)


def test_runs_export_of_a_run_without_a_report_says_how_to_finish_it(
    stored: tuple[Path, str, str],
) -> None:
    data_dir, _, pending = stored
    result = invoke("--data-dir", data_dir, "runs", "export", pending, "--format", "bibtex")
    assert result.exit_code == 2
    assert f"run {pending} has no report yet" in flat(result)
    assert f"deepcritical runs resume {pending}" in flat(result)
