"""A research run on the terminal, shared by ``research`` and ``runs resume``: its events with
a progress line, then the report files (markdown at ``--out``, JSON next to it, and with
``--export`` the references as RIS, BibTeX or CSL-JSON next to it too) and the summary and usage
tables.

Exit codes of a run: 0 with a report; 1 when the run failed, ended without one, stopped on an
error (stop reason ``error``: the report of what was gathered is still written, and the error
is named), or its report files could not be written (the message names the run id and the
``runs export`` command); 2 for an ``--out`` that cannot be written (checked before the run)
and the errors a command names as bad input (e.g. an unknown model provider); 130 when
interrupted.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, NoReturn, cast

import typer
from rich.console import Console
from rich.table import Table

from deepcritical.cli.context import console, fail, global_options
from deepcritical.events import ResearchEvent, SearchingData
from deepcritical.formats.references import (
    EXPORT_FORMATS,
    EXPORT_SUFFIXES,
    ExportFormat,
    export_references,
)
from deepcritical.models import SOURCE_LABELS, RunResult, plural, stop_reason_text

__all__ = [
    "ExportOption",
    "ReportPath",
    "check_out_path",
    "export_paths",
    "parse_export_formats",
    "print_usage",
    "run_to_report",
]

ReportPath = Annotated[
    Path, typer.Option("--out", help="Markdown report path; JSON goes next to it (.json).")
]
"""The ``--out`` option of the commands that write a report (default ``report.md``)."""

ExportOption = Annotated[
    str | None,
    typer.Option(
        "--export",
        help="Also write the report's references for reference managers: a comma list of "
        "ris, bibtex, csljson (files next to --out: .ris, .bib, .csl.json).",
    ),
]
"""The ``--export`` option of the commands that write a report."""

FORMAT_LABELS: dict[ExportFormat, str] = {
    "ris": "RIS",
    "bibtex": "BibTeX",
    "csljson": "CSL-JSON",
}


def parse_export_formats(value: str | None) -> tuple[ExportFormat, ...]:
    """The formats of an ``--export`` value (``"ris,bibtex"``), each once, in the order given;
    ``()`` when the option is not given.

    Raises:
        typer.Exit: code 2 (before any work) for an empty list or a name that is not one of
            ``ris``, ``bibtex``, ``csljson``.
    """
    if value is None:
        return ()
    names = [n.strip().lower() for n in value.split(",") if n.strip()]
    bad = [n for n in names if n not in EXPORT_FORMATS]
    if bad or not names:
        what = f"unknown format {', '.join(bad)}" if bad else "no format given"
        raise fail(f"--export {value}: {what}; choose among ris, bibtex, csljson", 2)
    return tuple(cast(ExportFormat, n) for n in dict.fromkeys(names))


def export_paths(out: Path, formats: tuple[ExportFormat, ...]) -> list[tuple[ExportFormat, Path]]:
    """Where each ``--export`` format is written: next to ``out`` with its suffix
    (``report.md`` -> ``report.ris``, ``report.bib``, ``report.csl.json``)."""
    return [(fmt, out.with_suffix(EXPORT_SUFFIXES[fmt])) for fmt in formats]


EventStream = Callable[[], AsyncIterator[ResearchEvent]]

_STYLE = {"warning": "yellow", "error": "red", "done": "green"}


def check_out_path(out: Path, exports: tuple[ExportFormat, ...] = ()) -> None:
    """Refuse, before any work, an ``--out`` the report could not be written to.

    Every file (``out``, the JSON next to it and the files of ``exports``, see
    :func:`export_paths`) is really opened for writing, without
    changing anything: an existing file is opened for appending and closed unwritten; a new
    one is created and removed again, with any directory made for it (:func:`_probe_write`).
    So a path the system refuses (``/proc/x.md``, a read-only mount, a full quota of inodes)
    fails here, not after the run.

    Raises:
        typer.Exit: code 2 when ``out`` ends in ``.json``, is a directory, lies under a file,
            is also an export's path (``--out refs.ris --export ris``), or a file cannot be
            opened for writing (the message gives the system's reason).
    """
    if out.suffix.lower() == ".json":
        raise fail(
            f"--out {out}: give the markdown path (e.g. report.md); the JSON is written next "
            "to it with the suffix .json",
            2,
        )
    if out.is_dir():
        raise fail(f"--out {out} is a directory; give a file path such as {out}/report.md", 2)
    for ancestor in out.parents:
        if ancestor.exists():
            if not ancestor.is_dir():
                raise fail(f"--out {out}: {ancestor} is a file, not a directory", 2)
            break
    extra = [path for _, path in export_paths(out, exports)]
    if out in extra:
        raise fail(
            f"--out {out}: the markdown report would overwrite an --export file; give a "
            "path ending in .md",
            2,
        )
    for path in (out, out.with_suffix(".json"), *extra):
        try:
            _probe_write(path)
        except OSError as exc:
            raise fail(f"--out {out}: {path} cannot be written ({_reason(exc)})", 2) from None


def _probe_write(path: Path) -> None:
    """Open ``path`` for writing and leave everything as it was: an existing file is opened
    for appending (nothing written, so not truncated); a new file is created exclusively and
    removed, and the directories made for it are removed again.

    Raises:
        OSError: the file or a directory above it cannot be created or opened for writing.
    """
    if path.exists():
        with path.open("ab"):
            return
    made = [d for d in reversed(path.parents) if not d.exists()]
    try:
        for directory in made:
            directory.mkdir()
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        path.unlink()
    finally:
        for directory in reversed(made):
            with contextlib.suppress(OSError):  # not made, or not empty: leave it
                directory.rmdir()


def _reason(exc: OSError) -> str:
    """The system's reason for ``exc`` (``"Permission denied"``), without the path."""
    return exc.strerror or type(exc).__name__


def run_to_report(
    start: EventStream,
    out: Path,
    *,
    bad_input: tuple[type[Exception], ...],
    interrupt_hint: str | None = None,
    exports: tuple[ExportFormat, ...] = (),
) -> NoReturn:
    """Run ``start()`` to its end, printing its events (the latest also on a progress line,
    the run id with the command that resumes it), write the report files when it gives a
    result (markdown at ``out``, JSON next to it; summary and usage tables) and exit.

    Args:
        start: returns the run's event stream (called once, inside the event loop).
        out: the markdown report path, already checked by :func:`check_out_path`.
        bad_input: errors of the run that mean bad input (printed; exit code 2).
        interrupt_hint: printed after ``Interrupted.`` on Ctrl-C (exit code 130).
        exports: the reference-manager formats to write the report's references in, next
            to ``out`` (:func:`export_paths`; checked by :func:`check_out_path`).

    A report file that cannot be written after the run (the disk filled up, the directory
    went away) ends with exit code 1 and a message, never a traceback: it names the run id
    and the ``deepcritical runs export`` command that gets the stored report back (or says
    the run was not recorded).

    Raises:
        typer.Exit: always: 0 with the report written, 1 when the run failed, ended without
            a report or its files could not be written, 2 on ``bad_input``, 130 when
            interrupted.
    """
    outcome = _Outcome()
    try:
        code = asyncio.run(_consume(start, bad_input, outcome))
    except KeyboardInterrupt:
        hint = f" {interrupt_hint}" if interrupt_hint else ""
        console.print(f"[yellow]Interrupted.[/yellow]{hint}")
        raise typer.Exit(130) from None
    if outcome.result is not None:
        try:
            _write_outputs(outcome.result, out, exports)
        except OSError as exc:
            raise fail(_unwritten(out, exc, outcome.run_id)) from None
    raise typer.Exit(code)


@dataclass
class _Outcome:
    """What a run's events told: its run id (``None`` when it is not recorded) and result."""

    run_id: str | None = None
    result: RunResult | None = None


def _unwritten(out: Path, exc: OSError, run_id: str | None) -> str:
    """The message for report files that could not be written after the run."""
    where = exc.filename or out
    text = f"the report could not be written to {where} ({_reason(exc)})."
    if run_id is None:
        return text + " The run was not recorded (persist_runs is off), so it is lost."
    data_dir = global_options.data_dir
    option = f" --data-dir {data_dir}" if data_dir is not None else ""
    return (
        f"{text} The run and its report are stored in the run database as run {run_id}: "
        f"`deepcritical{option} runs export {run_id} --out report.json` writes them to a file."
    )


async def _consume(
    start: EventStream, bad_input: tuple[type[Exception], ...], outcome: _Outcome
) -> int:
    """Print the events of ``start()`` (the latest also on a progress line), record the run
    id and the result in ``outcome`` and return the exit code: 0 after ``done``; 1 after
    ``error``, when the stream ends without a result, or when the result's stop reason is
    ``error`` (the gathering or the Magentic workflow failed); 2 when it raises one of
    ``bad_input`` (printed). The run id of the ``started`` event is printed with the command
    that resumes it. A stream that ends on ``plan_ready`` / ``evidence_ready`` (the run waits
    for the researcher's review) returns 0 and names the command that decides it; the
    progress line stops after such an event (a prompt may ask for the review) and starts
    again with the next.
    """
    waiting: ResearchEvent | None = None
    try:
        with console.status("Starting…") as status:
            async for event in start():
                if waiting is not None:  # a review answered at the prompt: the run goes on
                    status.start()
                waiting = event if event.type in REVIEW_EVENTS else None
                status.update(f"[bold]{event.type}[/bold]: {event.message[:100]}")
                _print_event(event)
                if event.run_id:
                    run_id = event.run_id
                    outcome.run_id = run_id
                    console.print(
                        f"{'run id':>16} {run_id} (resume: deepcritical runs resume {run_id})"
                    )
                if event.type == "done":
                    outcome.result = event.result
                elif event.type == "error":
                    return 1
                elif waiting is not None:
                    status.stop()  # the review may be asked for at a prompt
    except bad_input as exc:
        console.print(f"[red]Error:[/red] {error_line(exc)}")
        return 2
    if waiting is not None:
        _print_waiting(waiting, outcome.run_id)
        return 0
    if outcome.result is None:
        console.print("[red]Error:[/red] the run ended without a report")
        return 1
    meta = outcome.result.report.metadata
    if meta.stop_reason == "error":
        why = "; ".join(n for n in meta.notes if "error" in n.lower()) or "see the warnings above"
        console.print(
            f"[red]Error:[/red] the run stopped on an error ({why}); the report written holds "
            f"only what was gathered before it ({meta.papers_reviewed} evidence items)"
        )
        return 1
    return 0


REVIEW_EVENTS = frozenset({"plan_ready", "evidence_ready"})
"""Events after which a run waits for the researcher's review."""


def _print_waiting(event: ResearchEvent, run_id: str | None) -> None:
    """Say that the run waits for a review and the command that decides it."""
    run = run_id or "ID"
    command = "approve-plan" if event.type == "plan_ready" else "approve-evidence"
    console.print(
        f"[yellow]The run waits for your review.[/yellow] Decide it with `deepcritical runs "
        f"{command} {run}` (or cancel it with `deepcritical runs cancel {run}`)."
    )


def _write_outputs(result: RunResult, out: Path, exports: tuple[ExportFormat, ...] = ()) -> None:
    """Write the markdown report to ``out``, the JSON (report, plan, evidence) to ``out``
    with the suffix ``.json`` and the report's references in each of ``exports`` next to it
    (:func:`export_paths`), creating the directory; print the summary and usage tables.

    Raises:
        OSError: a file cannot be written.
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(result.report.to_markdown(), encoding="utf-8")
    json_path = out.with_suffix(".json")
    json_path.write_text(result.to_json(), encoding="utf-8")
    written: list[tuple[ExportFormat, Path]] = []
    for fmt, path in export_paths(out, exports):
        path.write_text(export_references(result, fmt), encoding="utf-8")
        written.append((fmt, path))
    _print_summary(result, out, json_path, written)
    print_usage(result, console)


def _output_tokens(output: int, reasoning: int) -> str:
    """The output-tokens cell: ``"812"``, or ``"812 (300 reasoning)"`` when the provider
    reported reasoning tokens."""
    return f"{output} ({reasoning} reasoning)" if reasoning else str(output)


def print_usage(result: RunResult, to: Console) -> None:
    """Print the run's usage accounting to ``to``: LLM requests and input/output tokens per
    agent and in total, search calls (failed ones counted) and results per source, then the
    wall time per stage in seconds."""
    usage = result.report.metadata.usage
    table = Table(title="Usage")
    table.add_column("What")
    table.add_column("Requests / calls", justify="right")
    table.add_column("Input tokens", justify="right")
    table.add_column("Output tokens", justify="right")
    for role, used in usage.llm.items():
        failed = f" ({used.failures} failed)" if used.failures else ""
        table.add_row(
            f"LLM {role}",
            f"{used.requests}{failed}",
            str(used.input_tokens),
            _output_tokens(used.output_tokens, used.reasoning_tokens),
        )
    total = usage.llm_total
    table.add_row(
        "LLM total",
        str(total.requests),
        str(total.input_tokens),
        _output_tokens(total.output_tokens, total.reasoning_tokens),
    )
    for source, calls in usage.search.items():
        failed = f" ({calls.failed_calls} failed)" if calls.failed_calls else ""
        table.add_row(
            f"search {SOURCE_LABELS.get(source, source)}",
            f"{calls.calls}{failed}",
            f"{calls.results} results",
            "",
        )
    to.print(table)
    if usage.stage_seconds:
        stages = " · ".join(f"{stage} {sec:.1f} s" for stage, sec in usage.stage_seconds.items())
        to.print(f"Time per stage: {stages}")


def _print_event(event: ResearchEvent) -> None:
    if event.type in {"report_section"}:
        return
    style = _STYLE.get(event.type, "cyan")
    prefix = f"[round {event.round}] " if event.round else ""
    label = event.type.replace("_", " ")  # "evidence added", never an identifier
    console.print(f"[{style}]{label:>16}[/{style}] {prefix}{event.message}")
    if isinstance(event.data, SearchingData):
        for q in event.data.queries:
            console.print(f"{'':>17} · {q}")


def _print_summary(
    result: RunResult,
    md_path: Path,
    json_path: Path,
    exports: list[tuple[ExportFormat, Path]],
) -> None:
    report = result.report
    meta = report.metadata
    table = Table(title="Run summary", show_header=False)
    table.add_row("Report", str(md_path))
    table.add_row("JSON (report + evidence)", str(json_path))
    for fmt, path in exports:
        table.add_row(f"References ({FORMAT_LABELS[fmt]})", str(path))
    table.add_row("Evidence items", str(meta.papers_reviewed))
    table.add_row("References", str(len(report.references)))
    table.add_row("Rounds", str(meta.iterations))
    table.add_row("Checklist coverage", f"{meta.checklist_coverage:.0%}")
    table.add_row("Stopped", stop_reason_text(meta.stop_reason))
    cv = meta.citation_validation
    table.add_row(
        "Citation check",
        f"{plural(cv.references_checked, 'reference')} and"
        f" {plural(cv.markers_checked, 'citation')} checked; removed"
        f" {plural(cv.references_removed, 'reference')},"
        f" {plural(cv.markers_removed, 'citation')} and"
        f" {plural(cv.sentences_removed, 'sentence')}"
        + (
            f"; the writer itself dropped {plural(cv.writer_markers_removed, 'citation')} of"
            f" sources it was not shown and {plural(cv.writer_sentences_removed, 'sentence')}"
            if cv.writer_markers_removed or cv.writer_sentences_removed
            else ""
        ),
    )
    table.add_row("Time", f"{meta.duration_seconds:.1f} s")
    console.print(table)


def error_line(exc: BaseException) -> str:
    """``exc``'s message, with the command that helps when it names one (its ``cli_hint``,
    e.g. ``"see `deepcritical runs list` for the stored runs"``): hints about commands are
    the command line's, never the web app's or the API's."""
    hint = getattr(exc, "cli_hint", "")
    return f"{exc} ({hint})" if hint else str(exc)
