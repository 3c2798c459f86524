"""Initial schema: runs, sources, source keys and questions, call cache.

Revision ID: 0001
Revises: (none)
Create Date: 2026-11-22 02:11:46.128419
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create every table."""
    op.create_table(
        "call_cache",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("label", sa.String(length=200), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("context", sa.Text(), nullable=True),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("syllabus", sa.JSON(), nullable=True),
        sa.Column("syllabus_fixed", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("progress", sa.Float(), nullable=False),
        sa.Column("stage", sa.String(length=40), nullable=True),
        sa.Column("refined_question", sa.Text(), nullable=True),
        sa.Column("checklist", sa.JSON(), nullable=False),
        sa.Column("iterations", sa.JSON(), nullable=False),
        sa.Column("metrics", sa.JSON(), nullable=False),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("report_markdown", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_runs_status"), ["status"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_updated_at"), ["updated_at"], unique=False)

    op.create_table(
        "sources",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("source_type", sa.String(length=40), nullable=False),
        sa.Column("external_id", sa.String(length=2000), nullable=False),
        sa.Column("url", sa.Text(), nullable=True),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("citation_id", sa.String(length=64), nullable=False),
        sa.Column("key_excerpts", sa.JSON(), nullable=False),
        sa.Column("evidence", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_id", "citation_id", name="uq_source_citation"),
        sa.UniqueConstraint("run_id", "number", name="uq_source_number"),
        sa.UniqueConstraint("run_id", "source_type", "external_id", name="uq_source_external"),
    )
    with op.batch_alter_table("sources", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_sources_run_id"), ["run_id"], unique=False)

    op.create_table(
        "source_keys",
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("key", sa.String(length=1000), nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["source_id"], ["sources.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run_id", "key"),
    )
    with op.batch_alter_table("source_keys", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_source_keys_source_id"), ["source_id"], unique=False)

    op.create_table(
        "source_questions",
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("question_key", sa.String(length=200), nullable=False),
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["source_id"], ["sources.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("source_id", "question_key"),
    )
    with op.batch_alter_table("source_questions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_source_questions_run_question", ["run_id", "question_key"], unique=False
        )


def downgrade() -> None:
    """Drop every table."""
    with op.batch_alter_table("source_questions", schema=None) as batch_op:
        batch_op.drop_index("ix_source_questions_run_question")

    op.drop_table("source_questions")
    with op.batch_alter_table("source_keys", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_source_keys_source_id"))

    op.drop_table("source_keys")
    with op.batch_alter_table("sources", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_sources_run_id"))

    op.drop_table("sources")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_runs_updated_at"))
        batch_op.drop_index(batch_op.f("ix_runs_status"))

    op.drop_table("runs")
    op.drop_table("call_cache")
