"""``make serve-scaled`` (``python -m scripts.serve_scaled``): PostgreSQL, the web app and two
workers on 127.0.0.1 in one command; a job submitted against its database completes (``runs
submit`` + ``runs follow``, ``--sources local`` over a small PubMedQA corpus); SIGTERM stops
every process it started, frees the app's and the database's ports and keeps the cluster."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from scripts.postgres_local import free_port, postgres_bin
from tests.integration.test_cli_research import run_cli, user_env, write_subset

pytestmark = pytest.mark.slow


def gone(pid: int) -> bool:
    """No such process, or a zombie (a container's init may not reap the postmaster)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in {"Z", "X"}


def port_free(port: int) -> bool:
    """Nothing listens on ``port`` (a server binds it again: connections it closed may be in
    TIME_WAIT, which SO_REUSEADDR allows, as servers set it)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def wait_for_line(output: Path, pattern: str, proc: subprocess.Popen[bytes], limit: float) -> str:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        found = re.search(pattern, output.read_text(errors="replace"), re.MULTILINE)
        if found:
            return found.group(1)
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    pytest.fail(f"no {pattern!r} in the script's output:\n{output.read_text(errors='replace')}")


@pytest.fixture
def open_tmp() -> Iterator[Path]:
    """A temporary directory the ``postgres`` user can reach (pytest's are closed to other
    users; as root the script runs PostgreSQL as ``postgres``)."""
    path = Path(tempfile.mkdtemp(prefix="dc-scaled-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_serve_scaled_starts_everything_runs_a_job_and_stops_cleanly(
    pubmedqa_dir: Path, open_tmp: Path
) -> None:
    if postgres_bin() is None:
        pytest.skip("PostgreSQL binaries absent (apt-get install postgresql)")
    tmp_path = open_tmp
    subset = tmp_path / "subset.jsonl"
    question, _gold = write_subset(pubmedqa_dir, subset)
    data_dir = tmp_path / "data"
    added = run_cli("--data-dir", data_dir, "corpus", "add", subset, cwd=tmp_path)
    assert added.returncode == 0, added.describe()

    port = free_port()
    output = tmp_path / "serve_scaled.out"
    env = user_env()
    root = Path(__file__).resolve().parents[2]  # the checkout: `scripts` is importable
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    with output.open("wb") as handle:
        script = subprocess.Popen(
            [sys.executable, "-m", "scripts.serve_scaled", "--workers", "2",
             "--data-dir", str(data_dir), "--port", str(port)],
            cwd=root, env=env, stdout=handle, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        url = wait_for_line(output, r"^postgresql\s+pid \d+\s+(\S+)", script, 60)
        pg_port = int(url.rsplit(":", 1)[1].split("/")[0])
        pids = [int(p) for p in re.findall(r"pid (\d+)", output.read_text())]
        assert len(pids) == 4, output.read_text()  # postgresql, app, two workers
        wait_for_line(output, r"^ready: (\S+) answers", script, 90)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as page:
            assert page.status == 200

        launcher = ("env", f"DEEPCRITICAL_DATABASE_URL={url}")
        submitted = run_cli(
            "--data-dir", data_dir, "runs", "submit", question, "--llm", "none",
            "--sources", "local", cwd=tmp_path, launcher=launcher,
        )  # fmt: skip
        assert submitted.returncode == 0, submitted.describe()
        run_id = submitted.stdout.strip()
        report = tmp_path / "report.md"
        followed = run_cli(
            "--data-dir", data_dir, "runs", "follow", run_id, "--out", report,
            cwd=tmp_path, launcher=launcher,
        )  # fmt: skip
        assert followed.returncode == 0, followed.describe() + output.read_text()
        assert report.read_text(encoding="utf-8").startswith("# ")
        assert all(not gone(pid) for pid in pids), output.read_text()  # both workers alive
        for worker in ("scaled-1", "scaled-2"):
            log = (data_dir / "scaled" / "logs" / f"{worker}.log").read_text()
            assert f"Worker {worker}" in log, log
    finally:
        script.send_signal(signal.SIGTERM)
        code = script.wait(timeout=60)
    text = output.read_text(errors="replace")
    assert code == 0, text
    assert "stopped: workers, app, PostgreSQL" in text
    assert [pid for pid in pids if not gone(pid)] == [], text
    assert port_free(port)
    assert port_free(pg_port)
    assert (data_dir / "scaled" / "postgres" / "data" / "PG_VERSION").is_file()  # kept
