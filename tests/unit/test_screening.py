"""Screening (deepcritical.evidence.screening) and what it does to a run: off-topic records
stay in the store with their reason but never reach the report; a run that finds nothing
on-topic abstains."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from deepcritical.agents.search import SearchAgent
from deepcritical.config import Settings
from deepcritical.events import EvidenceAddedData, ResearchEvent
from deepcritical.evidence.embeddings import DEFAULT_MODEL, SentenceTransformerEmbedder
from deepcritical.evidence.screening import (
    RelevanceCalibration,
    default_calibration,
    screen_items,
)
from deepcritical.evidence.store import EvidenceStore
from deepcritical.models import Citation, Evidence, Passage, RunResult, Screening, SearchFilters
from deepcritical.orchestrators.agent_set import build_agents
from deepcritical.orchestrators.deps import RunDeps
from deepcritical.orchestrators.iterative import IterativeOrchestrator
from deepcritical.testing.embedders import HashingEmbedder
from deepcritical.ui.render import markdown_to_safe_html

QUESTION = "Does metformin reduce colorectal cancer risk in type 2 diabetes?"

ON_TOPIC = [
    "Metformin use was associated with a lower colorectal cancer risk in a cohort of patients "
    "with type 2 diabetes. CONCLUSIONS: metformin reduces colorectal cancer risk in diabetes.",
    "In type 2 diabetes, metformin users had fewer colorectal cancer diagnoses than users of "
    "sulfonylureas; colorectal cancer risk fell with metformin exposure.",
]
OFF_TOPIC = [
    "Cervical myelopathy surgery improved gait and hand function after laminoplasty in elderly "
    "patients followed for two years.",
    "IQ decline in schizophrenia was measured across adolescence in a population register.",
]

# For the hashing test embedder (bag of hashed words), not for all-MiniLM-L6-v2.
HASHING_CALIBRATION = RelevanceCalibration(
    intercept=-5.0,
    similarity_weight=6.0,
    coverage_weight=5.0,
    relevant_at=0.5,
    partial_at=0.2,
    embedding_model="hashing",
)


def item(pmid: str, text: str) -> Evidence:
    return Evidence(content=text, citation=Citation(source="fake", id=pmid, pmid=pmid))


class TopicSource:
    """Returns the same records for every query."""

    name = "local"

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = list(texts)

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        return [item(str(100 + i), t) for i, t in enumerate(self.texts)][:limit]


def test_screening_marks_off_topic_records_with_their_reason() -> None:
    store = EvidenceStore(HashingEmbedder(), near_duplicate_threshold=0.999)
    ids = store.add([item(str(i), t) for i, t in enumerate(ON_TOPIC + OFF_TOPIC)]).added_ids
    results = screen_items(store, QUESTION, ids, HASHING_CALIBRATION)
    status = {store.require(r.evidence_id).content: r.status for r in results}
    assert [status[t] for t in ON_TOPIC] == [Screening.RELEVANT] * 2
    assert [status[t] for t in OFF_TOPIC] == [Screening.OFF_TOPIC] * 2
    for r in results:
        stored = store.require(r.evidence_id)
        assert stored.screening == r.status
        assert stored.relevance == r.relevance
        assert "similarity" in stored.screening_reason
        assert "key concepts" in stored.screening_reason
    on = [r.relevance for r in results if r.status == Screening.RELEVANT]
    off = [r.relevance for r in results if r.status == Screening.OFF_TOPIC]
    assert min(on) > max(off)


def test_a_full_text_is_screened_on_the_passage_that_answers_the_question() -> None:
    abstract = OFF_TOPIC[0]  # the abstract says nothing of the question
    body = ON_TOPIC[0]
    passages = [
        Passage(section=["Methods"], start=0, end=len(OFF_TOPIC[1]), text=OFF_TOPIC[1]),
        Passage(section=["Results"], index=1, start=0, end=len(body), text=body),
    ]
    store = EvidenceStore(HashingEmbedder(), near_duplicate_threshold=0.999)
    ids = store.add([item("1", abstract), item("2", abstract)]).added_ids
    store.update(store.require(ids[1]).model_copy(update={"passages": passages}))
    plain, full = screen_items(store, QUESTION, ids, HASHING_CALIBRATION)
    assert plain.status == Screening.OFF_TOPIC
    assert full.status == Screening.RELEVANT
    assert full.relevance > plain.relevance
    assert "in its full text (Results, paragraph 2)" in full.reason
    assert "in its full text" not in plain.reason


def test_the_shipped_calibration_is_for_all_minilm_and_rises_with_similarity() -> None:
    calibration = default_calibration()
    assert calibration.fits(SentenceTransformerEmbedder(DEFAULT_MODEL))
    assert calibration.fits(SentenceTransformerEmbedder("all-MiniLM-L6-v2"))
    assert not calibration.fits(HashingEmbedder())
    assert 0.0 < calibration.partial_at <= calibration.relevant_at < 1.0
    scores = [calibration.score(s, 0.5) for s in (0.1, 0.4, 0.7, 0.9)]
    assert scores == sorted(scores)
    assert calibration.score(0.9, 1.0) >= calibration.relevant_at > calibration.score(0.1, 0.0)


async def run(
    texts: Sequence[str], calibration: RelevanceCalibration = HASHING_CALIBRATION
) -> tuple[list[ResearchEvent], RunResult]:
    settings = Settings(llm="none", max_rounds=2, results_per_query=10, sources=["local"])
    embedder = HashingEmbedder()
    store = EvidenceStore(embedder, near_duplicate_threshold=0.999)
    deps = RunDeps(
        settings=settings,
        agents=build_agents(settings, None, embedder),
        store=store,
        search=SearchAgent([TopicSource(texts)], store, 10),
        source_names=["local"],
        screening=calibration,
    )
    events = [e async for e in IterativeOrchestrator(deps).run(QUESTION)]
    assert events[-1].type == "done", [e.message for e in events]
    assert events[-1].result is not None
    return events, events[-1].result


async def test_off_topic_records_stay_in_the_store_but_never_reach_the_report() -> None:
    events, result = await run(ON_TOPIC + OFF_TOPIC)
    report = result.report
    screened = {e.content: e for e in result.evidence}
    off_ids = {screened[t].id for t in OFF_TOPIC}
    assert all(screened[t].screening == Screening.OFF_TOPIC for t in OFF_TOPIC)
    assert all(screened[t].screening_reason.startswith("off-topic") for t in OFF_TOPIC)
    assert report.references
    assert not off_ids & {r.evidence_id for r in report.references}
    assert not off_ids & set(report.cited_ids())
    for hypothesis in report.hypotheses_tested:
        assert not off_ids & set(hypothesis.supporting_evidence_ids)
    assert all(not off_ids & set(c.evidence_ids) for c in result.plan.checklist)  # type: ignore[union-attr]
    assert report.metadata.off_topic_excluded == len(OFF_TOPIC)
    added = [e for e in events if e.type == "evidence_added"]
    assert added[0].data_as(EvidenceAddedData).off_topic == len(OFF_TOPIC)
    assert "off-topic record(s) were kept out" in report.methodology
    thin = [lim for lim in report.limitations if lim.startswith("Only 2 sources could be used")]
    assert len(thin) == 1  # n sources, their designs
    assert thin[0].endswith("): the evidence is thin.")
    exported = result.to_json()
    assert '"screening": "off_topic"' in exported


async def test_a_run_that_finds_nothing_on_topic_abstains() -> None:
    events, result = await run(OFF_TOPIC)
    report = result.report
    # one empty round ends an extractive search (issue 13), and nothing counts as covered
    assert report.metadata.iterations == 1
    assert [e.round for e in events if e.type == "searching"] == [1]
    assert report.metadata.checklist_coverage == 0.0
    assert result.plan is not None
    assert {c.status.value for c in result.plan.checklist} == {"unsatisfied"}
    assert "coverage 0%" in report.methodology
    assert "checklist coverage: 0%" in report.to_markdown()
    statement = "The sources searched (Local corpus) hold no evidence that addresses"
    assert report.executive_summary.startswith(statement)
    assert report.references == []
    assert report.cited_ids() == []
    assert report.metadata.verdict is None
    assert report.metadata.stop_reason == "insufficient_evidence"
    assert report.metadata.off_topic_excluded == len(OFF_TOPIC)
    assert statement in report.to_markdown()
    assert statement in report.to_json()
    assert statement in markdown_to_safe_html(report.to_markdown())


async def test_a_run_with_partly_relevant_records_only_says_none_addresses_the_question() -> None:
    """Records that bear on part of the question only answer nothing: the report says no
    record addresses it directly, quotes the closest one and states no verdict."""
    partial_only = dataclasses.replace(HASHING_CALIBRATION, relevant_at=0.99999)
    _, result = await run(ON_TOPIC + OFF_TOPIC, partial_only)
    report = result.report
    screened = {e.content: e for e in result.evidence}
    assert [screened[t].screening for t in ON_TOPIC] == [Screening.PARTIAL] * 2
    closest = max((screened[t] for t in ON_TOPIC), key=lambda e: e.relevance)
    statement = "hold no evidence that addresses this question directly"
    assert statement in report.executive_summary
    assert "2 records that bear on part of it only" in report.executive_summary
    assert [r.evidence_id for r in report.references] == [closest.id]
    assert report.cited_ids() == [closest.id]
    assert [s.heading for s in report.findings] == ["Closest record found"]
    assert report.hypotheses_tested == []
    assert report.metadata.verdict is None
    assert report.metadata.stop_reason == "insufficient_evidence"
    assert statement in report.to_markdown()
    assert statement in markdown_to_safe_html(report.to_markdown())


async def test_the_evidence_table_shows_off_topic_records_greyed_out_with_their_reason() -> None:
    from deepcritical.ui.render import evidence_rows, evidence_table_html

    _, result = await run(ON_TOPIC + OFF_TOPIC)
    rows = evidence_rows(result)
    assert [r.screening for r in rows][-len(OFF_TOPIC) :] == ["off_topic"] * len(OFF_TOPIC)
    table = evidence_table_html(rows)
    assert table.count("dc-off-topic") == len(OFF_TOPIC)
    assert '<td class="dc-screening" title="off-topic: similarity' in table
    # the screening result and the search rank are two columns: an off-topic row shows its
    # reason, never a score beside it that reads as relevance; a kept row its score
    kept = rows[0]
    assert kept.screening in {"relevant", "partial"}
    assert kept.screening_score == kept.relevance
    assert kept.search_rank is not None
    assert f"{kept.screening} · {kept.relevance:.2f}</td>" in table
    by_id = {e.id: e for e in result.evidence}
    assert kept.search_rank == by_id[kept.id].search_rank  # the source's own rank, kept
    for r in rows[-len(OFF_TOPIC) :]:
        assert "off topic · " not in table.split(f'data-id="{r.id}"')[1].split("</tr>")[0]
    assert ">off-topic: similarity" in table
