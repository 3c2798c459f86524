"""Past runs from the durable run store (:mod:`deepcritical.state`), for the web app's
History tab: the table of runs (status and time first, a short id), opening a stored run (its
record and :class:`~deepcritical.models.RunResult`, replayed as events so the app renders it
as it renders a live run), the JSON export and resuming a run.

The helpers take an open :class:`RunHistory`: a :class:`~deepcritical.state.RunStore` (the tab
opens one per action with a :data:`StoreOpener`, default ``RunStore.open``, and closes it
after), or in tests a small fake of its ``list_runs``/``get_run``/``export_run``/``result``/
``follow_ups``/``close``.

Every helper takes the caller's ``owner`` (:meth:`deepcritical.ui.auth.Access.owner`) and
sees only that owner's runs: another owner's run is "not found", like one that does not exist.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from deepcritical.config import Settings
from deepcritical.events import DoneData, ResearchEvent, StartedData
from deepcritical.models import FollowUp, ReportVersion, ReportVersionInfo, RunResult
from deepcritical.state import (
    RunInProgressError,
    RunNotFoundError,
    RunNotResumableError,
    RunRecord,
)

__all__ = [
    "HEADERS",
    "SHORT_ID",
    "WAITING_STATUS",
    "RunHistory",
    "StoreOpener",
    "export_of",
    "history_rows",
    "history_table",
    "open_report",
    "replay_events",
    "resume_events",
    "selected_run_id",
    "status_line",
    "stored_run",
    "write_export",
]

HEADERS = ["Status", "Updated (UTC)", "Run", "Question", "Stage", "Progress"]
"""The History table's columns: status and time first (seen without scrolling), the short
run id, the question."""
ID_COLUMN = HEADERS.index("Run")
SHORT_ID = 8
"""Characters of a run id shown in the table (the store accepts a unique prefix of 6+)."""


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

    def result(self, run_id: str, *, owner: str | None = None) -> RunResult | None:
        """``owner``'s stored :class:`RunResult` of ``run_id``, ``None`` before its report."""
        ...

    def follow_ups(self, run_id: str, *, owner: str | None = None) -> list[FollowUp]:
        """The follow-up questions asked about ``owner``'s run ``run_id`` and their answers,
        in the order asked."""
        ...

    def report_versions(self, run_id: str, *, owner: str | None = None) -> list[ReportVersionInfo]:
        """The versions of ``owner``'s run ``run_id``'s report, oldest first (1: the run's
        own); ``[]`` without a report."""
        ...

    def report_version(
        self, run_id: str, version: int | None = None, *, owner: str | None = None
    ) -> ReportVersion | None:
        """Version ``version`` (``None``: the newest) of ``owner``'s run ``run_id``'s report;
        ``None`` without a report."""
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


WAITING_STATUS = "waiting for review"
"""How History names a run that waits for the user's review (``awaiting_review``)."""


def _status(record: RunRecord) -> str:
    status = str(record.status)
    if status == "awaiting_review":
        return WAITING_STATUS
    return f"{status} (interrupted)" if getattr(record, "interrupted", False) else status


def history_table(
    store: RunHistory, owner: str | None, limit: int = 50
) -> tuple[list[list[str]], list[str]]:
    """``(rows, run ids)`` of ``owner``'s newest ``limit`` runs: rows ``[status, updated,
    short id, question, stage, progress]`` (plain text; see :data:`HEADERS`) and the full
    id of each row, in the same order (:func:`selected_run_id` maps a clicked row to it)."""
    rows: list[list[str]] = []
    ids: list[str] = []
    for r in store.list_runs(limit=limit, owner=owner):
        question = str(r.question)
        rows.append(
            [
                _status(r),
                _cell(r.updated_at),
                str(r.id)[:SHORT_ID],
                question if len(question) <= 120 else question[:119] + "…",
                _cell(r.stage),
                _cell(r.progress),
            ]
        )
        ids.append(str(r.id))
    return rows, ids


def history_rows(store: RunHistory, owner: str | None, limit: int = 50) -> list[list[str]]:
    """The rows of :func:`history_table`."""
    return history_table(store, owner, limit)[0]


def selected_run_id(
    ids: Sequence[str], row_index: int | None, row_value: Sequence[Any] | None
) -> str | None:
    """The full id of the History row the user clicked: the run of ``ids`` whose id starts
    with the short id of ``row_value`` (the clicked row's cells; right even when the table
    was sorted), else ``ids[row_index]``; ``None`` for neither."""
    if row_value is not None and len(row_value) > ID_COLUMN:
        short = str(row_value[ID_COLUMN]).strip()
        found = [i for i in ids if short and i.startswith(short)]
        if len(found) == 1:
            return found[0]
    if row_index is not None and 0 <= row_index < len(ids):
        return ids[row_index]
    return None


def status_line(record: RunRecord) -> str:
    """One line on a stored run: status, last update, full id, and its error when it has
    one."""
    line = f"{_status(record)} · updated {_cell(record.updated_at)} UTC · run {record.id}"
    return line + (f" — {record.error}" if record.error else "")


