"""Integrity flags: retraction, expression-of-concern, erratum and correction flags read from
PubMed XML, Europe PMC and OpenAlex, unioned when records merge, kept out of the synthesis
(retracted records) and shown in the report, its JSON and HTML, the evidence table and the
reference exports.

The Europe PMC and OpenAlex replies are small hand-made variants of the real recordings in
``../shared/fixtures/api`` (one record's fields, other ids, titles and abstracts, the flags
set): ``tests/fixtures/europepmc_search_integrity_flags.json`` and
``tests/fixtures/openalex_works_integrity_flags.json``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from deepcritical.agents.search import SearchAgent
from deepcritical.config import Settings
from deepcritical.corpus.readers import read_full_text
from deepcritical.evidence.identifiers import merge_evidence
from deepcritical.evidence.store import EvidenceStore
from deepcritical.formats.jats import jats_to_evidence, parse_jats
from deepcritical.formats.pubmed_xml import (
    PubmedArticle,
    article_to_evidence,
    iter_pubmed_xml,
    parse_pubmed_xml,
)
from deepcritical.formats.references import export_references
from deepcritical.models import (
    ChecklistItem,
    Citation,
    Evidence,
    Hypothesis,
    IntegrityFlag,
    IntegrityKind,
    JudgeAssessment,
    RecordFlow,
    Reference,
    ReportSection,
    ResearchPlan,
    ResearchReport,
    RunResult,
    SearchFilters,
    flag_labels,
    flow_lines,
)
from deepcritical.orchestrators.agent_set import AgentSet
from deepcritical.orchestrators.deps import RunDeps
from deepcritical.orchestrators.iterative import IterativeOrchestrator
from deepcritical.report.sections import add_integrity_section
from deepcritical.report.validation import citation_problems, validate_report
from deepcritical.sources.europepmc import EuropePMCSource, parse_search
from deepcritical.sources.http import HttpOptions
from deepcritical.sources.openalex import OpenAlexSource, parse_works_page
from deepcritical.sources.pubmed import PubMedSource
from deepcritical.testing.embedders import HashingEmbedder
from deepcritical.ui.answer import year_frame
from deepcritical.ui.citation_links import report_html
from deepcritical.ui.evidence_table import SORT_KEYS, sort_rows
from deepcritical.ui.mcp_tool import _from_result
from deepcritical.ui.render import evidence_rows, evidence_table_html
from tests.unit.test_magentic_orchestrator import QUESTION, make, paper, result_of

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RETRACTED_COPY = FIXTURES / "pubmed_retracted_copy_of_22663011.xml"
EPMC_BASE = "https://epmc.test/rest"


def _json(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return data


def _record(pmid: str, *, types: Sequence[str] = (), corrections: str = "") -> str:
    """A PubMed XML record with these publication types and CommentsCorrections entries."""
    pts = "".join(f"<PublicationType>{t}</PublicationType>" for t in ["Journal Article", *types])
    return (
        f"<PubmedArticleSet><PubmedArticle><MedlineCitation><PMID>{pmid}</PMID><Article>"
        "<Journal><Title>Journal of Tests</Title><JournalIssue><PubDate><Year>2020</Year>"
        "</PubDate></JournalIssue></Journal><ArticleTitle>Metformin and outcome</ArticleTitle>"
        "<Abstract><AbstractText>Metformin lowered the outcome.</AbstractText></Abstract>"
        f"<PublicationTypeList>{pts}</PublicationTypeList></Article>"
        f"<CommentsCorrectionsList>{corrections}</CommentsCorrectionsList>"
        "</MedlineCitation></PubmedArticle></PubmedArticleSet>"
    )


def _correction(ref_type: str, source: str, pmid: str) -> str:
    return (
        f'<CommentsCorrections RefType="{ref_type}"><RefSource>{source}</RefSource>'
        f'<PMID Version="1">{pmid}</PMID></CommentsCorrections>'
    )


def _citation(xml: str) -> Citation:
    (article,) = parse_pubmed_xml(xml)
    return article_to_evidence(article).citation


# --------------------------------------------------------------------------- PubMed XML
def test_a_retracted_publication_type_flags_the_record() -> None:
    citation = _citation(_record("1", types=["Retracted Publication"]))
    assert citation.retracted
    assert [(f.kind, f.notice, f.source) for f in citation.integrity_flags] == [
        (IntegrityKind.RETRACTED, "Retracted Publication", "PubMed PublicationType")
    ]


def test_a_retraction_in_relation_flags_the_record_with_its_notice() -> None:
    xml = _record("2", corrections=_correction("RetractionIn", "J Tests. 2021;3:4.", "777"))
    citation = _citation(xml)
    assert citation.retracted
    (flag,) = citation.integrity_flags
    assert flag.notice == "Retraction in: J Tests. 2021;3:4. PMID: 777"
    assert flag.source == "PubMed CommentsCorrections RetractionIn"
    assert "RETRACTED: Retraction in: J Tests. 2021;3:4. PMID: 777" in (citation.format_reference())


@pytest.mark.parametrize(
    ("ref_type", "kind"),
    [
        ("ExpressionOfConcernIn", IntegrityKind.EXPRESSION_OF_CONCERN),
        ("ErratumIn", IntegrityKind.ERRATUM),
        ("RetractionOf", IntegrityKind.RETRACTION_NOTICE),
        ("ErratumFor", IntegrityKind.CORRECTION),
    ],
)
def test_other_relations_flag_without_retracting(ref_type: str, kind: IntegrityKind) -> None:
    citation = _citation(_record("3", corrections=_correction(ref_type, "J X. 2020", "55")))
    assert [f.kind for f in citation.integrity_flags] == [kind]
    assert not citation.retracted


def test_comments_and_cited_works_are_not_flags() -> None:
    corrections = _correction("CommentIn", "J X. 2020", "5") + _correction("Cites", "J Y", "6")
    assert _citation(_record("4", corrections=corrections)).integrity_flags == []


def test_the_real_metric_trial_record_carries_no_flag(api_fixtures: Path) -> None:
    xml = api_fixtures / "ncbi_eutils" / "efetch_pubmed_structured_abstract_22663011.xml"
    (article,) = list(iter_pubmed_xml(xml))
    citation = article_to_evidence(article).citation
    assert citation.integrity_flags == []  # its CommentIn relations are comments, not flags
    assert citation.journal == "The New England journal of medicine"
    assert citation.year == 2012


def test_the_hand_made_retracted_copy_is_flagged_twice() -> None:
    (article,) = list(iter_pubmed_xml(RETRACTED_COPY))
    citation = article_to_evidence(article, source="local").citation
    assert citation.pmid == "99663011"
    assert citation.retracted
    assert flag_labels(citation.integrity_flags) == [
        "RETRACTED: Retracted Publication; Retraction in: N Engl J Med. 2013 Jan 3;368(1):99."
        " PMID: 99663012"
    ]


def test_flags_survive_the_corpus_record_and_old_records_still_load() -> None:
    (article,) = parse_pubmed_xml(
        _record("5", corrections=_correction("RetractionIn", "J Z. 2022", "8"))
    )
    stored = PubmedArticle.model_validate_json(article.model_dump_json())
    assert stored.integrity_flags == article.integrity_flags
    old = json.loads(article.model_dump_json())
    del old["integrity_flags"]  # a record stored before flags were read
    assert PubmedArticle.model_validate(old).integrity_flags == []
    # a JSONL record with its publication types only is flagged on the way out
    jsonl = PubmedArticle(pmid="6", title="t", publication_types=["Retracted Publication"])
    assert article_to_evidence(jsonl, source="local").citation.retracted


# --------------------------------------------------------------------------- Europe PMC, OpenAlex
def test_europe_pmc_pub_types_give_flags() -> None:
    items, _ = parse_search(_json("europepmc_search_integrity_flags.json"))
    by_pmid = {e.citation.pmid: e.citation for e in items}
    assert by_pmid["99100001"].retracted
    assert by_pmid["99100001"].integrity_flags[0].source == "Europe PMC pubTypeList"
    concern = by_pmid["99100002"]
    assert [f.kind for f in concern.integrity_flags] == [IntegrityKind.EXPRESSION_OF_CONCERN]
    assert not concern.retracted
    assert by_pmid["99100003"].integrity_flags == []


def test_openalex_is_retracted_citation_count_and_venue() -> None:
    page = parse_works_page(_json("openalex_works_integrity_flags.json"))
    retracted, other = (w.evidence.citation for w in page.works)
    assert retracted.retracted
    assert retracted.integrity_flags[0].source == "OpenAlex is_retracted"
    assert not other.retracted
    assert other.integrity_flags == []
    assert (retracted.cited_by_count, other.cited_by_count) == (57, 236)
    assert other.journal == "Nature Machine Intelligence"  # primary_location.source
    assert other.year == 2024
    assert json.loads(other.model_dump_json())["cited_by_count"] == 236


# --------------------------------------------------------------------------- merging
def _flagged(source: str, kind: IntegrityKind, count: int | None = None) -> Evidence:
    flag = IntegrityFlag(kind=kind, notice=f"{source} says so", source=source)
    return Evidence(
        content="Metformin lowered the outcome in a cohort.",
        citation=Citation(
            source=source,
            id="123",
            pmid="123",
            title="Metformin cohort",
            integrity_flags=[flag],
            cited_by_count=count,
        ),
    )


def test_merging_keeps_every_flag_and_the_larger_citation_count() -> None:
    plain = Evidence(
        content="Metformin lowered the outcome.",
        citation=Citation(source="pubmed", id="123", pmid="123", title="Metformin cohort"),
    )
    merged = merge_evidence(plain, _flagged("openalex", IntegrityKind.RETRACTED, 12))
    assert merged.citation.retracted
    assert merged.citation.cited_by_count == 12
    again = merge_evidence(merged, _flagged("europepmc", IntegrityKind.ERRATUM, 3))
    assert [f.source for f in again.citation.integrity_flags] == ["openalex", "europepmc"]
    assert again.citation.cited_by_count == 12
    assert merge_evidence(again, again).citation.integrity_flags == again.citation.integrity_flags


def test_the_store_merges_a_flagged_copy_into_an_unflagged_record() -> None:
    store = EvidenceStore(HashingEmbedder())
    store.add(
        [
            Evidence(
                content="Metformin lowered the outcome.",
                citation=Citation(source="pubmed", id="123", pmid="123", title="Metformin"),
            )
        ]
    )
    store.add([_flagged("europepmc", IntegrityKind.RETRACTED)])
    (item,) = store.all()
    assert item.citation.retracted
    assert item.sources == ["pubmed", "europepmc"]


# --------------------------------------------------------------------------- report
def _item(n: int, flags: Sequence[IntegrityFlag] = ()) -> Evidence:
    return Evidence(
        id=f"E{n}",
        content=f"RESULTS: Metformin lowered outcome {n} in adults.",
        citation=Citation(
            source="pubmed",
            id=str(n),
            pmid=str(n),
            title=f"Metformin study <b>{n}</b>",
            integrity_flags=list(flags),
        ),
    )


RETRACTION = IntegrityFlag(
    kind=IntegrityKind.RETRACTED,
    notice="Retraction in: J X. 2020;1:2. <script>x</script> PMID: 9",
    source="PubMed CommentsCorrections RetractionIn",
)
CONCERN = IntegrityFlag(
    kind=IntegrityKind.EXPRESSION_OF_CONCERN,
    notice="Expression of concern in: J Y. 2021. PMID: 10",
    source="PubMed CommentsCorrections ExpressionOfConcernIn",
)


def test_validation_removes_a_citation_of_a_retracted_record() -> None:
    evidence = {"E1": _item(1, [RETRACTION]), "E2": _item(2, [CONCERN]), "E3": _item(3)}
    draft = ResearchReport(
        title="t",
        research_question="q",
        executive_summary="Metformin works [E1]. It also lowers outcome 2 [E2, E1].",
        hypotheses_tested=[
            Hypothesis(statement="Metformin works", supporting_evidence_ids=["E1", "E3"])
        ],
        references=[Reference(evidence_id="E1", citation=evidence["E1"].citation)],
    )
    problems = citation_problems(draft, evidence)
    assert "reference E1 is a retracted record (never cited as support)" in problems
    assert any("hypothesis 1 supporting id E1 is a retracted record" in p for p in problems)
    report = validate_report(draft, evidence)
    assert citation_problems(report, evidence) == []
    assert report.executive_summary == "It also lowers outcome 2 [E2]."
    assert report.hypotheses_tested[0].supporting_evidence_ids == ["E3"]
    assert [r.evidence_id for r in report.references] == ["E2", "E3"]
    assert report.metadata.citation_validation.removed_reference_ids == ["E1"]


def test_the_flagged_section_lists_the_retracted_record_and_the_cited_flagged_one() -> None:
    evidence = {"E2": _item(2, [CONCERN]), "E3": _item(3)}
    draft = ResearchReport(
        title="t", research_question="q", executive_summary="Lower outcome [E2]; and [E3]."
    )
    report = add_integrity_section(validate_report(draft, evidence), [_item(1, [RETRACTION])])
    assert [(f.evidence_id, f.cited) for f in report.flagged_records] == [
        ("E1", False),
        ("E2", True),
    ]
    markdown = report.to_markdown()
    section = markdown.split("## Retracted or flagged records found", 1)[1].split("## ", 1)[0]
    assert "[RETRACTED: Retraction in: J X. 2020;1:2." in section
    assert "PMID: 1." in section
    assert "*(not cited)*" in section
    assert "*(cited as [1])*" in section
    references = markdown.split("## References", 1)[1]
    assert "**[Expression of concern: Expression of concern in: J Y. 2021. PMID: 10]**" in (
        references
    )
    assert "PMID: 1." not in references  # the retracted record is not a reference
    data = json.loads(report.to_json())
    assert data["flagged_records"][0]["citation"]["integrity_flags"][0]["kind"] == "retracted"
    assert data["references"][0]["citation"]["integrity_flags"][0]["kind"] == (
        "expression_of_concern"
    )


# --------------------------------------------------------------------------- a whole run
class _Planner:
    async def plan(self, question: str, context: str | None = None) -> ResearchPlan:
        return ResearchPlan(
            question=question,
            refined_question=question,
            checklist=[ChecklistItem(key="effect", description="metformin colorectal cancer")],
            queries=["metformin colorectal cancer"],
        )


class _Queries:
    async def queries(self, plan: ResearchPlan, *args: object) -> list[str]:
        return ["metformin colorectal cancer"]


class _Seen:
    """Agents that record the evidence ids they are given."""

    def __init__(self) -> None:
        self.ids: dict[str, set[str]] = {"hypotheses": set(), "judge": set(), "writer": set()}

    async def hypothesize(
        self, plan: ResearchPlan, evidence: Sequence[Evidence], previous: Sequence[Hypothesis]
    ) -> list[Hypothesis]:
        self.ids["hypotheses"].update(e.id for e in evidence)
        return [
            Hypothesis(
                statement="Metformin lowers colorectal cancer risk.",
                supporting_evidence_ids=[e.id for e in evidence],
            )
        ]

    async def assess(
        self,
        plan: ResearchPlan,
        evidence: Sequence[Evidence],
        hypotheses: Sequence[Hypothesis],
        round_no: int,
        total_evidence: int,
    ) -> JudgeAssessment:
        self.ids["judge"].update(e.id for e in evidence)
        return JudgeAssessment(sufficient=True, recommendation="synthesize", coverage=1.0)

    async def write(
        self,
        plan: ResearchPlan,
        evidence: Sequence[Evidence],
        hypotheses: Sequence[Hypothesis],
        assessment: JudgeAssessment | None,
    ) -> ResearchReport:
        self.ids["writer"].update(e.id for e in evidence)
        # also cites E1..E3 by name, as a writer that saw the store might
        sentences = " ".join(f"Metformin finding {i} [E{i}]." for i in range(1, 4))
        return ResearchReport(
            title="Report",
            research_question=plan.question,
            executive_summary=sentences,
            findings=[ReportSection(heading="Effect", content=sentences)],
            conclusion="Done.",
        )


async def _run(source: object, seen: _Seen) -> tuple[RunResult, set[str]]:
    """A one-round iterative run on ``source`` with the recording agents ``seen``: its result
    (checked to cite, hypothesise on and feed to the roles no retracted record) and the ids of
    its retracted records."""
    settings = Settings(max_rounds=1, results_per_query=3, sources=["europepmc"], grounding=False)
    store = EvidenceStore(HashingEmbedder(), near_duplicate_threshold=0.999)
    deps = RunDeps(
        settings=settings,
        agents=AgentSet(
            planner=_Planner(),
            queries=_Queries(),
            hypotheses=seen,
            judge=seen,
            writer=seen,
        ),
        store=store,
        search=SearchAgent([source], store, settings.results_per_query),  # type: ignore[list-item]
        source_names=[source.name],  # type: ignore[attr-defined]
    )
    events = [e async for e in IterativeOrchestrator(deps).run("Does metformin help?")]
    assert events[-1].type == "done", [e.message for e in events if e.type != "done"]
    result = events[-1].result
    assert result is not None
    retracted = {e.id for e in store.all() if e.citation.retracted}
    assert len(retracted) == 1
    for role, ids in seen.ids.items():
        assert ids, role
        assert not ids & retracted, role
    report = result.report
    cited = set(report.cited_ids()) | {r.evidence_id for r in report.references}
    assert cited
    assert not cited & retracted
    for h in report.hypotheses_tested:
        assert not set(h.supporting_evidence_ids + h.contradicting_evidence_ids) & retracted
    assert report.metadata.verdict == "yes"  # from the record left, not the retracted one
    return result, retracted


@respx.mock
async def test_an_openalex_retraction_never_reaches_the_synthesis() -> None:
    respx.get("https://openalex.test/works").mock(
        return_value=httpx.Response(200, json=_json("openalex_works_integrity_flags.json"))
    )
    async with httpx.AsyncClient() as client:
        source = OpenAlexSource(
            client, base_url="https://openalex.test", http=HttpOptions(requests_per_second=1000.0)
        )
        result, retracted = await _run(source, _Seen())
    report = result.report
    assert [(f.evidence_id in retracted, f.cited) for f in report.flagged_records] == [
        (True, False)
    ]
    markdown = report.to_markdown()
    assert "[RETRACTED: OpenAlex marks this work as retracted]** *(not cited)*" in markdown
    assert "retracted cohort study" not in markdown.split("## Retracted or flagged", 1)[0]
    assert "RETRACTED: OpenAlex marks this work as retracted" in report_html(result)
    (row,) = [r for r in evidence_rows(result) if r.retracted]
    assert row.cited_by == 57
    data = json.loads(result.model_dump_json())
    assert {e["citation"]["cited_by_count"] for e in data["evidence"]} == {57, 236}


@respx.mock
async def test_a_run_never_lets_a_retracted_record_reach_the_synthesis() -> None:
    respx.get(f"{EPMC_BASE}/search").mock(
        return_value=httpx.Response(200, json=_json("europepmc_search_integrity_flags.json"))
    )
    async with httpx.AsyncClient() as client:
        source = EuropePMCSource(
            client,
            base_url=EPMC_BASE,
            http=HttpOptions(requests_per_second=1000.0, timeout_seconds=5.0),
        )
        result, retracted = await _run(source, _Seen())
    report = result.report
    assert [(f.evidence_id in retracted, f.cited) for f in report.flagged_records] == [
        (True, False),
        (False, True),  # the expression of concern, cited with its flag
    ]
    flow = report.metadata.flow
    assert flow is not None
    assert flow.retracted == 1
    assert flow.problems() == []
    assert "Excluded as retracted: 1" in report.to_markdown()
    assert year_frame(result)["records"].sum() == flow.included  # the answer tab's chart
    assert "Integrity: 1 on-topic record(s) marked as retracted" in report.methodology
    _check_displays(result, retracted.pop())


def _check_displays(result: RunResult, retracted_id: str) -> None:
    """The web app's report and evidence table, and the exports, show the flags."""
    page = report_html(result)
    assert "Retracted or flagged records found" in page
    assert "RETRACTED: Retracted Publication" in page
    assert "Expression of concern" in page
    rows = evidence_rows(result)
    (row,) = [r for r in rows if r.id == retracted_id]
    assert row.retracted
    assert row.flags == ["RETRACTED: Retracted Publication"]
    table = evidence_table_html(rows)
    assert 'class="dc-evidence-row dc-retracted"' in table
    assert '<span class="dc-flag dc-flag-retracted" title="RETRACTED: Retracted Publication">' in (
        table
    )
    assert "dc-flag-other" in table
    assert sort_rows(rows, "Flags", descending=True)[0].id == retracted_id
    assert SORT_KEYS["Flags"](row) is not None
    mcp = _from_result("trace", result)
    assert [s.flags for s in mcp.sources if s.flags] == [
        ["Expression of concern: Expression of Concern"]
    ]
    assert "Retracted or flagged records found" in mcp.answer
    ris = export_references(result, "ris", "evidence")
    assert "N1  - Integrity flag: RETRACTED: Retracted Publication" in ris
    bibtex = export_references(result, "bibtex", "references")
    assert "Integrity flag: Expression of concern" in bibtex


