"""The append-only event log of a run: every :class:`~deepcritical.events.ResearchEvent` a
recorded run emits, numbered 1, 2, ... (``run_events``, primary key run id + ``seq``).

The recorder appends each event in the transaction of its checkpoint
(:func:`append_event`), so the log and the run's state never disagree; only one process
writes a run at a time (the resume lease), so the next number is the largest stored + 1.
Followers read from any offset (:func:`read_events`, ``RunStore.events``): asking again
with the last ``seq`` seen gives every later event exactly once, in order, however often
they reconnect. A resumed run replays its finished steps from the call cache, so its log
shows those steps' events again (new numbers), as ``runs resume`` shows them.
"""

from __future__ import annotations

from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.orm import Session

from deepcritical.events import ResearchEvent
from deepcritical.models import utc_now
from deepcritical.state.numbering import last_number
from deepcritical.state.schema import RunEventRow

__all__ = ["LoggedEvent", "append_event", "read_events"]

MAX_READ = 1000
"""Most events one read returns."""


class LoggedEvent(BaseModel):
    """One event of a run's log with its sequence number (1-based, per run)."""

    seq: int
    event: ResearchEvent


def append_event(session: Session, run_id: str, event: ResearchEvent) -> int:
    """Append ``event`` to run ``run_id``'s log in ``session``'s transaction; its number."""
    seq = last_number(session, RunEventRow.seq, run_id) + 1
    session.add(
        RunEventRow(
            run_id=run_id,
            seq=seq,
            type=event.type,
            payload=event.model_dump(mode="json"),
            created_at=utc_now(),
        )
    )
    session.flush()
    return seq


def read_events(
    session: Session, run_id: str, after_seq: int = 0, limit: int = MAX_READ
) -> list[LoggedEvent]:
    """The events of run ``run_id`` numbered above ``after_seq``, in order (at most
    ``limit``, capped at :data:`MAX_READ`)."""
    rows = session.scalars(
        select(RunEventRow)
        .where(RunEventRow.run_id == run_id, RunEventRow.seq > after_seq)
        .order_by(RunEventRow.seq)
        .limit(max(1, min(limit, MAX_READ)))
    ).all()
    return [
        LoggedEvent(seq=row.seq, event=ResearchEvent.model_validate(row.payload)) for row in rows
    ]
