"""Runs as durable jobs (``deepcritical.jobs``, DBOS) with real servers on 127.0.0.1: a
PostgreSQL server (the shared run database and DBOS's system database), the stub of the
search APIs, and two ``deepcritical worker`` processes (``w1``, ``w2``, concurrency 2 each).

The tests share the servers and run in order:

- 10 submitted runs are spread over both workers and all complete; a follower that stops and
  re-attaches at its last event sees every event of the log exactly once, in order; ``runs
  follow`` writes the finished run's report;
- ``runs cancel`` stops a running job within 5 s;
- a worker killed with SIGKILL mid-run: its run is recovered by the other worker once its
  heartbeat is stale (the heartbeat is aged here instead of waiting 60 s), or at once when
  the worker restarts with the same ``--worker-id``, and completes with every saved source kept
  once and no search request the stub answered repeated;
- the embedded default: one worker on the SQLite run database (no server) runs a job.
"""

from __future__ import annotations

import asyncio
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
from sqlalchemy import create_engine, select, text

from deepcritical.config import Settings
from deepcritical.jobs import follow_run, submit_run
from deepcritical.state import RunStore
from deepcritical.state.event_log import LoggedEvent
from deepcritical.state.run_store import STALE_AFTER_SECONDS
from deepcritical.state.schema import SourceRow, aware
from deepcritical.testing.api_stub import RequestRecord, StubAPI, StubData
from tests.integration.test_cli_research import cli_command, run_cli, user_env
from tests.integration.test_state_crash_resume import query_of
from tests.state.postgres_server import postgres_bin, postgres_server

pytestmark = pytest.mark.slow

SOURCES = ["pubmed", "europepmc"]
QUESTIONS = [
    "Does MEK inhibition improve survival in BRAF-mutant melanoma?",
    "Does metformin reduce cancer incidence in diabetes?",
    "Is statin therapy associated with lower dementia risk?",
    "Does aspirin prevent colorectal cancer?",
    "Does vitamin D supplementation reduce fractures?",
]
CANCEL_QUESTION = "Does metformin lower the incidence of cancer in type 2 diabetes?"
"""Asked by no other test: its searches are never in the cluster's call cache, so they wait
for the slow stub (a cached answer would let the run finish before it is cancelled)."""
FINAL = {"completed", "max_iterations", "failed", "cancelled", "time_budget"}
T = TypeVar("T")


@dataclass
class Cluster:
    """The servers of the module: database URL, stub, data directory and workers."""

    url: str
    stub: StubAPI
    data_dir: Path
    root: Path
    env: dict[str, str]
    workers: dict[str, subprocess.Popen[str]] = field(default_factory=dict)

    def settings(self, **overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "data_dir": self.data_dir,
            "database_url": self.url,
            "llm": "none",
            "sources": SOURCES,
            "max_rounds": 1,
            "max_sources": 40,
            "max_full_texts": 0,
            "http_timeout_seconds": 120,
            "source_base_urls": {
                "pubmed": self.stub.eutils_url,
                "europepmc": self.stub.europepmc_url,
            },
        }
        values.update(overrides)
        return Settings(**values)

    def start_worker(self, name: str) -> None:
        with (self.root / f"{name}.log").open("a") as log:  # the child keeps its own copy
            self.workers[name] = subprocess.Popen(
                [*cli_command(), "--data-dir", str(self.data_dir), "worker", "--concurrency",
                 "2", "--worker-id", name],
                cwd=self.root, env=self.env, stdout=log, stderr=subprocess.STDOUT, text=True,
            )  # fmt: skip

    def alive(self) -> set[str]:
        return {name for name, proc in self.workers.items() if proc.poll() is None}

    def log_of(self, name: str) -> str:
        return (self.root / f"{name}.log").read_text(errors="replace")[-3000:]

    def store(self) -> RunStore:
        return RunStore.open_url(self.url)


