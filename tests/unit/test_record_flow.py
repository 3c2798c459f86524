"""The flow of records (issue 16): counted by the orchestrator on a real iterative run
(extractive agents, the hashing embedder, two local test sources), adding up from the
records identified to those cited, shown in the report's markdown."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from deepcritical.agents.search import SearchAgent
from deepcritical.config import Settings
from deepcritical.evidence.store import EvidenceStore
from deepcritical.models import (
    Citation,
    Evidence,
    RecordFlow,
    ReportMetadata,
    ResearchReport,
    RunResult,
    SearchFilters,
    flow_lines,
)
from deepcritical.orchestrators.agent_set import build_agents
from deepcritical.orchestrators.deps import RunDeps
from deepcritical.orchestrators.flow import exclusion_cause
from deepcritical.orchestrators.iterative import IterativeOrchestrator
from deepcritical.testing.embedders import HashingEmbedder
from tests.unit.test_screening import HASHING_CALIBRATION, OFF_TOPIC, ON_TOPIC, QUESTION


def pmid_item(pmid: str, text: str) -> Evidence:
    return Evidence(content=text, citation=Citation(source="fake", id=pmid, pmid=pmid))


class Source:
    """Returns ``records`` for every query, under the source name ``name``."""

    def __init__(self, name: str, records: Sequence[Evidence]) -> None:
        self.name = name
        self.records = list(records)

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        return [r.model_copy(deep=True) for r in self.records[:limit]]


def sources() -> list[Source]:
    papers = [pmid_item(str(100 + i), t) for i, t in enumerate(ON_TOPIC + OFF_TOPIC)]
    # the first paper again as a web page: no identifier in common, the same text
    copy = Evidence(
        content=ON_TOPIC[0],
        citation=Citation(source="web", id="w1", url="https://example.org/metformin"),
    )
    return [Source("local", [*papers, copy]), Source("europepmc", papers[:2])]


async def flow_run(max_rounds: int = 2) -> RunResult:
    settings = Settings(
        llm="none", max_rounds=max_rounds, results_per_query=10, sources=["local", "europepmc"]
    )
    embedder = HashingEmbedder()
    store = EvidenceStore(embedder, near_duplicate_threshold=0.999)
    search_sources = sources()
    deps = RunDeps(
        settings=settings,
        agents=build_agents(settings, None, embedder),
        store=store,
        search=SearchAgent(search_sources, store, 10),
        source_names=[s.name for s in search_sources],
        screening=HASHING_CALIBRATION,
    )
    events = [e async for e in IterativeOrchestrator(deps).run(QUESTION)]
    assert events[-1].type == "done", [e.message for e in events]
    assert events[-1].result is not None
    return events[-1].result


async def test_the_flow_of_a_real_run_adds_up_from_identified_to_cited() -> None:
    result = await flow_run()
    report = result.report
    flow = report.metadata.flow
    assert flow is not None
    assert flow.problems() == []
    queries = len(report.metadata.queries)
    assert queries >= 1
    # every query: the local source returns 5 records, Europe PMC 2
    assert flow.identified_per_source == {"local": 5 * queries, "europepmc": 2 * queries}
    assert flow.identified == 7 * queries
    assert flow.near_duplicates == 1  # the web copy of the first paper
    # Europe PMC's two papers, and every record found again by a later query or round
    assert flow.identifier_duplicates == 7 * queries - 1 - 4
    assert flow.beyond_limit == 0
    assert flow.unique == len(result.evidence) == 4
    assert flow.screened == 4
    assert flow.not_screened == 0
    assert flow.excluded == report.metadata.off_topic_excluded == len(OFF_TOPIC)
    assert sum(flow.exclusion_reasons.values()) == len(OFF_TOPIC)
    assert flow.included == len(ON_TOPIC)
    assert flow.relevant + flow.partial == flow.included
    assert 0 < flow.cited == len(report.references) <= flow.included
    # the markdown's section says the same
    markdown = report.to_markdown()
    section = markdown.split("## Flow of records\n", 1)[1].split("\n## ", 1)[0]
    assert f"- Records identified: {flow.identified} (Local corpus {5 * queries}," in section
    assert f"- Unique records: {flow.unique}" in section
    assert f"- Excluded as off-topic: {flow.excluded} (" in section
    assert f"- Included (on-topic): {flow.included}" in section
    assert f"- Cited in the report: {flow.cited}" in section
    assert markdown.index("## Methodology") < markdown.index("## Flow of records")
    assert markdown.index("## Flow of records") < markdown.index("## References")
    # the flow is in the JSON and a stored report reads back with it
    again = ResearchReport.model_validate_json(report.to_json())
    assert again.metadata.flow == flow


async def test_a_max_sources_limit_is_counted_as_not_kept() -> None:
    settings = Settings(
        llm="none", max_rounds=1, max_sources=2, results_per_query=10, sources=["local"]
    )
    embedder = HashingEmbedder()
    store = EvidenceStore(embedder, near_duplicate_threshold=0.999)
    source = sources()[0]
    deps = RunDeps(
        settings=settings,
        agents=build_agents(settings, None, embedder),
        store=store,
        search=SearchAgent([source], store, 10),
        source_names=["local"],
        screening=HASHING_CALIBRATION,
    )
    events = [e async for e in IterativeOrchestrator(deps).run(QUESTION)]
    assert events[-1].result is not None
    flow = events[-1].result.report.metadata.flow
    assert flow is not None
    assert flow.problems() == []
    assert flow.unique == 2
    assert flow.identified == 5 * len(events[-1].result.report.metadata.queries)
    assert flow.beyond_limit > 0  # the least relevant documents, every copy of them
    assert "- Not kept (beyond the maximum number of sources): " in (
        events[-1].result.report.to_markdown()
    )


def test_reports_stored_without_a_flow_still_load_and_render() -> None:
    data = ResearchReport(title="T", research_question="Q?").model_dump(mode="json")
    del data["metadata"]["flow"]
    report = ResearchReport.model_validate(data)
    assert report.metadata.flow is None
    assert "Flow of records" not in report.to_markdown()
    assert ReportMetadata.model_validate({}).flow is None


def test_counts_that_do_not_add_up_are_named() -> None:
    flow = RecordFlow(identified_per_source={"local": 3}, unique=2, screened=2, included=2)
    assert flow.problems() == [
        "identified - duplicates - beyond limit != unique",
        "relevant + partial + not screened != included",
    ]


def test_records_found_by_citation_tracking_join_the_equation_and_the_section() -> None:
    flow = RecordFlow(
        identified_per_source={"pubmed": 4},
        identified_by_citation_tracking=6,
        identifier_duplicates=3,
        beyond_limit=2,
        unique=5,
        screened=5,
        excluded=3,
        exclusion_reasons={"no key concept of the question": 3},
        included=2,
        relevant=2,
    )
    assert flow.problems() == []
    assert "- Records identified through citation tracking: 6" in flow_lines(flow)
    untracked = flow.model_copy(update={"identified_by_citation_tracking": 0})
    assert untracked.problems() == ["identified - duplicates - beyond limit != unique"]
    assert not any("citation tracking" in line for line in flow_lines(untracked))


@pytest.mark.parametrize(
    ("reason", "cause"),
    [
        (
            "off-topic: similarity 0.12 to the question; mentions 0 of 3 key concepts",
            "no key concept of the question",
        ),
        (
            "off-topic: similarity 0.31 to the question; mentions 1 of 3 key concepts (statin)",
            "low similarity to the question",
        ),
        (
            "the search agent did not save it for any question",
            "the search agent did not save it for any question",
        ),
        ("wrong population: children only", "wrong population"),
        ("", "no reason given"),
        ("x" * 200, "x" * 79 + "…"),
    ],
)
def test_exclusions_are_counted_by_their_leading_cause(reason: str, cause: str) -> None:
    assert exclusion_cause(reason) == cause


def test_the_store_counts_every_incoming_copy_once() -> None:
    """A batch bridging two earlier items of the same batch and a stored one: every incoming
    item is either added or counted as a copy folded away."""
    store = EvidenceStore(HashingEmbedder(), near_duplicate_threshold=0.999)
    store.add([pmid_item("2", "Stored first paper about statins and dementia.")])

    def cited(text: str, **ids: str) -> Evidence:
        return Evidence(content=text, citation=Citation(source="fake", id=text[:8], **ids))

    batch = [
        cited("Paper A about metformin.", pmid="1"),
        cited("Paper A as a DOI record.", doi="10.1/a"),
        cited("Bridges both of them.", pmid="1", doi="10.1/a"),
        cited("Bridges to the stored one.", pmid="2", doi="10.1/a"),
        cited("Stored first paper about statins and dementia.", url="https://x.org/s"),
        cited("A new paper on aspirin.", pmid="3"),
    ]
    added = store.add(batch)
    copies = added.identifier_copies + added.near_duplicate_copies
    assert len(added.added) + copies == len(batch)
    assert len(store) == 1 + len(added.added)
