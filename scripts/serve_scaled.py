"""A local scaled deployment in one command (``make serve-scaled [WORKERS=2]``).

Run: ``python -m scripts.serve_scaled [--workers 2] [--concurrency 1] [--data-dir .deepcritical]
[--host 127.0.0.1] [--port 7860] [--pg-port 0]``.

It starts, on 127.0.0.1:

1. PostgreSQL from Debian's packages (:mod:`scripts.postgres_local`) on the cluster kept in
   ``<data-dir>/scaled/postgres`` (``initdb`` the first time; as root it runs as the
   ``postgres`` user), trust authentication on loopback only, a free port unless
   ``--pg-port``; the database ``deepcritical`` is the run database and DBOS's job database;
2. the web app, ``deepcritical serve``, with ``DEEPCRITICAL_DATABASE_URL`` pointing at it;
3. N workers, ``deepcritical worker --worker-id scaled-<i>`` (a restart continues their runs at
   once), on the same database and data directory (the local corpus).

It prints the app's URL, the database URL (for ``runs submit|follow|cancel`` from another
shell), each process id and log (``<data-dir>/scaled/logs``). Ctrl-C or SIGTERM stops the
workers, then the app, then PostgreSQL, and exits 0; a process that ends by itself stops the
others too (exit 1). Nothing is removed: the cluster, the logs and the data directory stay.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from scripts.postgres_local import LocalPostgres, create_database, free_port, start_postgres

__all__ = ["Child", "main"]

DATABASE = "deepcritical"
STOP_SECONDS = 30.0
"""How long a process may take to stop after SIGTERM before it is killed."""
READY_SECONDS = 180.0
"""How long the app may take to answer HTTP at start."""


@dataclass
class Child:
    """One started process: its name, process and log file."""

    name: str
    proc: subprocess.Popen[bytes]
    log: Path


def deepcritical_command() -> list[str]:
    """The ``deepcritical`` console script next to this interpreter, else ``python -m``."""
    script = shutil.which("deepcritical", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "deepcritical.cli"]


def start_child(name: str, args: list[str], env: dict[str, str], logs: Path) -> Child:
    """Start ``deepcritical ARGS`` in its own session (a terminal's Ctrl-C reaches only this
    script, which stops the children in order), its output appended to ``logs/NAME.log``."""
    log = logs / f"{name}.log"
    handle: IO[bytes]
    with log.open("ab") as handle:  # the child keeps its own copy
        proc = subprocess.Popen(
            [*deepcritical_command(), *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Child(name, proc, log)


def stop_child(child: Child) -> None:
    """SIGTERM the child's process group, wait up to :data:`STOP_SECONDS`, then SIGKILL it."""
    if child.proc.poll() is None:
        _signal_group(child.proc.pid, signal.SIGTERM)
        try:
            child.proc.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            print(f"{child.name} did not stop in {STOP_SECONDS:.0f} s: killed", flush=True)
    _signal_group(child.proc.pid, signal.SIGKILL)  # what it left behind in its group
    child.proc.wait()


def _signal_group(pgid: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def answers_http(url: str) -> bool:
    """Whether ``url`` answers an HTTP GET (any status below 500)."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status) < 500
    except urllib.error.HTTPError as exc:
        return exc.code < 500
    except OSError:
        return False


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m scripts.serve_scaled",
        description="PostgreSQL, the web app and N workers on 127.0.0.1; Ctrl-C stops them.",
    )
    parser.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--concurrency", type=int, default=1, help="jobs per worker (default 1)")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(".deepcritical"),
        help="DeepCritical's data directory (corpus); the cluster and logs go to DIR/scaled",
    )
    parser.add_argument("--host", default="127.0.0.1", help="the app's interface")
    parser.add_argument("--port", type=int, default=7860, help="the app's port (0: a free one)")
    parser.add_argument("--pg-port", type=int, default=0, help="PostgreSQL's port (0: free)")
    args = parser.parse_args(argv)
    if args.workers < 1 or args.concurrency < 1:
        parser.error("--workers and --concurrency must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    """Start everything, wait for Ctrl-C, SIGTERM or a process that ends; stop everything."""
    args = parse_args(argv)
    data_dir = args.data_dir.resolve()
    state = data_dir / "scaled"
    logs = state / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()

    def _stop(_signum: int, _frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)

    server = start_postgres(state / "postgres", port=args.pg_port)
    children: list[Child] = []
    try:
        url = create_database(server, DATABASE)
        env = dict(os.environ, DEEPCRITICAL_DATABASE_URL=url)
        port = args.port or free_port()
        common = ["--data-dir", str(data_dir)]
        children.append(
            start_child(
                "app", [*common, "serve", "--host", args.host, "--port", str(port)], env, logs
            )
        )
        for i in range(1, args.workers + 1):
            name = f"scaled-{i}"
            worker_args = ["worker", "--worker-id", name, "--concurrency", str(args.concurrency)]
            children.append(start_child(name, [*common, *worker_args], env, logs))
        print_summary(server, url, children, args.host, port)
        return supervise(children, stop, f"http://{_client_host(args.host)}:{port}/")
    finally:
        for child in reversed(children):  # the workers first, the app last
            stop_child(child)
        server.stop("fast")
        print(f"stopped: workers, app, PostgreSQL (data kept in {state})", flush=True)


def _client_host(host: str) -> str:
    return "127.0.0.1" if host in {"0.0.0.0", "::", ""} else host


def print_summary(
    server: LocalPostgres, url: str, children: list[Child], host: str, port: int
) -> None:
    print(f"postgresql  pid {server.pid()}  {url}  (cluster {server.root})", flush=True)
    for child in children:
        print(f"{child.name:<11} pid {child.proc.pid}  log {child.log}", flush=True)
    print(f"app         http://{_client_host(host)}:{port}/", flush=True)
    print(
        f"from another shell: DEEPCRITICAL_DATABASE_URL={url} deepcritical runs submit ...",
        flush=True,
    )
    print("Ctrl-C stops everything.", flush=True)


def supervise(children: list[Child], stop: threading.Event, app_url: str) -> int:
    """Wait until ``stop`` is set (0) or a child ends by itself (1); say when the app
    answers HTTP."""
    ready = False
    started = time.monotonic()
    while not stop.wait(0.5):
        for child in children:
            code = child.proc.poll()
            if code is not None:
                tail = child.log.read_text(errors="replace")[-2000:]
                print(f"{child.name} exited with code {code}; stopping.\n{tail}", flush=True)
                return 1
        if not ready and answers_http(app_url):
            ready = True
            print(f"ready: {app_url} answers ({time.monotonic() - started:.0f} s)", flush=True)
        elif not ready and time.monotonic() - started > READY_SECONDS:
            print(f"the app did not answer in {READY_SECONDS:.0f} s; stopping.", flush=True)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
