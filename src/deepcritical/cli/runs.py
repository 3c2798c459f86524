"""``deepcritical runs``: list, show, resume and export stored research runs (``runs export``
writes a run as JSON, its report as markdown, or its references or evidence as RIS, BibTeX or
CSL-JSON; ``--version N`` picks a version of the report), ask a finished run a follow-up
question (``runs ask ID "QUESTION"``: answered from that run's evidence only, kept with the
run, listed by ``runs show``), and revise its report (``runs revise ID "shorter"``: a new
version from the same evidence, kept with the run, listed by ``runs versions``).

A bad run id exits with code 2 and says where to find the valid ones. Every command works on
the local user's runs (those of the CLI and the Python API); ``--owner`` names another owner,
such as a web app user (``user:alice``, ``hf:alice``), for the operator who runs the server.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from pathlib import Path
from typing import Annotated, Any, TypeVar, cast

import typer
from rich.table import Table
from rich.text import Text
from sqlalchemy.exc import SQLAlchemyError

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
from deepcritical.models import ReportVersion, RunResult, RunReview
from deepcritical.state import (
    ReportVersionNotFoundError,
    RunInProgressError,
    RunNotFoundError,
    RunNotResumableError,
    RunRecord,
    RunStore,
    RunWithoutReportError,
    StateError,
)
from deepcritical.state.reviews import run_reviews
from deepcritical.state.run_store import AWAITING_REVIEW

__all__ = ["runs_app"]

T = TypeVar("T")

runs_app = typer.Typer(
    help="Stored research runs: list, show, resume, export, ask, revise, versions; decide a "
    "waiting run's review: approve-plan, approve-evidence.",
    no_args_is_help=True,
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


def _no_run(run_id: str, owner: str | None) -> typer.Exit:
    """The exit (code 2) for an unknown run id, saying how to list ``owner``'s runs."""
    whose = "" if owner is None else f" of owner {owner!r}"
    listing = "deepcritical runs list" + ("" if owner is None else f" --owner {owner}")
    return fail(f"no run with id {run_id!r}{whose}; `{listing}` shows the runs", 2)


def _require(store: RunStore, run_id: str, owner: str | None) -> RunRecord:
    """``owner``'s run ``run_id``; closes the store and exits with code 2 when there is none."""
    record = store.get_run(run_id, owner=owner)
    if record is None:
        store.close()
        raise _no_run(run_id, owner)
    return record


def _on_run(
    call: Coroutine[Any, Any, T],
    run_id: str,
    owner: str | None,
    errors: tuple[type[Exception], ...],
) -> T:
    """Runs ``call``, an API coroutine acting on ``owner``'s run ``run_id`` (which resolves the
    id itself); exits with code 2 for an unknown run (as :func:`_require` does), for one of
    ``errors`` (its message and hint) and when the run database cannot be used."""
    try:
        return asyncio.run(call)
    except RunNotFoundError as exc:
        raise _no_run(run_id, owner) from exc
    except errors as exc:
        raise fail(error_line(exc), 2) from exc
    except SQLAlchemyError as exc:
        raise fail(f"the run database cannot be used: {type(exc).__name__}: {exc}", 2) from exc


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
    """Show a run: status, progress, stage, its reviews (and the command that decides one it
    waits for), checklist, iterations, metrics, and the follow-up questions asked about it
    (each with its answer's first line)."""
    store = _open()
    try:
        r = _require(store, run_id, owner)
        follow_ups = store.follow_ups(r.id, owner=owner)
        reviews = run_reviews(store, r.id)
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
    _print_reviews(r, reviews)
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


