"""Follow-up questions on finished runs: ``run_follow_ups`` (primary key run id + sequence
number; the question and its answer as JSON), deleted with their run.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``run_follow_ups``."""
    op.create_table(
        "run_follow_ups",
        sa.Column(
            "run_id", sa.String(length=32), sa.ForeignKey("runs.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )  # fmt: skip


def downgrade() -> None:
    """Drop ``run_follow_ups``."""
    op.drop_table("run_follow_ups")
