"""Past runs from the durable run store (``deepcritical.state``), for the history panel.

The store is optional: the panel is shown only when :func:`history_available` finds the
``deepcritical.state`` package. This module is written against :class:`RunStoreLike`, a
protocol of the store's interface (``RunStore.open(settings)``, ``list_runs``, ``get_run``,
``export_run``, ``close``), so it is tested with a small fake and does not import the store
at module level.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, cast

from deepcritical.config import Settings
from deepcritical.events import ResearchEvent

STATE_MODULE = "deepcritical.state"
HEADERS = ["Run id", "Question", "Status", "Stage", "Progress", "Updated"]


class RunRecordLike(Protocol):
    """A stored run (``deepcritical.state.RunRecord``)."""

    id: str
    question: str
    status: str
    progress: Any
    stage: Any
    created_at: datetime
    updated_at: datetime
    error: str | None
    report_markdown: str | None


class RunStoreLike(Protocol):
    """The durable run store (``deepcritical.state.RunStore``)."""

    def list_runs(self, limit: int = 50) -> list[Any]:
        """Runs, newest first (:class:`RunRecordLike` items)."""
        ...

    def get_run(self, run_id: str) -> Any:
        """The run ``run_id`` (a :class:`RunRecordLike`) or ``None``."""
        ...

    def export_run(self, run_id: str) -> dict[str, Any]:
        """Everything stored about the run, JSON-able."""
        ...

    def close(self) -> None:
        """Release the store."""
        ...


StoreOpener = Callable[[Settings], RunStoreLike]


def history_available() -> bool:
    """Whether the durable run store package is installed."""
    try:
        return importlib.util.find_spec(STATE_MODULE) is not None
    except (ImportError, ValueError):
        return False


def default_opener() -> StoreOpener | None:
    """``RunStore.open`` of ``deepcritical.state``, or ``None`` when that package is absent."""
    if not history_available():
        return None
    module = importlib.import_module(STATE_MODULE)
    run_store = getattr(module, "RunStore", None)
    opener = getattr(run_store, "open", None)
    return cast(StoreOpener, opener) if callable(opener) else None


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, float):
        return f"{value:.0%}" if 0.0 <= value <= 1.0 else f"{value:g}"
    return str(value)


def history_rows(store: RunStoreLike, limit: int = 50) -> list[list[str]]:
    """Rows ``[id, question, status, stage, progress, updated]`` of the newest ``limit`` runs
    (plain text; the Dataframe shows it as text)."""
    rows: list[list[str]] = []
    for r in store.list_runs(limit=limit):
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


class RunNotFoundError(LookupError):
    """No stored run has this id."""


def open_report(store: RunStoreLike, run_id: str) -> tuple[str, str]:
    """``(status line, report markdown)`` of stored run ``run_id``; the markdown is empty when
    the run has no report yet (unfinished or failed).

    Raises:
        RunNotFoundError: unknown ``run_id``.
    """
    record = store.get_run(run_id.strip())
    if record is None:
        raise RunNotFoundError(f"no stored run {run_id.strip()!r}")
    status = f"{record.status}" + (f" — {record.error}" if record.error else "")
    return status, str(record.report_markdown or "")


def export_to_file(store: RunStoreLike, run_id: str, directory: Path) -> Path:
    """Write the export of ``run_id`` to ``directory/run-<id>.json``; return the path.

    Raises:
        RunNotFoundError: unknown ``run_id``.
    """
    rid = run_id.strip()
    if store.get_run(rid) is None:
        raise RunNotFoundError(f"no stored run {rid!r}")
    directory.mkdir(parents=True, exist_ok=True)
    safe = "".join(ch for ch in rid if ch.isalnum() or ch in "-_")[:64] or "run"
    path = directory / f"run-{safe}.json"
    path.write_text(
        json.dumps(store.export_run(rid), indent=2, ensure_ascii=False, default=str),
        encoding="utf-8",
    )
    return path


def resume_events(run_id: str, settings: Settings) -> AsyncIterator[ResearchEvent]:
    """The event stream of ``deepcritical.api.resume(run_id, settings)``.

    Raises:
        RuntimeError: this installation has no ``resume`` (no durable run store).
    """
    from deepcritical import api

    resume = getattr(api, "resume", None)
    if resume is None:
        raise RuntimeError("resuming needs the durable run store (deepcritical.state)")
    return cast(AsyncIterator[ResearchEvent], resume(run_id.strip(), settings=settings))
