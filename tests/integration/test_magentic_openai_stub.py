"""A research run through HTTP: a local server speaking the OpenAI Chat Completions API plays
the Magentic manager and every LLM role; the REAL clients (agent-framework's
``OpenAIChatCompletionClient`` for the manager, pydantic-ai's ``OpenAIChatModel`` for the
roles), both built by :mod:`deepcritical.llm.providers` from
``Settings(llm="openai-compatible:stub@http://127.0.0.1:PORT/v1")``, talk to it; the sources
are a small local corpus. The report must be validated and the usage in its metadata must
equal what the server reported.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deepcritical.api import research
from deepcritical.config import Settings
from deepcritical.events import DoneData, ManagerData, ResearchEvent
from deepcritical.llm.providers import ModelSpecError
from deepcritical.models import RunResult
from deepcritical.report.validation import citation_problems
from deepcritical.testing.chat import (
    ChatCompletionsStub,
    ManagerScript,
    RoleScript,
    Tally,
    request_kind,
)
from deepcritical.testing.embedders import HashingEmbedder
from tests.conftest import hashed_corpus

QUESTION = "Does metformin reduce cancer risk in people with diabetes?"

RECORDS: list[dict[str, Any]] = [
    {
        "pmid": "30000001",
        "year": 2019,
        "title": "Metformin use and cancer incidence in type 2 diabetes: a cohort study",
        "mesh_terms": ["Metformin", "Neoplasms", "Diabetes Mellitus, Type 2", "Humans"],
        "abstract_sections": [
            {"label": "OBJECTIVE", "text": "To assess cancer incidence among metformin users."},
            {
                "label": "RESULTS",
                "text": "Cancer incidence was lower among diabetic patients taking metformin "
                "than among those taking sulfonylureas.",
            },
        ],
    },
    {
        "pmid": "30000002",
        "year": 2018,
        "title": "Metformin activates AMPK and inhibits mTOR in cancer cells",
        "mesh_terms": ["Metformin", "AMP-Activated Protein Kinases", "TOR Kinases"],
        "abstract_sections": [
            {
                "label": "RESULTS",
                "text": "Metformin activated AMPK and inhibited mTOR signalling, reducing "
                "tumour cell proliferation.",
            }
        ],
    },
    {
        "pmid": "30000003",
        "year": 2021,
        "title": "Randomised trial of metformin in breast cancer",
        "mesh_terms": ["Metformin", "Breast Neoplasms", "Randomized Controlled Trial"],
        "abstract_sections": [
            {
                "label": "CONCLUSIONS",
                "text": "In this randomised trial metformin did not improve invasive disease-free "
                "survival in breast cancer without diabetes.",
            }
        ],
    },
    {
        "pmid": "30000004",
        "year": 2020,
        "title": "Metformin and cancer mortality: a meta-analysis",
        "mesh_terms": ["Metformin", "Neoplasms", "Meta-Analysis"],
        "abstract_sections": [
            {
                "label": "RESULTS",
                "text": "Metformin use was associated with lower cancer mortality in patients "
                "with diabetes across cohort studies.",
            }
        ],
    },
    {
        "pmid": "30000005",
        "year": 2015,
        "title": "Vaccine storage in general practice",
        "mesh_terms": ["Vaccines", "Refrigeration"],
        "abstract_sections": [
            {"label": "RESULTS", "text": "Refrigerator temperatures were often out of range."}
        ],
    },
    {
        "pmid": "30000006",
        "year": 2016,
        "title": "Exercise and hippocampal volume in older adults",
        "mesh_terms": ["Exercise", "Hippocampus"],
        "abstract_sections": [
            {"label": "RESULTS", "text": "Aerobic exercise increased hippocampal volume."}
        ],
    },
]


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small local corpus (metformin and cancer, plus unrelated abstracts), hashed."""
    root = tmp_path_factory.mktemp("magentic-corpus")
    return hashed_corpus(root, RECORDS)


@pytest.fixture
def stub() -> Iterator[ChatCompletionsStub]:
    with ChatCompletionsStub(ManagerScript(), RoleScript()) as server:
        yield server
        errors = list(server.errors)
    assert not errors, f"the stub failed while answering: {errors}"


