"""Full texts and citation lookups are cached in the call cache: a resumed or repeated run
does not fetch them again; failures are not cached."""

from __future__ import annotations

import pytest

from deepcritical.models import Citation, Evidence, Passage
from deepcritical.sources.base import SourceError
from deepcritical.sources.citation_graph import CitationLinks, CitationSeed, Direction
from deepcritical.sources.fulltext import FullText
from deepcritical.state.cache import CachedCitations, CachedFullText, CallCache
from deepcritical.state.run_store import RunStore


class CountingReader:
    roots = ("http://127.0.0.1:9/epmc", "http://127.0.0.1:9/eutils")

    def __init__(self) -> None:
        self.calls = 0
        self.fail = False

    async def fetch(self, pmcid: str) -> FullText:
        self.calls += 1
        if self.fail:
            raise SourceError("fulltext", "Europe PMC: HTTP 503; PMC: HTTP 503")
        passage = Passage(section=["Results"], index=3, start=0, end=9, text="Body text")
        return FullText(pmcid=pmcid, via="europepmc", passages=[passage], abstract="Abstract.")


async def test_full_texts_are_fetched_once_and_failures_are_not_cached(runs: RunStore) -> None:
    cache = CallCache(runs)
    reader = CountingReader()
    first = await CachedFullText(reader, cache).fetch("PMC1")
    resumed = CachedFullText(reader, cache)
    again = await resumed.fetch("PMC1")
    assert reader.calls == 1
    assert resumed.live_calls == 0
    assert again == first
    assert again.passages[0].locator() == "Results, paragraph 4"
    assert cache.stats["fulltext"] == {"hits": 1, "misses": 1}
    reader.fail = True
    for _ in range(2):
        with pytest.raises(SourceError, match="HTTP 503"):
            await resumed.fetch("PMC2")
    assert reader.calls == 3


class CountingLinker:
    roots = ("http://127.0.0.1:9/eutils", "http://127.0.0.1:9/openalex")

    def __init__(self) -> None:
        self.calls = 0
        self.failing = False

    async def links(self, seed: CitationSeed, direction: Direction, limit: int) -> CitationLinks:
        self.calls += 1
        item = Evidence(
            content="A citing paper.",
            citation=Citation(source="pubmed", id="444", pmid="444"),
            found_by=f"cites {seed.label}",
        )
        failures = ["OpenAlex: HTTP 503"] if self.failing else []
        return CitationLinks(items=[item], failures=failures)


async def test_citations_are_followed_once_and_partial_failures_are_not_cached(
    runs: RunStore,
) -> None:
    cache = CallCache(runs)
    linker = CountingLinker()
    seed = CitationSeed(evidence_id="E1", pmid="22663011")
    first = await CachedCitations(linker, cache).links(seed, "citing", 10)
    resumed = CachedCitations(linker, cache)
    again = await resumed.links(seed, "citing", 10)
    assert linker.calls == 1
    assert resumed.live_calls == 0
    assert again == first
    assert again.items[0].found_by == "cites PMID 22663011"
    await resumed.links(seed, "references", 10)  # another direction is another lookup
    assert linker.calls == 2
    linker.failing = True
    for _ in range(2):
        answer = await resumed.links(seed, "citing", 5)
        assert answer.failures == ["OpenAlex: HTTP 503"]
    assert linker.calls == 4
