"""Runs keep the user's report preferences (audience, length, focus) for a resume.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 03:20:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add ``runs.preferences`` (JSON, null when the request gave none)."""
    op.add_column("runs", sa.Column("preferences", sa.JSON(), nullable=True))


def downgrade() -> None:
    """Drop ``runs.preferences``."""
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("preferences")
