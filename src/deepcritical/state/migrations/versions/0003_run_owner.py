"""Runs belong to a user: ``runs.owner`` (the web app's signed-in user, ``user:alice`` or
``hf:alice``); existing runs get ``NULL``, the local user (CLI, Python API, a web app without
sign-in).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-25 07:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add ``runs.owner`` (string of at most 200 characters, null for existing runs) and its
    index (every query of the run history filters on it)."""
    op.add_column("runs", sa.Column("owner", sa.String(length=200), nullable=True))
    op.create_index(op.f("ix_runs_owner"), "runs", ["owner"], unique=False)


def downgrade() -> None:
    """Drop ``runs.owner`` and its index."""
    op.drop_index(op.f("ix_runs_owner"), table_name="runs")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("owner")
