"""Alembic migrations of the run database (applied by :func:`deepcritical.state.db.migrate`)."""
