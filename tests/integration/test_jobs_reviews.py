"""The researcher's plan review in jobs mode, with real servers on 127.0.0.1: PostgreSQL (the
run database and DBOS's system database), the stub of the search APIs and ``deepcritical
worker`` processes.

- a job submitted with ``review_plan`` stops after planning (``awaiting_review``) and waits
  in its own DBOS workflow, holding no worker slot: another job runs to its end on the
  same worker (concurrency 1) meanwhile;
- its worker is killed with SIGKILL; the plan is approved (with an edit that adds a query)
  from a new process (``deepcritical runs approve-plan ID --plan FILE``); a second worker
  (another id) recovers the dead worker's wait once the run's heartbeat is stale (aged here
  instead of waiting 60 s) and finishes the same run: the edited query searched, no search
  request repeated (the stub's request log);
- a job whose review times out (``review_timeout_action = "continue"``) goes on by itself
  with the plan as it stood, and its report says so.
"""

from __future__ import annotations

import os
import signal
import subprocess
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from sqlalchemy import create_engine, text

from deepcritical.events import PlanReadyData
from deepcritical.jobs import submit_run
from deepcritical.jobs.review_wait import review_workflow_id
from deepcritical.state import RunRecord, RunStore
from deepcritical.testing.api_stub import StubAPI, StubData
from tests.integration.test_cli_research import run_cli, user_env
from tests.integration.test_jobs import FINAL, QUESTIONS, Cluster, _age_heartbeat, wait_for
from tests.integration.test_state_crash_resume import query_of
from tests.state.postgres_server import postgres_bin, postgres_server

pytestmark = pytest.mark.slow

QUESTION = "Does metformin reduce the risk of colorectal cancer in type 2 diabetes?"
"""Asked by no other test (its searches are in no call cache)."""
EDITED_QUERY = "metformin colorectal neoplasm diabetes cohort"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, api_fixtures: Path) -> Iterator[Cluster]:
    if postgres_bin() is None:
        pytest.skip("PostgreSQL binaries absent (apt-get install postgresql)")
    root = tmp_path_factory.mktemp("jobs-reviews")
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


