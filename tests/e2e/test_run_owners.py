"""Users and ownership against the real app (issue 13, item 2): ``deepcritical serve`` on
127.0.0.1 with password sign-in for alice and bob, called as an attacker would, straight
through ``/gradio_api/queue/join`` with each private handler's ``fn_index`` read from the
app's ``/config``; the API through ``gradio_client`` and the MCP tool through the ``mcp``
client; the run database and ``deepcritical runs`` on the server's data directory.

- without a login, nothing answers (config, queue, and the MCP tool records no run);
- alice's research run is hers: bob can neither list, open, export nor resume it, by id or
  by prefix, and bob's API run is not in alice's history;
- the CLI is the local user: it sees neither, and its own runs still list, show and export;
- without sign-in (the shared e2e server), each visitor (a client keeping its cookies) sees
  only its own runs, and the CLI's are no visitor's; with ``DEEPCRITICAL_SHARED_HISTORY=1``
  the start-up warning is logged and every visitor sees the shared history.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from gradio_client import Client
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from sqlalchemy import select
from sqlalchemy.orm import Session

from deepcritical.config import Settings
from deepcritical.state import RunStore
from deepcritical.state.schema import RunRow
from deepcritical.ui.launch import SHARED_HISTORY_WARNING
from deepcritical.ui.mcp_tool import parse_output
from tests.e2e.conftest import AppServer, cli_command, running_server, server_env
from tests.unit.ui_fixtures import OPEN_REPORT, OPEN_STATUS

pytestmark = pytest.mark.slow

ACCOUNTS = {"alice": "pw-alice-4f1e", "bob": "pw-bob-9c2d"}
QUESTION = "Does metformin lower cancer incidence in type 2 diabetes?"
BOB_QUESTION = "Do statins reduce dementia in older adults?"
TIMEOUT = 240.0  # seconds for one handler call (a research run with the scripted model)


@pytest.fixture(scope="module")
def auth_server(app_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """The app with password sign-in for alice and bob."""
    accounts = ",".join(f"{user}:{pw}" for user, pw in ACCOUNTS.items())
    root = tmp_path_factory.mktemp("auth-app")
    with running_server(app_data, root, concurrency=2, ui_auth=accounts) as server:
        yield server


@contextmanager
def login(server: AppServer, user: str) -> Iterator[httpx.Client]:
    """An HTTP client holding ``user``'s login cookie (closed after)."""
    with httpx.Client(base_url=server.url, timeout=30.0) as client:
        answer = client.post("/login", data={"username": user, "password": ACCOUNTS[user]})
        assert answer.status_code == 200, answer.text
        yield client


def fn_index(client: httpx.Client, api_name: str) -> int:
    """The index of the handler named ``api_name``, read from ``/config`` as a visitor can."""
    config = client.get("/config")
    assert config.status_code == 200, config.text
    found = [d["id"] for d in config.json()["dependencies"] if d.get("api_name") == api_name]
    assert len(found) == 1, api_name
    return int(found[0])


def call(client: httpx.Client, api_name: str, *data: Any) -> tuple[bool, Any]:
    """Call the handler ``api_name`` through ``/gradio_api/queue/join`` by its ``fn_index``
    and read its events until it completes: ``(success, output data or error)``."""
    session = uuid.uuid4().hex
    joined = client.post(
        "/gradio_api/queue/join",
        json={
            "data": list(data),
            "fn_index": fn_index(client, api_name),
            "session_hash": session,
            "event_data": None,
            "trigger_id": None,
        },
    )
    assert joined.status_code == 200, joined.text
    with client.stream(
        "GET", "/gradio_api/queue/data", params={"session_hash": session}, timeout=TIMEOUT
    ) as stream:
        for line in stream.iter_lines():
            if not line.startswith("data:"):
                continue
            message = json.loads(line[5:])
            if message.get("msg") == "process_completed":
                output = message.get("output") or {}
                if message.get("success"):
                    return True, output.get("data")
                return False, output.get("error")
    pytest.fail(f"{api_name} never completed")


