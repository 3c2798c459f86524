"""``deepcritical watch``: living reviews.

- ``deepcritical watch "QUESTION" [research options] [--every 7d]``: research the question
  (as ``research`` does, writing the report) and watch the run;
- ``deepcritical watch --run ID [--every 30d] [--webhook URL]``: watch a finished run;
- ``watch list | show ID | update ID | pause ID | resume ID | remove ID``: ``update`` runs an
  update now and prints what is new, or that nothing is;
- ``watch webhook ID [URL]``: set (public http(s) URLs only) or remove a watch's webhook.

Scheduled updates run in the job workers (``deepcritical worker``, or ``serve --jobs``); see
``docs/watches.md``. A bad watch id exits with code 2, as a bad run id does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.table import Table
from sqlalchemy.exc import SQLAlchemyError
from typer.core import TyperGroup

from deepcritical.cli.context import console, fail, out_console, settings_from_options
from deepcritical.cli.research import (
    AudienceOption,
    ContextOption,
    CorpusOption,
    FocusOption,
    LengthOption,
    LlmOption,
    MaxRoundsOption,
    MaxSourcesOption,
    OrchestratorOption,
    SourcesOption,
    TimeBudgetOption,
    run_inputs,
)
from deepcritical.cli.run_output import ReportPath, check_out_path, error_line, run_to_report
from deepcritical.events import ResearchEvent
from deepcritical.models import Watch, WatchUpdate, format_every
from deepcritical.sources.webhook import shown_url
from deepcritical.state import RunNotFoundError, RunStore, StateError
from deepcritical.state.watch_store import WatchNotFoundError, WatchStore

__all__ = ["watch_app"]

T = TypeVar("T")


class _WatchGroup(TyperGroup):
    """``watch`` with its subcommands, where a first argument that is no subcommand (the
    question) or an option (``--run``) means the hidden ``new`` command."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # typer's vendored Context
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["new", *args]
        return super().parse_args(ctx, args)


watch_app = typer.Typer(
    cls=_WatchGroup,
    help='Living reviews: `watch "QUESTION" --every 7d`, `watch --run ID`, and list, show, '
    "update, pause, resume, remove.",
    no_args_is_help=True,
)

WatchId = Annotated[str, typer.Argument(help="Watch id (or a unique prefix).")]
Owner = Annotated[
    str | None,
    typer.Option("--owner", help="Whose watches: a web app user such as user:alice."),
]
EveryOption = Annotated[
    str | None,
    typer.Option("--every", help="Schedule: 7d, 30d, 12h... (default: updated by hand only)."),
]
WebhookOption = Annotated[
    str | None,
    typer.Option("--webhook", help="POST each new version's change summary here (public URL)."),
]


def _store() -> tuple[RunStore, WatchStore]:
    settings = settings_from_options()
    try:
        runs = RunStore.open(settings)
    except Exception as exc:
        raise fail(f"cannot open the run database: {type(exc).__name__}: {exc}", 2) from exc
    return runs, WatchStore(runs)


def _on_watch(call: Callable[[], T], watch_id: str) -> T:
    """``call()``; exits with code 2 for an unknown watch or run or a refused input."""
    try:
        return call()
    except (WatchNotFoundError, RunNotFoundError) as exc:
        raise fail(error_line(exc), 2) from exc
    except (StateError, ValueError) as exc:
        raise fail(error_line(exc), 2) from exc
    except SQLAlchemyError as exc:
        raise fail(f"the run database cannot be used: {type(exc).__name__}", 2) from exc


def _run(call: Coroutine[Any, Any, T]) -> Callable[[], T]:
    return lambda: asyncio.run(call)


