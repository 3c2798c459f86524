"""The researcher's reviews on the command line.

- ``deepcritical research --review-plan`` prints the plan when the run stops with
  ``plan_ready`` (YAML) and opens it in ``$EDITOR`` when that is set and standard input is a
  terminal; otherwise a plain prompt asks ``approve``, ``cancel`` or the path of an edited
  plan file. ``--review-evidence`` prints the screened evidence table at ``evidence_ready``
  and reads decisions, one a line: ``exclude E3 REASON``, ``include E7 [REASON]``, ``more``
  (one more search round), ``cancel``; an empty line (or ``approve``) ends them. A bad edit
  or decision is printed and asked again; the run then goes on in the same process
  (:func:`reviewed_run`).
- ``deepcritical runs approve-plan ID [--plan FILE] [--cancel]`` and ``deepcritical runs
  approve-evidence ID --exclude "E3: REASON" --include E7 [--more-search] [--cancel]``, for
  scripts and jobs: the decision is stored, then a job's waiting workflow is woken (its
  worker continues the run: ``runs follow ID``) or an in-process run is continued here.

Bad input (an unknown run, a run that does not wait for this review, a plan with no
checklist, an unknown source or record, an exclusion without a reason) exits 2 with the
reason and changes nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
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
from deepcritical.cli.runs import Owner, RunId
from deepcritical.config import Settings
from deepcritical.events import (
    ErrorData,
    EvidenceReadyData,
    PlanReadyData,
    ResearchEvent,
)
from deepcritical.models import EvidenceDecision, ResearchPlan, RunReview
from deepcritical.state import RunNotFoundError, StateError

__all__ = [
    "EDITABLE_FIELDS",
    "approve_evidence_command",
    "approve_plan_command",
    "plan_text",
    "read_plan_file",
    "reviewed_run",
]

EDITABLE_FIELDS = tuple(
    name
    for name in (
        "refined_question",
        "checklist",
        "queries",
        "source_queries",
        "mesh_terms",
        "scope_in",
        "scope_out",
        "sources",
        "filters",
    )
    if name in ResearchPlan.model_fields
)
"""The plan's fields shown for editing, those the plan model has (the rest is kept as the
planner made it): the search filters and per-source queries too, once plans carry them."""

PlanFileOption = Annotated[
    Path | None,
    typer.Option(
        "--plan",
        help="The edited plan, YAML or JSON (the fields `runs approve-plan` and "
        "`research --review-plan` show); default: the plan as proposed.",
    ),
]
CancelOption = Annotated[
    bool, typer.Option("--cancel", help="Cancel the run instead of approving.")
]
ExcludeOption = Annotated[
    list[str] | None,
    typer.Option(
        "--exclude",
        help='A record to exclude and why: --exclude "E3: wrong population" (repeatable).',
    ),
]
IncludeOption = Annotated[
    list[str] | None,
    typer.Option("--include", help="A record screening excluded to include (repeatable)."),
]
MoreSearchOption = Annotated[
    bool,
    typer.Option("--more-search", help="Search one more round, then review the evidence again."),
]


def plan_text(plan: ResearchPlan, sources: Sequence[str]) -> str:
    """The editable fields of ``plan`` as YAML (``sources``: the run's, when the plan keeps
    all of them)."""
    data = plan.model_dump(mode="json", include={str(f) for f in EDITABLE_FIELDS})
    data["checklist"] = [
        {"key": c["key"], "description": c["description"], "min_evidence": c["min_evidence"]}
        for c in data["checklist"]
    ]
    data["sources"] = list(plan.sources or sources)
    ordered = {k: data[k] for k in EDITABLE_FIELDS}
    return yaml.safe_dump(ordered, sort_keys=False, allow_unicode=True, width=100)


def read_plan_file(path: Path, proposed: ResearchPlan | None = None) -> dict[str, Any]:
    """The plan edited in ``path`` (YAML or JSON; only its mapping's fields replace those of
    ``proposed``, the plan as proposed, when given).

    Raises:
        typer.Exit: code 2 when the file cannot be read or is not a mapping.
    """
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise fail(f"cannot read the plan file {path}: {exc}", 2) from exc
    if not isinstance(data, dict):
        raise fail(f"the plan file {path} holds no mapping of plan fields", 2)
    base = proposed.model_dump(mode="json") if proposed is not None else {}
    return {**base, **data}


# --- the interactive review of `research --review-plan / --review-evidence` -------------------


@dataclass
class _Answer:
    """The user's answer at a review prompt."""

    cancel: bool = False
    plan: dict[str, Any] | None = None
    decisions: list[EvidenceDecision] = field(default_factory=list)
    more_search: bool = False


def _interactive() -> bool:
    return sys.stdin.isatty() and bool(os.environ.get("EDITOR"))


