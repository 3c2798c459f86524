"""A PostgreSQL server from Debian's ``postgresql`` package, on 127.0.0.1.

``initdb`` (once) and ``pg_ctl`` run in a cluster directory on a free port (or a given one);
as root they run as the ``postgres`` user (PostgreSQL refuses to run as root) and the
directory is given to that user. Authentication is ``trust`` on loopback only (TCP on
127.0.0.1, no Unix socket), the superuser ``postgres``.

- :func:`start_postgres` / :meth:`LocalPostgres.stop`: a kept cluster (``make serve-scaled``:
  ``<data-dir>/scaled/postgres``), started again from its files next time;
- :func:`postgres_server`: a throw-away server in a temporary directory, removed after
  (the tests, the benchmarks).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "LocalPostgres",
    "create_database",
    "free_port",
    "postgres_bin",
    "postgres_server",
    "start_postgres",
]


def postgres_bin() -> Path | None:
    """The newest ``/usr/lib/postgresql/<v>/bin`` holding ``initdb``, or ``None``."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4])
    )
    return Path(found[-1]).parent if found else None


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LocalPostgres:
    """A started server: its cluster directory (``data``, ``server.log``) and port."""

    root: Path
    port: int
    bin_dir: Path
    prefix: list[str]

    @property
    def url(self) -> str:
        """``postgresql+psycopg://postgres@127.0.0.1:PORT/postgres`` (the maintenance db)."""
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    @property
    def log(self) -> Path:
        return self.root / "server.log"

    def database_url(self, name: str) -> str:
        """The URL of database ``name`` on this server."""
        return self.url.rsplit("/", 1)[0] + f"/{name}"

    def pid(self) -> int | None:
        """The postmaster's process id (from ``postmaster.pid``), or ``None``."""
        try:
            return int((self.root / "data" / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: roll back open transactions, write a checkpoint;
        ``immediate``: no checkpoint, for throw-away clusters) and wait for it."""
        subprocess.run(
            [*self.prefix, str(self.bin_dir / "pg_ctl"), "-D", str(self.root / "data"),
             "-m", mode, "-w", "-t", "60", "stop"],
            capture_output=True, check=False, start_new_session=True,
        )  # fmt: skip


def start_postgres(root: Path, *, port: int = 0, durable: bool = True) -> LocalPostgres:
    """Start a server on the cluster in ``root`` (``root/data``, created by ``initdb`` when
    absent) on ``port`` (0: a free one). ``durable=False`` turns fsync off (throw-away
    clusters). The server runs in its own session: a Ctrl-C in the terminal does not reach it.

    Raises:
        RuntimeError: no PostgreSQL binaries, or the server did not start (with its log).
    """
    bin_dir = postgres_bin()
    if bin_dir is None:
        raise RuntimeError(
            "PostgreSQL binaries not found under /usr/lib/postgresql "
            "(make postgresql, or apt-get install postgresql)"
        )
    root.mkdir(parents=True, exist_ok=True)
    prefix: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
        prefix = ["runuser", "-u", "postgres", "--"]
    if prefix and subprocess.run([*prefix, "test", "-w", str(root)], check=False).returncode:
        raise RuntimeError(
            f"the postgres user cannot reach {root}: a directory above it is closed to other "
            "users (choose a data directory under one that is open, e.g. chmod o+x)"
        )
    data = root / "data"
    if not (data / "PG_VERSION").is_file():
        made = subprocess.run(
            [*prefix, str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres",
             "--auth=trust", "-E", "UTF8", *([] if durable else ["--no-sync"])],
            check=False, capture_output=True, text=True,
        )  # fmt: skip
        if made.returncode != 0:
            raise RuntimeError(f"initdb failed: {made.stderr}{made.stdout}")
    server = LocalPostgres(root=root, port=port or free_port(), bin_dir=bin_dir, prefix=prefix)
    options = f"-h 127.0.0.1 -p {server.port} -k '' -c max_connections=200"
    if not durable:
        options += " -c fsync=off"
    started = subprocess.run(
        [*prefix, str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(server.log),
         "-o", options, "-w", "-t", "60", "start"],
        capture_output=True, text=True, check=False, start_new_session=True,
    )  # fmt: skip
    if started.returncode != 0:
        text = server.log.read_text(errors="replace") if server.log.exists() else ""
        raise RuntimeError(f"postgres did not start: {started.stderr}\n{text[-2000:]}")
    return server


def create_database(server: LocalPostgres, name: str) -> str:
    """Create database ``name`` on ``server`` unless it exists; its URL."""
    from sqlalchemy import create_engine, text

    engine = create_engine(server.url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            exists = conn.execute(
                text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": name}
            ).first()
            if exists is None:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
    finally:
        engine.dispose()
    return server.database_url(name)


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a throw-away server (fsync off) in a temporary directory; yield
    ``postgresql+psycopg://postgres@127.0.0.1:PORT/postgres``; stop it and remove the
    directory after.

    Raises:
        RuntimeError: no PostgreSQL binaries, or the server did not start (with its log).
    """
    root = Path(tempfile.mkdtemp(prefix="dc-pg-"))
    try:
        server = start_postgres(root, durable=False)
        try:
            yield server.url
        finally:
            server.stop("immediate")
    finally:
        shutil.rmtree(root, ignore_errors=True)
