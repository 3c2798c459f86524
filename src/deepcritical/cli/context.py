"""What every ``deepcritical`` command shares: the global options, the two consoles, the
settings built from the options, and failing with a message and an exit code.

Messages, progress and tables go to :data:`console` (standard error); a command's data (``corpus
info``, ``runs list/show/export``) goes to :data:`out_console` (standard output). Exit codes: 1
when the work failed, 2 when the input was wrong (bad option, unknown run, invalid settings).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from pydantic import ValidationError
from rich.console import Console

from deepcritical.config import Settings

__all__ = [
    "GlobalOptions",
    "console",
    "fail",
    "global_options",
    "out_console",
    "settings_from_options",
]

console = Console(stderr=True)
out_console = Console()


@dataclass
class GlobalOptions:
    """The options given before the command: ``deepcritical [--data-dir DIR] [-v] COMMAND``."""

    data_dir: Path | None = None
    """``--data-dir``: where the corpus and the run database live (``None``: the default)."""


global_options = GlobalOptions()
"""The global options of this invocation; set by the app's callback before any command runs."""


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print ``Error: message`` to standard error and return the exit to raise
    (``raise fail(...)``) with exit code ``code``."""
    console.print(f"[red]Error:[/red] {message}")
    return typer.Exit(code)


def settings_from_options(**overrides: Any) -> Settings:
    """:class:`Settings` from the environment, the global ``--data-dir`` and ``overrides``
    (keyword = settings field; a ``None`` value means "not given" and is left out).

    Raises:
        typer.Exit: code 2, after printing every invalid field, when the settings do not
            validate.
    """
    values = {k: v for k, v in overrides.items() if v is not None}
    if global_options.data_dir is not None:
        values.setdefault("data_dir", global_options.data_dir)
    try:
        return Settings(**values)
    except ValidationError as exc:
        msgs = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'settings'}: {e['msg']}" for e in exc.errors()
        )
        console.print(f"[red]Invalid settings:[/red] {msgs}")
        raise typer.Exit(2) from exc
