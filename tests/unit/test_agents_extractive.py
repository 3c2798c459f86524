"""Extractive agents on real PubMedQA abstracts: planner, queries, checklist assignment,
hypothesis, judge and the verbatim report."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from deepcritical.agents.checklist import assign_to_checklist
from deepcritical.agents.hypothesis import ExtractiveHypothesisGenerator, extractive_confidence
from deepcritical.agents.judge import ExtractiveJudge
from deepcritical.agents.planner import ExtractivePlanner
from deepcritical.agents.queries import ExtractiveQueryGenerator
from deepcritical.evidence.store import EvidenceStore
from deepcritical.models import (
    PICO,
    ChecklistItem,
    ChecklistStatus,
    Citation,
    Evidence,
    JudgeAssessment,
    QuestionType,
    ResearchPlan,
    marker_ids,
)
from deepcritical.report.validation import citation_problems, validate_report
from deepcritical.testing.embedders import HashingEmbedder
from deepcritical.writing.extractive import (
    EXTRACTIVE_NOTE,
    OTHER_HEADING,
    ExtractiveReportWriter,
)

QUESTION = "Does pretreatment with statins improve clinical outcome after stroke?"
STROKE = ["11340218", "21881325", "10173769", "10548670", "10375486", "10456814", "9616411"]
UNRELATED = ["1571683", "2224269"]  # vaccine storage; patients' first names


def load(pubmedqa_dir: Path, pmids: list[str]) -> list[Evidence]:
    rows = {}
    with (pubmedqa_dir / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row["pmid"] in pmids:
                rows[row["pmid"]] = row
    items = []
    for pmid in pmids:
        row = rows[pmid]
        content = "\n".join(
            f"{s['label']}: {s['text']}" if s.get("label") else s["text"]
            for s in row["abstract_sections"]
        )
        items.append(
            Evidence(
                content=content,
                citation=Citation(source="local", id=pmid, pmid=pmid, year=row.get("year")),
                mesh_terms=row.get("mesh_terms", []),
            )
        )
    return items


@pytest.fixture
def abstracts(pubmedqa_dir: Path) -> list[Evidence]:
    return load(pubmedqa_dir, STROKE + UNRELATED)


def stored(items: list[Evidence], embedder: object) -> EvidenceStore:
    store = EvidenceStore(embedder, near_duplicate_threshold=0.999)  # type: ignore[arg-type]
    store.add(items)
    return store


QUOTE = re.compile(r"(.*?) \[(E\d+)\]([.!?]?)(?=\s|$)\s*", re.DOTALL)


def quotes(text: str) -> list[tuple[str, str]]:
    """(sentence without its marker, evidence id) of every quote in an extractive text."""
    out = []
    for paragraph in text.split("\n\n"):
        consumed = ""
        for m in QUOTE.finditer(paragraph):
            out.append((m.group(1).strip() + m.group(3), m.group(2)))
            consumed += m.group(0)
        assert consumed.strip() == paragraph.strip(), f"unquoted text in {paragraph!r}"
    return out


# --------------------------------------------------------------------------- planner
async def test_extractive_planner_gives_a_typed_checklist_with_key_terms() -> None:
    plan = await ExtractivePlanner().plan(
        "Can metformin be repurposed for Alzheimer's disease in patients with type 2 diabetes?"
    )
    assert plan.key_terms == ["metformin", "Alzheimer's disease", "type 2 diabetes"]
    assert plan.question_type == QuestionType.REPURPOSING
    assert plan.pico == PICO(
        population="patients with type 2 diabetes",
        intervention="metformin",
        outcome="Alzheimer's disease",
    )
    assert [c.key for c in plan.checklist] == ["rationale", "preclinical", "clinical", "safety"]
    for item in plan.checklist:
        assert "metformin" in item.description
    for item in plan.checklist[:3]:
        assert "Alzheimer's disease" in item.description
    assert "patients with type 2 diabetes" in plan.checklist[3].description
    assert plan.queries == [plan.question, "metformin Alzheimer's disease type 2 diabetes"]
    assert plan.refined_question == plan.question


@pytest.mark.parametrize(
    ("question", "terms"),
    [
        (
            "Does SGLT2 inhibition reduce heart failure hospitalisation?",
            ["SGLT2 inhibition", "heart failure hospitalisation"],
        ),
        (
            "Does IL-6 blockade with tocilizumab improve survival in COVID-19?",
            ["IL-6 blockade", "tocilizumab", "survival", "COVID-19"],
        ),
        (
            "Is laparoscopic cholecystectomy safe in elderly patients?",
            ["laparoscopic cholecystectomy", "elderly"],
        ),
    ],
)
async def test_key_terms_keep_acronyms_and_phrases(question: str, terms: list[str]) -> None:
    assert (await ExtractivePlanner().plan(question)).key_terms == terms


# --------------------------------------------------------------------------- queries
async def test_extractive_queries_round_one_then_unsatisfied_items_never_repeating() -> None:
    plan = await ExtractivePlanner().plan(QUESTION)
    gen = ExtractiveQueryGenerator()
    first = await gen.queries(plan, None, 1, 4, [])
    assert first[:2] == plan.queries
    tried = list(plan.queries)
    plan.checklist[0].status = ChecklistStatus.SATISFIED
    judge = JudgeAssessment(next_queries=["statins stroke outcome cohort"])
    second = await gen.queries(plan, judge, 2, 3, tried)
    assert second[0] == "statins stroke outcome cohort"
    assert len(second) == 3
    assert not {q.lower() for q in second} & {q.lower() for q in tried}
    # the first unsatisfied item (harms of the intervention) gets its own facets
    assert any("adverse" in q.lower() or "harms" in q.lower() for q in second)
    # keep asking: eventually nothing new is left, and [] is returned
    seen = tried + second
    for round_no in range(3, 40):
        new = await gen.queries(plan, judge, round_no, 4, seen)
        assert not set(new) & set(seen)
        if not new:
            break
        seen += new
    else:
        pytest.fail("the extractive query generator never ran out of queries")


# --------------------------------------------------------------------------- checklist
class TopicEmbedder:
    """Counts of a few topic stems, L2-normalised: similarities a test can reason about."""

    TOPICS = ("statin", "stroke", "fibrillation", "vaccin")
    dimension = len(TOPICS) + 1

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            low = text.lower()
            for j, topic in enumerate(self.TOPICS):
                out[i, j] = low.count(topic)
            if not out[i].any():
                out[i, -1] = 1.0
            out[i] /= np.linalg.norm(out[i])
        return out


def test_checklist_assignment_by_description_gated_by_the_question(
    abstracts: list[Evidence],
) -> None:
    plan = ResearchPlan(
        question=QUESTION,
        refined_question="statin pretreatment and stroke outcome",
        checklist=[
            ChecklistItem(key="stroke", description="statin use and stroke", min_evidence=1),
            ChecklistItem(key="af", description="statin and atrial fibrillation", min_evidence=2),
            ChecklistItem(key="vaccines", description="vaccine storage", min_evidence=1),
        ],
    )
    store = stored(abstracts, TopicEmbedder())
    ids = store.ids()
    pmid = {i: store.require(i).citation.pmid for i in ids}
    assign_to_checklist(plan, store, ids, threshold=0.6)
    stroke, af, vaccines = plan.checklist
    assert "11340218" in {pmid[i] for i in stroke.evidence_ids}
    assert stroke.status == ChecklistStatus.SATISFIED
    assert {pmid[i] for i in af.evidence_ids} == {"21881325"}  # the CABG / AF study
    assert af.status == ChecklistStatus.PARTIAL  # 1 of 2
    # the vaccine abstract matches its description but is off the question: not assigned
    assert vaccines.evidence_ids == []
    assert vaccines.status == ChecklistStatus.UNSATISFIED
    assert "af" in store.require(af.evidence_ids[0]).checklist_keys
    assert all("vaccines" not in store.require(i).checklist_keys for i in ids)
    # idempotent, and ids outside the store are ignored
    before = [list(c.evidence_ids) for c in plan.checklist]
    assign_to_checklist(plan, store, [*ids, "E999"], threshold=0.6)
    assert [c.evidence_ids for c in plan.checklist] == before
    # with the question gate off, the vaccine abstract does answer its item
    assign_to_checklist(plan, store, ids, threshold=0.6, question_threshold=-1.0)
    assert {pmid[i] for i in vaccines.evidence_ids} == {"1571683"}
    # a threshold nobody reaches assigns nothing
    fresh = plan.model_copy(deep=True)
    for c in fresh.checklist:
        c.evidence_ids.clear()
    assign_to_checklist(fresh, store, ids, threshold=1.01)
    assert all(c.status == ChecklistStatus.UNSATISFIED for c in fresh.checklist)


@pytest.mark.slow
async def test_checklist_assignment_with_minilm_on_real_abstracts(
    abstracts: list[Evidence], minilm_embedder: object
) -> None:
    store = stored(abstracts, minilm_embedder)
    plan = await ExtractivePlanner().plan(QUESTION)
    assign_to_checklist(plan, store, store.ids(), threshold=0.35)
    assigned = {i for c in plan.checklist for i in c.evidence_ids}
    pmids = {store.require(i).citation.pmid for i in assigned}
    assert "11340218" in pmids
    assert not pmids & set(UNRELATED)
    assert plan.checklist[0].status != ChecklistStatus.UNSATISFIED


# --------------------------------------------------------------------------- hypothesis
@pytest.mark.slow
async def test_extractive_hypothesis_reads_support_and_contradiction(
    abstracts: list[Evidence], minilm_embedder: object
) -> None:
    positive = Evidence(
        content=(
            "BACKGROUND: Statins may protect the brain.\n"
            "CONCLUSIONS: Statin pretreatment was associated with better functional outcome "
            "after ischaemic stroke."
        ),
        citation=Citation(source="pubmed", id="900001", pmid="900001"),
    )
    negative = Evidence(
        content=(
            "CONCLUSIONS: Pretreatment with statins did not improve clinical outcome after "
            "acute stroke."
        ),
        citation=Citation(source="pubmed", id="900002", pmid="900002"),
    )
    store = stored([*abstracts, positive, negative], minilm_embedder)
    plan = await ExtractivePlanner().plan(QUESTION)
    gen = ExtractiveHypothesisGenerator(minilm_embedder)  # type: ignore[arg-type]
    [h] = await gen.hypothesize(plan, store.all(), [])
    by_pmid = {e.citation.pmid: e.id for e in store.all()}
    assert h.statement == "Pretreatment with statins improves clinical outcome after stroke."
    assert h.drug == "pretreatment with statins"
    assert by_pmid["900001"] in h.supporting_evidence_ids
    assert by_pmid["900002"] in h.contradicting_evidence_ids
    unrelated = {by_pmid[p] for p in UNRELATED}
    assert not unrelated & set(h.supporting_evidence_ids + h.contradicting_evidence_ids)
    s, c = len(h.supporting_evidence_ids), len(h.contradicting_evidence_ids)
    assert h.confidence == pytest.approx(extractive_confidence(s, c))
    assert 0 < h.confidence < 1


def test_extractive_confidence_is_tempered_by_count() -> None:
    assert extractive_confidence(0, 0) == 0.0
    assert extractive_confidence(1, 0) < extractive_confidence(5, 0) < 1.0
    assert extractive_confidence(3, 3) < extractive_confidence(3, 0)


async def test_extractive_hypothesis_with_no_relevant_evidence_is_empty(
    abstracts: list[Evidence],
) -> None:
    store = stored(abstracts, HashingEmbedder())
    plan = await ExtractivePlanner().plan("Does quantum chromodynamics explain gluon spin?")
    gen = ExtractiveHypothesisGenerator(HashingEmbedder(), relevance_threshold=0.5)
    assert await gen.hypothesize(plan, store.all(), []) == []


# --------------------------------------------------------------------------- judge
def judged_plan(statuses: list[ChecklistStatus]) -> ResearchPlan:
    return ResearchPlan(
        question=QUESTION,
        refined_question=QUESTION,
        checklist=[
            ChecklistItem(key=f"k{i}", description=f"statins stroke aspect {i}", status=s)
            for i, s in enumerate(statuses)
        ],
        key_terms=["statins", "stroke"],
    )


S, P, U = ChecklistStatus.SATISFIED, ChecklistStatus.PARTIAL, ChecklistStatus.UNSATISFIED


@pytest.mark.parametrize(
    ("statuses", "total", "sufficient"),
    [
        ([S, S, S], 1, True),  # full coverage is enough whatever the count
        ([S, S, U], 10, True),  # 0.67 coverage with enough items
        ([S, S, U], 9, False),  # ... but not with too few
        ([S, P, U], 50, False),  # 0.5 coverage is never enough
        ([U, U, U], 100, False),
    ],
)
async def test_extractive_judge_sufficiency(
    statuses: list[ChecklistStatus], total: int, sufficient: bool
) -> None:
    plan = judged_plan(statuses)
    direct = [
        Evidence(
            id=f"E{i}",
            content=f"Statins lowered the risk of stroke in cohort {i}.",
            citation=Citation(source="local", id=str(i)),
        )
        for i in (1, 2)
    ]
    a = await ExtractiveJudge(min_total_evidence=10).assess(plan, direct, [], 2, total)
    assert a.sufficient is sufficient
    assert a.recommendation == ("synthesize" if sufficient else "continue")
    assert a.coverage == pytest.approx(plan.coverage(), abs=1e-3)
    assert f"coverage {plan.coverage():.0%}" in a.reasoning
    assert f"{total} evidence items" in a.reasoning
    assert bool(a.next_queries) is (not sufficient)
    assert all("statins stroke" in q for q in a.next_queries)


async def test_extractive_judge_scores_from_counts(abstracts: list[Evidence]) -> None:
    store = stored(abstracts, HashingEmbedder())
    a = await ExtractiveJudge().assess(judged_plan([S, U, U]), store.all(), [], 1, len(store))
    assert 0 < a.clinical_evidence_score <= 10
    assert a.clinical_evidence_score % 2 == 0
    assert f"clinical score {a.clinical_evidence_score}/10" in a.reasoning
    empty = await ExtractiveJudge().assess(judged_plan([S, U, U]), [], [], 1, 0)
    assert empty.clinical_evidence_score == 0
    assert empty.mechanism_score == 0


# --------------------------------------------------------------------------- report
@pytest.mark.slow
async def test_extractive_report_quotes_verbatim_and_cites_every_finding(
    abstracts: list[Evidence], minilm_embedder: object
) -> None:
    store = stored(abstracts, minilm_embedder)
    plan = await ExtractivePlanner().plan(QUESTION)
    assign_to_checklist(plan, store, store.ids(), 0.35)
    hyps = await ExtractiveHypothesisGenerator(minilm_embedder).hypothesize(  # type: ignore[arg-type]
        plan, store.all(), []
    )
    writer = ExtractiveReportWriter(minilm_embedder)  # type: ignore[arg-type]
    report = await writer.write(plan, store.all(), hyps, None)
    by_id = {e.id: e for e in store.all()}

    finding_texts = [s.content for s in report.findings] + [report.executive_summary]
    all_quotes = [q for text in finding_texts for q in quotes(text)]
    assert all_quotes
    for sentence, eid in all_quotes:
        assert sentence in by_id[eid].content, (eid, sentence)
    # the conclusion is quotes plus the fixed extractive statement
    assert report.conclusion.endswith(EXTRACTIVE_NOTE)
    for sentence, eid in quotes(report.conclusion.removesuffix(EXTRACTIVE_NOTE).strip()):
        assert sentence in by_id[eid].content
    # the executive summary: three quotes from three different items, best first
    summary_ids = [eid for _, eid in quotes(report.executive_summary)]
    assert len(summary_ids) == 3 == len(set(summary_ids))
    target = next(e.id for e in store.all() if e.citation.pmid == "11340218")
    assert target in summary_ids
    # the unrelated abstracts are not quoted
    unrelated = {e.id for e in store.all() if e.citation.pmid in UNRELATED}
    assert not unrelated & set(report.cited_ids())
    assert any("left out" in lim for lim in report.limitations)
    # references are exactly the cited items, with their own citations
    assert [r.evidence_id for r in report.references] == report.cited_ids()
    assert all(r.citation == by_id[r.evidence_id].citation for r in report.references)
    assert report.hypotheses_tested == hyps
    # the extractive checklist is generic: findings are grouped by study design
    assert report.findings
    assert all(s.heading != plan.checklist[0].description for s in report.findings)
    # validation has nothing to remove
    validated = validate_report(report, by_id)
    assert citation_problems(validated, by_id) == []
    cv = validated.metadata.citation_validation
    assert (cv.markers_removed, cv.sentences_removed, cv.references_removed) == (0, 0, 0)


async def test_extractive_report_groups_by_checklist_for_specific_plans(
    abstracts: list[Evidence],
) -> None:
    embedder = HashingEmbedder()
    store = stored(abstracts, embedder)
    plan = ResearchPlan(
        question=QUESTION,
        refined_question=QUESTION,
        checklist=[
            ChecklistItem(key="stroke_outcome", description="statins and outcome after stroke"),
            ChecklistItem(key="atrial_fibrillation", description="statins and atrial fibrillation"),
            ChecklistItem(key="never", description="something nobody wrote about"),
        ],
    )
    assign_to_checklist(plan, store, store.ids(), 0.2)
    writer = ExtractiveReportWriter(embedder, min_similarity=0.05, relative_to_best=0.0)
    report = await writer.write(plan, store.all(), [], None)
    headings = [s.heading for s in report.findings]
    assert headings[-1] == OTHER_HEADING or plan.checklist[0].description in headings
    assert "something nobody wrote about" not in headings
    assert any(
        "No evidence was found for the checklist item: something nobody" in x
        for x in report.limitations
    )
    for section in report.findings:
        for sentence, eid in quotes(section.content):
            assert sentence in store.require(eid).content
            if section.heading != OTHER_HEADING:
                key = next(c.key for c in plan.checklist if c.description == section.heading)
                assert key in store.require(eid).checklist_keys
    assert set(marker_ids(" ".join(report.texts()))) <= set(store.ids())


async def test_extractive_report_without_evidence_cites_nothing() -> None:
    plan = await ExtractivePlanner().plan(QUESTION)
    report = await ExtractiveReportWriter(HashingEmbedder()).write(plan, [], [], None)
    assert report.references == []
    assert report.cited_ids() == []
    assert report.findings == []


async def test_extractive_judge_needs_evidence_on_the_whole_question() -> None:
    """Full checklist coverage by neighbouring topics is not enough: the items must mention
    the question's key terms."""
    plan = judged_plan([S, S, S])
    off_topic = [
        Evidence(
            id=f"E{i}",
            content="Statins lowered LDL cholesterol.",
            citation=Citation(source="local", id=str(i)),
        )
        for i in (1, 2, 3)
    ]
    a = await ExtractiveJudge(min_total_evidence=1).assess(plan, off_topic, [], 1, 3)
    assert a.sufficient is False
    assert "mention the question's key terms" in a.reasoning
    assert a.next_queries[0] == "statins stroke"