def _edit_in_editor(text: str) -> str:
    """``text`` as the user left it in ``$EDITOR`` (a temporary ``.yaml`` file)."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False, encoding="utf-8") as f:
        f.write(text)
        path = Path(f.name)
    try:
        subprocess.run([*os.environ["EDITOR"].split(), str(path)], check=False)
        return path.read_text(encoding="utf-8")
    finally:
        path.unlink(missing_ok=True)


def _ask_plan(ready: PlanReadyData) -> _Answer:
    """Show the plan and ask for the decision (see the module docstring)."""
    shown = plan_text(ready.plan, ready.sources)
    console.print("[bold]The plan (edit it, approve it or cancel the run):[/bold]")
    console.print(shown, markup=False, highlight=False)
    if _interactive():
        edited = yaml.safe_load(_edit_in_editor(shown))
        answer = typer.prompt("approve the edited plan or cancel", default="approve")
        if answer.strip().lower() == "cancel":
            return _Answer(cancel=True)
        return _Answer(plan=edited if isinstance(edited, dict) else {})
    answer = typer.prompt("approve, cancel, or the path of an edited plan file", default="approve")
    word = answer.strip()
    if word.lower() == "cancel":
        return _Answer(cancel=True)
    if word.lower() in {"", "approve", "yes", "y"}:
        return _Answer()
    return _Answer(plan=read_plan_file(Path(word)))


def _print_table(ready: EvidenceReadyData) -> None:
    table = Table(title=f"Screened evidence ({len(ready.records)} records)")
    for column in ("id", "in", "year", "source", "design", "title", "screening"):
        table.add_column(column)
    for r in ready.records:
        table.add_row(
            r.id,
            "yes" if r.included else "no",
            str(r.year or ""),
            r.source,
            r.design[:30],
            r.title[:60],
            r.reason[:60],
        )
    console.print(table)


def _decision(line: str) -> EvidenceDecision:
    """One ``exclude E3 REASON`` / ``include E7 [REASON]`` line.

    Raises:
        ValueError: another word, or a malformed decision.
    """
    action, _, rest = line.partition(" ")
    evidence_id, _, reason = rest.strip().partition(" ")
    if action not in {"include", "exclude"} or not evidence_id:
        raise ValueError(f"not a decision: {line!r} (exclude E3 REASON | include E7 | more)")
    return EvidenceDecision.model_validate(
        {"evidence_id": evidence_id.rstrip(":"), "action": action, "reason": reason}
    )


def _ask_evidence(ready: EvidenceReadyData) -> _Answer:
    """Show the evidence table and read the decisions (see the module docstring)."""
    _print_table(ready)
    console.print(
        "Decisions, one a line: exclude E3 REASON | include E7 [REASON] | more | cancel; "
        "an empty line approves."
    )
    answer = _Answer()
    while True:
        line = typer.prompt("decision", default="", show_default=False).strip()
        if line.lower() in {"", "approve", "done"}:
            return answer
        if line.lower() == "cancel":
            return _Answer(cancel=True)
        if line.lower() in {"more", "more search"}:
            answer.more_search = True
            continue
        try:
            answer.decisions.append(_decision(line))
        except ValueError as exc:
            console.print(f"[red]Error:[/red] {_first_error(exc)}")


async def reviewed_run(
    start: Callable[[], AsyncIterator[ResearchEvent]],
    settings: Settings,
    owner: str | None = None,
) -> AsyncGenerator[ResearchEvent, None]:
    """The events of ``start()``; whenever the run stops for a review, the user is asked
    (the plan or the evidence table shown) and the run continues with the decision
    (``api.approve_plan`` / ``api.approve_evidence``), or is cancelled (``api.cancel_review``,
    then an ``error`` event). A decision the API refuses is printed and asked again."""
    from deepcritical.api import approve_evidence, approve_plan, cancel_review

    stream: AsyncIterator[ResearchEvent] = start()
    run_id: str | None = None
    while True:
        last = None
        async for event in stream:
            run_id = event.run_id or run_id
            last = event
            yield event
        if last is None or run_id is None or last.type not in {"plan_ready", "evidence_ready"}:
            return
        while True:
            ready = last.data
            if isinstance(ready, PlanReadyData):
                answer = await asyncio.to_thread(_ask_plan, ready)
            else:
                answer = await asyncio.to_thread(_ask_evidence, last.data_as(EvidenceReadyData))
            if answer.cancel:
                review = await cancel_review(run_id, settings, owner=owner)
                note = review.changes[0] if review.changes else "the run was cancelled"
                yield ResearchEvent(type="error", message=note, data=ErrorData(cancelled=True))
                return
            if isinstance(ready, PlanReadyData):
                stream = approve_plan(run_id, answer.plan, settings, owner=owner)
            else:
                stream = approve_evidence(
                    run_id, answer.decisions, settings, more_search=answer.more_search, owner=owner
                )
            try:
                first = await anext(stream)
            except StateError as exc:  # a bad edit or decision: nothing stored, ask again
                console.print(f"[red]Error:[/red] {error_line(exc)}")
                continue
            yield first
            break


# --- `runs approve-plan` and `runs approve-evidence` ------------------------------------------


def _decisions(exclude: Sequence[str], include: Sequence[str]) -> list[EvidenceDecision]:
    """The decisions of ``--exclude "E3: REASON"`` (or ``"E3 REASON"``) and ``--include E7``;
    exits 2 on a malformed one (an exclusion without a reason)."""
    out: list[EvidenceDecision] = []
    try:
        for value in exclude:
            text = value.strip()
            cut = text.find(":") if ":" in text else text.find(" ")
            evidence_id, reason = (text, "") if cut < 0 else (text[:cut], text[cut + 1 :])
            out.append(
                EvidenceDecision(evidence_id=evidence_id.strip(), action="exclude", reason=reason)
            )
        out.extend(EvidenceDecision(evidence_id=i.strip(), action="include") for i in include)
    except ValueError as exc:
        raise fail(f"bad decision: {_first_error(exc)}", 2) from None
    return out


def _first_error(exc: ValueError) -> str:
    """A validation error's first message (pydantic's), else its text."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()
        if first:
            return str(first[0].get("msg", exc)).removeprefix("Value error, ")
    return str(exc)


