"""A job's spans join its submitter's trace (issue 34): a ``deepcritical worker`` process on
a PostgreSQL run database (127.0.0.1), tracing on (OTLP over gRPC to a receiver in this
test), runs a job submitted in this process under a parent span (the SDK's in-memory
exporter). The worker's ``job`` span must be a child of the submitter's span, its ``run``
span a child of the job's, all in the submitter's trace, and the run database must keep that
trace id with the run (its metrics' ``trace_id``).
"""

from __future__ import annotations

import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.trace.v1.trace_pb2 import Span as SpanProto
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import create_engine, text

from deepcritical.config import Settings
from deepcritical.jobs import submit_run
from deepcritical.state import RunStore
from deepcritical.telemetry.tracing import build_provider, install_provider, span
from deepcritical.testing.api_stub import StubAPI, StubData
from tests.integration.test_cli_research import cli_command, user_env
from tests.state.postgres_server import postgres_bin, postgres_server

pytestmark = pytest.mark.slow

QUESTION = "Does aspirin prevent colorectal cancer?"
FINAL = {"completed", "max_iterations", "failed", "cancelled", "time_budget"}


class Receiver(trace_service_pb2_grpc.TraceServiceServicer):
    """An OTLP trace receiver keeping every span it is sent."""

    def __init__(self) -> None:
        self.spans: list[SpanProto] = []
        self.lock = threading.Lock()

    def Export(
        self, request: trace_service_pb2.ExportTraceServiceRequest, context: Any
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        with self.lock:
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    self.spans.extend(scope.spans)
        return trace_service_pb2.ExportTraceServiceResponse()

    def named(self, name: str) -> list[SpanProto]:
        with self.lock:
            return [s for s in self.spans if s.name == name]


@pytest.fixture
def receiver() -> Iterator[tuple[Receiver, int]]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    kept = Receiver()
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(kept, server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield kept, port
    finally:
        server.stop(grace=None)


@pytest.fixture
def submitter_spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    install_provider(build_provider(exporter, batch=False))
    try:
        yield exporter
    finally:
        install_provider(None)


def _database(server: str) -> str:
    name = f"t_{uuid.uuid4().hex[:12]}"
    engine = create_engine(server, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return server.rsplit("/", 1)[0] + f"/{name}"


def _wait_final(store: RunStore, run_id: str, limit: float) -> str:
    deadline = time.monotonic() + limit
    status = store.require_run(run_id).status
    while status not in FINAL and time.monotonic() < deadline:
        time.sleep(0.2)
        status = store.require_run(run_id).status
    return status


def test_the_workers_spans_join_the_submitters_trace(
    receiver: tuple[Receiver, int],
    submitter_spans: InMemorySpanExporter,
    api_fixtures: Path,
    tmp_path: Path,
) -> None:
    if postgres_bin() is None:
        pytest.skip("PostgreSQL binaries absent (apt-get install postgresql)")
    kept, port = receiver
    with postgres_server() as server, StubAPI(StubData(api_fixtures)) as stub:
        url = _database(server)
        env = user_env()
        env.update(
            DEEPCRITICAL_DATABASE_URL=url,
            OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}",
            OTEL_EXPORTER_OTLP_INSECURE="true",
            OTEL_BSP_SCHEDULE_DELAY="100",
            OTEL_SERVICE_NAME="deepcritical-worker",
        )
        env.pop("OTEL_SDK_DISABLED", None)
        data_dir = tmp_path / "data"
        with (tmp_path / "traced.log").open("w") as log:
            proc = subprocess.Popen(
                [*cli_command(), "--data-dir", str(data_dir), "worker", "--worker-id", "traced"],
                cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, text=True,
            )  # fmt: skip
        try:
            settings = Settings(
                data_dir=data_dir,
                database_url=url,
                llm="none",
                sources=["pubmed"],
                max_rounds=1,
                max_full_texts=0,
                source_base_urls={"pubmed": stub.eutils_url},
            )
            with span("submit") as parent:
                assert parent is not None
                run_id = submit_run(QUESTION, settings)
            store = RunStore.open_url(url)
            try:
                status = _wait_final(store, run_id, 120)
                metrics = store.require_run(run_id).metrics
            finally:
                store.close()
            worker_log = (tmp_path / "traced.log").read_text(errors="replace")[-3000:]
            assert status in {"completed", "max_iterations"}, (status, worker_log)
            deadline = time.monotonic() + 30
            while not (kept.named("job") and kept.named("run")) and time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    (submitted,) = submitter_spans.get_finished_spans()
    assert submitted.context is not None
    trace_id = submitted.context.trace_id.to_bytes(16, "big")
    jobs, runs = kept.named("job"), kept.named("run")
    assert len(jobs) == 1, (len(jobs), worker_log)
    assert len(runs) == 1, (len(runs), worker_log)
    (job,), (run,) = jobs, runs
    assert job.trace_id == trace_id
    assert job.parent_span_id == submitted.context.span_id.to_bytes(8, "big")
    assert run.trace_id == trace_id
    assert run.parent_span_id == job.span_id
    # every span the worker made for the run is in the submitter's trace
    assert {s.trace_id for s in kept.spans} == {trace_id}
    # the run database keeps the submitter's trace id with the run
    assert metrics["trace_id"] == format(submitted.context.trace_id, "032x")
    assert metrics["trace_span_id"] == run.span_id.hex()
