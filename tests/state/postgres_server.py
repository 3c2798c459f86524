"""A throw-away PostgreSQL server from Debian's ``postgresql`` package, on 127.0.0.1.

``initdb`` + ``pg_ctl`` run in a fresh temporary directory on a free port; as root they run
as the ``postgres`` user (PostgreSQL refuses to run as root) and the directory is given to
that user. Authentication is ``trust`` on loopback only.
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
from pathlib import Path


def postgres_bin() -> Path | None:
    """The newest ``/usr/lib/postgresql/<v>/bin`` holding ``initdb``, or ``None``."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4])
    )
    return Path(found[-1]).parent if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a server; yield ``postgresql+psycopg://postgres@127.0.0.1:PORT/postgres``.

    Raises:
        RuntimeError: no PostgreSQL binaries, or the server did not start (with its log).
    """
    bin_dir = postgres_bin()
    if bin_dir is None:
        raise RuntimeError("PostgreSQL binaries not found under /usr/lib/postgresql")
    root = Path(tempfile.mkdtemp(prefix="dc-pg-"))
    data, log = root / "data", root / "server.log"
    prefix: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
        prefix = ["runuser", "-u", "postgres", "--"]
    port = _free_port()
    try:
        subprocess.run(
            [*prefix, str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres",
             "--auth=trust", "-E", "UTF8", "--no-sync"],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        options = f"-h 127.0.0.1 -p {port} -k {root} -c fsync=off -c max_connections=200"
        started = subprocess.run(
            [*prefix, str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log),
             "-o", options, "-w", "-t", "60", "start"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if started.returncode != 0:
            text = log.read_text() if log.exists() else ""
            raise RuntimeError(f"postgres did not start: {started.stderr}\n{text[-2000:]}")
        try:
            yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
        finally:
            subprocess.run(
                [*prefix, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                capture_output=True, check=False,
            )  # fmt: skip
    finally:
        shutil.rmtree(root, ignore_errors=True)