def _print_watch(watch: Watch) -> None:
    out = out_console
    out.print(f"Watch {watch.id}")
    out.print(f"Question: {watch.question}")
    out.print(f"Run: {watch.run_id} · report version {watch.version}")
    state = "paused" if watch.paused else "active"
    due = f" · next update {watch.next_due_at:%Y-%m-%d %H:%M:%S} UTC" if watch.next_due_at else ""
    out.print(f"Schedule: every {format_every(watch.every_seconds)} ({state}){due}")
    out.print(f"Covers records added up to {watch.checked_until:%Y-%m-%d %H:%M:%S} UTC")
    if watch.webhook_url:
        out.print(f"Webhook: {shown_url(watch.webhook_url)}")


@watch_app.command("new", hidden=True)
def new(
    question: Annotated[str | None, typer.Argument(help="The research question.")] = None,
    run: Annotated[
        str | None, typer.Option("--run", help="Watch this finished run instead.")
    ] = None,
    every: EveryOption = None,
    webhook: WebhookOption = None,
    corpus: CorpusOption = None,
    llm: LlmOption = None,
    sources: SourcesOption = None,
    max_rounds: MaxRoundsOption = None,
    max_sources: MaxSourcesOption = None,
    time_budget: TimeBudgetOption = None,
    orchestrator: OrchestratorOption = None,
    context: ContextOption = None,
    audience: AudienceOption = None,
    length: LengthOption = None,
    focus: FocusOption = None,
    out: ReportPath = Path("report.md"),
    owner: Owner = None,
) -> None:
    """Research QUESTION and watch it, or watch the finished run --run ID (of --owner)."""
    from deepcritical.api import watch_run

    if (question is None) == (run is None):
        raise fail('give a question or --run ID (not both): watch "QUESTION" or watch --run ID', 2)
    if question is not None and owner is not None:
        raise fail("--owner works with --run only (a new research belongs to the local user)", 2)
    settings = settings_from_options()
    if run is None:
        assert question is not None
        run = _research(
            question,
            out,
            context,
            dict(
                corpus=corpus,
                llm=llm,
                sources=sources,
                max_rounds=max_rounds,
                max_sources=max_sources,
                time_budget=time_budget,
                orchestrator=orchestrator,
                audience=audience,
                length=length,
                focus=focus,
                syllabus_file=None,
            ),
        )
    made = _on_watch(_run(watch_run(run, settings, every=every, webhook_url=webhook)), run or "")
    console.print(f"[green]Watching[/green] run {made.run_id}: watch {made.id}")
    _print_watch(made)


def _research(question: str, out: Path, context: str | None, options: dict[str, Any]) -> str:
    """Run the research as ``deepcritical research`` does (report written to ``out``); the
    run's id. Exits as ``research`` does unless the report was written."""
    check_out_path(out, ())
    inputs = run_inputs(**options)
    from deepcritical.api import research as run_research
    from deepcritical.llm.providers import ModelSpecError
    from deepcritical.orchestrators.deps import QuestionError

    seen: list[str] = []

    async def recorded() -> AsyncIterator[ResearchEvent]:
        async for event in run_research(
            question,
            inputs.settings,
            context=context,
            preferences=inputs.preferences,
        ):
            if event.run_id and not seen:
                seen.append(event.run_id)
            yield event

    try:
        run_to_report(recorded, out, bad_input=(QuestionError, ModelSpecError))
    except typer.Exit as done:
        if done.exit_code != 0 or not seen:
            raise
    return seen[0]


@watch_app.command("list")
def list_watches(owner: Owner = None) -> None:
    """List the watches: schedule, report version, last update and unseen changes."""
    runs, watches = _store()
    try:
        found = _on_watch(lambda: watches.list_watches(owner=owner), "")
    finally:
        runs.close()
    table = Table(title=f"Watches ({len(found)})")
    for column in ("id", "every", "state", "version", "last update (UTC)", "new", "question"):
        table.add_column(column)
    for w in found:
        table.add_row(
            w.id,
            format_every(w.every_seconds),
            "paused" if w.paused else "active",
            str(w.version),
            f"{w.last_update_at:%Y-%m-%d %H:%M}" if w.last_update_at else "never",
            str(w.unseen) if w.unseen else "",
            w.question[:70],
        )
    out_console.print(table)


