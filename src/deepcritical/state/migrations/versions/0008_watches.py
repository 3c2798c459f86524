"""Living reviews: watched questions (``watches``: question, plan, public settings, queries,
schedule, window, update lease, webhook) on the run whose report versions are their
versions, and their updates (``watch_updates``, 1, 2, ... per watch), deleted with their
watch (a watch is deleted with its run).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-28 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``watches`` and ``watch_updates``."""
    op.create_table(
        "watches",
        sa.Column("id", sa.String(length=32), primary_key=True),
        sa.Column("owner", sa.String(length=200), nullable=True),
        sa.Column(
            "run_id", sa.String(length=32), sa.ForeignKey("runs.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("plan", sa.JSON(), nullable=True),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("queries", sa.JSON(), nullable=False),
        sa.Column("every_seconds", sa.Float(), nullable=True),
        sa.Column("paused", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("webhook_url", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("checked_until", sa.DateTime(timezone=True), nullable=False),
        sa.Column("next_due_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_update_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("lease_owner", sa.String(length=1000), nullable=True),
        sa.Column("lease_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
    )  # fmt: skip
    op.create_index("ix_watches_owner", "watches", ["owner"])
    op.create_index("ix_watches_run_id", "watches", ["run_id"])
    op.create_index("ix_watches_next_due_at", "watches", ["next_due_at"])
    op.create_table(
        "watch_updates",
        sa.Column(
            "watch_id", sa.String(length=32), sa.ForeignKey("watches.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("number", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("outcome", sa.String(length=20), nullable=False),
        sa.Column("version", sa.Integer(), nullable=True),
        sa.Column("seen", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )  # fmt: skip


def downgrade() -> None:
    """Drop ``watch_updates`` and ``watches``."""
    op.drop_table("watch_updates")
    op.drop_index("ix_watches_next_due_at", table_name="watches")
    op.drop_index("ix_watches_run_id", table_name="watches")
    op.drop_index("ix_watches_owner", table_name="watches")
    op.drop_table("watches")
