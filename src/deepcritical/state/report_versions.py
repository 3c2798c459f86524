"""The revised versions of a run's report kept with the run (``run_report_versions``):
version 2, 3, ... in the order made, each a :class:`~deepcritical.models.ReportVersion`.
Version 1, the run's own report, stays in ``runs.result`` and is not copied here.
``RunStore.add_report_version``, ``report_versions`` and ``report_version`` call these,
owner-checked.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from deepcritical.models import ReportVersion
from deepcritical.state.errors import StateError
from deepcritical.state.numbering import last_number
from deepcritical.state.schema import ReportVersionRow

__all__ = ["append_version", "latest_version_number", "read_version", "read_versions"]


def latest_version_number(session: Session, run_id: str) -> int:
    """The newest version number of run ``run_id``'s report (1 when it was never revised)."""
    return max(last_number(session, ReportVersionRow.version, run_id), 1)


def append_version(session: Session, run_id: str, version: ReportVersion) -> int:
    """Keep ``version`` with run ``run_id`` in ``session``'s transaction; its number.

    Raises:
        StateError: ``version.version`` is not the next number (another revision took it
            meanwhile).
    """
    expected = latest_version_number(session, run_id) + 1
    if version.version != expected:
        raise StateError(
            f"version {version.version} of run {run_id} cannot be kept: the next version is "
            f"{expected} (another revision was made meanwhile); revise again"
        )
    session.add(
        ReportVersionRow(
            run_id=run_id,
            version=version.version,
            instruction=version.instruction,
            payload=version.model_dump(mode="json"),
            created_at=version.created_at,
        )
    )
    session.flush()
    return version.version


def read_versions(session: Session, run_id: str) -> list[ReportVersion]:
    """The revised versions (2, 3, ...) of run ``run_id``'s report, in order."""
    rows = session.scalars(
        select(ReportVersionRow)
        .where(ReportVersionRow.run_id == run_id)
        .order_by(ReportVersionRow.version)
    ).all()
    return [ReportVersion.model_validate(row.payload) for row in rows]


def read_version(session: Session, run_id: str, version: int) -> ReportVersion | None:
    """Revised version ``version`` (2 and up) of run ``run_id``'s report; ``None`` when
    there is none."""
    row = session.get(ReportVersionRow, (run_id, version))
    return None if row is None else ReportVersion.model_validate(row.payload)
