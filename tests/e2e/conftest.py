"""Fixtures of the browser tests: one app server per test session (``deepcritical serve`` in a
subprocess on 127.0.0.1, a tiny corpus, the scripted Chat Completions stub as its model) and
headless Debian Chromium driven by Playwright.

Skips when ``/usr/bin/chromium`` is absent (CI installs it: ``make browser``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from deepcritical.testing.chat import (
    ChatCompletionsStub,
    ManagerScript,
    RoleScript,
    request_role,
)
from tests.e2e.corpus import write_corpus

CHROMIUM = Path(os.environ.get("DEEPCRITICAL_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-quic",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",  # small /dev/shm in containers
    "--no-proxy-server",  # the app is on 127.0.0.1
]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
# the clients of these tests (httpx, gradio_client, mcp) talk to 127.0.0.1 only: no proxy
os.environ["NO_PROXY"] = ",".join(
    p for p in (os.environ.get("NO_PROXY"), "127.0.0.1", "localhost") if p
)
SERVER_START_TIMEOUT = 120.0  # seconds
SECRET_VARIABLES = {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "NCBI_API_KEY"}


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cli_command() -> list[str]:
    """The installed console script next to this interpreter, else ``python -m``."""
    script = shutil.which("deepcritical", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "deepcritical.cli"]


def server_env(**settings: str) -> dict[str, str]:
    """The test's environment without API keys or DEEPCRITICAL_ settings, plus ``settings``
    (as ``DEEPCRITICAL_<NAME>``), offline models and no Gradio analytics."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("DEEPCRITICAL_") and k not in SECRET_VARIABLES
    }
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        ANONYMIZED_TELEMETRY="False",
        GRADIO_ANALYTICS_ENABLED="False",
        NO_PROXY="127.0.0.1,localhost",
        PYTHONUNBUFFERED="1",
    )
    env.update({f"DEEPCRITICAL_{k.upper()}": v for k, v in settings.items()})
    return env


@dataclass
class AppServer:
    """A running ``deepcritical serve``: its URL, log file and the model stub it calls."""

    url: str
    log_path: Path
    data_dir: Path
    stub: ChatCompletionsStub
    process: subprocess.Popen[bytes]
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def log(self) -> str:
        """Everything the server printed so far (stdout and stderr), then its workers'."""
        text = self.log_path.read_text(encoding="utf-8", errors="replace")
        for path in sorted(self.log_path.parent.glob("worker-*.log")):
            text += f"\n--- {path.name}\n" + path.read_text(encoding="utf-8", errors="replace")
        return text


class SlowChatStub(ChatCompletionsStub):
    """The scripted stub answering each request after ``delay`` seconds, and the report
    writer's after ``writer_delay`` (a run that lasts long enough to close the page, or press
    Stop, in the middle of any stage: the writing stage is a few calls, and a loaded machine
    shows it to the browser late)."""

    def __init__(self, delay: float, writer_delay: float | None = None) -> None:
        super().__init__(ManagerScript(), RoleScript())
        self.delay = delay
        self.writer_delay = delay if writer_delay is None else writer_delay

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        writer = request_role(self.roles, body).startswith("writer.")
        time.sleep(self.writer_delay if writer else self.delay)
        return super().complete(body)


