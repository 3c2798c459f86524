"""``deepcritical runs``: list, show, resume and export stored research runs (``runs export``
writes a run as JSON, or its references or evidence as RIS, BibTeX or CSL-JSON), and ask a
finished run a follow-up question (``runs ask ID "QUESTION"``: answered from that run's
evidence only, kept with the run, listed by ``runs show``).

A bad run id exits with code 2 and says where to find the valid ones. Every command works on
the local user's runs (those of the CLI and the Python API); ``--owner`` names another owner,
such as a web app user (``user:alice``, ``hf:alice``), for the operator who runs the server.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, cast

import typer
from rich.table import Table

from deepcritical.cli.context import console, fail, out_console, settings_from_options
from deepcritical.cli.run_output import (
    ExportOption,
    ReportPath,
    check_out_path,
    error_line,
    parse_export_formats,
    run_to_report,
)
from deepcritical.formats.references import (
    EXPORT_FORMATS,
    ExportFormat,
    ExportScope,
    export_references,
)
from deepcritical.state import (
    RunInProgressError,
    RunNotFoundError,
    RunNotResumableError,
    RunRecord,
    RunStore,
    RunWithoutReportError,
)

__all__ = ["runs_app"]

runs_app = typer.Typer(
    help="Stored research runs: list, show, resume, export, ask.", no_args_is_help=True
)


RunId = Annotated[str, typer.Argument(help="Run id (or a unique prefix).")]
Owner = Annotated[
    str | None,
    typer.Option(
        "--owner",
        help="Whose runs: a web app user such as user:alice or hf:alice (default: the local "
        "user, i.e. runs of the CLI and the Python API).",
    ),
]


def _open() -> RunStore:
    """The run database of the settings; exits with code 2 when it cannot be opened."""
    settings = settings_from_options()
    try:
        return RunStore.open(settings)
    except Exception as exc:
        raise fail(f"cannot open the run database: {type(exc).__name__}: {exc}", 2) from exc


def _require(store: RunStore, run_id: str, owner: str | None) -> RunRecord:
    """``owner``'s run ``run_id``; closes the store and exits with code 2 when there is none."""
    record = store.get_run(run_id, owner=owner)
    if record is None:
        store.close()
        whose = "" if owner is None else f" of owner {owner!r}"
        listing = "deepcritical runs list" + ("" if owner is None else f" --owner {owner}")
        raise fail(f"no run with id {run_id!r}{whose}; `{listing}` shows the runs", 2)
    return record


def _status(record: RunRecord) -> str:
    """The run's status, saying when an interrupted run, or one stopped by its time budget,
    can be resumed."""
    if record.interrupted:
        return f"{record.status}: interrupted (resumable)"
    if record.status == "time_budget":
        return "time_budget: report written (resumable with a fresh budget)"
    return record.status


@runs_app.command("list")
def list_runs(
    limit: Annotated[
        int, typer.Option("--limit", min=1, help="How many runs (newest first).")
    ] = 50,
    owner: Owner = None,
) -> None:
    """List the newest runs with status, progress and saved sources."""
    store = _open()
    try:
        records = store.list_runs(limit, owner=owner)
    finally:
        store.close()
    table = Table(title=f"Runs ({len(records)})")
    for column in ("id", "created (UTC)", "status", "progress", "stage", "sources", "question"):
        table.add_column(column)
    for r in records:
        table.add_row(
            r.id,
            r.created_at.strftime("%Y-%m-%d %H:%M"),
            _status(r),
            f"{r.progress:.0%}",
            r.stage or "",
            str(r.sources),
            r.question[:80],
        )
    out_console.print(table)


@runs_app.command("show")
def show_run(run_id: RunId, owner: Owner = None) -> None:
    """Show a run: status, progress, stage, checklist, iterations, metrics, and the follow-up
    questions asked about it (each with its answer's first line)."""
    store = _open()
    try:
        r = _require(store, run_id, owner)
        follow_ups = store.follow_ups(r.id, owner=owner)
    finally:
        store.close()
    out = out_console
    out.print(f"Run {r.id}")
    out.print(f"Question: {r.question}")
    if r.refined_question:
        out.print(f"Refined question: {r.refined_question}")
    out.print(f"Status: {_status(r)} · progress {r.progress:.0%} · stage {r.stage or '-'}")
    out.print(f"Created {r.created_at:%Y-%m-%d %H:%M:%S} UTC · updated {r.updated_at:%H:%M:%S}")
    out.print(f"Attempts: {r.attempts} · sources saved: {r.sources}")
    if r.error:
        out.print(f"Error: {r.error}")
    if r.checklist:
        table = Table(title="Checklist")
        for column in ("key", "status", "evidence", "description"):
            table.add_column(column)
        for item in r.checklist:
            table.add_row(
                str(item["key"]),
                str(item["status"]),
                f"{len(item['evidence_ids'])}/{item['min_evidence']}",
                str(item["description"])[:80],
            )
        out.print(table)
    for it in r.iterations:
        tracked = it.get("citation_tracking") or {}
        out.print(
            f"Round {it['round']}: {len(it.get('queries', []))} queries, "
            f"results {it.get('results_per_source', {})}, new {it.get('new_items', '-')}"
            + (
                f"; citation tracking: {tracked.get('identified', 0)} found, "
                f"{tracked.get('added', 0)} new"
                if tracked
                else ""
            )
        )
    if r.metrics.get("trace_id"):
        earlier = [e.get("trace_id", "?") for e in r.metrics.get("earlier_traces", [])]
        out.print(
            f"Trace: {r.metrics['trace_id']}"
            + (f" (earlier attempts: {', '.join(earlier)})" if earlier else "")
        )
    metrics = {k: v for k, v in r.metrics.items() if k != "usage"}
    out.print("Metrics: " + json.dumps(metrics, sort_keys=True))
    if follow_ups:
        out.print(f"Follow-up questions ({len(follow_ups)}):")
    for n, f in enumerate(follow_ups, start=1):
        out.print(f"{n}. {f.question}", markup=False)
        out.print(f"   {f.first_line()}", markup=False)