def start_worker(cluster: Cluster, name: str, concurrency: int = 1) -> None:
    from tests.integration.test_cli_research import cli_command

    with (cluster.root / f"{name}.log").open("a") as log:
        cluster.workers[name] = subprocess.Popen(
            [*cli_command(), "--data-dir", str(cluster.data_dir), "worker", "--concurrency",
             str(concurrency), "--worker-id", name],
            cwd=cluster.root, env=cluster.env, stdout=log, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip


def workflow_state(cluster: Cluster, workflow_id: str) -> tuple[str, str] | None:
    """(status, executor id) of a DBOS workflow, read from DBOS's own table."""
    engine = create_engine(cluster.url)
    try:
        with engine.connect() as conn:
            row = conn.execute(
                text(
                    "SELECT status, executor_id FROM dbos.workflow_status WHERE workflow_uuid = :id"
                ),
                {"id": workflow_id},
            ).one_or_none()
    finally:
        engine.dispose()
    return None if row is None else (str(row[0]), str(row[1]))


def finished(store: RunStore, run_id: str) -> RunRecord | None:
    """The run's record once it has ended, else ``None``."""
    record = store.require_run(run_id)
    return record if record.status in FINAL else None


def searched(cluster: Cluster, mark: int = 0) -> list[tuple[str, str]]:
    """The (route, query) of every search request the stub answered since ``mark``."""
    return [
        (r.route, q)
        for r in cluster.stub.requests[mark:]
        if r.status and (q := query_of(r)) is not None
    ]


def test_a_waiting_job_survives_its_worker_and_is_approved_from_a_new_process(
    cluster: Cluster, tmp_path: Path
) -> None:
    start_worker(cluster, "r1")
    settings = cluster.settings(review_plan=True, max_rounds=1)
    run_id = submit_run(QUESTION, settings)
    store = cluster.store()
    try:
        wait_for(
            lambda: store.require_run(run_id).status == "awaiting_review",
            "the job to wait for its plan review",
            cluster,
            120,
        )
        waiting = workflow_id = review_workflow_id(run_id, 1)
        state = wait_for(
            lambda: workflow_state(cluster, waiting), "the review's workflow", cluster, 30
        )
        assert state == ("PENDING", "r1"), state
        record = store.require_run(run_id)
        assert (record.stage, record.worker) == ("review_plan", "r1")
        asked = [q for _, q in searched(cluster)]
        assert not any("colorectal" in q for q in asked), "searched before the plan review"

        # the waiting job holds no worker slot: another job runs on r1 (concurrency 1)
        other = submit_run(QUESTIONS[3], cluster.settings(max_rounds=1))
        done = wait_for(
            lambda: finished(store, other),
            "another job to finish while the first waits",
            cluster,
            120,
        )
        assert done.status in {"completed", "max_iterations"}, (done.status, done.error)
        assert store.require_run(run_id).status == "awaiting_review"

        # the plan as the job shows it, edited in a file
        plan = next(
            e.event.data for e in store.events(run_id) if isinstance(e.event.data, PlanReadyData)
        )
        assert isinstance(plan, PlanReadyData)
        edited = plan.plan.model_dump(mode="json")
        edited["queries"] = [EDITED_QUERY, *edited["queries"]]
        plan_file = tmp_path / "plan.yaml"
        plan_file.write_text(yaml.safe_dump(edited), encoding="utf-8")

        os.kill(cluster.workers["r1"].pid, signal.SIGKILL)
        cluster.workers["r1"].wait(timeout=30)
        mark = len(cluster.stub.requests)

        approved = run_cli(
            "--data-dir", cluster.data_dir, "runs", "approve-plan", run_id[:10], "--plan",
            plan_file, cwd=tmp_path, launcher=("env", f"DEEPCRITICAL_DATABASE_URL={cluster.url}"),
        )  # fmt: skip
        assert approved.returncode == 0, approved.describe()
        assert f"added query '{EDITED_QUERY}'" in " ".join(approved.stderr.split())
        assert approved.stdout.strip() == run_id
        assert store.require_run(run_id).status == "awaiting_review"  # nobody runs it yet

        # another worker recovers the dead worker's wait once the heartbeat is stale
        start_worker(cluster, "r2")
        _age_heartbeat(store, run_id, 120)
        final = wait_for(
            lambda: finished(store, run_id),
            "the approved run to finish on r2",
            cluster,
            180,
        )
        assert final.status in {"completed", "max_iterations"}, (final.status, final.error)
        assert final.worker == "r2"
        assert final.report_markdown is not None
        assert "reviewed and edited by the user" in " ".join(final.report_markdown.split())
        assert workflow_state(cluster, workflow_id) == ("SUCCESS", "r2")
        after = searched(cluster, mark)
        assert any(q == EDITED_QUERY for _, q in after), after
        repeated = [k for k, n in Counter(after).items() if n > 1]
        assert not repeated, f"repeated searches: {repeated[:5]}"
        logged = [e.event.type for e in store.events(run_id)]
        assert logged.count("plan_ready") == 1
        assert logged[-1] == "done"
    finally:
        store.close()


def test_a_review_that_times_out_goes_on_with_the_plan_as_it_stood(cluster: Cluster) -> None:
    if "r2" not in cluster.alive():
        start_worker(cluster, "r2")
    settings = cluster.settings(
        review_plan=True, review_timeout_seconds=2, review_timeout_action="continue", max_rounds=1
    )
    run_id = submit_run(QUESTIONS[1], settings)
    store = cluster.store()
    try:
        record = wait_for(
            lambda: finished(store, run_id), "the timed-out review's run to finish", cluster, 180
        )
        assert record.status in {"completed", "max_iterations"}, (record.status, record.error)
        assert record.report_markdown is not None
        assert "the review timed out" in " ".join(record.report_markdown.split())
    finally:
        store.close()
