"""Revised versions of a finished run's report: ``run_report_versions`` (primary key run id +
version number, 2 and up; the instruction and the version as JSON), deleted with their run.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``run_report_versions``."""
    op.create_table(
        "run_report_versions",
        sa.Column(
            "run_id", sa.String(length=32), sa.ForeignKey("runs.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("version", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("instruction", sa.Text(), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )  # fmt: skip


def downgrade() -> None:
    """Drop ``run_report_versions``."""
    op.drop_table("run_report_versions")
