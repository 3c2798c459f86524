"""``deepcritical corpus add DIR`` on the six PMC open-access articles of ../shared (issue 15),
in-process with the real embedding model: each article is one document, and a phrase found
only in the body of one of them finds that article and names the section of its passage."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from deepcritical.cli.app import app
from deepcritical.corpus.index import LocalCorpus
from deepcritical.evidence.embeddings import Embedder

pytestmark = pytest.mark.slow


def test_corpus_add_directory_then_search_a_body_phrase(
    jats_dir: Path, tmp_path: Path, minilm_embedder: Embedder
) -> None:
    data = tmp_path / "data"
    result = CliRunner().invoke(
        app, ["--data-dir", str(data), "corpus", "add", str(jats_dir)], catch_exceptions=True
    )
    assert result.exit_code == 0, f"{result.output[-2000:]}\n{result.exception!r}"
    output = " ".join(result.output.split())  # rich wraps long lines
    assert output.count("1 records read, 1 added") == 6
    with LocalCorpus.open(data / "corpus", minilm_embedder) as local:
        assert local.count() == 6
        # pone.0046493 (PMID 23029536) says so in its Methods, not in its abstract
        hits = local.search("ammonium bicarbonate", 3)
    assert hits[0].article.pmid == "23029536"
    assert hits[0].passage is not None
    assert "ammonium bicarbonate" in hits[0].passage.text
    assert hits[0].passage.section_label().startswith("Materials and Methods")