def _print_reviews(record: RunRecord, reviews: list[RunReview]) -> None:
    """The run's reviews, one line each, and the command that decides a waiting one."""
    for review in reviews:
        changes = "; ".join(review.changes) or "no change"
        line = f"Review {review.number} ({review.stage}): {review.status}"
        out_console.print(
            line + ("" if review.status == "waiting" else f" · {changes}"), markup=False
        )
    waiting = reviews[-1] if reviews and reviews[-1].status == "waiting" else None
    if waiting is not None and record.status == AWAITING_REVIEW:
        command = "approve-plan" if waiting.stage == "plan" else "approve-evidence"
        out_console.print(
            f"Waiting for the {waiting.stage} review: `deepcritical runs {command} {record.id}`",
            markup=False,
        )


EXPORT_SCOPES: tuple[ExportScope, ...] = ("references", "evidence")


@runs_app.command("export")
def export_run(
    run_id: RunId,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="json (the whole run: run, checklist, iterations, sources, report) | markdown "
            "(the report) | ris | bibtex | csljson (its references for reference managers).",
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
    version: Annotated[
        int | None,
        typer.Option(
            "--version",
            min=1,
            help="Which version of the report (1: the run's own; `runs versions ID` lists "
            "them). Default: the latest version.",
        ),
    ] = None,
    owner: Owner = None,
) -> None:
    """Export a run: as JSON (run, checklist, iterations, sources by question, report), its
    report as markdown, or its references (or all its evidence) as RIS, BibTeX or CSL-JSON.
    The report is the latest version unless --version names another."""
    choice = fmt.strip().lower()
    if choice not in {"json", "markdown"} and choice not in EXPORT_FORMATS:
        raise fail(f"--format {fmt}: choose json, markdown, ris, bibtex or csljson", 2)
    chosen_scope = (scope or "references").strip().lower()
    if chosen_scope not in EXPORT_SCOPES:
        raise fail(f"--scope {scope}: choose references or evidence", 2)
    if choice in {"json", "markdown"} and scope is not None:
        raise fail(f"--scope applies to --format ris, bibtex or csljson, not {choice}", 2)
    store = _open()
    try:
        record = _require(store, run_id, owner)
        text = _export_text(store, record, choice, chosen_scope, version, owner)
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
    what = "" if choice in {"json", "markdown"} else f" ({choice}, {chosen_scope})"
    console.print(f"[green]✓[/green] run {record.id} exported{what} to {out}")


def _version(
    store: RunStore, record: RunRecord, version: int | None, owner: str | None
) -> ReportVersion | None:
    """Version ``version`` (``None``: the latest) of the run's report; ``None`` when the run
    has no report and no version was asked for. Exits with code 2 for a version that does
    not exist, or any version of a run without a report."""
    try:
        chosen = store.report_version(record.id, version, owner=owner)
    except ReportVersionNotFoundError as exc:
        raise fail(error_line(exc), 2) from exc
    if chosen is None and version is not None:
        raise fail(
            f"run {record.id} has no report yet ({_status(record)}), so it has no version "
            f"{version}; `deepcritical runs resume {record.id}` finishes it",
            2,
        )
    return chosen


def _export_text(
    store: RunStore,
    record: RunRecord,
    choice: str,
    scope: str,
    version: int | None,
    owner: str | None,
) -> str:
    """The text ``runs export`` writes (see :func:`export_run`), with version ``version``
    (``None``: the latest) of the report; exits with code 2 when there is nothing to export."""
    chosen = _version(store, record, version, owner)
    if choice == "json":
        data = store.export_run(record.id, owner=owner)
        if chosen is not None:
            data["report_version"] = {"version": chosen.version, "instruction": chosen.instruction}
        if chosen is not None and chosen.version > 1:
            data["report"] = chosen.report.model_dump(mode="json")
            data["report_markdown"] = chosen.report.to_markdown()
        return json.dumps(data, indent=2, ensure_ascii=False)
    result = store.result(record.id, owner=owner)
    if result is None or chosen is None:
        what = "report" if choice == "markdown" else "references"
        raise fail(
            f"run {record.id} has no report yet ({_status(record)}), so it has no "
            f"{what} to export; `deepcritical runs resume {record.id}` finishes it",
            2,
        )
    if choice == "markdown":
        return chosen.report.to_markdown()
    versioned = result.model_copy(update={"report": chosen.report})
    return export_references(versioned, cast(ExportFormat, choice), cast(ExportScope, scope))


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
    follow_up = _on_run(
        ask(run_id, question, settings, owner=owner),
        run_id,
        owner,
        (QuestionError, RunWithoutReportError),
    )
    typer.echo(follow_up.to_markdown(), nl=False)