def test_the_flow_counts_retracted_records_apart() -> None:
    flow = RecordFlow(
        identified_per_source={"pubmed": 4},
        unique=4,
        screened=4,
        excluded=1,
        exclusion_reasons={"low similarity to the question": 1},
        included=2,
        relevant=3,  # the retracted record was screened relevant
        retracted=1,
    )
    assert flow.problems() == []
    assert "- Excluded as retracted: 1" in flow_lines(flow)
    assert (
        "- Included (on-topic): 2 (3 relevant, 0 partly relevant; less 1 excluded as retracted)"
        in (flow_lines(flow))
    )
    assert RecordFlow(**{**flow.model_dump(exclude={"identified"}), "retracted": 0}).problems()


def test_an_escaped_notice_in_the_evidence_table() -> None:
    result = RunResult(
        report=ResearchReport(title="t", research_question="q"),
        evidence=[_item(1, [RETRACTION])],
    )
    table = evidence_table_html(evidence_rows(result))
    assert "<script>x</script>" not in table
    assert "&lt;script&gt;x&lt;/script&gt;" in table


class _RetractingSource:
    """Returns ``limit`` fresh papers per call, the first of each call retracted."""

    name = "fake"

    def __init__(self) -> None:
        self.calls = 0

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        self.calls += 1
        papers = [paper(100 * self.calls + i, query) for i in range(1, limit + 1)]
        first = papers[0].citation
        first.title = f"Retracted study {first.pmid}"
        first.integrity_flags = [RETRACTION]
        return papers


