"""``deepcritical corpus add DIR`` on the six PMC open-access articles of ../shared (issue 15),
in-process with the real embedding model: each article is one document, and a phrase found
only in the body of one of them finds that article and names the section of its passage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from deepcritical.cli.main import app
from deepcritical.config import Settings
from deepcritical.corpus.embedding import corpus_embedder
from deepcritical.corpus.index import LocalCorpus
from deepcritical.formats.jats import read_jats
from deepcritical.testing.fulltext_questions import answer_passage, load_questions

pytestmark = pytest.mark.slow


def test_corpus_add_directory_then_search_a_body_phrase(jats_dir: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    result = CliRunner().invoke(
        app, ["--data-dir", str(data), "corpus", "add", str(jats_dir)], catch_exceptions=True
    )
    assert result.exit_code == 0, f"{result.output[-2000:]}\n{result.exception!r}"
    output = " ".join(result.output.split())  # rich wraps long lines
    assert output.count("1 records read, 1 added") == 6
    # the embedder `corpus add` used (int8 ONNX by default), as a run would choose it
    embedder = corpus_embedder(Settings(data_dir=data))
    with LocalCorpus.open(data / "corpus", embedder) as local:
        assert local.count() == 6
        # pone.0046493 (PMID 23029536) says so in its Methods, not in its abstract
        hits = local.search("ammonium bicarbonate", 3)
    assert hits[0].article.pmid == "23029536"
    assert hits[0].passage is not None
    assert "ammonium bicarbonate" in hits[0].passage.text
    assert hits[0].passage.section_label().startswith("Materials and Methods")


def test_corpus_add_directory_then_research_quotes_a_body_passage_with_its_section(
    jats_dir: Path, tmp_path: Path
) -> None:
    """Issue 15: ``corpus add`` on the six articles, then a question answered only in the body
    of one of them (deepcritical/testing/fulltext_questions.json: the OHIP-NL imputation count, in
    PMC2329613's Results and not in its abstract) gives a report citing that paper, whose
    supporting quote names the section: ``[1] Results, paragraph 2: “…”``."""
    data, out = tmp_path / "data", tmp_path / "report.md"
    runner = CliRunner()
    added = runner.invoke(app, ["--data-dir", str(data), "corpus", "add", str(jats_dir)])
    assert added.exit_code == 0, added.output[-2000:]
    question = next(q for q in load_questions() if q.pmcid == "PMC2329613")
    result = runner.invoke(
        app,
        [
            "--data-dir",
            str(data),
            "research",
            question.question,
            "--llm",
            "none",
            "--sources",
            "local",
            "--out",
            str(out),
        ],
        catch_exceptions=True,
    )
    assert result.exit_code == 0, f"{result.output[-2000:]}\n{result.exception!r}"
    report = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    numbers = {
        ref["evidence_id"]: n for n, ref in enumerate(report["report"]["references"], start=1)
    }
    cited = [
        ref["evidence_id"]
        for ref in report["report"]["references"]
        if ref["citation"]["pmcid"] == question.pmcid
    ]
    assert cited, "the paper whose body answers the question is not cited"
    article = read_jats(jats_dir / "1472-6831-8-11.nxml")
    gold = answer_passage(article, question)
    quotes = [
        quote
        for claim in report["report"]["grounding"]
        if not claim["removed"]
        for quote in claim["quotes"]
        if quote["evidence_id"] == cited[0] and quote["supports"]
    ]
    body = [q for q in quotes if q["locator"] == gold.locator() and q["quote"] in gold.text]
    assert body, [q["locator"] for q in quotes]
    markdown = out.read_text(encoding="utf-8")
    assert f"[{numbers[cited[0]]}] {gold.locator()}: “" in markdown
    assert "Full texts: " in markdown
    evidence = {e["id"]: e for e in report["evidence"]}
    assert evidence[cited[0]]["passages"]  # read in full text from the corpus
