"""Every source's items are bounded (issue 13 item 5): at most ``max_evidence_chars`` of
content and title, no control characters, also from a corpus imported before the import
limit."""

from __future__ import annotations

from pathlib import Path

import httpx

from deepcritical.config import Settings
from deepcritical.corpus.index import LocalCorpus
from deepcritical.formats.pubmed_xml import AbstractSection, PubmedArticle
from deepcritical.models import Citation, Evidence, SearchFilters
from deepcritical.sources.bounded import BoundedSource, bound_evidence
from deepcritical.sources.factory import build_sources
from deepcritical.sources.local import LocalCorpusSource
from deepcritical.testing.embedders import HashingEmbedder

SENTENCE = "Metformin was associated with a lower incidence of colorectal cancer. "


def item(content: str, title: str = "A title") -> Evidence:
    return Evidence(content=content, citation=Citation(source="fake", id="1", title=title))


class HugeSource:
    """Returns one item of 5 MB with a NUL in it."""

    name = "fake"

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        return [item("Lower\x00 risk. " + SENTENCE * 70_000, title="T\x00" + "t" * 3000)]


def test_a_small_clean_item_is_the_same_object() -> None:
    small = item(SENTENCE)
    assert bound_evidence(small, 1000) is small


def test_content_and_title_are_cut_at_a_boundary_and_cleaned() -> None:
    bounded = bound_evidence(item("Lower\x00 risk. " + SENTENCE * 100, "T\x00itle"), 1000)
    assert len(bounded.content) <= 1000
    assert bounded.content.startswith("Lower risk. Metformin")
    assert bounded.content.endswith("cancer.")
    assert bounded.citation.title == "Title"


async def test_a_bounded_source_bounds_what_its_source_returns() -> None:
    source = BoundedSource(HugeSource(), 10_000)
    assert source.name == "fake"
    [found] = await source.search("metformin", 5)
    assert len(found.content) <= 10_000
    assert len(found.citation.title) <= 10_000
    assert "\x00" not in found.content + found.citation.title


def test_a_run_keeps_20k_characters_of_an_item_by_default() -> None:
    assert Settings(_env_file=None).max_evidence_chars == 20_000


async def test_every_built_source_is_bounded_by_the_setting(tmp_path: Path) -> None:
    corpus = LocalCorpus(tmp_path / "corpus", HashingEmbedder())
    corpus.add_articles([PubmedArticle(pmid="1", title="Metformin and cancer")])
    settings = Settings(
        sources=["local", "pubmed", "web"],
        corpus_dir=tmp_path / "corpus",
        max_evidence_chars=5000,
        _env_file=None,
    )
    async with httpx.AsyncClient() as client:
        sources = build_sources(settings, client, HashingEmbedder())
    assert [s.name for s in sources] == ["local", "pubmed", "web"]
    assert all(isinstance(s, BoundedSource) and s.max_chars == 5000 for s in sources)


async def test_an_oversized_record_of_an_old_corpus_is_bounded_when_found(tmp_path: Path) -> None:
    """A corpus imported before the import limit may hold a 5 MB record: the local source
    bounds it before deriving its title or handing it to the run."""
    corpus = LocalCorpus(tmp_path / "corpus", HashingEmbedder())
    huge = PubmedArticle(
        pmid="7", abstract_sections=[AbstractSection(label="RESULTS", text=SENTENCE * 70_000)]
    )
    assert corpus.add_articles([huge], max_record_chars=10_000_000).truncated == 0
    [found] = await LocalCorpusSource(corpus, max_chars=20_000).search("metformin", 3)
    assert len(found.content) <= 20_000
    assert found.content.endswith("cancer.")
    assert found.citation.derived_title
