"""Fetching open-access full texts (Europe PMC fullTextXML, PMC efetch db=pmc) and choosing
which items of a run to read, within its budget."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
import respx

from deepcritical.config import Settings
from deepcritical.evidence.identifiers import merge_evidence
from deepcritical.formats.jats import read_jats
from deepcritical.models import (
    ChecklistItem,
    ChecklistStatus,
    Citation,
    Evidence,
    Passage,
    ResearchPlan,
)
from deepcritical.orchestrators.full_texts import (
    FullTextLog,
    full_text_candidates,
    read_full_texts,
)
from deepcritical.report.drafts import gap_limitations
from deepcritical.sources.base import SourceError
from deepcritical.sources.europepmc import result_to_evidence
from deepcritical.sources.factory import build_full_text
from deepcritical.sources.fulltext import FullText, FullTextFetcher
from deepcritical.sources.http import HttpOptions

EPMC = "https://epmc.test/rest"
EUTILS = "https://eutils.test/entrez/eutils"
PMCID = "PMC3585041"  # pntd.0002065.nxml
KEY = "sekret-ncbi-key-123"


def _article_bytes(jats_dir: Path) -> bytes:
    return (jats_dir / "pntd.0002065.nxml").read_bytes()


def _wrapped(data: bytes) -> bytes:
    """The article as efetch db=pmc sends it: inside <pmc-articleset>, without prologue."""
    body = data[data.index(b"<article") :]
    return b'<?xml version="1.0" ?>\n<pmc-articleset>' + body + b"</pmc-articleset>"


def _fetcher(
    client: httpx.AsyncClient,
    *,
    api_key: str | None = None,
    email: str | None = None,
    max_chars: int = 200_000,
) -> FullTextFetcher:
    return FullTextFetcher(
        client,
        europepmc_url=EPMC,
        eutils_url=EUTILS,
        api_key=api_key,
        email=email,
        max_chars=max_chars,
        http=HttpOptions(tries=1, timeout_seconds=5.0),
    )


@respx.mock
async def test_europepmc_full_text_is_parsed_into_passages(jats_dir: Path) -> None:
    data = _article_bytes(jats_dir)
    route = respx.get(f"{EPMC}/{PMCID}/fullTextXML").mock(
        return_value=httpx.Response(200, content=data)
    )
    async with httpx.AsyncClient() as client:
        text = await _fetcher(client).fetch("pmc3585041")
    assert route.call_count == 1
    assert text.via == "europepmc"
    assert text.pmcid == PMCID
    expected = read_jats(jats_dir / "pntd.0002065.nxml").passages()
    assert text.passages == expected
    assert text.abstract.startswith("Rift Valley fever")
    assert text.dropped == 0


@respx.mock
async def test_pmc_efetch_is_asked_when_europepmc_has_no_full_text(jats_dir: Path) -> None:
    respx.get(f"{EPMC}/{PMCID}/fullTextXML").mock(return_value=httpx.Response(404))
    efetch = respx.get(f"{EUTILS}/efetch.fcgi").mock(
        return_value=httpx.Response(200, content=_wrapped(_article_bytes(jats_dir)))
    )
    async with httpx.AsyncClient() as client:
        text = await _fetcher(client, api_key=KEY, email="lab@example.org").fetch(PMCID)
    assert text.via == "pmc"
    assert len(text.passages) == len(read_jats(jats_dir / "pntd.0002065.nxml").passages())
    params = dict(efetch.calls[0].request.url.params)
    assert params == {
        "db": "pmc",
        "id": "3585041",
        "retmode": "xml",
        "tool": "deepcritical",
        "email": "lab@example.org",
        "api_key": KEY,
    }


@respx.mock
async def test_an_article_outside_the_open_access_subset_fails_with_both_reasons() -> None:
    respx.get(f"{EPMC}/{PMCID}/fullTextXML").mock(return_value=httpx.Response(500))
    front_only = (
        b"<pmc-articleset><article><front><article-meta>"
        b'<article-id pub-id-type="pmc">3585041</article-id>'
        b"<title-group><article-title>T</article-title></title-group>"
        b"</article-meta></front></article></pmc-articleset>"
    )
    respx.get(f"{EUTILS}/efetch.fcgi").mock(return_value=httpx.Response(200, content=front_only))
    async with httpx.AsyncClient() as client:
        fetcher = _fetcher(client, api_key=KEY)
        with pytest.raises(SourceError) as caught:
            await fetcher.fetch(PMCID)
    reason = caught.value.reason
    assert reason.startswith("Europe PMC: HTTP 500")
    assert "PMC: the article XML has no body (not in the open-access subset)" in reason
    assert KEY not in reason
    assert KEY not in repr(fetcher)


@respx.mock
async def test_hostile_and_mismatched_answers_are_refused() -> None:
    bomb = b'<!DOCTYPE article [<!ENTITY a "aaaa">]><article><body><p>&a;</p></body></article>'
    respx.get(f"{EPMC}/{PMCID}/fullTextXML").mock(return_value=httpx.Response(200, content=bomb))
    other = (
        b'<article><front><article-meta><article-id pub-id-type="pmc">PMC1</article-id>'
        b"</article-meta></front><body><p>Text.</p></body></article>"
    )
    respx.get(f"{EUTILS}/efetch.fcgi").mock(return_value=httpx.Response(200, content=other))
    async with httpx.AsyncClient() as client:
        with pytest.raises(SourceError) as caught:
            await _fetcher(client).fetch(PMCID)
    assert "unreadable article XML: the DOCTYPE declares entities" in caught.value.reason
    assert "the answer is article PMC1" in caught.value.reason


async def test_a_value_that_is_not_a_pmcid_is_refused_without_a_request() -> None:
    async with httpx.AsyncClient() as client:
        with pytest.raises(SourceError, match="is not a PMCID"):
            await _fetcher(client).fetch("10.1000/x")


@respx.mock
async def test_passages_are_bounded_to_max_chars(jats_dir: Path) -> None:
    respx.get(f"{EPMC}/{PMCID}/fullTextXML").mock(
        return_value=httpx.Response(200, content=_article_bytes(jats_dir))
    )
    async with httpx.AsyncClient() as client:
        text = await _fetcher(client, max_chars=3000).fetch(PMCID)
    assert 0 < sum(len(p.text) for p in text.passages) <= 3000
    assert text.dropped


def test_build_full_text_follows_the_settings() -> None:
    client = httpx.AsyncClient()
    try:
        assert build_full_text(Settings(sources=["local"]), client) is None
        assert build_full_text(Settings(sources=["pubmed"], max_full_texts=0), client) is None
        urls = {"europepmc": "http://127.0.0.1:9/epmc", "pubmed": "http://127.0.0.1:9/eutils"}
        built = build_full_text(
            Settings(sources=["local", "pubmed"], source_base_urls=urls, max_record_chars=5000),
            client,
        )
        assert built is not None
        assert built.roots == (urls["europepmc"], urls["pubmed"])
        assert built.max_chars == 5000
    finally:
        asyncio.run(client.aclose())


# --------------------------------------------------------------------------- choosing items


def _item(eid: str, relevance: float, pmcid: str | None = "PMC1", **citation: object) -> Evidence:
    return Evidence(
        id=eid,
        content="An abstract.",
        relevance=relevance,
        citation=Citation(source="europepmc", id=eid, pmcid=pmcid, **citation),
    )


_PASSAGE = Passage(section=["Results"], start=0, end=5, text="Body.")


def test_candidates_are_the_most_relevant_readable_items_within_the_budget() -> None:
    items = [
        _item("E1", 0.2),
        _item("E2", 0.9),
        _item("E3", 0.95, pmcid=None),  # no PMCID
        _item("E4", 0.8, open_access=False),  # closed access
        _item("E5", 0.7),
        _item("E6", 0.99).model_copy(update={"passages": [_PASSAGE]}),  # already read
    ]
    log = FullTextLog()
    assert [e.id for e in full_text_candidates(items, log, budget=2)] == ["E2", "E5"]
    log.read["E2"] = "europepmc"
    log.failed["E5"] = "HTTP 500"
    assert [e.id for e in full_text_candidates(items, log, budget=2)] == ["E1"]
    log.failed["E1"] = "HTTP 500"
    log.read["E9"] = "pmc"  # two read: the budget is spent
    assert full_text_candidates([*items, _item("E7", 0.5)], log, budget=2) == []


def test_candidates_stop_after_twice_the_budget_tried() -> None:
    log = FullTextLog(failed={"E1": "x", "E2": "x", "E3": "x", "E4": "x"})
    assert full_text_candidates([_item("E5", 0.5)], log, budget=2) == []
    assert [e.id for e in full_text_candidates([_item("E5", 0.5)], log, budget=3)] == ["E5"]


class _Reader:
    def __init__(self) -> None:
        self.asked: list[str] = []

    async def fetch(self, pmcid: str) -> FullText:
        self.asked.append(pmcid)
        if pmcid == "PMC2":
            raise SourceError("fulltext", "HTTP 404")
        return FullText(pmcid=pmcid, via="europepmc", passages=[_PASSAGE], abstract="Abs.")


async def test_read_full_texts_returns_copies_with_passages_and_records_failures() -> None:
    ok = _item("E1", 0.5, pmcid="PMC1").model_copy(update={"content": ""})
    bad = _item("E2", 0.4, pmcid="PMC2")
    log = FullTextLog()
    reader = _Reader()
    outcome = await read_full_texts([ok, bad], reader, log)
    assert sorted(reader.asked) == ["PMC1", "PMC2"]
    (read,) = outcome.read
    assert read.id == "E1"
    assert read.passages == [_PASSAGE]
    assert read.full_text
    assert read.content == "Abs."  # an item without text gets the article's abstract
    assert not ok.passages  # the caller's item is not changed: the store gets the copy
    assert outcome.failed == [("E2", "PMC2", "HTTP 404")]
    assert log.read == {"E1": "europepmc"}
    assert log.failed == {"E2": "HTTP 404"}
    assert log.tried == 2


# --------------------------------------------------------------------------- records


def test_europepmc_open_access_flag_and_its_merge() -> None:
    record = {"id": "1", "source": "MED", "pmid": "1", "pmcid": "PMC9", "title": "T"}
    yes = result_to_evidence({**record, "isOpenAccess": "Y"})
    no = result_to_evidence({**record, "isOpenAccess": "N"})
    unknown = result_to_evidence(record)
    assert yes is not None
    assert no is not None
    assert unknown is not None
    assert (yes.citation.open_access, no.citation.open_access) == (True, False)
    assert unknown.citation.open_access is None
    assert merge_evidence(no, yes).citation.open_access is True
    assert merge_evidence(unknown, no).citation.open_access is False
    assert merge_evidence(unknown, unknown).citation.open_access is None


def test_limitations_count_full_texts_against_abstracts() -> None:
    plan = ResearchPlan(
        question="q",
        refined_question="q",
        checklist=[ChecklistItem(key="k", description="d", status=ChecklistStatus.SATISFIED)],
    )
    full = _item("E1", 0.5).model_copy(update={"passages": [_PASSAGE]})
    abstract = _item("E2", 0.5)
    only_abstracts = gap_limitations(plan, [abstract])
    assert any("full texts were not read" in line for line in only_abstracts)
    mixed = gap_limitations(plan, [full, abstract])
    assert not any("full texts were not read" in line for line in mixed)
    assert any(line.startswith("The full text of 1 of the 2 sources was read") for line in mixed)
    all_full = gap_limitations(plan, [full])
    assert any(line.startswith("The full texts of all 1 sources were read") for line in all_full)


@respx.mock
async def test_the_reference_list_is_kept_as_identifiers(jats_dir: Path) -> None:
    respx.get(f"{EPMC}/{PMCID}/fullTextXML").mock(
        return_value=httpx.Response(200, content=_article_bytes(jats_dir))
    )
    async with httpx.AsyncClient() as client:
        text = await _fetcher(client).fetch(PMCID)
    references = read_jats(jats_dir / "pntd.0002065.nxml").references
    expected = [
        f"pmid:{r.pmid}" if r.pmid else f"doi:{r.doi}" for r in references if r.pmid or r.doi
    ]
    assert text.references == list(dict.fromkeys(expected))
    assert any(key.startswith("pmid:") for key in text.references)