def settings_for(stub: ChatCompletionsStub, corpus: Path, tmp: Path, orchestrator: str) -> Settings:
    return Settings(
        llm=f"openai-compatible:stub@{stub.base_url}",
        orchestrator=orchestrator,
        sources=["local"],
        data_dir=tmp,
        corpus_dir=corpus,
        max_rounds=2,
        results_per_query=4,
        llm_retries=1,
        llm_timeout_seconds=30,
        time_budget_seconds=120,
    )


def done_result(events: list[ResearchEvent]) -> RunResult:
    assert events[-1].type == "done", [(e.type, e.message) for e in events[-10:]]
    assert events[-1].result is not None
    return events[-1].result


def assert_usage_matches(result: RunResult, *tallies: Tally) -> None:
    usage = result.report.metadata.usage
    roles: set[str] = set()
    for tally in tallies:
        roles |= tally.roles()
        for role, requests in tally.requests.items():
            assert usage.llm[role].requests == requests, role
            assert usage.llm[role].input_tokens == tally.input_tokens[role], role
            assert usage.llm[role].output_tokens == tally.output_tokens[role], role
    assert set(usage.llm) == roles


@pytest.mark.parametrize("orchestrator", ["magentic", "iterative"])
async def test_research_run_through_an_openai_compatible_server(
    stub: ChatCompletionsStub, corpus_dir: Path, tmp_path: Path, orchestrator: str
) -> None:
    s = settings_for(stub, corpus_dir, tmp_path, orchestrator)
    events = [e async for e in research(QUESTION, s, embedder=HashingEmbedder())]
    result = done_result(events)
    report = result.report
    meta = report.metadata

    by_id = {e.id: e for e in result.evidence}
    assert citation_problems(report, by_id) == []
    assert report.references
    for ref in report.references:
        assert ref.citation == by_id[ref.evidence_id].citation
    assert {e.citation.pmid for e in result.evidence} >= {"30000001", "30000002"}
    assert meta.orchestrator == orchestrator
    assert meta.llm == f"openai-compatible:stub@{stub.base_url}"
    assert not [n for n in meta.notes if "extractive implementation" in n], meta.notes

    # both kinds of client spoke HTTP to the stub: the manager (plain chat), the roles (tools)
    manager_requests = [r for r in stub.requests if request_kind(r) == "manager"]
    role_requests = [r for r in stub.requests if request_kind(r) == "role"]
    assert role_requests
    assert all(r["model"] == "stub" for r in stub.requests)
    if orchestrator == "magentic":
        assert manager_requests
        assert meta.usage.llm["manager"].requests == len(manager_requests)
        assert stub.manager.kinds[:2] == ["facts", "plan"]
        assert stub.manager.kinds[-1] == "final"
        assert {"SearchAgent", "ReportAgent"} <= set(
            e.data.next_speaker for e in events if isinstance(e.data, ManagerData)
        )
        assert meta.stop_reason == "manager_finished"
        assert_usage_matches(result, stub.manager.tally, stub.roles.tally)
    else:
        assert not manager_requests
        assert_usage_matches(result, stub.roles.tally)
    # the structured-output probe (once per endpoint and process) is not a run's request
    probes = [r for r in stub.requests if request_kind(r) == "probe"]
    assert meta.usage.llm_total.requests == len(stub.requests) - len(probes)
    assert meta.usage.search["local"].calls >= 2
    assert events[-1].data_as(DoneData).usage.llm_total.requests == len(stub.requests) - len(probes)


async def test_magentic_without_a_model_is_refused_before_any_work(tmp_path: Path) -> None:
    s = Settings(llm="none", orchestrator="magentic", sources=["local"], data_dir=tmp_path)
    with pytest.raises(ModelSpecError, match="magentic orchestrator needs a model"):
        async for _ in research(QUESTION, s, embedder=HashingEmbedder()):
            pass


# --------------------------------------------------------------------------- the CLI
def cli_command() -> list[str]:
    script = shutil.which("deepcritical", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "deepcritical.cli"]


def cli_env() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("DEEPCRITICAL_")
        and k not in {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "NCBI_API_KEY"}
    }
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", COLUMNS="200", NO_COLOR="1")
    return env


