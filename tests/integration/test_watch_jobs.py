"""Scheduled living-review updates in the job workers (issue 33, item 4), with real servers
on 127.0.0.1: PostgreSQL (the run database and DBOS's), the stub of the search APIs (its
PubMed growing), and two ``deepcritical worker`` processes.

- a watch due ten seconds ago (five periods of 2 s missed while no worker ran) gets one
  update when the workers start, not five; then one every 2 s for 20 s: the updates are
  numbered 1, 2, ... with contiguous windows (each starts where the last ended: no update
  ran twice or overlapped another), each started at least one period after the last ended;
- a worker killed with SIGKILL mid-update (its searches done, its re-check of retractions
  held at the stub) loses nothing: restarted with the same id, DBOS runs the update again,
  which asks the stub no search (the call cache answers) and records one update with the new
  record in its version.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
from sqlalchemy import create_engine, text, update

from deepcritical.api import research, watch_run
from deepcritical.config import Settings
from deepcritical.models import Screening, WatchUpdate, utc_now
from deepcritical.state import RunStore
from deepcritical.state.schema import WatchRow
from deepcritical.state.watch_store import WatchStore
from deepcritical.testing.api_stub import RequestRecord, StubData
from deepcritical.testing.growing_stub import GrowingStubAPI
from tests.integration.test_cli_research import cli_command, user_env
from tests.state.postgres_server import postgres_bin, postgres_server

pytestmark = pytest.mark.slow

QUESTION = "Does MEK inhibition improve survival in BRAF-mutant melanoma?"
EVERY = 2.0
T = TypeVar("T")


@dataclass
class Cluster:
    url: str
    stub: GrowingStubAPI
    root: Path
    env: dict[str, str]
    workers: dict[str, subprocess.Popen[str]] = field(default_factory=dict)

    def settings(self) -> Settings:
        return Settings(
            data_dir=self.root / "data",
            database_url=self.url,
            llm="none",
            sources=["pubmed"],
            max_rounds=1,
            max_full_texts=0,
            citation_seeds=0,
            http_timeout_seconds=120,
            source_base_urls={"pubmed": self.stub.eutils_url},
        )

    def start_worker(self, name: str) -> None:
        with (self.root / f"{name}.log").open("a") as log:
            self.workers[name] = subprocess.Popen(
                [*cli_command(), "--data-dir", str(self.root / "data"), "worker",
                 "--worker-id", name],
                cwd=self.root, env=self.env, stdout=log, stderr=subprocess.STDOUT, text=True,
            )  # fmt: skip

    def logs(self) -> str:
        return "\n".join(
            f"--- {n}\n{(self.root / f'{n}.log').read_text(errors='replace')[-3000:]}"
            for n in self.workers
        )


def wait_for(condition: Callable[[], T | None], what: str, cluster: Cluster, limit: float) -> T:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"timed out after {limit:.0f} s waiting for {what}\n{cluster.logs()}")


@pytest.fixture
def cluster(tmp_path: Path, api_fixtures: Path) -> Iterator[Cluster]:
    if postgres_bin() is None:
        pytest.skip("PostgreSQL binaries absent (apt-get install postgresql)")
    with postgres_server() as server, GrowingStubAPI(StubData(api_fixtures)) as stub:
        name = f"t_{uuid.uuid4().hex[:12]}"
        engine = create_engine(server, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        engine.dispose()
        url = server.rsplit("/", 1)[0] + f"/{name}"
        env = user_env()
        env["DEEPCRITICAL_DATABASE_URL"] = url
        env["DEEPCRITICAL_SOURCE_BASE_URLS"] = json.dumps({"pubmed": stub.eutils_url})
        made = Cluster(url=url, stub=stub, root=tmp_path, env=env)
        try:
            yield made
        finally:
            for proc in made.workers.values():
                if proc.poll() is None:
                    proc.terminate()
            for proc in made.workers.values():
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)
        assert not stub.errors, stub.errors


async def finished_run(settings: Settings) -> str:
    run_id = None
    async for event in research(QUESTION, settings):
        run_id = run_id or event.run_id
    assert run_id is not None
    return run_id


def set_watch(store: RunStore, watch_id: str, **values: Any) -> None:
    store.transact(
        lambda s: s.execute(update(WatchRow).where(WatchRow.id == watch_id).values(**values))
    )


def test_scheduled_updates_run_once_each_and_survive_a_killed_worker(cluster: Cluster) -> None:
    settings = cluster.settings()
    run_id = asyncio.run(finished_run(settings))
    store = RunStore.open(settings)
    watches = WatchStore(store)
    try:
        watch = asyncio.run(watch_run(run_id, settings, every=f"{EVERY:g}s"))
        # five periods missed while no worker ran
        set_watch(store, watch.id, next_due_at=utc_now() - timedelta(seconds=5 * EVERY))
        for name in ("w1", "w2"):
            cluster.start_worker(name)
        wait_for(lambda: watches.updates(watch.id), "the first update", cluster, 90)
        time.sleep(20)
        updates = watches.updates(watch.id)
        check_once_each(updates)
        assert 3 <= len(updates) <= 20 / EVERY + 2, [u.summary for u in updates]
        assert all(u.outcome == "nothing_new" for u in updates), [u.summary for u in updates]

        killed_update_recovered(cluster, store, watches, watch.id, len(updates))
        check_once_each(watches.updates(watch.id))
    finally:
        store.close()


def check_once_each(updates: list[WatchUpdate]) -> None:
    """Numbered 1..n, windows contiguous, each begun a period after the last ended."""
    assert [u.number for u in updates] == list(range(1, len(updates) + 1))
    for before, after in itertools.pairwise(updates):
        assert before.change is not None
        assert after.change is not None
        assert after.change.since == before.change.until, (before.number, after.number)
        gap = (after.started_at - before.finished_at).total_seconds()
        assert gap >= EVERY - 0.2, f"update {after.number} began {gap:.2f} s after the last"


def killed_update_recovered(
    cluster: Cluster, store: RunStore, watches: WatchStore, watch_id: str, done: int
) -> None:
    result = store.result(watches.require(watch_id).run_id)
    assert result is not None
    rechecked = {
        e.citation.pmid
        for e in result.evidence
        if e.citation.pmid and e.screening != Screening.OFF_TOPIC
    }

    def recheck(record: RequestRecord) -> bool:
        return record.route == "efetch" and set(record.params.get("id", "").split(",")) == (
            rechecked
        )

    cluster.stub.add_pubmed_record(
        "41000001",
        "Trametinib and dabrafenib improve overall survival in BRAF V600-mutant melanoma",
        "In this randomised trial of 700 patients with BRAF V600-mutant metastatic melanoma, "
        "MEK inhibition with trametinib plus dabrafenib improved overall survival.",
    )
    held_before = cluster.stub.held
    cluster.stub.hold(recheck)
    try:
        wait_for(lambda: cluster.stub.held > held_before, "an update's re-check", cluster, 60)
        holder = wait_for(lambda: lease_of(store, watch_id), "the update's lease", cluster, 10)
        victim = executor_of(cluster, holder)
        # no further schedule after the recovered update: its effect is checked alone
        set_watch(store, watch_id, every_seconds=3600.0)
        os.kill(cluster.workers[victim].pid, signal.SIGKILL)
        cluster.workers[victim].wait(timeout=30)
        searched = len(cluster.stub.requests_for("esearch"))
    finally:
        cluster.stub.release()
    assert len(watches.updates(watch_id)) == done  # the killed update recorded nothing
    cluster.start_worker(victim)

    def recovered() -> list[WatchUpdate] | None:
        found = watches.updates(watch_id)
        return found if len(found) > done else None

    updates = wait_for(recovered, "the recovered update", cluster, 120)
    assert len(updates) == done + 1
    last = updates[-1]
    assert last.outcome == "new_version", last.summary
    assert last.change is not None
    assert [r.identifier for r in last.change.new_included] == ["PMID 41000001"]
    assert len(cluster.stub.requests_for("esearch")) == searched, "a search was repeated"
    time.sleep(2 * EVERY)
    assert len(watches.updates(watch_id)) == done + 1  # and it ran once


def lease_of(store: RunStore, watch_id: str) -> str | None:
    def read(session: Any) -> str | None:
        row = session.get(WatchRow, watch_id)
        return None if row is None else row.lease_owner

    return store.transact(read)


def executor_of(cluster: Cluster, workflow_id: str) -> str:
    """The worker (DBOS executor) running ``workflow_id``."""
    from deepcritical.jobs.engine import open_client

    client = open_client(cluster.settings())
    try:
        found = client.list_workflows(workflow_ids=[workflow_id])
    finally:
        client.destroy()
    assert found, f"no workflow {workflow_id}"
    executor = found[0].executor_id
    assert executor in cluster.workers, executor
    return str(executor)


def test_the_embedded_default_runs_scheduled_updates_in_a_worker(
    api_fixtures: Path, tmp_path: Path
) -> None:
    """One ``deepcritical worker`` on the SQLite run database (no server) runs a watch's
    scheduled updates."""
    with GrowingStubAPI(StubData(api_fixtures)) as stub:
        env = user_env()
        env["DEEPCRITICAL_SOURCE_BASE_URLS"] = json.dumps({"pubmed": stub.eutils_url})
        cluster = Cluster(url="", stub=stub, root=tmp_path, env=env)
        settings = cluster.settings().model_copy(update={"database_url": None})
        run_id = asyncio.run(finished_run(settings))
        watch = asyncio.run(watch_run(run_id, settings, every=f"{EVERY:g}s"))
        store = RunStore.open(settings)
        try:
            cluster.start_worker("solo")

            def two() -> list[WatchUpdate] | None:
                found = WatchStore(store).updates(watch.id)
                return found if len(found) >= 2 else None

            updates = wait_for(two, "two scheduled updates", cluster, 120)
            check_once_each(updates)
            assert {u.trigger for u in updates} == {"schedule"}
        finally:
            store.close()
            for proc in cluster.workers.values():
                proc.terminate()
                proc.wait(timeout=30)
        assert not stub.errors, stub.errors