@watch_app.command("show")
def show(watch_id: WatchId, owner: Owner = None) -> None:
    """Show a watch and its updates (each one's summary line)."""
    runs, watches = _store()
    try:
        found = _on_watch(lambda: watches.require(watch_id, owner=owner), watch_id)
        updates = watches.updates(found.id, owner=owner)
    finally:
        runs.close()
    _print_watch(found)
    for u in updates:
        version = f" -> version {u.version}" if u.version else ""
        out_console.print(
            f"Update {u.number} ({u.trigger}, {u.finished_at:%Y-%m-%d %H:%M:%S} UTC): "
            f"{u.outcome}{version}. {u.summary}"
        )


@watch_app.command("update")
def update_now(watch_id: WatchId, owner: Owner = None) -> None:
    """Update a watch now: print what is new (a new report version), or that nothing is."""
    from deepcritical.api import update_watch

    settings = settings_from_options()
    try:
        made: WatchUpdate = asyncio.run(update_watch(watch_id, settings, owner=owner))
    except (WatchNotFoundError, RunNotFoundError) as exc:
        raise fail(error_line(exc), 2) from exc
    except StateError as exc:
        raise fail(error_line(exc), 1) from exc
    except Exception as exc:
        raise fail(f"the update failed: {exc}", 1) from exc
    out_console.print(made.summary)
    if made.change is not None and made.outcome == "new_version":
        out_console.print(made.change.markdown())
        console.print(
            f"Version {made.version} written: `deepcritical runs export "
            f"{_run_of(watch_id, owner)} --version {made.version}`"
        )


def _run_of(watch_id: str, owner: str | None) -> str:
    runs, watches = _store()
    try:
        return watches.require(watch_id, owner=owner).run_id
    finally:
        runs.close()


def _set_paused(watch_id: str, owner: str | None, paused: bool) -> None:
    runs, watches = _store()
    try:
        found = _on_watch(lambda: watches.set_paused(watch_id, paused, owner=owner), watch_id)
    finally:
        runs.close()
    console.print(f"Watch {found.id} {'paused' if paused else 'resumed'}.")


@watch_app.command("pause")
def pause(watch_id: WatchId, owner: Owner = None) -> None:
    """Pause a watch: no scheduled update until it is resumed."""
    _set_paused(watch_id, owner, True)


@watch_app.command("resume")
def resume(watch_id: WatchId, owner: Owner = None) -> None:
    """Resume a paused watch: its next update is due one period from now."""
    _set_paused(watch_id, owner, False)


@watch_app.command("webhook")
def webhook(
    watch_id: WatchId,
    url: Annotated[
        str | None, typer.Argument(help="The webhook URL (public http(s)); none: remove it.")
    ] = None,
    owner: Owner = None,
) -> None:
    """Set a watch's webhook (each new version's change summary is POSTed to it), or remove
    it when no URL is given."""
    from deepcritical.sources.webhook import check_webhook_url

    checked = _on_watch(lambda: check_webhook_url(url), watch_id) if url else None
    runs, watches = _store()
    try:
        _on_watch(lambda: watches.set_webhook(watch_id, checked, owner=owner), watch_id)
    finally:
        runs.close()
    shown = f"set to {shown_url(checked)}" if checked else "removed"
    console.print(f"Webhook of watch {watch_id} {shown}.")


@watch_app.command("remove")
def remove(watch_id: WatchId, owner: Owner = None) -> None:
    """Remove a watch and its updates (the run and its report versions stay)."""
    runs, watches = _store()
    try:
        gone = _on_watch(lambda: watches.remove(watch_id, owner=owner), watch_id)
    finally:
        runs.close()
    console.print(f"Watch {gone} removed (its run and report versions stay).")
