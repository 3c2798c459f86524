"""Citation tracking's parts: NCBI elink answers (JSON, ``linksets[].linksetdbs[].links``),
the OpenAlex lookups (a work by DOI or PMID, ``referenced_works``, ``ids.openalex:`` and
``cites:`` filters), the JATS reference list of a full text, the seeds and the budgets."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import respx

from deepcritical.config import Settings
from deepcritical.models import Citation, Evidence, Screening
from deepcritical.orchestrators.citation_tracking import (
    choose_candidates,
    citation_seeds,
    follow_citations,
    per_seed_limit,
)
from deepcritical.sources.base import SourceError
from deepcritical.sources.citation_graph import (
    CitationGraph,
    CitationLinks,
    CitationSeed,
    Direction,
)
from deepcritical.sources.factory import build_citation_graph
from deepcritical.sources.http import HttpOptions
from deepcritical.sources.openalex import OpenAlexSource
from deepcritical.sources.pubmed import PubMedSource, parse_elink
from deepcritical.testing.embedders import HashingEmbedder

EUTILS = "https://eutils.test/entrez/eutils"
OPENALEX = "https://openalex.test"
SEED_PMID = "22663011"
SEED_DOI = "10.1056/nejmoa1203421"


def _elink(pmid: str, *linksets: tuple[str, list[str]]) -> dict[str, Any]:
    """An elink JSON answer as NCBI sends it (``retmode=json``)."""
    linkset: dict[str, Any] = {"dbfrom": "pubmed", "ids": [pmid]}
    if linksets:
        linkset["linksetdbs"] = [
            {"dbto": "pubmed", "linkname": name, "links": links} for name, links in linksets
        ]
    return {"header": {"type": "elink", "version": "0.3"}, "linksets": [linkset]}


def _pubmed_xml(*records: tuple[str, str]) -> bytes:
    """An efetch answer holding ``(PMID, title)`` records with a one-sentence abstract."""
    articles = "".join(
        f"<PubmedArticle><MedlineCitation><PMID Version='1'>{pmid}</PMID><Article>"
        f"<ArticleTitle>{title}</ArticleTitle><Abstract><AbstractText>{title} was studied."
        "</AbstractText></Abstract></Article></MedlineCitation><PubmedData><ArticleIdList>"
        f"<ArticleId IdType='pubmed'>{pmid}</ArticleId></ArticleIdList></PubmedData>"
        "</PubmedArticle>"
        for pmid, title in records
    )
    return f"<?xml version='1.0'?><PubmedArticleSet>{articles}</PubmedArticleSet>".encode()


def _work(work_id: str, title: str, doi: str | None = None) -> dict[str, Any]:
    """An OpenAlex work object (the fields the source selects)."""
    return {
        "id": f"https://openalex.org/{work_id}",
        "doi": f"https://doi.org/{doi}" if doi else None,
        "title": title,
        "publication_year": 2020,
        "ids": {"openalex": f"https://openalex.org/{work_id}"},
        "abstract_inverted_index": {w: [i] for i, w in enumerate(f"{title} abstract".split())},
    }


def _page(*works: dict[str, Any]) -> dict[str, Any]:
    return {"meta": {"count": len(works), "page": 1}, "results": list(works), "group_by": []}


def _graph(
    client: httpx.AsyncClient, *, pubmed: bool = True, openalex: bool = True
) -> CitationGraph:
    http = HttpOptions(timeout_seconds=5.0, tries=1, backoff_seconds=0.001, requests_per_second=100)
    return CitationGraph(
        pubmed=PubMedSource(client, base_url=EUTILS, http=http) if pubmed else None,
        openalex=OpenAlexSource(
            client,
            base_url=OPENALEX,
            mailto="lab@example.org",
            http=http,
        )
        if openalex
        else None,
    )


SEED = CitationSeed(evidence_id="E1", pmid=SEED_PMID, doi=SEED_DOI)


def test_elink_json_is_read_by_link_name() -> None:
    answer = _elink(
        SEED_PMID,
        ("pubmed_pubmed_citedin", ["38000001", "37000002"]),
        ("pubmed_pubmed_refs", ["21639808", "20818844", "21639808"]),
    )
    assert parse_elink(answer, "pubmed_pubmed_refs") == ["21639808", "20818844"]
    assert parse_elink(answer, "pubmed_pubmed_citedin") == ["38000001", "37000002"]
    assert parse_elink(_elink(SEED_PMID), "pubmed_pubmed_refs") == []
    with pytest.raises(SourceError, match="elink error: Invalid linkname"):
        parse_elink({"ERROR": "Invalid linkname"}, "pubmed_pubmed_x")
    with pytest.raises(SourceError, match="malformed elink JSON"):
        parse_elink(["not", "an", "object"], "pubmed_pubmed_refs")


@respx.mock
async def test_backward_references_from_openalex_and_pubmed() -> None:
    lookup = respx.get(f"{OPENALEX}/works/doi:{SEED_DOI}").mock(
        return_value=httpx.Response(
            200,
            json={
                "id": "https://openalex.org/W2",
                "referenced_works": ["https://openalex.org/W10", "https://openalex.org/W11"],
            },
        )
    )
    by_filter = {
        "ids.openalex:W10|W11": _page(_work("W10", "BRAF signalling")),
        "doi:10.1/ref": _page(_work("W12", "JATS reference", "10.1/ref")),
    }
    works = respx.get(f"{OPENALEX}/works").mock(
        side_effect=lambda request: httpx.Response(
            200, json=by_filter[request.url.params["filter"]]
        )
    )
    elink = respx.get(f"{EUTILS}/elink.fcgi").mock(
        return_value=httpx.Response(
            200, json=_elink(SEED_PMID, ("pubmed_pubmed_refs", ["111", "222"]))
        )
    )
    efetch = respx.get(f"{EUTILS}/efetch.fcgi").mock(
        return_value=httpx.Response(200, content=_pubmed_xml(("111", "MEK"), ("333", "JATS")))
    )
    seed = SEED.model_copy(update={"references": ["pmid:333", "doi:10.1/ref"]})
    async with httpx.AsyncClient() as client:
        found = await _graph(client).links(seed, "references", 10)

    assert found.failures == []
    assert [(e.citation.id, e.found_by) for e in found.items] == [
        ("W10", f"cited by PMID {SEED_PMID}"),
        ("W12", f"cited by PMID {SEED_PMID}"),
        ("111", f"cited by PMID {SEED_PMID}"),
        ("333", f"cited by PMID {SEED_PMID}"),
    ]
    assert [e.relevance for e in found.items] == [1.0, 0.5, 1.0, 0.5]
    assert dict(lookup.calls[0].request.url.params)["select"] == "id,referenced_works"
    filters = [dict(c.request.url.params)["filter"] for c in works.calls]
    assert filters == ["ids.openalex:W10|W11", "doi:10.1/ref"]
    assert dict(works.calls[0].request.url.params)["mailto"] == "lab@example.org"
    params = dict(elink.calls[0].request.url.params)
    assert {k: params[k] for k in ("dbfrom", "db", "linkname", "id", "retmode")} == {
        "dbfrom": "pubmed",
        "db": "pubmed",
        "linkname": "pubmed_pubmed_refs",
        "id": SEED_PMID,
        "retmode": "json",
    }
    # the JATS reference list's PMID joins elink's; PMIDs efetch does not return are left out
    assert dict(efetch.calls[0].request.url.params)["id"] == "111,222,333"


@respx.mock
async def test_forward_citations_and_a_work_openalex_does_not_hold() -> None:
    respx.get(f"{OPENALEX}/works/pmid:{SEED_PMID}").mock(
        return_value=httpx.Response(404, text="<html>Not found</html>")
    )
    elink = respx.get(f"{EUTILS}/elink.fcgi").mock(
        return_value=httpx.Response(200, json=_elink(SEED_PMID, ("pubmed_pubmed_citedin", ["444"])))
    )
    respx.get(f"{EUTILS}/efetch.fcgi").mock(
        return_value=httpx.Response(200, content=_pubmed_xml(("444", "Trametinib follow-up")))
    )
    seed = CitationSeed(evidence_id="E1", pmid=SEED_PMID)
    async with httpx.AsyncClient() as client:
        found = await _graph(client).links(seed, "citing", 5)
    assert found.failures == []
    assert [(e.citation.pmid, e.found_by) for e in found.items] == [
        ("444", f"cites PMID {SEED_PMID}")
    ]
    assert dict(elink.calls[0].request.url.params)["linkname"] == "pubmed_pubmed_citedin"


@respx.mock
async def test_openalex_cites_filter_and_one_lookup_for_both_directions() -> None:
    lookup = respx.get(f"{OPENALEX}/works/doi:{SEED_DOI}").mock(
        return_value=httpx.Response(200, json={"id": "https://openalex.org/W2"})
    )
    works = respx.get(f"{OPENALEX}/works").mock(
        return_value=httpx.Response(200, json=_page(_work("W30", "Citing", "10.1/c")))
    )
    async with httpx.AsyncClient() as client:
        graph = _graph(client, pubmed=False)
        lists, failures = await follow_citations(graph, [SEED], 3)
    assert failures == []
    assert lookup.call_count == 1
    params = dict(works.calls[0].request.url.params)
    assert params["filter"] == "cites:W2"
    assert params["sort"] == "cited_by_count:desc"
    assert params["per_page"] == "3"
    assert [[e.citation.id for e in x] for x in lists] == [["W30"]]


@respx.mock
async def test_a_failing_service_is_named_and_the_other_answers() -> None:
    respx.get(f"{OPENALEX}/works/doi:{SEED_DOI}").mock(return_value=httpx.Response(500))
    respx.get(f"{EUTILS}/elink.fcgi").mock(
        return_value=httpx.Response(200, json=_elink(SEED_PMID, ("pubmed_pubmed_refs", ["111"])))
    )
    respx.get(f"{EUTILS}/efetch.fcgi").mock(
        return_value=httpx.Response(200, content=_pubmed_xml(("111", "MEK")))
    )
    async with httpx.AsyncClient() as client:
        found = await _graph(client).links(SEED, "references", 5)
    assert [e.citation.pmid for e in found.items] == ["111"]
    (failure,) = found.failures
    assert failure.startswith("OpenAlex: HTTP 500")


def _item(eid: str, relevance: float, **ids: str) -> Evidence:
    citation = Citation(source="pubmed", id=ids.get("pmid") or eid, **ids)
    return Evidence(id=eid, content=f"text {eid}", citation=citation, relevance=relevance)


def test_seeds_are_the_most_relevant_records_with_a_pmid_or_doi() -> None:
    items = [
        _item("E1", 0.4, pmid="1"),
        _item("E2", 0.9),  # neither PMID nor DOI: cannot be followed
        _item("E3", 0.8, doi="10.1/a"),
        _item("E4", 0.8, pmid="4"),
    ]
    seeds = citation_seeds(items, {"E3": ["pmid:9"]}, 2)
    assert [(s.evidence_id, s.label, s.references) for s in seeds] == [
        ("E3", "doi:10.1/a", ["pmid:9"]),
        ("E4", "PMID 4", []),
    ]
    assert citation_seeds(items, {}, 0) == []
    assert per_seed_limit(50, 5) == 10
    assert per_seed_limit(50, 3) == 17
    assert per_seed_limit(2, 5) == 1


class _Linker:
    """A linker answering from a table; counts the lookups."""

    def __init__(self, table: dict[tuple[str, Direction], list[Evidence]]) -> None:
        self.table = table
        self.asked: list[tuple[str, Direction, int]] = []

    async def links(self, seed: CitationSeed, direction: Direction, limit: int) -> CitationLinks:
        self.asked.append((seed.evidence_id, direction, limit))
        return CitationLinks(items=self.table.get((seed.evidence_id, direction), [])[:limit])


async def test_candidates_found_already_are_folded_and_the_cap_keeps_the_most_relevant() -> None:
    from deepcritical.evidence.store import EvidenceStore

    store = EvidenceStore(HashingEmbedder())
    store.add([_item("", 0.9, pmid="1")])
    a, b = _item("", 0.5, pmid="1"), _item("", 0.5, pmid="2")
    on_topic = Evidence(
        content="metformin dementia risk in diabetes",
        citation=Citation(source="pubmed", id="3", pmid="3"),
    )
    off_topic = Evidence(
        content="sea bream sperm cryopreservation",
        citation=Citation(source="pubmed", id="4", pmid="4"),
    )
    linker = _Linker({("E1", "references"): [a, b, off_topic], ("E1", "citing"): [on_topic]})
    seed = CitationSeed(evidence_id="E1", pmid="1")
    lists, _ = await follow_citations(linker, [seed], 7)
    assert sorted(linker.asked) == [("E1", "citing", 7), ("E1", "references", 7)]
    known, chosen, beyond = choose_candidates(
        lists, store, ["metformin and dementia"], store.embedder, 1
    )
    assert [e.citation.pmid for e in known] == ["1"]
    assert [e.citation.pmid for e in chosen] == ["3"]
    assert beyond == 2


async def test_the_graph_is_built_only_for_pubmed_or_openalex_and_a_budget() -> None:
    async with httpx.AsyncClient() as client:
        _check_built(client)


def _check_built(client: httpx.AsyncClient) -> None:
    both = build_citation_graph(Settings(_env_file=None, sources=["pubmed", "openalex"]), client)
    assert both is not None
    assert both.pubmed is not None
    assert both.openalex is not None
    only = build_citation_graph(Settings(_env_file=None, sources=["openalex", "trials"]), client)
    assert only is not None
    assert only.pubmed is None
    assert build_citation_graph(Settings(_env_file=None, sources=["local"]), client) is None
    assert build_citation_graph(Settings(_env_file=None, sources=["europepmc"]), client) is None
    no_seeds = Settings(_env_file=None, sources=["pubmed"], citation_seeds=0)
    no_candidates = Settings(_env_file=None, sources=["pubmed"], citation_candidates=0)
    assert build_citation_graph(no_seeds, client) is None
    assert build_citation_graph(no_candidates, client) is None
    assert json.loads(json.dumps(both.roots)) == [
        "https://eutils.ncbi.nlm.nih.gov/entrez/eutils",
        "https://api.openalex.org",
    ]


class _FailingLinker(_Linker):
    """A linker whose OpenAlex side fails for the references direction."""

    async def links(self, seed: CitationSeed, direction: Direction, limit: int) -> CitationLinks:
        found = await super().links(seed, direction, limit)
        if direction == "references":
            found.failures.append("OpenAlex: HTTP 503")
        return found


async def test_a_run_tracks_citations_once_screens_them_and_counts_them() -> None:
    from deepcritical.agents.search import SearchAgent
    from deepcritical.evidence.store import EvidenceStore
    from deepcritical.orchestrators.agent_set import build_agents
    from deepcritical.orchestrators.deps import RunDeps
    from deepcritical.orchestrators.iterative import IterativeOrchestrator
    from tests.unit.test_record_flow import Source, pmid_item
    from tests.unit.test_screening import HASHING_CALIBRATION, OFF_TOPIC, ON_TOPIC, QUESTION

    papers = [pmid_item("100", ON_TOPIC[0]), pmid_item("101", OFF_TOPIC[0])]
    citing = pmid_item("200", ON_TOPIC[1]).model_copy(update={"found_by": "cites PMID 100"})
    unrelated = pmid_item("201", OFF_TOPIC[1]).model_copy(update={"found_by": "cited by PMID 100"})
    again = pmid_item("101", OFF_TOPIC[0]).model_copy(update={"found_by": "cited by PMID 100"})
    linker = _FailingLinker({("E1", "references"): [again, unrelated], ("E1", "citing"): [citing]})
    settings = Settings(
        _env_file=None, llm="none", max_rounds=2, results_per_query=10, sources=["pubmed"]
    )
    embedder = HashingEmbedder()
    store = EvidenceStore(embedder, near_duplicate_threshold=0.999)
    deps = RunDeps(
        settings=settings,
        agents=build_agents(settings, None, embedder),
        store=store,
        search=SearchAgent([Source("pubmed", papers)], store, 10),
        source_names=["pubmed"],
        screening=HASHING_CALIBRATION,
        citations=linker,
    )
    events = [e async for e in IterativeOrchestrator(deps).run(QUESTION)]
    result = events[-1].result
    assert result is not None, [e.message for e in events]

    assert len(linker.asked) == 2  # once per run, both directions of the one seed
    by_pmid = {e.citation.pmid: e for e in result.evidence}
    assert by_pmid["200"].found_by == "cites PMID 100"
    assert by_pmid["200"].screening != Screening.OFF_TOPIC
    assert by_pmid["201"].screening == Screening.OFF_TOPIC
    assert by_pmid["101"].found_by == ""  # found by the search first: one record
    assert len(result.evidence) == 4
    flow = result.report.metadata.flow
    assert flow is not None
    assert flow.problems() == []
    assert flow.identified_by_citation_tracking == 3
    warnings = [e.message for e in events if e.type == "warning"]
    assert "citation tracking partly failed: PMID 100: OpenAlex: HTTP 503" in warnings
    line = next(
        p for p in result.report.methodology.split("\n\n") if p.startswith("Citation tracking")
    )
    assert "3 record(s) found, 1 already found by the searches" in line
    assert "2 new record(s) added and screened like search results: 1 on-topic, 1 off-topic" in line
    assert "Lookups that failed: PMID 100: OpenAlex: HTTP 503." in line
