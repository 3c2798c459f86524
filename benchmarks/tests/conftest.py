"""Fixtures of the benchmarks' own tests: the shared PubMedQA data, or a skip."""

from __future__ import annotations

from pathlib import Path

import pytest

from deepcritical.testing.shared import SHARED_DIR


@pytest.fixture(scope="session")
def pubmedqa_dir() -> Path:
    """../shared/data/pubmedqa, or skip."""
    directory = SHARED_DIR / "data" / "pubmedqa"
    if not (directory / "corpus.jsonl").exists():
        pytest.skip("../shared/data/pubmedqa is absent")
    return directory