EXPORT_SCOPES: tuple[ExportScope, ...] = ("references", "evidence")


@runs_app.command("export")
def export_run(
    run_id: RunId,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="json (the whole run: run, checklist, iterations, sources, report) | ris | "
            "bibtex | csljson (its references for reference managers).",
        ),
    ] = "json",
    scope: Annotated[
        str | None,
        typer.Option(
            "--scope",
            help="With ris, bibtex or csljson: references (the report's, in its order; "
            "default) | evidence (every evidence item of the run).",
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="File to write (default: standard output).")
    ] = None,
    owner: Owner = None,
) -> None:
    """Export a run: as JSON (run, checklist, iterations, sources by question, report), or
    its references (or all its evidence) as RIS, BibTeX or CSL-JSON."""
    choice = fmt.strip().lower()
    if choice != "json" and choice not in EXPORT_FORMATS:
        raise fail(f"--format {fmt}: choose json, ris, bibtex or csljson", 2)
    chosen_scope = (scope or "references").strip().lower()
    if chosen_scope not in EXPORT_SCOPES:
        raise fail(f"--scope {scope}: choose references or evidence", 2)
    if choice == "json" and scope is not None:
        raise fail("--scope applies to --format ris, bibtex or csljson, not json", 2)
    store = _open()
    try:
        record = _require(store, run_id, owner)
        if choice == "json":
            data = store.export_run(record.id, owner=owner)
            text = json.dumps(data, indent=2, ensure_ascii=False)
        else:
            result = store.result(record.id, owner=owner)
            if result is None:
                raise fail(
                    f"run {record.id} has no report yet ({_status(record)}), so it has no "
                    f"references to export; `deepcritical runs resume {record.id}` finishes it",
                    2,
                )
            text = export_references(result, cast(ExportFormat, choice), chosen_scope)
    finally:
        store.close()
    if out is None:
        if choice == "json":
            out_console.print_json(text)
        else:
            typer.echo(text, nl=False)
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    what = "" if choice == "json" else f" ({choice}, {chosen_scope})"
    console.print(f"[green]✓[/green] run {record.id} exported{what} to {out}")


@runs_app.command("resume")
def resume_run(
    run_id: RunId,
    out: ReportPath = Path("report.md"),
    export: ExportOption = None,
    time_budget: Annotated[
        float | None,
        typer.Option(
            "--time-budget",
            help="Seconds for gathering evidence from the resume on (default: the run's own "
            "budget, started afresh).",
        ),
    ] = None,
    owner: Owner = None,
) -> None:
    """Continue an interrupted run (or one stopped by its time budget) from its last completed
    step and write its report.

    The time budget starts afresh at the resume. A run still running in another process (its
    heartbeat is younger than 60 s) is refused."""
    exports = parse_export_formats(export)
    check_out_path(out, exports)
    settings = settings_from_options(time_budget_seconds=time_budget)  # exit 2 unless > 0
    store = _open()
    try:
        record = _require(store, run_id, owner)
    finally:
        store.close()
    budget = time_budget or float(
        record.settings.get("time_budget_seconds", settings.time_budget_seconds)
    )
    console.print(
        f"Resuming run {record.id} with a fresh time budget of {budget:g} s for gathering "
        "(the clock restarts at the resume; --time-budget changes it)."
    )

    from deepcritical.api import resume
    from deepcritical.llm.providers import ModelSpecError

    run_to_report(
        lambda: resume(record.id, settings, time_budget_seconds=time_budget, owner=owner),
        out,
        bad_input=(RunNotFoundError, RunNotResumableError, RunInProgressError, ModelSpecError),
        interrupt_hint="Resume again with the same command.",
        exports=exports,
    )


@runs_app.command("ask")
def ask_run(
    run_id: RunId,
    question: Annotated[str, typer.Argument(help="The follow-up question.")],
    owner: Owner = None,
) -> None:
    """Ask a finished run a follow-up question, answered from that run's evidence only.

    Prints the answer (sources quoted verbatim, citations checked and grounded as the report's)
    with its references, or "The evidence of this run does not answer this question." and the
    command that starts a new run with it; both exit 0. The question and its answer are kept
    with the run (`runs show`). An unknown run, a run without a report (failed, cancelled,
    unfinished) and an empty or too long question exit 2 with the reason."""
    from deepcritical.api import ask
    from deepcritical.orchestrators.deps import QuestionError

    settings = settings_from_options()
    store = _open()
    try:
        record = _require(store, run_id, owner)
    finally:
        store.close()
    try:
        follow_up = asyncio.run(ask(record.id, question, settings, owner=owner))
    except (QuestionError, RunNotFoundError, RunWithoutReportError) as exc:
        raise fail(error_line(exc), 2) from exc
    typer.echo(follow_up.to_markdown(), nl=False)