def wait_for(condition: Callable[[], T | None], what: str, cluster: Cluster, limit: float) -> T:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    logs = "\n".join(f"--- {n}\n{cluster.log_of(n)}" for n in cluster.workers)
    pytest.fail(f"timed out after {limit:.0f} s waiting for {what}\n{logs}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, api_fixtures: Path) -> Iterator[Cluster]:
    if postgres_bin() is None:
        pytest.skip("PostgreSQL binaries absent (apt-get install postgresql)")
    root = tmp_path_factory.mktemp("jobs")
    with postgres_server() as server, StubAPI(StubData(api_fixtures)) as stub:
        name = f"t_{uuid.uuid4().hex[:12]}"
        engine = create_engine(server, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        engine.dispose()
        url = server.rsplit("/", 1)[0] + f"/{name}"
        env = user_env()
        env["DEEPCRITICAL_DATABASE_URL"] = url
        made = Cluster(url=url, stub=stub, data_dir=root / "data", root=root, env=env)
        try:
            for worker in ("w1", "w2"):
                made.start_worker(worker)
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


def follow_in_two_parts(run_id: str, settings: Settings, first: int) -> list[LoggedEvent]:
    """Follow the run, stop after ``first`` events, then re-attach after the last seen."""

    async def part(after: int, limit: int | None) -> list[LoggedEvent]:
        got: list[LoggedEvent] = []
        stream = follow_run(run_id, settings, after_seq=after)
        try:
            async for logged in stream:
                got.append(logged)
                if limit is not None and len(got) >= limit:
                    break
        finally:
            await stream.aclose()  # type: ignore[attr-defined]
        return got

    head = asyncio.run(part(0, first))
    tail = asyncio.run(part(head[-1].seq if head else 0, None))
    return head + tail


def test_ten_runs_spread_over_both_workers_and_a_follower_reattaches(
    cluster: Cluster, tmp_path: Path
) -> None:
    settings = cluster.settings()
    run_ids = [submit_run(QUESTIONS[i % len(QUESTIONS)], settings) for i in range(10)]
    followed = follow_in_two_parts(run_ids[0], settings, first=3)
    store = cluster.store()
    try:

        def all_final() -> list[Any] | None:
            records = [store.require_run(r) for r in run_ids]
            return records if all(r.status in FINAL for r in records) else None

        records = wait_for(all_final, "10 runs to finish", cluster, 150)
        assert {r.status for r in records} <= {"completed", "max_iterations"}, [
            (r.status, r.error) for r in records
        ]
        workers = {r.worker for r in records}
        assert workers == {"w1", "w2"}, [r.worker for r in records]
        assert all(r.attempts == 1 for r in records)
        logged = store.events(run_ids[0])
    finally:
        store.close()
    seqs = [e.seq for e in followed]
    assert seqs == list(range(1, len(logged) + 1)), seqs
    assert [e.event for e in followed] == [e.event for e in logged]
    assert followed[0].event.type == "started"
    assert followed[-1].event.type == "done"
    # `runs follow` of a finished run shows its log and writes the report files
    out = tmp_path / "followed.md"
    shown = run_cli(
        "--data-dir", cluster.data_dir, "runs", "follow", run_ids[0][:10], "--out", out,
        cwd=tmp_path, launcher=("env", f"DEEPCRITICAL_DATABASE_URL={cluster.url}"),
    )  # fmt: skip
    assert shown.returncode == 0, shown.describe()
    assert "started" in shown.stderr
    assert out.read_text(encoding="utf-8").startswith("# ")
    assert json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))["evidence"]