def test_cli_refuses_magentic_without_a_model(tmp_path: Path, corpus_dir: Path) -> None:
    proc = subprocess.run(
        [
            *cli_command(),
            "--data-dir",
            str(tmp_path),
            "research",
            QUESTION,
            "--corpus",
            str(corpus_dir),
            "--orchestrator",
            "magentic",
            "--llm",
            "none",
            "--out",
            str(tmp_path / "report.md"),
        ],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr
    assert "magentic orchestrator needs a model" in proc.stderr
    assert not (tmp_path / "report.md").exists()


def test_cli_refuses_an_unknown_orchestrator(tmp_path: Path) -> None:
    proc = subprocess.run(
        [*cli_command(), "research", QUESTION, "--orchestrator", "chaotic", "--llm", "none"],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr
    assert "orchestrator" in proc.stderr


def test_cli_magentic_run_through_the_stub_prints_usage(tmp_path: Path) -> None:
    """``corpus add`` then ``research --orchestrator magentic`` against the stub, as a user
    would (the real embedder); the usage table is printed and saved in the JSON."""
    records = tmp_path / "records.jsonl"
    records.write_text("\n".join(json.dumps(r) for r in RECORDS) + "\n", encoding="utf-8")
    base = [*cli_command(), "--data-dir", str(tmp_path / "data")]
    added = subprocess.run(
        [*base, "corpus", "add", str(records)],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=300,
        cwd=tmp_path,
    )
    assert added.returncode == 0, added.stderr
    out = tmp_path / "report.md"
    with ChatCompletionsStub(ManagerScript(), RoleScript()) as server:
        proc = subprocess.run(
            [
                *base,
                "research",
                QUESTION,
                "--sources",
                "local",
                "--orchestrator",
                "magentic",
                "--llm",
                f"openai-compatible:stub@{server.base_url}",
                "--max-rounds",
                "2",
                "--out",
                str(out),
            ],
            capture_output=True,
            text=True,
            env=cli_env(),
            timeout=300,
            cwd=tmp_path,
        )
        # the structured-output probe is the process's, not the run's
        requests = len([r for r in server.requests if request_kind(r) != "probe"])
    assert server.errors == []
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Usage" in proc.stderr
    assert "LLM manager" in proc.stderr
    assert "LLM total" in proc.stderr
    assert "search Local corpus" in proc.stderr
    assert "Time per stage" in proc.stderr
    saved = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    meta = saved["report"]["metadata"]
    assert meta["orchestrator"] == "magentic"
    assert meta["usage"]["llm_total"]["requests"] == requests


async def test_a_server_that_never_stops_costs_one_bounded_call_and_a_retry(
    corpus_dir: Path, tmp_path: Path
) -> None:
    """The manager's first chat, its first progress ledger and the first role call meet a
    model that generates until it is cut: with no ``llm_max_output_tokens`` and no context
    window known, each carried the default bound (a quarter of the 4,096 tokens assumed),
    was cut there and retried once, and the run ended within its time budget with a
    validated report."""
    ramble = frozenset({"manager", "ledger", "role"})
    with ChatCompletionsStub(ManagerScript(), RoleScript(), ramble=ramble) as server:
        s = Settings(
            llm=f"openai-compatible:stub@{server.base_url}",
            orchestrator="magentic",
            sources=["local"],
            data_dir=tmp_path,
            corpus_dir=corpus_dir,
            max_rounds=2,
            results_per_query=4,
            time_budget_seconds=120,
        )
        assert s.llm_max_output_tokens is None
        assert s.llm_context_tokens is None
        bound = s.output_token_bound()
        assert bound == 1024
        events = [e async for e in research(QUESTION, s, embedder=HashingEmbedder())]
        assert not server.errors, server.errors
    result = done_result(events)
    meta = result.report.metadata
    # each kind met the never-ending model once, and that call carried the bound
    assert sorted(server.rambled) == [("ledger", bound), ("manager", bound), ("role", bound)]
    # every call the run made carried a bound (the probe's included)
    assert all(
        (r.get("max_tokens") or r.get("max_completion_tokens") or 0) <= bound
        and (r.get("max_tokens") or r.get("max_completion_tokens"))
        for r in server.requests
    )
    # the cut answers were retried, and the retries answered: no role fell back
    assert not [n for n in meta.notes if "extractive implementation" in n], meta.notes
    assert meta.stop_reason == "manager_finished", meta.notes
    assert meta.duration_seconds is not None
    assert meta.duration_seconds < s.time_budget_seconds
    by_id = {e.id: e for e in result.evidence}
    assert citation_problems(result.report, by_id) == []
    assert result.report.references
