"""Shared fixtures: paths to ../shared data (skipping when absent), embedders, live marker, and
logging left as each test found it."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import structlog

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from deepcritical.logs import HANDLER_NAME, NOISY_LIBRARIES, OWN_HANDLER_LIBRARIES
from deepcritical.testing.embedders import HashingEmbedder
from deepcritical.testing.shared import SHARED_DIR

SHARED = SHARED_DIR
PUBMEDQA = SHARED / "data" / "pubmedqa"
API_FIXTURES = SHARED / "fixtures" / "api"
JATS_FIXTURES = SHARED / "fixtures" / "fulltext" / "pmc_oa_jats"


LONGEST_FIRST = ("tests/integration/test_local_llm.py",)
"""Files collected first: under ``make test``'s two pytest workers (``--dist loadfile``
hands out files in collection order) the real-model file, the longest by minutes, starts at
once on one worker while the other runs the rest, instead of running alone at the end."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put the files of :data:`LONGEST_FIRST` first (each file's order kept); skip tests
    marked ``live`` unless DEEPCRITICAL_LIVE=1."""
    root = config.rootpath
    items.sort(key=lambda item: item.path.relative_to(root).as_posix() not in LONGEST_FIRST)
    if os.environ.get("DEEPCRITICAL_LIVE") == "1":
        return
    skip = pytest.mark.skip(reason="needs the internet; set DEEPCRITICAL_LIVE=1")
    for item in items:
        if "live" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _logging_as_found() -> Iterator[None]:
    """Logging as the test found it: a test that runs a command (whose callback configures
    logging for the process, :func:`deepcritical.logs.configure_logging`) or that configures
    logging itself leaves structlog's configuration, the root handlers and the levels it set
    behind, so the next test sees what the one before it saw; and each test starts with
    structlog unconfigured."""
    configured = structlog.is_configured()
    config = structlog.get_config()
    config["processors"] = list(config["processors"])  # capture_logs edits the list in place
    names = ["", "deepcritical.ui", *NOISY_LIBRARIES, *OWN_HANDLER_LIBRARIES]
    levels = {name: logging.getLogger(name).level for name in names}
    handlers = {name: list(logging.getLogger(name).handlers) for name in names}
    # Each test starts with structlog unconfigured, as a library caller's process does: a
    # module or session fixture that ran a command (whose callback configures logging) must
    # not decide how a later test's records come out.
    structlog.reset_defaults()
    yield
    for name in names:
        logger = logging.getLogger(name)
        logger.setLevel(levels[name])
        for handler in logger.handlers[:]:
            ours = handler.get_name() == HANDLER_NAME or isinstance(handler, logging.NullHandler)
            if ours and handler not in handlers[name]:
                logger.removeHandler(handler)
    if configured:
        structlog.configure(**config)
    else:
        structlog.reset_defaults()


@pytest.fixture(scope="session")
def pubmedqa_dir() -> Path:
    """../shared/data/pubmedqa, or skip."""
    if not (PUBMEDQA / "corpus.jsonl").exists():
        pytest.skip("../shared/data/pubmedqa is absent")
    return PUBMEDQA


@pytest.fixture(scope="session")
def api_fixtures() -> Path:
    """../shared/fixtures/api, or skip."""
    if not API_FIXTURES.is_dir():
        pytest.skip("../shared/fixtures/api is absent")
    return API_FIXTURES


@pytest.fixture(scope="session")
def jats_dir() -> Path:
    """../shared/fixtures/fulltext/pmc_oa_jats (six PMC open-access articles), or skip."""
    if not (JATS_FIXTURES / "SOURCES.md").exists():
        pytest.skip("../shared/fixtures/fulltext/pmc_oa_jats is absent")
    return JATS_FIXTURES


@pytest.fixture
def hashing_embedder() -> HashingEmbedder:
    """A fast deterministic embedder (bag of hashed words)."""
    return HashingEmbedder()


@pytest.fixture(scope="session")
def minilm_embedder():  # type: ignore[no-untyped-def]
    """The real all-MiniLM-L6-v2 embedder, loaded once per test session (offline)."""
    from deepcritical.evidence.embeddings import shared_embedder

    return shared_embedder()


def hashed_corpus(root: Path, records: Sequence[dict[str, Any]]) -> Path:
    """A local corpus under ``root / "corpus"`` holding ``records`` (PubMedQA-style JSONL
    rows, written to ``root / "records.jsonl"``), embedded with :class:`HashingEmbedder`;
    asserts every record was imported. Returns the corpus directory."""
    from deepcritical.corpus.index import LocalCorpus

    source = root / "records.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    directory = root / "corpus"
    with LocalCorpus(directory, HashingEmbedder()) as local:
        assert local.add_file(source).added == len(records)
    return directory