def test_cancel_stops_a_running_job_within_five_seconds(cluster: Cluster, tmp_path: Path) -> None:
    # a slow server (5 s an answer): the run is still searching long after `runs cancel` has
    # started and exited, even on a loaded machine where the command takes seconds to start
    cluster.stub.latency_seconds = 5.0
    try:
        submitted = run_cli(
            "--data-dir", cluster.data_dir, "runs", "submit", CANCEL_QUESTION, "--llm", "none",
            "--sources", ",".join(SOURCES), "--max-rounds", "2",
            cwd=tmp_path, launcher=("env", f"DEEPCRITICAL_DATABASE_URL={cluster.url}",
                                    "DEEPCRITICAL_SOURCE_BASE_URLS=" + json.dumps(
                                        {"pubmed": cluster.stub.eutils_url,
                                         "europepmc": cluster.stub.europepmc_url})),
        )  # fmt: skip
        assert submitted.returncode == 0, submitted.describe()
        run_id = submitted.stdout.strip()
        assert len(run_id) == 32, submitted.describe()
        store = cluster.store()
        try:
            wait_for(
                lambda: store.require_run(run_id).stage == "searching",
                "the job to be searching",
                cluster,
                90,
            )
            started = time.monotonic()
            cancelled = run_cli(
                "--data-dir", cluster.data_dir, "runs", "cancel", run_id,
                cwd=tmp_path, launcher=("env", f"DEEPCRITICAL_DATABASE_URL={cluster.url}"),
            )  # fmt: skip
            assert cancelled.returncode == 0, cancelled.describe()
            asked = started + cancelled.seconds  # the command has set the flag when it exits
            stopped = wait_for(
                lambda: store.require_run(run_id).status in FINAL and time.monotonic(),
                "the run to stop",
                cluster,
                60,
            )
            final = store.require_run(run_id)
            assert final.status == "cancelled", (final.status, final.stage, final.error)
            assert stopped - asked < 5.0, (
                f"the run stopped {stopped - asked:.1f} s after it was cancelled"
            )
            last = store.events(run_id)[-1].event
            assert last.type == "error"
            assert "cancelled" in last.message
        finally:
            store.close()
    finally:
        cluster.stub.latency_seconds = 0.0


def _sources(store: RunStore, run_id: str) -> dict[tuple[str, str], tuple[int, str]]:
    def read(session: Any) -> dict[tuple[str, str], tuple[int, str]]:
        rows = session.scalars(select(SourceRow).where(SourceRow.run_id == run_id)).all()
        return {(r.source_type, r.external_id): (r.number, r.citation_id) for r in rows}

    return store.transact(read)


def _age_heartbeat(store: RunStore, run_id: str, seconds: float) -> None:
    def work(session: Any) -> None:
        row = store.require_row(session, run_id)
        row.updated_at = aware(row.updated_at) - timedelta(seconds=seconds)

    store.transact(work)


@dataclass
class Killed:
    """A run whose worker was killed with SIGKILL in round 2: the worker, the sources saved
    before, the (route, query) requests the stub had answered, the request log's length."""

    worker: str
    before: dict[tuple[str, str], tuple[int, str]]
    answered: set[tuple[str, str]]
    log_mark: int


def kill_worker_mid_run(cluster: Cluster, store: RunStore, run_id: str) -> Killed:
    """Wait until the run's round 1 is checkpointed, hold round 2's searches at the stub,
    SIGKILL the run's worker, then release the stub."""

    def round_one() -> tuple[str, list[str]] | None:
        record = store.require_run(run_id)
        if record.worker is None or not record.iterations:
            return None
        return record.worker, list(record.iterations[0]["queries"])

    victim, first_queries = wait_for(round_one, "round 1 is checkpointed", cluster, 90)
    round_one_queries = {q.strip() for q in first_queries}

    def later_query(record: RequestRecord) -> bool:
        query = query_of(record)
        return query is not None and query.strip() not in round_one_queries

    held_before = cluster.stub.held
    cluster.stub.hold(later_query)
    try:

        def round_two() -> bool:
            status = store.require_run(run_id).status
            assert status not in FINAL, f"the run ended ({status}) before round 2 searched"
            return cluster.stub.held > held_before

        wait_for(round_two, "round 2 to search", cluster, 90)
        time.sleep(0.5)
        proc = cluster.workers[victim]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert store.require_run(run_id).status == "in_progress"
        before = _sources(store, run_id)
        assert before, "round 1 saved no source before the kill"
        answered = {(r.route, q) for r in cluster.stub.requests if r.status and (q := query_of(r))}
        return Killed(victim, before, answered, len(cluster.stub.requests))
    finally:
        cluster.stub.release()


