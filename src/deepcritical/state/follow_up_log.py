"""The follow-up questions kept with a run (``run_follow_ups``): each question asked about the
finished run and its :class:`~deepcritical.models.FollowUp` answer, numbered 1, 2, ... in the
order asked. ``RunStore.add_follow_up`` and ``RunStore.follow_ups`` call these, owner-checked.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from deepcritical.models import FollowUp
from deepcritical.state.numbering import last_number
from deepcritical.state.schema import FollowUpRow

__all__ = ["append_follow_up", "read_follow_ups"]


def append_follow_up(session: Session, run_id: str, follow_up: FollowUp) -> int:
    """Keep ``follow_up`` with run ``run_id`` in ``session``'s transaction; its number."""
    seq = last_number(session, FollowUpRow.seq, run_id) + 1
    session.add(
        FollowUpRow(
            run_id=run_id,
            seq=seq,
            question=follow_up.question,
            payload=follow_up.model_dump(mode="json"),
            created_at=follow_up.asked_at,
        )
    )
    session.flush()
    return seq


def read_follow_ups(session: Session, run_id: str) -> list[FollowUp]:
    """The follow-ups of run ``run_id``, in the order asked."""
    rows = session.scalars(
        select(FollowUpRow).where(FollowUpRow.run_id == run_id).order_by(FollowUpRow.seq)
    ).all()
    return [FollowUp.model_validate(row.payload) for row in rows]
