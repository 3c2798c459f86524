"""Runs as durable jobs: an append-only event log per run (``run_events``), the worker that
runs a job (``runs.worker``) and the cancellation request a worker checks
(``runs.cancel_requested``).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25 11:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``run_events`` (primary key run id + sequence number) and add ``runs.worker``
    and ``runs.cancel_requested`` (false for existing runs)."""
    op.create_table(
        "run_events",
        sa.Column(
            "run_id", sa.String(length=32), sa.ForeignKey("runs.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("type", sa.String(length=40), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )  # fmt: skip
    op.add_column("runs", sa.Column("worker", sa.String(length=200), nullable=True))
    op.add_column(
        "runs",
        sa.Column("cancel_requested", sa.Boolean(), nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    """Drop ``run_events``, ``runs.worker`` and ``runs.cancel_requested``."""
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("cancel_requested")
        batch.drop_column("worker")
    op.drop_table("run_events")