async def test_the_magentic_orchestrator_keeps_retracted_records_out_too() -> None:
    orch, store, _, roles = make(sources=[_RetractingSource()])
    events = [e async for e in orch.run(QUESTION)]
    result = result_of(events)
    retracted = {e.id for e in store.all() if e.citation.retracted}
    assert retracted
    report = result.report
    assert not {r.evidence_id for r in report.references} & retracted
    assert {f.evidence_id for f in report.flagged_records} == retracted
    assert result.plan is not None
    assert not {i for c in result.plan.checklist for i in c.evidence_ids} & retracted
    assert all(not store.require(i).checklist_keys for i in retracted)
    # the roles that synthesise never read a retracted record; the screener may
    for role in ("hypothesis", "judge", "writer.outline", "writer.section", "writer.summary"):
        assert roles.prompts[role], role
        assert not any("Retracted study" in p for p in roles.prompts[role]), role
    assert any("Retracted study" in p for p in roles.prompts["screener"])


# --------------------------------------------------------------------------- JATS
def _jats(article_type: str, related: str = "") -> str:
    return (
        f'<article xmlns:xlink="http://www.w3.org/1999/xlink" article-type="{article_type}">'
        '<front><article-meta><article-id pub-id-type="pmid">4242</article-id>'
        "<title-group><article-title>Metformin trial</article-title></title-group>"
        f"{related}<abstract><p>Metformin lowered the outcome.</p></abstract>"
        "</article-meta></front><body><p>Body text.</p></body></article>"
    )


