"""Developer and deployment scripts: ``python -m scripts.serve_scaled`` (``make serve-scaled``)
and the local PostgreSQL server (:mod:`scripts.postgres_local`) that it, the tests and the
benchmarks share."""
