"""Following a job: :func:`follow_run` streams a run's event log from any offset.

It polls the log (``RunStore.events``) every ``poll_seconds`` and yields each event once, in
order, with its number; a follower that stops and calls again with the last number it saw
(``after_seq``) misses nothing and sees nothing twice. It ends when the run has ended: its
status is no longer ``queued``/``pending``/``in_progress`` and the log has nothing more
(checked twice, so a worker's last note is not missed). A run whose worker died stays
``in_progress`` until another worker continues it: the follower keeps waiting.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from deepcritical.config import Settings
from deepcritical.state.errors import run_not_found
from deepcritical.state.event_log import LoggedEvent
from deepcritical.state.lease import LIVE_STATUSES
from deepcritical.state.run_store import RunStore

__all__ = ["follow_run"]

QUIET_POLLS_AT_END = 2
"""Polls without a new event, after the run ended, before the follower stops."""


async def follow_run(
    run_id: str,
    settings: Settings,
    *,
    after_seq: int = 0,
    owner: str | None = None,
    poll_seconds: float = 0.25,
) -> AsyncIterator[LoggedEvent]:
    """The events of ``owner``'s run ``run_id`` (a unique prefix works) numbered above
    ``after_seq``, as they are logged, until the run ends (see the module docstring).

    Raises:
        RunNotFoundError: no such run among ``owner``'s runs (before any event).
    """
    store = await asyncio.to_thread(RunStore.open, settings)
    try:
        record = await asyncio.to_thread(lambda: store.get_run(run_id, owner=owner))
        if record is None:
            raise run_not_found(run_id)
        full_id, seen, quiet = record.id, after_seq, 0
        while True:
            # the status first: events logged before it changed are read below
            current = await asyncio.to_thread(store.job_record, full_id)
            live = current is not None and current.status in LIVE_STATUSES | {"queued"}
            batch = await asyncio.to_thread(store.events, full_id, seen)
            for logged in batch:
                seen = logged.seq
                yield logged
            if batch:
                quiet = 0
                continue
            if not live:
                quiet += 1
                if quiet >= QUIET_POLLS_AT_END:
                    return
            await asyncio.sleep(poll_seconds)
    finally:
        store.close()
