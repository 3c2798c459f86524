"""The operations endpoints: ``/metrics`` counts runs, source requests and their outcomes;
``/healthz`` answers; ``/readyz`` fails when the run database is down (without its password);
the same on the web app's middleware and on a worker's server."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr
from sqlalchemy.exc import OperationalError
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from deepcritical.api import research
from deepcritical.config import Settings
from deepcritical.jobs.ops_server import OpsServer
from deepcritical.jobs.readiness import Readiness
from deepcritical.state.run_store import RunStore
from deepcritical.testing.api_stub import StubAPI
from deepcritical.testing.embedders import HashingEmbedder
from deepcritical.ui.ops_routes import OpsRoutes
from tests.conftest import hashed_corpus

QUESTION = "Does metformin reduce cancer risk in people with diabetes?"
DB_PASSWORD = "db-pw-not-for-probes-4410"
DOWN_URL = f"postgresql://dc:{DB_PASSWORD}@127.0.0.1:1/deepcritical"
RECORDS = [
    {
        "pmid": "30000001",
        "year": 2019,
        "title": "Metformin use and cancer incidence in type 2 diabetes: a cohort study",
        "mesh_terms": ["Metformin", "Neoplasms"],
        "abstract_sections": [
            {"label": "RESULTS", "text": "Cancer incidence was lower among metformin users."}
        ],
    }
]


async def _app(scope: Scope, receive: Receive, send: Send) -> None:
    await PlainTextResponse("the app")(scope, receive, send)


def _samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _delta(
    before: dict[tuple[str, frozenset[tuple[str, str]]], float],
    after: dict[tuple[str, frozenset[tuple[str, str]]], float],
    name: str,
    **labels: str,
) -> float:
    key = (name, frozenset(labels.items()))
    return after.get(key, 0.0) - before.get(key, 0.0)


async def _get(readiness: Readiness, path: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=OpsRoutes(_app, readiness))
    async with httpx.AsyncClient(transport=transport, base_url="http://app") as client:
        return await client.get(path)


async def test_metrics_count_a_finished_and_a_failed_run_and_their_source_requests(
    stub: StubAPI, tmp_path: Path
) -> None:
    settings = Settings(
        _env_file=None,
        llm="none",
        sources=["local", "pubmed"],
        source_base_urls={"pubmed": stub.eutils_url},
        corpus_dir=hashed_corpus(tmp_path, RECORDS),
        data_dir=tmp_path,
        max_rounds=1,
        max_full_texts=0,
        citation_seeds=0,
    )
    readiness = Readiness(settings)
    readiness.register_metrics()  # as the web app's launch does
    before = _samples((await _get(readiness, "/metrics")).text)
    done = [e async for e in research(QUESTION, settings, embedder=HashingEmbedder())]
    assert done[-1].type == "done"
    down = settings.model_copy(update={"database_url": SecretStr(DOWN_URL)})
    with pytest.raises(OperationalError):  # the run database is down: the run fails
        _ = [e async for e in research(QUESTION, down, embedder=HashingEmbedder())]
    answer = await _get(readiness, "/metrics")
    readiness.close()
    assert answer.status_code == 200
    after = _samples(answer.text)

    iterative = {"orchestrator": "iterative"}
    assert _delta(before, after, "deepcritical_runs_started_total", **iterative) == 2
    stop = done[-1].data.stop_reason  # type: ignore[union-attr]
    finished = _delta(
        before, after, "deepcritical_runs_finished_total", stop_reason=stop, **iterative
    )
    assert finished == 1
    failed = _delta(before, after, "deepcritical_runs_failed_total", status="failed", **iterative)
    assert failed == 1
    assert _delta(before, after, "deepcritical_run_duration_seconds_count", **iterative) == 2
    requests = _delta(
        before, after, "deepcritical_source_requests_total", source="pubmed", status="200"
    )
    assert requests == len(stub.requests)
    assert requests >= 2  # esearch and efetch of the finished run at least
    latency = _delta(
        before, after, "deepcritical_source_request_duration_seconds_count", source="pubmed"
    )
    assert latency == requests
    assert after[("deepcritical_jobs", frozenset({("state", "queued")}))] == 0
    assert after[("deepcritical_corpus_documents", frozenset())] == len(RECORDS)


async def test_readyz_fails_while_the_run_database_is_down(tmp_path: Path) -> None:
    down = Settings(
        _env_file=None,
        data_dir=tmp_path,
        database_url=DOWN_URL,
    )
    readiness = Readiness(down)
    try:
        health = await _get(readiness, "/healthz")
        ready = await _get(readiness, "/readyz")
        passed_on = await _get(readiness, "/")
    finally:
        readiness.close()
    assert health.status_code == 200
    assert ready.status_code == 503
    assert ready.json()["checks"] == {"run database": "error: OperationalError"}
    assert DB_PASSWORD not in ready.text
    assert passed_on.text == "the app"

    up = Readiness(Settings(_env_file=None, data_dir=tmp_path))
    try:
        answer = await _get(up, "/readyz")
    finally:
        up.close()
    assert answer.status_code == 200
    assert answer.json() == {"status": "ok", "checks": {"run database": "ok"}}


def test_a_worker_serves_health_readiness_and_metrics(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path)
    RunStore.open(settings).close()  # the run database, migrated (as a worker starts)
    readiness = Readiness(settings, jobs=True)
    readiness.register_metrics()
    server = OpsServer(readiness, host="127.0.0.1", port=0)
    try:
        base = f"http://127.0.0.1:{server.port}"
        health = httpx.get(f"{base}/healthz")
        ready = httpx.get(f"{base}/readyz")
        metrics = httpx.get(f"{base}/metrics")
        missing = httpx.get(f"{base}/other")
    finally:
        server.close()
        readiness.close()
    assert health.status_code == 200
    assert ready.status_code == 200
    assert ready.json()["checks"] == {"run database": "ok", "job engine": "ok"}
    assert 'deepcritical_jobs{state="running"} 0.0' in metrics.text
    assert 'deepcritical_jobs{state="waiting_review"} 0.0' in metrics.text
    assert missing.status_code == 404