@pytest.fixture(scope="session")
def chromium() -> Path:
    """Debian's Chromium binary, or skip."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is absent (install Debian's chromium: make browser)")
    return CHROMIUM


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """``tests/e2e/artifacts`` (git-ignored): screenshots of the browser tests."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def app_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory with the tiny corpus imported (``deepcritical corpus add``)."""
    root = tmp_path_factory.mktemp("corpus")
    data_dir = root / "data"
    corpus_file = write_corpus(root / "corpus.jsonl")
    add = subprocess.run(
        [*cli_command(), "--data-dir", str(data_dir), "corpus", "add", str(corpus_file)],
        env=server_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert add.returncode == 0, add.stderr[-2000:]
    return data_dir


@contextmanager
def running_server(
    data_dir: Path,
    root: Path,
    concurrency: int,
    *,
    stub: ChatCompletionsStub | None = None,
    workers: int = 0,
    **settings: str,
) -> Iterator[AppServer]:
    """``deepcritical serve`` on 127.0.0.1 (free port) over a copy of ``data_dir``, its model
    the scripted Chat Completions stub (never "sufficient": runs stop at max rounds; default
    a fresh one); ``settings`` are more ``DEEPCRITICAL_<NAME>`` variables
    (``ui_auth="alice:pw"``, ``jobs="1"``); ``workers`` ``deepcritical worker`` processes
    with the server's environment and data directory (for jobs mode)."""
    own_data = root / "data"
    shutil.copytree(data_dir, own_data)
    stub = stub or ChatCompletionsStub(ManagerScript(), RoleScript())
    port = free_port()
    log_path = root / "server.log"
    env = server_env(
        llm=f"openai-compatible:scripted@{stub.base_url}",
        sources='["local"]',
        max_rounds="2",
        results_per_query="3",
        llm_retries="0",
        llm_timeout_seconds="30",
        **settings,
    )
    started: list[subprocess.Popen[bytes]] = []
    with stub, log_path.open("wb") as log:
        for n in range(1, workers + 1):
            command = [*cli_command(), "--data-dir", str(own_data), "worker"]
            with (root / f"worker-{n}.log").open("wb") as worker_log:  # the child keeps a copy
                worker = subprocess.Popen(
                    [*command, "--worker-id", f"e2e-w{n}"],
                    env=env,
                    stdout=worker_log,
                    stderr=subprocess.STDOUT,
                    cwd=root,
                )
            started.append(worker)
        process = subprocess.Popen(
            [
                *cli_command(),
                "--data-dir",
                str(own_data),
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--concurrency",
                str(concurrency),
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=root,
        )
        server = AppServer(f"http://127.0.0.1:{port}", log_path, own_data, stub, process, started)
        try:
            _wait_until_up(server)
            yield server
        finally:
            for proc in [process, *started]:
                proc.terminate()
            for proc in [process, *started]:
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)


@pytest.fixture(scope="session")
def app_server(app_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """The app server shared by the e2e tests (3 runs at once)."""
    with running_server(app_data, tmp_path_factory.mktemp("app"), concurrency=3) as server:
        yield server


@pytest.fixture(scope="module")
def single_run_server(
    app_data: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AppServer]:
    """An app server running one research at a time (the queue test)."""
    with running_server(app_data, tmp_path_factory.mktemp("app1"), concurrency=1) as server:
        yield server


@pytest.fixture(scope="module")
def jobs_server(app_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """An app server in jobs mode (``DEEPCRITICAL_JOBS=1``, the embedded SQLite job database)
    with one worker process, whose scripted model answers each call after 0.6 s."""
    with running_server(
        app_data,
        tmp_path_factory.mktemp("app-jobs"),
        concurrency=2,
        stub=SlowChatStub(0.6),
        workers=1,
        jobs="1",
    ) as server:
        yield server


def _wait_until_up(server: AppServer) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            pytest.fail(f"the app server exited ({server.process.returncode}):\n{server.log()}")
        try:
            if httpx.get(server.url + "/", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    pytest.fail(f"the app server did not answer within {SERVER_START_TIMEOUT:g} s:\n{server.log()}")


def _owner(store: Any, run_id: str) -> str | None:
    """The owner of the stored run ``run_id`` (a browser's runs are ``anon:<id>``'s, which the
    test does not know)."""
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from deepcritical.state.schema import RunRow

    with Session(store.engine) as session:
        owner: str | None = session.scalar(select(RunRow.owner).where(RunRow.id == run_id))
    return owner


def stored_run(data_dir: Path, run_id: str) -> Any:
    """The stored run ``run_id`` of whichever owner, read as the operator does; ``None`` when
    there is none."""
    from deepcritical.config import Settings
    from deepcritical.state import RunStore

    store = RunStore.open(Settings(data_dir=data_dir, _env_file=None))
    try:
        return store.get_run(run_id, owner=_owner(store, run_id))
    finally:
        store.close()


def stored_follow_ups(data_dir: Path, run_id: str) -> tuple[Any, list[Any]]:
    """The stored result of the run ``run_id`` (of whichever owner) and the follow-up
    questions kept with it, in the order asked."""
    from deepcritical.config import Settings
    from deepcritical.state import RunStore

    store = RunStore.open(Settings(data_dir=data_dir, _env_file=None))
    try:
        owner = _owner(store, run_id)
        return store.result(run_id, owner=owner), store.follow_ups(run_id, owner=owner)
    finally:
        store.close()


@pytest.fixture(scope="module")
def slow_server(app_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """An app server (runs in process) whose scripted model answers each call after 0.5 s,
    and the report writer's after 2 s: a run lasts long enough to be stopped in each of its
    stages, writing the report included. Its call cache is off (a TTL of 0 s): a run of a
    question asked before would replay the model's answers at once, and finish before Stop."""
    with running_server(
        app_data,
        tmp_path_factory.mktemp("app-slow"),
        concurrency=2,
        stub=SlowChatStub(0.5, writer_delay=2.0),
        cache_ttl_seconds="0",
    ) as server:
        yield server
