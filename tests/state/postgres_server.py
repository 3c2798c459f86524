"""The tests' throw-away PostgreSQL server: :mod:`scripts.postgres_local` (shared with
``make serve-scaled`` and the benchmarks)."""

from scripts.postgres_local import postgres_bin, postgres_server

__all__ = ["postgres_bin", "postgres_server"]