def check_continued(cluster: Cluster, store: RunStore, run_id: str, killed: Killed) -> Any:
    """Wait for the run to finish; check its report, sources and searches; its record."""

    def finished() -> Any:
        record = store.require_run(run_id)
        return record if record.status in FINAL else None

    final = wait_for(finished, "the continued run to finish", cluster, 120)
    assert final.status in {"completed", "max_iterations"}, (final.status, final.error)
    assert final.attempts == 2
    assert final.report_markdown
    after = _sources(store, run_id)
    for key, value in killed.before.items():
        assert after.get(key) == value, f"source {key} changed or was lost"
    numbers = [n for n, _ in after.values()]
    assert sorted(numbers) == list(range(1, len(numbers) + 1))
    later = cluster.stub.requests[killed.log_mark :]
    repeated = [
        (r.route, q)
        for r in later
        if (q := query_of(r)) is not None and (r.route, q) in killed.answered
    ]
    assert not repeated, f"the continued run repeated searches: {repeated[:5]}"
    assert later, "the continued run made no new search"
    return final


def test_sigkilled_workers_run_is_recovered_by_the_other(cluster: Cluster) -> None:
    run_id = submit_run(QUESTIONS[0], cluster.settings(max_rounds=2, max_sources=500))
    store = cluster.store()
    try:
        killed = kill_worker_mid_run(cluster, store, run_id)
        # 60 s without a heartbeat is how a dead worker is told from a slow one: age it
        # instead of waiting; the survivor's next recovery pass (every 5 s) takes the job
        _age_heartbeat(store, run_id, STALE_AFTER_SECONDS + 1)
        final = check_continued(cluster, store, run_id, killed)
        assert final.worker == ("w2" if killed.worker == "w1" else "w1")
    finally:
        store.close()
        cluster.start_worker("w2" if "w2" not in cluster.alive() else "w1")


def test_sigkilled_workers_run_continues_at_once_when_it_restarts_with_its_id(
    cluster: Cluster,
) -> None:
    assert cluster.alive() == {"w1", "w2"}
    # another wording than the first kill's: its round 2 searches are not in the call cache
    question = "Does MEK inhibitor therapy prolong survival in BRAF V600-mutant melanoma?"
    run_id = submit_run(question, cluster.settings(max_rounds=2, max_sources=500))
    store = cluster.store()
    try:
        killed = kill_worker_mid_run(cluster, store, run_id)
        restarted = time.monotonic()
        # the same --worker-id: it gives up the run's heartbeat, DBOS recovers its job at launch
        cluster.start_worker(killed.worker)
        final = check_continued(cluster, store, run_id, killed)
        # DBOS re-enqueues the recovered job: the first free worker takes it, at once, not
        # after the 60 s a dead worker's heartbeat needs to go stale
        assert final.worker in {"w1", "w2"}
        assert time.monotonic() - restarted < STALE_AFTER_SECONDS
    finally:
        store.close()


def test_embedded_default_runs_a_job_on_sqlite(cluster: Cluster, tmp_path: Path) -> None:
    data_dir = tmp_path / "embedded"
    env = {k: v for k, v in cluster.env.items() if k != "DEEPCRITICAL_DATABASE_URL"}
    with (tmp_path / "solo.log").open("w") as log:
        proc = subprocess.Popen(
            [*cli_command(), "--data-dir", str(data_dir), "worker", "--worker-id", "solo"],
            cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
    try:
        settings = cluster.settings(data_dir=data_dir, database_url=None)
        run_id = submit_run(QUESTIONS[3], settings)
        store = RunStore.open(settings)
        try:
            deadline = time.monotonic() + 90
            while store.require_run(run_id).status not in FINAL and time.monotonic() < deadline:
                time.sleep(0.2)
            record = store.require_run(run_id)
            logged = store.events(run_id)
        finally:
            store.close()
        assert record.status in {"completed", "max_iterations"}, (
            record.status,
            (tmp_path / "solo.log").read_text(errors="replace")[-2000:],
        )
        assert record.worker == "solo"
        assert logged[-1].event.type == "done"
        assert (data_dir / "deepcritical.db").is_file()
        assert (data_dir / "deepcritical-jobs.db").is_file()  # DBOS's tables, beside it
    finally:
        proc.terminate()
        proc.wait(timeout=30)
