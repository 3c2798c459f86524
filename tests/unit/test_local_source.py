"""LocalCorpusSource: the local corpus behind the SearchSource protocol."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from deepcritical.corpus.index import LocalCorpus
from deepcritical.models import Evidence
from deepcritical.sources.base import SearchSource, SourceError
from deepcritical.sources.local import LocalCorpusSource
from deepcritical.testing.embedders import HashingEmbedder

RECORDS = [
    {"pmid": "11", "title": "Metformin and cancer", "year": 2012, "mesh_terms": ["Metformin"],
     "abstract_sections": [{"label": "RESULTS", "text": "Metformin users had fewer cancers."}]},
    {"pmid": "12", "year": 2015, "mesh_terms": [],
     "abstract_sections": [{"label": None, "text": "Metformin and lactic acidosis risk."}]},
    {"pmid": "13", "year": 2001, "mesh_terms": [],
     "abstract_sections": [{"label": "METHODS", "text": "Statins in elderly patients."}]},
]  # fmt: skip


@pytest.fixture
def source(tmp_path: Path) -> LocalCorpusSource:
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in RECORDS) + "\n", encoding="utf-8")
    corpus = LocalCorpus(tmp_path / "corpus", HashingEmbedder())
    corpus.add_file(path)
    return LocalCorpusSource(corpus)


def test_implements_the_protocol(source: LocalCorpusSource) -> None:
    assert isinstance(source, SearchSource)
    assert source.name == "local"


async def test_search_returns_local_evidence(source: LocalCorpusSource) -> None:
    items = await source.search("metformin cancer", 2)
    assert len(items) == 2
    assert all(isinstance(e, Evidence) for e in items)
    top = items[0]
    assert top.citation.source == "local"
    assert top.sources == ["local"]
    assert top.citation.pmid == top.citation.id == "11"
    assert top.citation.title == "Metformin and cancer"
    assert top.citation.year == 2012
    assert top.citation.url == "https://pubmed.ncbi.nlm.nih.gov/11/"
    assert top.content == "RESULTS: Metformin users had fewer cancers."
    assert top.mesh_terms == ["Metformin"]
    assert all(e.query == "metformin cancer" for e in items)
    # relevance: RRF score normalised by the best one
    assert top.relevance == 1.0
    assert 0.0 < items[1].relevance < 1.0
    untitled = items[1]
    assert untitled.citation.pmid == "12"
    # no title: one derived from the abstract, marked as derived; the real title stays empty
    assert untitled.citation.title == ""
    assert untitled.citation.derived_title == "Metformin and lactic acidosis risk"
    assert untitled.citation.display_title() == (
        "[derived title] Metformin and lactic acidosis risk"
    )
    assert top.citation.derived_title == ""


async def test_relevance_follows_rrf_scores(source: LocalCorpusSource) -> None:
    hits = source.corpus.search("metformin", 3)
    items = await source.search("metformin", 3)
    assert [e.citation.pmid for e in items] == [h.article.pmid for h in hits]
    for item, hit in zip(items, hits, strict=True):
        assert item.relevance == pytest.approx(hit.score / hits[0].score)
    assert [e.relevance for e in items] == sorted((e.relevance for e in items), reverse=True)


async def test_empty_query_or_zero_limit_gives_nothing(source: LocalCorpusSource) -> None:
    assert await source.search("  ", 5) == []
    assert await source.search("metformin", 0) == []


async def test_empty_corpus_is_a_source_error(tmp_path: Path) -> None:
    empty = LocalCorpusSource(LocalCorpus(tmp_path / "empty", HashingEmbedder()))
    with pytest.raises(SourceError) as err:
        await empty.search("metformin", 5)
    assert err.value.source == "local"
    assert "deepcritical corpus add FILE" in str(err.value)


async def test_parallel_queries_run_off_the_event_loop(source: LocalCorpusSource) -> None:
    queries = ["metformin cancer", "statins elderly", "lactic acidosis"] * 3
    results = await asyncio.gather(*(source.search(q, 1) for q in queries))
    assert [r[0].citation.pmid for r in results] == ["11", "13", "12"] * 3