def stored_run(
    store: RunHistory, run_id: str, owner: str | None
) -> tuple[RunRecord, RunResult | None]:
    """``owner``'s stored run ``run_id`` (a unique prefix of 6+ characters works) and its
    :class:`RunResult` (``None`` while it has no report: unfinished, failed, stopped).

    Raises:
        RunNotFoundError: unknown ``run_id``, or another owner's.
    """
    rid = run_id.strip()
    record = store.get_run(rid, owner=owner) if rid else None
    if record is None:
        raise RunNotFoundError(f"no stored run {rid!r}")
    return record, store.result(record.id, owner=owner)


async def replay_events(record: RunRecord, result: RunResult) -> AsyncIterator[ResearchEvent]:
    """A stored run as the two events a live run starts and ends with (``started`` with its
    ``run_id``, ``done`` with its result), for the app's streaming handler: an opened run is
    rendered exactly as a finished live one."""
    yield ResearchEvent(
        type="started",
        message=f"Opened run {record.id} from history",
        data=StartedData(run_id=record.id),
    )
    yield ResearchEvent(
        type="done",
        message=f"Stored report ({record.status})",
        round=result.report.metadata.iterations,
        data=DoneData(
            stop_reason=result.report.metadata.stop_reason,
            usage=result.report.metadata.usage.model_copy(deep=True),
        ),
        result=result,
    )


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


def export_of(store: RunHistory, run_id: str, owner: str | None) -> tuple[str, dict[str, Any]]:
    """``(full run id, export)`` of ``owner``'s run ``run_id`` (an id or its prefix; the
    export is :meth:`RunHistory.export_run`'s: the record, its events and its result).

    Raises:
        RunNotFoundError: unknown ``run_id``, or another owner's.
    """
    rid = run_id.strip()
    record = store.get_run(rid, owner=owner)
    if record is None:
        raise RunNotFoundError(f"no stored run {rid!r}")
    return record.id, store.export_run(record.id, owner=owner)


def write_export(run_id: str, data: Mapping[str, Any], directory: Path) -> Path:
    """Write the export ``data`` of the run ``run_id`` (:func:`export_of`) as indented JSON to
    ``<directory>/run-<id>.json`` (``directory`` created if missing) and return the path."""
    directory.mkdir(parents=True, exist_ok=True)
    safe = "".join(ch for ch in run_id if ch.isalnum() or ch in "-_")[:64] or "run"
    path = directory / f"run-{safe}.json"
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    return path


RESUME_TRIES = 5
"""Times a resume is tried while the run is still marked running (a run just stopped is
marked "cancelled" as its handler is cancelled; a quick *Resume* may arrive first)."""
RESUME_PAUSE = 1.0
"""Seconds between those tries."""


def _finished_run(
    run_id: str, settings: Settings, owner: str | None
) -> tuple[RunRecord, RunResult] | None:
    """``owner``'s finished run ``run_id`` and its stored result; ``None`` without one."""
    from deepcritical.state import RunStore

    store = RunStore.open(settings)
    try:
        record, result = stored_run(store, run_id, owner)
    except RunNotFoundError:
        return None
    finally:
        store.close()
    return (record, result) if result is not None else None


async def resume_events(
    run_id: str,
    settings: Settings,
    owner: str | None,
    *,
    tries: int = RESUME_TRIES,
    pause: float = RESUME_PAUSE,
) -> AsyncIterator[ResearchEvent]:
    """The event stream of ``deepcritical.api.resume(run_id, settings, owner=owner)``,
    ``run_id`` stripped of surrounding blanks; while the run is still marked running
    (:class:`~deepcritical.state.RunInProgressError` before the first event) it is tried
    again, ``tries`` times in all, ``pause`` seconds apart. A run that already finished (a
    Stop that came as its report was being saved) is opened instead: its stored report
    (:func:`replay_events`).

    Raises (on the first iteration):
        RunNotFoundError: unknown ``run_id``, or another owner's.
        RunNotResumableError: the run already finished without a readable report.
        RunInProgressError: the run is still running after ``tries`` tries.
    """
    from deepcritical import api  # on first use: it loads the agents

    for attempt in range(1, tries + 1):
        events = api.resume(run_id.strip(), settings=settings, owner=owner)
        try:
            first = await anext(events)
        except RunInProgressError:
            await _aclose(events)
            if attempt >= tries:
                raise
            await asyncio.sleep(pause)
            continue
        except RunNotResumableError:
            await _aclose(events)
            finished = await asyncio.to_thread(_finished_run, run_id.strip(), settings, owner)
            if finished is None:
                raise
            async for event in replay_events(*finished):
                yield event
            return
        except StopAsyncIteration:
            return
        try:
            yield first
            async for event in events:
                yield event
        finally:
            await _aclose(events)
        return


async def _aclose(events: AsyncIterator[ResearchEvent]) -> None:
    aclose = getattr(events, "aclose", None)
    if aclose is not None:
        await aclose()
