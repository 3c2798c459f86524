"""Crash and resume: a real ``deepcritical research`` process is killed with SIGKILL in the
middle of its second search round, then ``deepcritical runs resume ID`` finishes the run.

The live sources (PubMed, ClinicalTrials.gov, Europe PMC, OpenAlex) are pointed at the local
stub server (``DEEPCRITICAL_SOURCE_BASE_URLS``). Once the first round's queries are
checkpointed, the stub holds every request of a later query unanswered, so the process is
killed with round 2 in flight and nothing of round 2 answered. Then:

- a resume right after the kill is refused (the run's heartbeat is seconds old: it could be
  running in another process), with a message, exit 2 and no traceback;
- once the heartbeat is stale, the resumed run completes and writes a report;
- every source saved before the kill is still there, once, with the same number and citation;
- no source is duplicated (by source id or identifier) and every evidence item of the final
  report's run is a saved source;
- no (route, query) request the stub answered to the first process is made again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from deepcritical.state import RunStore
from deepcritical.state.run_store import STALE_AFTER_SECONDS
from deepcritical.state.schema import SourceKeyRow, SourceRow, aware
from deepcritical.testing.api_stub import RequestRecord, StubAPI
from tests.integration.test_cli_research import cli_command, run_cli, user_env

QUESTION = "Does MEK inhibition improve survival in BRAF-mutant melanoma?"
QUERY_PARAMS = ("term", "query.term", "query", "search")
SOURCES = "pubmed,trials,europepmc,openalex"
WAIT_SECONDS = 240.0

pytestmark = pytest.mark.slow


def query_of(record: RequestRecord) -> str | None:
    """The search text of a request (``None`` for requests without one, e.g. efetch)."""
    for name in QUERY_PARAMS:
        if name in record.params:
            return record.params[name]
    return None


def env_for(stub: StubAPI) -> dict[str, str]:
    env = user_env()
    env["DEEPCRITICAL_SOURCE_BASE_URLS"] = json.dumps(
        {
            "pubmed": stub.eutils_url,
            "trials": stub.trials_url,
            "europepmc": stub.europepmc_url,
            "openalex": stub.openalex_url,
        }
    )
    env["DEEPCRITICAL_HTTP_TIMEOUT_SECONDS"] = "120"
    return env


def sources_snapshot(store: RunStore, run_id: str) -> dict[tuple[str, str], tuple[int, str]]:
    def read(session: Any) -> dict[tuple[str, str], tuple[int, str]]:
        rows = session.scalars(select(SourceRow).where(SourceRow.run_id == run_id)).all()
        return {(r.source_type, r.external_id): (r.number, r.citation_id) for r in rows}

    return store.transact(read)


def age_heartbeat(store: RunStore, run_id: str, seconds: float) -> None:
    """Move the run's last heartbeat ``seconds`` into the past (as if that time had passed)."""

    def work(session: Any) -> None:
        row = store.require_row(session, run_id)
        row.updated_at = aware(row.updated_at) - timedelta(seconds=seconds)

    store.transact(work)


def wait_for(condition: Any, proc: subprocess.Popen[str], what: str) -> Any:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the research process ended before {what}:\n{out[-2000:]}\n{err[-3000:]}")
        time.sleep(0.05)
    proc.kill()
    pytest.fail(f"timed out waiting for {what}")


def test_sigkill_mid_run_then_resume_loses_nothing_and_repeats_no_search(
    stub: StubAPI, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    env = env_for(stub)
    proc = subprocess.Popen(
        [
            *cli_command(),
            "--data-dir",
            str(data_dir),
            "research",
            QUESTION,
            "--llm",
            "none",
            "--sources",
            SOURCES,
            "--max-rounds",
            "3",
            "--max-sources",
            "500",
            "--out",
            str(tmp_path / "first.md"),
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    store: RunStore | None = None
    try:
        wait_for(lambda: (data_dir / "deepcritical.db").exists(), proc, "the database exists")
        store = RunStore.open_url(f"sqlite:///{data_dir / 'deepcritical.db'}")

        def round_one() -> tuple[str, list[str]] | None:
            runs = store.list_runs() if store else []
            if not runs:
                return None
            record = store.get_run(runs[0].id) if store else None
            if record is None or not record.iterations:
                return None
            return record.id, list(record.iterations[0]["queries"])

        run_id, first_queries = wait_for(round_one, proc, "round 1 is checkpointed")
        assert first_queries

        round_one_queries = {q.strip() for q in first_queries}

        def later_query(record: RequestRecord) -> bool:
            text = query_of(record)
            return text is not None and text.strip() not in round_one_queries

        stub.hold(later_query)
        wait_for(lambda: stub.held > 0, proc, "round 2 sends its first search request")
        time.sleep(0.5)  # let the other calls of round 2 reach the stub too
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL

        killed = store.get_run(run_id)
        assert killed is not None
        assert killed.status == "in_progress"
        assert killed.resumable
        before = sources_snapshot(store, run_id)
        assert before, "round 1 saved no source before the kill"
        answered_first = {
            (r.route, q) for r in stub.requests if r.status and (q := query_of(r)) is not None
        }
        assert answered_first
        log_mark = len(stub.requests)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        stub.release()

    # the killed run's last heartbeat is seconds old: a resume now is refused (it could be
    # running in another process) ...
    refused = run_cli(
        "--data-dir", data_dir, "runs", "resume", run_id[:10], "--out", tmp_path / "early.md",
        cwd=tmp_path,
    )  # fmt: skip
    assert refused.returncode == 2, refused.describe()
    assert f"run {run_id} is still running in another process" in refused.output
    assert "resume it after it goes stale (> 60 s)" in refused.output
    assert "Traceback" not in refused.stderr
    assert not (tmp_path / "early.md").exists()
    assert store is not None
    age_heartbeat(store, run_id, STALE_AFTER_SECONDS + 1)  # ... and taken over once stale
    resumed = run_cli(
        "--data-dir", data_dir, "runs", "resume", run_id[:10], "--out", tmp_path / "resumed.md",
        cwd=tmp_path,
    )  # fmt: skip
    # run_cli uses user_env(); the stub URLs must be the stored settings' (not the env's)
    assert resumed.returncode == 0, resumed.describe()
    assert (tmp_path / "resumed.md").read_text(encoding="utf-8").startswith("# ")

    assert store is not None
    try:
        final = store.get_run(run_id)
        assert final is not None
        assert final.status in {"completed", "max_iterations"}
        assert final.attempts == 2
        assert final.progress == 1.0
        assert final.report_markdown
        after = sources_snapshot(store, run_id)
        for key, (number, citation) in before.items():
            assert after.get(key) == (number, citation), f"source {key} changed or was lost"
        numbers = [n for n, _ in after.values()]
        assert len(numbers) == len(set(numbers))
        assert sorted(numbers) == list(range(1, len(numbers) + 1))

        def key_owners(session: Any) -> int:
            rows = session.scalars(select(SourceKeyRow).where(SourceKeyRow.run_id == run_id))
            return len(list(rows))

        assert store.transact(key_owners) >= len(after)
        result = json.loads((tmp_path / "resumed.json").read_text(encoding="utf-8"))
        evidence_ids = {e["id"] for e in result["evidence"]}
        assert evidence_ids == {c for _, c in after.values()}
    finally:
        store.close()

    repeated = [
        (r.route, q)
        for r in stub.requests[log_mark:]
        if (q := query_of(r)) is not None and (r.route, q) in answered_first
    ]
    assert not repeated, f"the resumed run repeated searches of the first: {repeated[:5]}"
    assert len(stub.requests) > log_mark, "the resumed run made no new search at all"