def test_a_jats_retraction_forward_link_flags_the_article(tmp_path: Path) -> None:
    related = (
        '<related-article related-article-type="retraction-forward" ext-link-type="doi" '
        'xlink:href="10.1/retraction"/>'
    )
    path = tmp_path / "article.nxml"
    path.write_text(_jats("research-article", related), encoding="utf-8")
    record, passages = read_full_text(path)
    assert passages
    assert [(f.kind, f.notice, f.source) for f in record.integrity_flags] == [
        (
            IntegrityKind.RETRACTED,
            "Retraction in: doi 10.1/retraction",
            "JATS related-article retraction-forward",
        )
    ]
    assert article_to_evidence(record, source="local").citation.retracted
    assert jats_to_evidence(parse_jats(path.read_bytes())).citation.retracted


def test_a_jats_retraction_notice_is_flagged_as_a_notice() -> None:
    related = (
        '<related-article related-article-type="retracted-article">Smith J. 2019</related-article>'
    )
    article = parse_jats(_jats("retraction", related).encode())
    assert [(f.kind, f.notice) for f in article.integrity_flags] == [
        (IntegrityKind.RETRACTION_NOTICE, "article type: retraction"),
        (IntegrityKind.RETRACTION_NOTICE, "Retraction of: Smith J. 2019"),
    ]
    assert not jats_to_evidence(article).citation.retracted


def test_real_jats_articles_carry_no_flag(jats_dir: Path) -> None:
    for path in sorted(jats_dir.glob("*.nxml")):
        assert parse_jats(path.read_bytes()).integrity_flags == [], path.name


@respx.mock
async def test_the_pubmed_source_flags_a_retracted_record() -> None:
    eutils = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils"
    esearch = {
        "header": {"type": "esearch", "version": "0.3"},
        "esearchresult": {"count": "1", "retmax": "1", "retstart": "0", "idlist": ["99663011"]},
    }
    respx.get(f"{eutils}/esearch.fcgi").mock(return_value=httpx.Response(200, json=esearch))
    respx.get(f"{eutils}/efetch.fcgi").mock(
        return_value=httpx.Response(200, content=RETRACTED_COPY.read_bytes())
    )
    async with httpx.AsyncClient() as client:
        source = PubMedSource(
            client, http=HttpOptions(requests_per_second=1000.0, backoff_seconds=0.01)
        )
        (item,) = await source.search("trametinib melanoma", 5)
    assert item.citation.source == "pubmed"
    assert item.citation.retracted
    assert "Retracted Publication" in item.publication_types
