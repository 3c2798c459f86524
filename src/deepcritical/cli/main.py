"""The ``deepcritical`` typer app: the global options (``--version`` among them) and the
command groups, assembled; :func:`main` is the console script's entry point.

Commands: ``research`` (:mod:`~deepcritical.cli.research`), ``corpus add|info``
(:mod:`~deepcritical.cli.corpus`), ``runs list|show|export|resume``
(:mod:`~deepcritical.cli.runs`), ``runs submit|follow|cancel`` and ``worker``
(:mod:`~deepcritical.cli.jobs`), ``serve`` (:mod:`~deepcritical.cli.serve`) and ``watch``
(living reviews, :mod:`~deepcritical.cli.watch`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from deepcritical.cli.context import global_options
from deepcritical.cli.corpus import corpus_app
from deepcritical.cli.doctor import doctor
from deepcritical.cli.jobs import cancel, follow, submit, worker
from deepcritical.cli.research import research
from deepcritical.cli.reviewing import approve_evidence_command, approve_plan_command
from deepcritical.cli.runs import runs_app
from deepcritical.cli.serve import serve
from deepcritical.cli.watch import watch_app
from deepcritical.environment import software_environment
from deepcritical.logs import configure_logging

__all__ = ["app", "main"]

# Before any model library is imported (the commands import them lazily): no model
# downloads, no telemetry, no tokenizer threads forked into the search workers.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

app = typer.Typer(
    name="deepcritical",
    help="Biomedical deep research with validated citations.",
    no_args_is_help=True,
    add_completion=False,
)
"""The ``deepcritical`` command (typer app)."""


def _version_text() -> str:
    """``deepcritical VERSION``, with ``(commit SHA)`` when the commit is known (and
    ``, uncommitted changes`` when the checkout has some), then the Python version."""
    env = software_environment()
    text = f"deepcritical {env.deepcritical}"
    if env.git_commit:
        dirty = ", uncommitted changes" if env.git_dirty else ""
        text += f" (commit {env.git_commit}{dirty})"
    return f"{text}\nPython {env.python}"


def _show_version(show: bool) -> None:
    if show:
        typer.echo(_version_text())
        raise typer.Exit()


@app.callback()
def _global_options(
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            help="Where the local corpus and run data live "
            "(default: $DEEPCRITICAL_DATA_DIR or ~/.local/share/deepcritical).",
        ),
    ] = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Show library log messages.")
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_show_version,
            is_eager=True,
            help="Show the version (with the git commit of a source checkout) and exit.",
        ),
    ] = False,
) -> None:
    global_options.data_dir = data_dir
    # library log messages on standard error: all of them with --verbose, else only errors
    # (the run events already report warnings) and the noisy libraries' warnings
    if verbose:
        configure_logging("DEBUG", library_level="DEBUG")
    else:
        configure_logging("ERROR", library_level="WARNING")


app.add_typer(corpus_app, name="corpus")
app.command()(research)
runs_app.command("submit")(submit)
runs_app.command("follow")(follow)
runs_app.command("cancel")(cancel)
runs_app.command("approve-plan")(approve_plan_command)
runs_app.command("approve-evidence")(approve_evidence_command)
app.add_typer(runs_app, name="runs")
app.command("worker")(worker)
app.command("serve")(serve)
app.command("doctor")(doctor)
app.add_typer(watch_app, name="watch")


def main() -> None:
    """Run the ``deepcritical`` command on ``sys.argv``; exits with the command's code (130
    on Ctrl-C)."""
    try:
        app()
    except KeyboardInterrupt:  # pragma: no cover - interactive
        sys.exit(130)
