"""The researcher's reviews of a run's plan and evidence: ``run_reviews`` (primary key run id
+ review number, 1 and up; the stage, its ordinal, the status and the review as JSON), deleted
with their run.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-04 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``run_reviews``."""
    op.create_table(
        "run_reviews",
        sa.Column(
            "run_id", sa.String(length=32), sa.ForeignKey("runs.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("number", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("stage", sa.String(length=20), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
    )  # fmt: skip


def downgrade() -> None:
    """Drop ``run_reviews``."""
    op.drop_table("run_reviews")
