"""Past runs from the durable run store (:mod:`deepcritical.state`), for the web app's
History tab: the table of runs, a stored report, the JSON export and resuming a run.

The helpers take an open :class:`RunHistory`: a :class:`~deepcritical.state.RunStore` (the tab
opens one per action with a :data:`StoreOpener`, default ``RunStore.open``, and closes it
after), or in tests a small fake of its ``list_runs``/``get_run``/``export_run``/``close``.

Every helper takes the caller's ``owner`` (:meth:`deepcritical.ui.auth.Access.owner`) and
sees only that owner's runs: another owner's run is "not found", like one that does not exist.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from deepcritical.config import Settings
from deepcritical.events import ResearchEvent
from deepcritical.state import RunNotFoundError, RunRecord

__all__ = [
    "HEADERS",
    "RunHistory",
    "StoreOpener",
    "export_to_file",
    "history_rows",
    "open_report",
    "resume_events",
]

HEADERS = ["Run id", "Question", "Status", "Stage", "Progress", "Updated"]


class RunHistory(Protocol):
    """What the History tab reads from the run store (:class:`deepcritical.state.RunStore`)."""

    def list_runs(self, limit: int = 50, *, owner: str | None = None) -> list[RunRecord]:
        """The newest ``limit`` runs of ``owner``, newest first."""
        ...

    def get_run(self, run_id: str, *, owner: str | None = None) -> RunRecord | None:
        """``owner``'s run ``run_id`` (a unique prefix of 6+ characters is accepted), or
        ``None``."""
        ...

    def export_run(self, run_id: str, *, owner: str | None = None) -> dict[str, Any]:
        """``owner``'s run ``run_id`` as JSON data (see
        :meth:`deepcritical.state.RunStore.export_run`)."""
        ...

    def close(self) -> None:
        """Release the database."""
        ...


StoreOpener = Callable[[Settings], RunHistory]
"""Opens the run store of the server's settings (``RunStore.open``); the caller closes it."""


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, float):
        return f"{value:.0%}" if 0.0 <= value <= 1.0 else f"{value:g}"
    return str(value)


def history_rows(store: RunHistory, owner: str | None, limit: int = 50) -> list[list[str]]:
    """Rows ``[id, question, status, stage, progress, updated]`` of ``owner``'s newest
    ``limit`` runs (plain text; the Dataframe shows it as text)."""
    rows: list[list[str]] = []
    for r in store.list_runs(limit=limit, owner=owner):
        question = str(r.question)
        rows.append(
            [
                str(r.id),
                question if len(question) <= 120 else question[:119] + "…",
                _cell(r.status),
                _cell(r.stage),
                _cell(r.progress),
                _cell(r.updated_at),
            ]
        )
    return rows


def open_report(store: RunHistory, run_id: str, owner: str | None) -> tuple[str, str]:
    """``(status line, report markdown)`` of ``owner``'s stored run ``run_id``; the markdown
    is empty when the run has no report yet (unfinished or failed).

    Raises:
        RunNotFoundError: unknown ``run_id``, or another owner's.
    """
    record = store.get_run(run_id.strip(), owner=owner)
    if record is None:
        raise RunNotFoundError(f"no stored run {run_id.strip()!r}")
    status = f"{record.status}" + (f" — {record.error}" if record.error else "")
    return status, str(record.report_markdown or "")


def export_to_file(store: RunHistory, run_id: str, owner: str | None, directory: Path) -> Path:
    """Write the export of ``owner``'s run ``run_id`` to ``<directory>/<random>/run-<id>.json``
    and return the path: a fresh directory per export, so two callers exporting the same
    run never share, overwrite or read one file.

    Raises:
        RunNotFoundError: unknown ``run_id``, or another owner's.
    """
    rid = run_id.strip()
    record = store.get_run(rid, owner=owner)
    if record is None:
        raise RunNotFoundError(f"no stored run {rid!r}")
    data = store.export_run(record.id, owner=owner)
    directory.mkdir(parents=True, exist_ok=True)
    safe = "".join(ch for ch in record.id if ch.isalnum() or ch in "-_")[:64] or "run"
    path = Path(tempfile.mkdtemp(prefix="export-", dir=directory)) / f"run-{safe}.json"
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    return path


def resume_events(
    run_id: str, settings: Settings, owner: str | None
) -> AsyncIterator[ResearchEvent]:
    """The event stream of ``deepcritical.api.resume(run_id, settings, owner=owner)``,
    ``run_id`` stripped of surrounding blanks.

    Raises (on the first iteration):
        RunNotFoundError: unknown ``run_id``, or another owner's.
        RunNotResumableError: the run already finished.
    """
    from deepcritical import api  # on first use: it loads the agents

    return api.resume(run_id.strip(), settings=settings, owner=owner)
