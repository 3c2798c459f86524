"""The trace context carried with a job (issue 34): ``submit_run`` adds the submitter's W3C
``traceparent`` to the job's arguments only when tracing is on and a span is current, and
``execute_run`` makes the job's span its child (nothing read or made with tracing off)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from deepcritical.config import Settings
from deepcritical.jobs import execute, submit
from deepcritical.telemetry.tracing import build_provider, install_provider, span


class FakeClient:
    """A DBOS client recording what is enqueued."""

    def __init__(self) -> None:
        self.enqueued: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def enqueue(self, options: dict[str, str], *args: Any, **kwargs: Any) -> None:
        self.enqueued.append((args, kwargs))

    def destroy(self) -> None:
        pass


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> FakeClient:
    fake = FakeClient()
    monkeypatch.setattr(submit, "open_client", lambda settings: fake)
    return fake


@pytest.fixture
def traced() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    install_provider(build_provider(exporter, batch=False))
    try:
        yield exporter
    finally:
        install_provider(None)


def _settings(tmp_path: Path) -> Settings:
    return Settings(_env_file=None, data_dir=tmp_path, llm="none")


def test_tracing_off_carries_nothing(client: FakeClient, tmp_path: Path) -> None:
    run_id = submit.submit_run("Does aspirin prevent colorectal cancer?", _settings(tmp_path))
    assert client.enqueued == [((run_id,), {})]


def test_the_submitters_span_travels_with_the_job(
    client: FakeClient, traced: InMemorySpanExporter, tmp_path: Path
) -> None:
    with span("submit") as parent:
        assert parent is not None
        run_id = submit.submit_run("Does aspirin prevent colorectal cancer?", _settings(tmp_path))
    ((args, kwargs),) = client.enqueued
    assert args == (run_id,)
    ctx = parent.get_span_context()
    assert kwargs["trace"]["traceparent"].startswith(f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-")


async def test_the_job_span_is_a_child_of_the_carried_context(
    traced: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    async def fake_execute(run_id: str, settings: Settings, worker: str) -> str:
        with span("run"):
            return "completed"

    monkeypatch.setattr(execute, "_execute", fake_execute)
    carried = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    status = await execute.execute_run("r1", _settings(tmp_path), "w1", trace=carried)
    assert status == "completed"
    run, job = traced.get_finished_spans()
    assert job.name == "job"
    assert job.context is not None
    assert run.context is not None
    assert job.parent is not None
    assert format(job.context.trace_id, "032x") == "0af7651916cd43dd8448eb211c80319c"
    assert format(job.parent.span_id, "016x") == "b7ad6b7169203331"
    assert run.parent is not None
    assert run.parent.span_id == job.context.span_id
    assert dict(job.attributes or {}) == {
        "deepcritical.run_id": "r1",
        "deepcritical.worker": "w1",
        "deepcritical.status": "completed",
    }


async def test_tracing_off_makes_no_job_span(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def no_extract(carrier: object) -> None:
        raise AssertionError("read with tracing off")

    async def fake_execute(run_id: str, settings: Settings, worker: str) -> str:
        return "completed"

    monkeypatch.setattr(execute, "extract_context", no_extract)
    monkeypatch.setattr(execute, "_execute", fake_execute)
    carried = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    assert await execute.execute_run("r1", _settings(tmp_path), "w1", trace=carried) == "completed"
