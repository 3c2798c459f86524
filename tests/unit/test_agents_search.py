"""SearchAgent: parallel calls, failures recorded, rank fusion, one batch into the store."""

from __future__ import annotations

import asyncio

import pytest

from deepcritical.agents.search import SearchAgent, fuse_ranked
from deepcritical.evidence.store import EvidenceStore
from deepcritical.models import Citation, Evidence, SearchFilters
from deepcritical.sources.base import SourceError
from deepcritical.testing.embedders import HashingEmbedder
from deepcritical.testing.failing_sources import FailingSource, HangingSource

TOPICS = ["metformin", "tau", "amyloid", "insulin", "AMPK", "dementia", "glucose", "neurons"]


def paper(pmid: int, source: str = "pubmed", query: str | None = None) -> Evidence:
    words = " ".join(TOPICS[(pmid + i) % len(TOPICS)] for i in range(4))
    return Evidence(
        content=f"RESULTS: study {pmid} of {words} in cohort {pmid * 7}.",
        citation=Citation(source=source, id=str(pmid), pmid=str(pmid), title=f"Paper {pmid}"),
        query=query,
    )


class ListSource:
    def __init__(self, name: str, pmids_by_query: dict[str, list[int]], delay: float = 0.0):
        self.name = name
        self.pmids = pmids_by_query
        self.delay = delay
        self.calls: list[tuple[str, int]] = []
        self.active = 0
        self.max_active = 0

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        self.calls.append((query, limit))
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        await asyncio.sleep(self.delay)
        self.active -= 1
        return [paper(p, self.name, query) for p in self.pmids.get(query, [])][: limit + 5]


class BuggySource:
    name = "openalex"

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        raise RuntimeError("parser bug at https://x.org/?api_key=SECRET123&q=1")


class FlakySource:
    """Fails on the first query only."""

    name = "trials"

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        if query == "q1":
            raise SourceError("trials", "timeout after 20 s")
        return [paper(900, "trials", query)]


def store() -> EvidenceStore:
    return EvidenceStore(HashingEmbedder(), near_duplicate_threshold=0.999)


async def test_failing_and_buggy_sources_are_recorded_and_the_rest_is_added() -> None:
    pubmed = ListSource("pubmed", {"q1": [1, 2, 3], "q2": [3, 4]}, delay=0.05)
    s = store()
    agent = SearchAgent([pubmed, FailingSource("europepmc"), BuggySource(), FlakySource()], s, 3)
    result = await agent.run(["q1", "q2"])

    assert result.failures == {
        "europepmc": "HTTP 503 after 3 tries",
        "openalex": "RuntimeError: parser bug at https://x.org/?api_key=***&q=1",
    }
    assert result.partial_failures == {"trials": "timeout after 20 s (1 of 2 queries failed)"}
    assert "SECRET123" not in str(result)
    assert result.hits_per_source == {"pubmed": 5, "europepmc": 0, "openalex": 0, "trials": 1}
    assert result.hits_per_query == {"q1": {"pubmed": 3}, "q2": {"pubmed": 2, "trials": 1}}
    assert len(s) == 5  # PMIDs 1, 2, 3, 4, 900; 3 came twice and was merged
    assert sorted(result.added_ids) == sorted(s.ids())
    assert result.merged  # the second copy of PMID 3
    assert sorted(pubmed.calls) == [("q1", 3), ("q2", 3)]
    assert pubmed.max_active == 2  # both queries of the source ran at the same time
    assert "unavailable: europepmc" in result.summary()


async def test_results_are_cut_to_the_limit_and_carry_their_query() -> None:
    source = ListSource("pubmed", {"q": list(range(1, 20))})
    source.pmids["q"] = list(range(1, 20))
    s = store()
    result = await SearchAgent([source], s, 4).run(["q"])
    assert len(result.added_ids) == 4
    assert all(e.query == "q" for e in s.all())


async def test_rank_fusion_puts_papers_found_by_several_queries_first() -> None:
    source = ListSource("pubmed", {"a": [10, 11, 12], "b": [13, 12, 14], "c": [15, 12]})
    s = store()
    result = await SearchAgent([source], s, 5).run(["a", "b", "c"])
    first = s.require(result.added_ids[0])
    assert first.citation.pmid == "12"


def test_fuse_ranked_groups_copies_by_identifier() -> None:
    a = paper(1, "pubmed")
    a_copy = Evidence(
        content="other text",
        citation=Citation(source="europepmc", id="MED/1", pmid="1", doi="10.1/x"),
    )
    b = paper(2)
    fused = fuse_ranked([[b, a], [a_copy]])
    assert fused[0] is a
    assert fused[1] is a_copy
    assert fused[2] is b


async def test_no_queries_or_no_sources_is_an_empty_round() -> None:
    s = store()
    assert (await SearchAgent([], s, 3).run(["q"])).added_ids == []
    assert (await SearchAgent([ListSource("pubmed", {})], s, 3).run([])).added_ids == []


async def test_cancelling_a_round_cancels_the_source_calls() -> None:
    source = HangingSource(seconds=30)
    task = asyncio.create_task(SearchAgent([source], store(), 3).run(["q1", "q2"]))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert source.cancelled == 2  # a cancellation is not swallowed as a "failure"


def test_results_per_query_must_be_positive() -> None:
    with pytest.raises(ValueError, match="results_per_query"):
        SearchAgent([], store(), 0)


class MalformedSource:
    name = "web"

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        return [paper(77, "web", query), "not evidence", None]  # type: ignore[list-item]


class NoneSource:
    name = "local"

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        return None  # type: ignore[return-value]


async def test_malformed_answers_are_recorded_not_fatal() -> None:
    s = store()
    result = await SearchAgent([MalformedSource(), NoneSource()], s, 3).run(["q", "q", " "])
    assert result.queries == ["q"]  # repeats and blanks dropped
    assert len(s) == 1
    assert result.partial_failures == {"web": "returned 2 malformed items"}
    assert result.failures == {"local": "TypeError: 'NoneType' object is not iterable"}
