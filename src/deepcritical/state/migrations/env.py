"""Alembic environment: runs on the connection :func:`deepcritical.state.db.migrate` passes in
``config.attributes["connection"]`` (or on ``sqlalchemy.url`` for the ``alembic`` command)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine

from deepcritical.state.schema import Base

config = context.config
target_metadata = Base.metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


given = config.attributes.get("connection")
if isinstance(given, Connection):
    _run(given)
else:
    engine = create_engine(str(config.get_main_option("sqlalchemy.url")))
    with engine.begin() as conn:
        _run(conn)
