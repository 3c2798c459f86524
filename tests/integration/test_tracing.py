"""One research run traced end to end into the SDK's in-memory exporter.

The run: the iterative orchestrator with every model role played by a local OpenAI-compatible
server (:class:`ChatCompletionsStub`, reached through a base URL holding a password and with
an API key), searching a small local corpus and PubMed on the local API stub (with an NCBI
key); recorded in the run database. The spans must form the tree run -> stages -> source
requests and model-role calls, carry the source and status, hold no key or password, and the
trace id must be kept with the run (run database, report metadata, ``runs show``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from typer.testing import CliRunner

from deepcritical.api import research
from deepcritical.cli.main import app
from deepcritical.config import Settings
from deepcritical.llm.instrumentation import instrument_frameworks
from deepcritical.state.run_store import RunStore
from deepcritical.telemetry.tracing import build_provider, install_provider
from deepcritical.testing.api_stub import StubAPI
from deepcritical.testing.chat import ChatCompletionsStub, ManagerScript, RoleScript
from deepcritical.testing.embedders import HashingEmbedder
from tests.conftest import hashed_corpus

QUESTION = "Does metformin reduce cancer risk in people with diabetes?"
PASSWORD = "pw-not-for-traces-7731"
API_KEY = "sk-test-not-for-traces-5521"
NCBI_KEY = "ncbi-not-for-traces-9917"
SECRETS = (PASSWORD, API_KEY, NCBI_KEY)
RECORDS = [
    {
        "pmid": "30000001",
        "year": 2019,
        "title": "Metformin use and cancer incidence in type 2 diabetes: a cohort study",
        "mesh_terms": ["Metformin", "Neoplasms", "Diabetes Mellitus, Type 2", "Humans"],
        "abstract_sections": [
            {
                "label": "RESULTS",
                "text": "Cancer incidence was lower among diabetic patients taking metformin "
                "than among those taking sulfonylureas.",
            }
        ],
    },
    {
        "pmid": "30000002",
        "year": 2018,
        "title": "Metformin activates AMPK and inhibits mTOR in cancer cells",
        "mesh_terms": ["Metformin", "AMP-Activated Protein Kinases"],
        "abstract_sections": [
            {"label": "RESULTS", "text": "Metformin inhibited the growth of cancer cells."}
        ],
    },
]


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """DeepCritical's spans (and the frameworks') into memory for the test, then tracing off."""
    exporter = InMemorySpanExporter()
    install_provider(build_provider(exporter, batch=False))
    try:
        yield exporter
    finally:
        install_provider(None)
        instrument_frameworks()


def _parents(finished: list[ReadableSpan]) -> dict[int, ReadableSpan]:
    return {s.context.span_id: s for s in finished if s.context is not None}


def _ancestors(span: ReadableSpan, by_id: dict[int, ReadableSpan]) -> list[ReadableSpan]:
    out = []
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
        out.append(span)
    return out


def render_tree(finished: list[ReadableSpan]) -> str:
    """The spans as an indented tree, each with its DeepCritical and GenAI attributes (the
    span tree of docs/operations.md; ``pytest -s`` prints it); repeated siblings are
    counted."""
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in sorted(finished, key=lambda s: s.start_time or 0):
        children.setdefault(span.parent.span_id if span.parent else None, []).append(span)
    keep = ("deepcritical.stage", "deepcritical.role", "deepcritical.source", "gen_ai.agent.name")
    lines: list[str] = []

    def walk(parent: int | None, depth: int) -> None:
        seen: dict[str, int] = {}
        for span in children.get(parent, []):
            attrs = {k: v for k, v in (span.attributes or {}).items() if k in keep}
            label = f"{span.name} {attrs}" if attrs else span.name
            seen[label] = seen.get(label, 0) + 1
            if seen[label] == 1:
                lines.append("  " * depth + label)
                walk(span.context.span_id, depth + 1)
        for label, count in seen.items():
            if count > 1:
                lines.append("  " * depth + f"({count - 1} more: {label})")

    walk(None, 0)
    return "\n".join(lines)


def _attrs(span: ReadableSpan) -> dict[str, object]:
    return dict(span.attributes or {})


def _texts(span: ReadableSpan) -> list[str]:
    values = [span.name, *map(str, (span.attributes or {}).values())]
    for event in span.events:
        values.extend(map(str, (event.attributes or {}).values()))
    return values


async def test_a_run_is_one_trace_of_stages_sources_and_model_roles(
    spans: InMemorySpanExporter, stub: StubAPI, tmp_path: Path
) -> None:
    corpus = hashed_corpus(tmp_path, RECORDS)
    with ChatCompletionsStub(ManagerScript(), RoleScript()) as model_server:
        base = model_server.base_url.replace("http://", f"http://user:{PASSWORD}@")
        settings = Settings(
            _env_file=None,
            llm=f"openai-compatible:stub@{base}",
            openai_compatible_api_key=API_KEY,
            ncbi_api_key=NCBI_KEY,
            sources=["local", "pubmed"],
            source_base_urls={"pubmed": stub.eutils_url},
            corpus_dir=corpus,
            data_dir=tmp_path,
            max_rounds=1,
            results_per_query=4,
            max_full_texts=0,
            citation_seeds=0,
            llm_retries=1,
            llm_timeout_seconds=30,
        )
        events = [e async for e in research(QUESTION, settings, embedder=HashingEmbedder())]
    assert events[-1].type == "done", [(e.type, e.message) for e in events[-5:]]
    finished = list(spans.get_finished_spans())
    by_id = _parents(finished)
    print(render_tree(finished))

    (run,) = [s for s in finished if s.name == "run"]
    assert run.parent is None
    assert all(s.context.trace_id == run.context.trace_id for s in finished)  # one trace
    stages = {s.name: s for s in finished if s.parent and s.parent.span_id == run.context.span_id}
    assert {"planning", "searching", "writing", "validation"} <= set(stages)
    assert _attrs(stages["planning"])["deepcritical.role"] == "planner"

    requests = [s for s in finished if s.name == "source request"]
    assert requests, "no source request was traced"
    for request in requests:
        assert _attrs(request)["deepcritical.source"] == "pubmed"
        assert _attrs(request)["http.response.status_code"] == 200
        assert stages["searching"] in _ancestors(request, by_id)

    model_calls = [s for s in finished if _attrs(s).get("gen_ai.agent.name") == "planner"]
    assert model_calls, sorted({s.name for s in finished})
    assert stages["planning"] in _ancestors(model_calls[0], by_id)

    for span in finished:
        for text in _texts(span):
            assert not any(secret in text for secret in SECRETS), (span.name, text)
        assert QUESTION not in _texts(span)  # no content without DEEPCRITICAL_TRACE_CONTENT

    trace_id = format(run.context.trace_id, "032x")
    run_id = str(_attrs(run)["deepcritical.run_id"])
    store = RunStore.open(settings)
    try:
        record = store.require_run(run_id)
    finally:
        store.close()
    assert record.metrics["trace_id"] == trace_id
    assert events[-1].result is not None
    assert events[-1].result.report.metadata.trace_id == trace_id
    shown = CliRunner().invoke(app, ["--data-dir", str(tmp_path), "runs", "show", run_id])
    assert shown.exit_code == 0, shown.output
    assert f"Trace: {trace_id}" in shown.output
