"""``--out`` is checked by opening the files before the run; a report that cannot be written
after the run names the run id and ``runs export`` (issue 13 item 6)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import typer

from deepcritical.cli.context import global_options
from deepcritical.cli.run_output import check_out_path, run_to_report
from deepcritical.events import ResearchEvent
from deepcritical.models import ResearchReport, RunResult

RUN_ID = "run-0123456789abcdef"


def test_a_new_file_is_probed_and_nothing_is_left_behind(tmp_path: Path) -> None:
    out = tmp_path / "new" / "deeper" / "report.md"
    check_out_path(out)
    assert not (tmp_path / "new").exists()  # the directories made for the probe are gone


def test_an_existing_report_is_not_truncated_by_the_check(tmp_path: Path) -> None:
    out = tmp_path / "report.md"
    out.write_text("an earlier report", encoding="utf-8")
    out.with_suffix(".json").write_text("{}", encoding="utf-8")
    check_out_path(out)
    assert out.read_text(encoding="utf-8") == "an earlier report"
    assert out.with_suffix(".json").read_text(encoding="utf-8") == "{}"


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
def test_an_unwritable_path_fails_before_the_run_with_the_usage_error_code(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(typer.Exit) as info:
        check_out_path(Path("/proc/x.md"))
    assert info.value.exit_code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "--out /proc/x.md: /proc/x.md cannot be written" in err


def test_a_directory_that_cannot_hold_files_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    with pytest.raises(typer.Exit) as info:
        check_out_path(blocker / "report.md")
    assert info.value.exit_code == 2
    assert "is a file, not a directory" in " ".join(capsys.readouterr().err.split())


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through file permissions")
def test_a_read_only_existing_report_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "report.md"
    out.write_text("old", encoding="utf-8")
    out.chmod(0o444)
    with pytest.raises(typer.Exit):
        check_out_path(out)


def finished(run_id: str | None) -> AsyncIterator[ResearchEvent]:
    async def events() -> AsyncIterator[ResearchEvent]:
        yield ResearchEvent(
            type="started", message="Researching", data={"run_id": run_id} if run_id else {}
        )
        report = ResearchReport(title="R", research_question="Q?", executive_summary="S.")
        yield ResearchEvent(type="done", message="done", result=RunResult(report=report))

    return events()


@pytest.mark.parametrize("run_id", [RUN_ID, None])
def test_a_report_that_cannot_be_written_after_the_run_names_the_way_back(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    run_id: str | None,
) -> None:
    # no --data-dir given (an earlier in-process CLI call may have set one)
    monkeypatch.setattr(global_options, "data_dir", None)
    out = tmp_path / "report.md"
    out.mkdir()  # the markdown path became a directory while the run went on
    with pytest.raises(typer.Exit) as info:
        run_to_report(lambda: finished(run_id), out, bad_input=())
    assert info.value.exit_code == 1
    # the console wraps long lines anywhere (a long temporary path too): compare without spaces
    err = "".join(capsys.readouterr().err.split())
    assert "Traceback" not in err

    def said(text: str) -> bool:
        return "".join(text.split()) in err

    assert said(f"the report could not be written to {out}")
    if run_id is None:
        assert said("The run was not recorded")
    else:
        assert said(f"deepcritical runs export {RUN_ID} --out report.json")


def stopped_on_error() -> AsyncIterator[ResearchEvent]:
    async def events() -> AsyncIterator[ResearchEvent]:
        report = ResearchReport(title="R", research_question="Q?", executive_summary="S.")
        report.metadata.stop_reason = "error"
        report.metadata.notes.append(
            "Magentic workflow: stopped by an error: RuntimeError: the manager timed out"
        )
        yield ResearchEvent(type="done", message="done", result=RunResult(report=report))

    return events()


def test_a_run_stopped_by_an_error_writes_its_report_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run whose stop reason is ``error`` (the magentic manager failed, gathering raised)
    keeps what it gathered but never exits 0 (issue 21)."""
    out = tmp_path / "report.md"
    with pytest.raises(typer.Exit) as info:
        run_to_report(stopped_on_error, out, bad_input=())
    assert info.value.exit_code == 1
    assert out.is_file()
    err = " ".join(capsys.readouterr().err.split())
    assert "the run stopped on an error" in err
    assert "RuntimeError: the manager timed out" in err
    assert "(0 evidence items)" in err