def download_urls(links: Any) -> list[str]:
    """The app-relative URLs of the Downloads (or History export) links ``links`` (HTML)."""
    return ["/" + href for href in re.findall(r'href="(dc/download/[^"]+)"', str(links))]


def short_ids(outputs: list[Any]) -> list[str]:
    """The short run ids (column "Run") of the History table ``refresh`` returned."""
    return [row[2] for row in outputs[0]["data"]]


def stored_runs(server: AppServer, owner: str | None) -> list[str]:
    """Ids of ``owner``'s runs in the server's run database, newest first."""
    store = RunStore.open(Settings(data_dir=server.data_dir, _env_file=None))
    try:
        return [r.id for r in store.list_runs(owner=owner)]
    finally:
        store.close()


def run_cli(server: AppServer, *args: str) -> subprocess.CompletedProcess[str]:
    """``deepcritical --data-dir DATA runs ARGS`` in a wide terminal (rich wraps at its
    width)."""
    return subprocess.run(
        [*cli_command(), "--data-dir", str(server.data_dir), "runs", *args],
        env={**server_env(), "COLUMNS": "200", "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def research_as(client: httpx.Client, question: str) -> list[Any]:
    """A research run through the page's private ``run`` handler (the server's model, the
    local corpus, one round): its final outputs."""
    llm = next(
        c["props"]["value"]
        for c in client.get("/config").json()["components"]
        if c.get("props", {}).get("elem_id") == "dc-llm"
    )
    ok, outputs = call(
        client, "run", question, "", llm, "", ["local"], 1, 10, "iterative", False, False
    )
    assert ok, outputs
    assert isinstance(outputs, list)
    return outputs


async def _mcp_call(url: str) -> Any:
    async with (
        streamable_http_client(url + "/gradio_api/mcp/") as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await session.call_tool("deep_research", {"question": QUESTION})


def test_without_a_login_nothing_answers(auth_server: AppServer) -> None:
    with httpx.Client(base_url=auth_server.url, timeout=30.0) as anonymous:
        assert anonymous.get("/config").status_code == 401
        joined = anonymous.post(
            "/gradio_api/queue/join",
            json={"data": [], "fn_index": 1, "session_hash": uuid.uuid4().hex},
        )
        assert joined.status_code == 401
        wrong = anonymous.post("/login", data={"username": "alice", "password": "x"})
        assert wrong.status_code == 400
    before = stored_runs(auth_server, None)
    result = asyncio.run(_mcp_call(auth_server.url))  # the MCP route itself has no login
    texts = " ".join(getattr(c, "text", "") for c in result.content)
    assert result.isError, texts
    assert stored_runs(auth_server, None) == before  # no run was made for nobody
    assert ACCOUNTS["alice"] not in auth_server.log()
    assert ACCOUNTS["bob"] not in auth_server.log()
    assert SHARED_HISTORY_WARNING not in auth_server.log()


def test_a_users_runs_are_theirs_alone(auth_server: AppServer) -> None:
    with login(auth_server, "alice") as alice, login(auth_server, "bob") as bob:
        check_each_user_sees_their_own(auth_server, alice, bob)


def check_each_user_sees_their_own(
    auth_server: AppServer, alice: httpx.Client, bob: httpx.Client
) -> None:
    outputs = research_as(alice, QUESTION)
    assert "Report ready" in str(outputs[1]), outputs[1]
    mine = stored_runs(auth_server, "user:alice")
    assert len(mine) == 1
    run_id = mine[0]
    assert stored_runs(auth_server, None) == []  # not the local user's

    ok, rows = call(alice, "refresh")
    assert ok
    assert short_ids(rows) == [run_id[:8]]
    ok, opened = call(alice, "open_run", run_id)
    assert ok
    status, report = opened[OPEN_STATUS], opened[OPEN_REPORT]
    assert "completed" in status or "max_iterations" in status
    assert "metformin" in report.lower()
    ok, exported = call(alice, "export", run_id[:8])
    assert ok
    export_url = download_urls(exported[0])[0]
    assert export_url.endswith(f"run-{run_id}.json")
    assert alice.get(export_url).json()["run"]["id"] == run_id
    # the run's download files and its export are alice's: her URLs are 404 to bob
    urls = [*download_urls(outputs[5]), export_url]
    assert len(urls) == 7
    for url in urls:
        assert alice.get(url).status_code == 200, url
        refused = bob.get(url)
        assert refused.status_code == 404, url
        assert "metformin" not in refused.text.lower()
    with httpx.Client(base_url=auth_server.url, timeout=30) as anonymous:
        assert anonymous.get(export_url).status_code == 404

    ok, rows = call(bob, "refresh")
    assert ok
    assert run_id not in json.dumps(rows)
    assert "metformin" not in json.dumps(rows).lower()
    for asked in (run_id, run_id[:8]):
        ok, opened = call(bob, "open_run", asked)
        assert ok
        status, report = opened[OPEN_STATUS], opened[OPEN_REPORT]
        assert "no stored run" in status
        assert report == ""
        ok, error = call(bob, "export", asked)
        assert ok
        assert "no stored run" in str(error)
        assert download_urls(error[0]) == []
        ok, outputs = call(bob, "resume_run", asked)
        assert ok
        assert "no run with id" in str(outputs[1])
        assert "metformin" not in json.dumps(outputs).lower()
    store = RunStore.open(Settings(data_dir=auth_server.data_dir, _env_file=None))
    try:
        record = store.get_run(run_id, owner="user:alice")
    finally:
        store.close()
    assert record is not None
    assert record.attempts == 1  # bob's resumes never touched it

    # bob's run through the API (gradio_client with bob's login) is bob's
    api = Client(auth_server.url, auth=("bob", ACCOUNTS["bob"]), verbose=False)
    out = parse_output(api.predict(BOB_QUESTION, None, 1, api_name="/deep_research"))
    assert out["status"] in {"completed", "max_iterations_reached"}, out.get("error")
    assert stored_runs(auth_server, "user:bob") == [out["trace_id"]]
    ok, rows = call(alice, "refresh")
    assert short_ids(rows) == [run_id[:8]]
    ok, rows = call(bob, "refresh")
    assert short_ids(rows) == [out["trace_id"][:8]]


def test_the_cli_is_the_local_user(auth_server: AppServer) -> None:
    store = RunStore.open(Settings(data_dir=auth_server.data_dir, _env_file=None))
    try:
        local = store.create_run("A local question on aspirin", {"llm": "none"})
        theirs = store.create_run("Carol's question", {"llm": "none"}, owner="user:carol")
    finally:
        store.close()
    listed = run_cli(auth_server, "list")
    assert listed.returncode == 0, listed.stderr
    assert local in listed.stdout
    assert theirs not in listed.stdout
    shown = run_cli(auth_server, "show", local[:8])
    assert shown.returncode == 0, shown.stderr
    assert "A local question on aspirin" in shown.stdout
    exported = run_cli(auth_server, "export", local)
    assert exported.returncode == 0, exported.stderr
    assert json.loads(exported.stdout)["run"]["owner"] is None
    for command in ("show", "export", "resume"):
        refused = run_cli(auth_server, command, theirs)
        assert refused.returncode == 2, (command, refused.stdout, refused.stderr)
        assert "no run with id" in refused.stdout + refused.stderr
        assert "Carol" not in refused.stdout + refused.stderr
    # the operator names the owner to reach a web user's run
    operator = run_cli(auth_server, "list", "--owner", "user:carol")
    assert operator.returncode == 0, operator.stderr
    assert theirs in operator.stdout
    assert local not in operator.stdout
    carol = run_cli(auth_server, "export", theirs, "--owner", "user:carol")
    assert carol.returncode == 0, carol.stderr
    assert json.loads(carol.stdout)["run"]["owner"] == "user:carol"


@pytest.fixture(scope="module")
def shared_server(app_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """The app without sign-in whose history is shared on purpose
    (``DEEPCRITICAL_SHARED_HISTORY=1``, a single-user install)."""
    root = tmp_path_factory.mktemp("shared-app")
    with running_server(app_data, root, concurrency=1, shared_history="1") as server:
        yield server


def test_without_sign_in_each_browser_sees_only_its_own_runs(app_server: AppServer) -> None:
    """The default: no warning; two visitors (each an HTTP client keeping its cookies, as a
    browser does) each see only their own run, by list, id or prefix, through every private
    handler; the CLI's runs are no visitor's; a forged cookie is a new visitor."""
    assert SHARED_HISTORY_WARNING not in app_server.log()
    store = RunStore.open(Settings(data_dir=app_server.data_dir, _env_file=None))
    try:
        local = store.create_run("A question of the command line", {"llm": "none"})
    finally:
        store.close()
    with (
        httpx.Client(base_url=app_server.url, timeout=30.0) as a,
        httpx.Client(base_url=app_server.url, timeout=30.0) as b,
    ):
        outputs = research_as(a, QUESTION)
        assert "Report ready" in str(outputs[1]), outputs[1]
        ok, rows = call(a, "refresh")
        assert ok
        mine = short_ids(rows)
        assert len(mine) == 1
        store = RunStore.open(Settings(data_dir=app_server.data_dir, _env_file=None))
        try:
            with Session(store.engine) as session:
                run_id, owner = session.execute(
                    select(RunRow.id, RunRow.owner).where(RunRow.id.startswith(mine[0]))
                ).one()
        finally:
            store.close()
        assert owner is not None
        assert owner.startswith("anon:")  # the visitor's, not the local user's
        ok, opened = call(a, "open_run", run_id)
        assert ok
        assert "metformin" in opened[OPEN_REPORT].lower()
        # the run's download files (as the run and as opened from History) and its export
        # are a's: 404 to b
        ok, exported = call(a, "export", run_id)
        assert ok
        urls = [*download_urls(outputs[5]), *download_urls(opened[5])]
        urls += download_urls(exported[0])
        assert len(urls) == 13
        for url in urls:
            assert a.get(url).status_code == 200, url
            assert b.get(url).status_code == 404, url

        ok, rows = call(b, "refresh")
        assert ok
        assert short_ids(rows) == []
        for asked in (run_id, run_id[:8], local, local[:8]):
            ok, opened = call(b, "open_run", asked)
            assert ok
            assert "no stored run" in opened[OPEN_STATUS]
            assert opened[OPEN_REPORT] == ""
            ok, error = call(b, "export", asked)
            assert ok
            assert "no stored run" in str(error)
            assert download_urls(error[0]) == []
            ok, outputs = call(b, "resume_run", asked)
            assert ok
            assert "no run with id" in str(outputs[1])
            assert "metformin" not in json.dumps(outputs).lower()
        ok, rows = call(a, "refresh")
        assert local[:8] not in short_ids(rows)  # the command line's run is no visitor's
    with httpx.Client(
        base_url=app_server.url, timeout=30.0, cookies={"dc_visitor": f"{owner[5:]}.forged"}
    ) as forged:
        ok, rows = call(forged, "refresh")
        assert ok
        assert short_ids(rows) == []


def test_a_shared_history_is_shared_with_a_warning(shared_server: AppServer) -> None:
    assert SHARED_HISTORY_WARNING in shared_server.log()
    store = RunStore.open(Settings(data_dir=shared_server.data_dir, _env_file=None))
    try:
        shared = store.create_run("A question every visitor sees", {"llm": "none"})
    finally:
        store.close()
    with httpx.Client(base_url=shared_server.url, timeout=30.0) as visitor:
        ok, rows = call(visitor, "refresh")
        assert ok
        assert shared[:8] in short_ids(rows)
        ok, opened = call(visitor, "open_run", shared)
    assert ok
    assert "pending" in opened[OPEN_STATUS]