@runs_app.command("revise")
def revise_run(
    run_id: RunId,
    instruction: Annotated[
        str,
        typer.Argument(
            help='What to change: "shorter" / "longer", "for patients" / "for clinicians", '
            '"focus on X" / "add a section on X", "only randomised trials" / "only systematic '
            'reviews" / "only clinical trials" / "only observational studies"; several combine.'
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Markdown path of the new version; JSON goes next to it (.json). Default: "
            "report-vN.md, N the new version's number.",
        ),
    ] = None,
    owner: Owner = None,
) -> None:
    """Revise a finished run's report: a new version written from the same evidence (no new
    search), through the same citation checks, kept with the run (`runs versions`).

    Prints the new version's number and writes it (markdown, and the run's JSON with this
    version as its report). Each revision starts from the latest version. An unknown run, a
    run without a report, an empty, too long or not understood instruction, and a design
    filter that leaves no source exit 2 with the reason; nothing is stored then."""
    from deepcritical.api import revise
    from deepcritical.writing.revision_instructions import RevisionError

    if out is not None:
        check_out_path(out)
    settings = settings_from_options()
    version = _on_run(
        revise(run_id, instruction, settings, owner=owner),
        run_id,
        owner,
        (RevisionError, RunWithoutReportError, StateError),
    )
    path = out or Path(f"report-v{version.version}.md")
    store = _open()
    try:
        record = _require(store, run_id, owner)
        result = store.result(record.id, owner=owner)
    finally:
        store.close()
    try:
        _write_version(path, version, result)
    except OSError as exc:
        raise fail(
            f"version {version.version} is kept with run {record.id}, but {path} cannot be "
            f"written ({exc.strerror or exc}); `deepcritical runs export {record.id} --format "
            f"markdown --version {version.version}` writes it",
            1,
        ) from exc
    out_console.print(
        f"Version {version.version} of run {record.id}: {path} and {path.with_suffix('.json')}",
        markup=False,
    )


def _write_version(path: Path, version: ReportVersion, result: RunResult | None) -> None:
    """Write ``version``'s markdown to ``path`` and the run's JSON (``result`` with this
    version as its report; the version alone without it) next to it (``.json``).

    Raises:
        OSError: a file cannot be written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(version.report.to_markdown(), encoding="utf-8")
    data = (
        version.model_dump_json(indent=2)
        if result is None
        else result.model_copy(update={"report": version.report}).to_json()
    )
    path.with_suffix(".json").write_text(data, encoding="utf-8")


@runs_app.command("versions")
def list_versions(run_id: RunId, owner: Owner = None) -> None:
    """List the versions of a run's report: 1 is the run's own, each later one a revision
    (`runs revise`), with its instruction and the first line of its summary. `runs export ID
    --version N` writes one."""
    store = _open()
    try:
        record = _require(store, run_id, owner)
        versions = store.report_versions(record.id, owner=owner)
    finally:
        store.close()
    if not versions:
        raise fail(
            f"run {record.id} has no report yet ({_status(record)}), so it has no versions; "
            f"`deepcritical runs resume {record.id}` finishes it",
            2,
        )
    table = Table(title=f"Versions of the report of run {record.id} ({len(versions)})")
    for column in ("version", "created (UTC)", "instruction", "summary"):
        table.add_column(column)
    for v in versions:
        table.add_row(
            str(v.version),
            v.created_at.strftime("%Y-%m-%d %H:%M"),
            Text(v.instruction or "(the run's report)"),
            Text(v.first_line),
        )
    out_console.print(table)
