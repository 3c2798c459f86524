"""Per-run numbering of appended rows: an event's ``seq``, a follow-up's ``seq``, a report
version's ``version``, a source's ``number``. Each table numbers its rows 1, 2, ... within a
run (its primary key is the run id and that number); only one process writes a run at a
time (the resume lease, the ask and revise paths' own transactions), so the next number is
the largest stored + 1, read in the appending transaction.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import InstrumentedAttribute, Session

__all__ = ["last_number"]


def last_number(session: Session, number: InstrumentedAttribute[int], run_id: str) -> int:
    """The largest ``number`` stored for run ``run_id`` in ``session``, 0 when none.

    ``number`` is a mapped integer column of a table with a ``run_id`` column (both from
    :mod:`deepcritical.state.schema`), e.g. ``RunEventRow.seq``.
    """
    table = number.class_
    last = session.scalar(select(func.max(number)).where(table.run_id == run_id))
    return int(last or 0)