def _decide(record: Callable[[], Any], run_id: str, owner: str | None) -> RunReview:
    """Store a decision (``record()``, an API coroutine function); exits 2 on bad input."""
    from sqlalchemy.exc import SQLAlchemyError

    try:
        review: RunReview = asyncio.run(record())
        return review
    except RunNotFoundError as exc:
        raise fail(error_line(exc), 2) from exc
    except StateError as exc:
        raise fail(error_line(exc), 2) from exc
    except SQLAlchemyError as exc:
        raise fail(f"the run database cannot be used: {type(exc).__name__}: {exc}", 2) from exc


def _continue(
    settings: Settings, run_id: str, review: RunReview, owner: str | None, out: Path, exports: Any
) -> None:
    """After a stored decision: wake a job's waiting workflow, or continue an in-process run
    here (its events and report, as ``runs resume``)."""
    from deepcritical.api import resume
    from deepcritical.state import RunStore

    store = RunStore.open(settings)
    try:
        record = store.require_run(run_id, owner=owner)
    finally:
        store.close()
    what = "cancelled" if review.status == "cancelled" else "approved"
    changes = "; ".join(review.changes) or "no change"
    console.print(f"Review {review.number} ({review.stage}) {what}: {changes}")
    if review.status == "cancelled":
        raise typer.Exit(0)
    if record.worker is not None:  # a job: its worker continues it
        from deepcritical.jobs import wake_review

        wake_review(settings, record.id, review.number)
        out_console.print(record.id)
        console.print(f"The job goes on on a worker: `deepcritical runs follow {record.id}`")
        raise typer.Exit(0)
    run_to_report(
        lambda: reviewed_run(lambda: resume(record.id, settings, owner=owner), settings, owner),
        out,
        bad_input=(StateError,),
        interrupt_hint=f"Continue it with `deepcritical runs resume {record.id}`.",
        exports=exports,
    )


def approve_plan_command(
    run_id: RunId,
    plan: PlanFileOption = None,
    cancel: CancelOption = False,
    out: ReportPath = Path("report.md"),
    export: ExportOption = None,
    owner: Owner = None,
) -> None:
    """Approve (with --plan FILE, edited) or cancel the plan a run waits with, then continue
    the run: a job on its worker, an in-process run here (its report written to --out)."""
    from deepcritical.api import cancel_review, record_plan_review

    exports = parse_export_formats(export)
    check_out_path(out, exports)
    settings = settings_from_options()
    edited = read_plan_file(plan) if plan is not None else None
    if cancel:
        review = _decide(lambda: cancel_review(run_id, settings, owner=owner), run_id, owner)
    else:
        review = _decide(
            lambda: record_plan_review(run_id, edited, settings, owner=owner), run_id, owner
        )
    _continue(settings, run_id, review, owner, out, exports)


def approve_evidence_command(
    run_id: RunId,
    exclude: ExcludeOption = None,
    include: IncludeOption = None,
    more_search: MoreSearchOption = False,
    cancel: CancelOption = False,
    out: ReportPath = Path("report.md"),
    export: ExportOption = None,
    owner: Owner = None,
) -> None:
    """Decide on the screened evidence a run waits with (exclude records with a reason,
    include excluded ones, ask for one more search round) or cancel the run, then continue
    it: a job on its worker, an in-process run here."""
    from deepcritical.api import cancel_review, record_evidence_review

    exports = parse_export_formats(export)
    check_out_path(out, exports)
    settings = settings_from_options()
    decisions = _decisions(exclude or [], include or [])
    if cancel:
        review = _decide(lambda: cancel_review(run_id, settings, owner=owner), run_id, owner)
    else:
        review = _decide(
            lambda: record_evidence_review(
                run_id, decisions, settings, more_search=more_search, owner=owner
            ),
            run_id,
            owner,
        )
    _continue(settings, run_id, review, owner, out, exports)
