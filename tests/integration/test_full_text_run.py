"""A research run reads an open-access full text through the local stub of the APIs.

The stub (:mod:`deepcritical.testing.api_stub`) serves the six PMC open-access articles of
``../shared/fixtures/fulltext/pmc_oa_jats`` as Europe PMC search records, as Europe PMC
``fullTextXML`` and as NCBI efetch ``db=pmc``. A run of :func:`deepcritical.api.research`
(``llm="none"``, Europe PMC only, the real all-MiniLM-L6-v2 embedder, settings pointing the
sources at the stub) asks one of the benchmark questions answered only in the body of an
article (``src/deepcritical/testing/fulltext_questions.json``), and the tests check that:

* the report cites that article and quotes the body passage that answers the question, with
  its section, in the "Supporting quotes" appendix and in the grounding check;
* when Europe PMC's ``fullTextXML`` fails (HTTP 500 every time), the run reads the article
  through PMC's efetch ``db=pmc`` instead and quotes the same passage;
* when both fail, the run warns, names the failure in the methodology and writes its report
  from the abstract (no body passage quoted).

The tests skip when the API recordings or the JATS articles are absent.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from deepcritical.config import Settings
from deepcritical.events import ResearchEvent, WarningData
from deepcritical.evidence.embeddings import Embedder
from deepcritical.formats.jats import parse_jats, read_jats
from deepcritical.models import Evidence, GroundedClaim, Passage, RunResult, SupportingQuote
from deepcritical.testing.api_stub import Fault, StubAPI, StubData
from deepcritical.testing.fulltext_questions import FulltextQuestion, answer_passage, load_questions

QUESTION_PREFIX = "How many missing answers had to be imputed"
"""The benchmark question asked (OHIP-NL validation, PMC2329613; answer in Results, paragraph
2). With these settings (one round, two queries) the answer sentence was quoted with its
section for 4 of the 24 questions (this one, the lambda lysis-time range, the OHIP-NL
recruitment period and the RVF sheep odds ratio); for most others the article is screened
partly relevant or off-topic from its abstract before its full text is read (the answer lies
in the body), and the report quotes the closest record's title or abstract instead."""

FETCHED = re.compile(r"(\d+) full text\(s\) fetched from Europe PMC or PubMed Central")


@dataclass(frozen=True)
class Target:
    """The question asked, its article and the body passage that answers it."""

    question: FulltextQuestion
    passage: Passage

    @property
    def pmcid(self) -> str:
        return self.question.pmcid

    @property
    def section(self) -> str:
        return " › ".join(self.question.section)


@pytest.fixture(scope="module")
def fulltext_data(api_fixtures: Path, jats_dir: Path) -> StubData:
    """The stub's records with the six articles as full texts (built once per module)."""
    return StubData(api_fixtures, full_texts=jats_dir)


@pytest.fixture(scope="module")
def target(fulltext_data: StubData) -> Target:
    (question,) = [q for q in load_questions() if q.question.startswith(QUESTION_PREFIX)]
    article = fulltext_data.full_text_articles[question.pmcid]
    return Target(question, answer_passage(article, question))


@pytest.fixture
def fulltext_stub(fulltext_data: StubData) -> Iterator[StubAPI]:
    """A started stub serving the full texts; fails the test if a handler thread raised."""
    with StubAPI(fulltext_data) as server:
        yield server
        errors = list(server.errors)
    assert not errors, f"the stub failed while answering: {errors}"


def _settings(stub: StubAPI, tmp_path: Path) -> Settings:
    return Settings(
        _env_file=None,
        llm="none",
        sources=["europepmc"],
        max_rounds=1,
        max_sources=20,
        results_per_query=10,
        max_queries_per_round=2,
        http_timeout_seconds=5.0,
        http_retries=2,
        data_dir=tmp_path,
        persist_runs=False,
        source_base_urls={"europepmc": stub.europepmc_url, "pubmed": stub.eutils_url},
    )


async def _research(
    question: str, stub: StubAPI, tmp_path: Path, embedder: Embedder
) -> tuple[list[ResearchEvent], RunResult]:
    from deepcritical.api import research

    settings = _settings(stub, tmp_path)
    events = [e async for e in research(question, settings, embedder=embedder)]
    last = events[-1]
    assert last.type == "done", f"run ended with {last.type}: {last.message}"
    assert last.result is not None
    return events, last.result


def _item(result: RunResult, pmcid: str) -> Evidence:
    (item,) = [e for e in result.evidence if e.citation.pmcid == pmcid]
    return item


def _fetched(methodology: str) -> int:
    match = FETCHED.search(methodology)
    assert match, f"no full-text line in the methodology:\n{methodology}"
    return int(match.group(1))


def _body_quotes(result: RunResult, item: Evidence) -> list[tuple[GroundedClaim, SupportingQuote]]:
    """The supporting quotes of ``item`` that come from a body passage (a locator)."""
    return [
        (claim, quote)
        for claim in result.report.grounding
        for quote in claim.quotes
        if quote.evidence_id == item.id and quote.locator
    ]


def _assert_quotes_the_answer(result: RunResult, target: Target) -> None:
    """The report cites the article and quotes the answering body passage with its section,
    in the grounding check and in the "Supporting quotes" appendix."""
    report = result.report
    item = _item(result, target.pmcid)
    assert item.full_text
    assert target.pmcid in {r.citation.pmcid for r in report.references}
    number = report.reference_numbers()[item.id]

    answering = [
        (claim, quote)
        for claim, quote in _body_quotes(result, item)
        if target.question.answer_phrase in quote.quote or quote.quote in target.passage.text
    ]
    assert answering, (
        f"no quote of the answer passage; quotes of {target.pmcid}: "
        f"{[(q.locator, q.quote) for _, q in _body_quotes(result, item)]}"
    )
    claim, quote = answering[0]
    assert quote.locator.startswith(f"{target.section}, paragraph ") or (
        quote.locator == target.section
    ), quote.locator
    assert quote.supports
    assert claim.supported
    assert not claim.removed
    assert item.id in claim.kept_ids

    markdown = report.to_markdown()
    appendix = markdown.split("## Supporting quotes", 1)[1].split("\n---", 1)[0]
    entry = f"[{number}] {quote.locator}: “{quote.quote[:60]}"
    assert entry in appendix, f"{entry!r} not in the appendix:\n{appendix}"


def _assert_full_text_read(result: RunResult) -> None:
    report = result.report
    assert _fetched(report.methodology) >= 1
    assert not any("full texts were not read" in line for line in report.limitations)
    assert "full texts were not read" not in report.to_markdown()


# --------------------------------------------------------------------------- tests


def test_stub_serves_the_full_texts(
    fulltext_stub: StubAPI, stub: StubAPI, target: Target, jats_dir: Path
) -> None:
    """The stub's full-text routes (and the plain stub, without them, as before)."""
    path = next(p for p in sorted(jats_dir.glob("*.nxml")) if read_jats(p).pmcid == target.pmcid)
    digits = target.pmcid.removeprefix("PMC")
    with httpx.Client(timeout=5.0) as client:
        europepmc = client.get(f"{fulltext_stub.europepmc_url}/{target.pmcid}/fullTextXML")
        unknown = client.get(f"{fulltext_stub.europepmc_url}/PMC1/fullTextXML")
        efetch = f"{fulltext_stub.eutils_url}/efetch.fcgi"
        pmc = client.get(efetch, params={"db": "pmc", "id": digits, "retmode": "xml"})
        pmc_unknown = client.get(efetch, params={"db": "pmc", "id": "1"})
        search = client.get(
            f"{fulltext_stub.europepmc_url}/search",
            params={"query": target.question.question, "resultType": "core", "format": "json"},
        )
        plain = client.get(f"{stub.europepmc_url}/{target.pmcid}/fullTextXML")
    assert europepmc.status_code == 200
    assert europepmc.headers["content-type"] == "application/xml"
    assert europepmc.content == path.read_bytes()
    assert unknown.status_code == 404
    assert pmc.status_code == 200
    assert pmc.content.count(b"<!DOCTYPE") == 0
    assert b"<pmc-articleset><article" in pmc.content
    assert parse_jats(pmc.content).pmcid == target.pmcid
    assert pmc_unknown.content.rstrip().endswith(b"<pmc-articleset/>")
    first = search.json()["resultList"]["result"][0]
    assert first["pmcid"] == target.pmcid
    assert (first["isOpenAccess"], first["inEPMC"]) == ("Y", "Y")
    assert plain.status_code == 404  # no full-text collection: an unknown path
    assert [r.route for r in fulltext_stub.requests] == [
        "fulltext", "fulltext", "efetch_pmc", "efetch_pmc", "europepmc",
    ]  # fmt: skip
    assert [r.route for r in stub.requests] == ["unknown"]


async def test_run_quotes_the_body_passage_of_a_full_text_from_europe_pmc(
    fulltext_stub: StubAPI, target: Target, minilm_embedder: Embedder, tmp_path: Path
) -> None:
    events, result = await _research(
        target.question.question, fulltext_stub, tmp_path, minilm_embedder
    )

    assert not [e.message for e in events if e.type == "warning"]
    fulltext = fulltext_stub.requests_for("fulltext")
    assert [r.params["pmcid"] for r in fulltext if r.status == 200] == [target.pmcid]
    assert fulltext_stub.requests_for("efetch_pmc") == []  # Europe PMC answered
    _assert_quotes_the_answer(result, target)
    _assert_full_text_read(result)


async def test_run_reads_the_full_text_from_pmc_when_europe_pmc_fails(
    fulltext_stub: StubAPI, target: Target, minilm_embedder: Embedder, tmp_path: Path
) -> None:
    fulltext_stub.add_fault("fulltext", Fault.server_error(500))

    events, result = await _research(
        target.question.question, fulltext_stub, tmp_path, minilm_embedder
    )

    assert not [e.message for e in events if e.type == "warning"]
    failed = fulltext_stub.requests_for("fulltext")
    assert failed
    assert {r.status for r in failed} == {500}
    assert {r.params["pmcid"] for r in failed} == {target.pmcid}
    pmc = fulltext_stub.requests_for("efetch_pmc")
    assert [(r.params["db"], r.params["id"], r.status) for r in pmc] == [
        ("pmc", target.pmcid.removeprefix("PMC"), 200)
    ]
    _assert_quotes_the_answer(result, target)
    _assert_full_text_read(result)


async def test_run_falls_back_to_the_abstract_when_both_full_text_routes_fail(
    fulltext_stub: StubAPI, target: Target, minilm_embedder: Embedder, tmp_path: Path
) -> None:
    fulltext_stub.add_fault("fulltext", Fault.server_error(500))
    fulltext_stub.add_fault("efetch_pmc", Fault.server_error(503))

    events, result = await _research(
        target.question.question, fulltext_stub, tmp_path, minilm_embedder
    )

    warnings = [
        e.data for e in events if isinstance(e.data, WarningData) and e.data.full_text is not None
    ]
    assert [w.full_text for w in warnings] == [target.pmcid]
    assert "500" in (warnings[0].reason or "")
    assert "503" in (warnings[0].reason or "")
    assert fulltext_stub.requests_for("efetch_pmc")

    report = result.report
    item = _item(result, target.pmcid)
    assert not item.full_text
    assert not item.passages
    assert target.pmcid in {r.citation.pmcid for r in report.references}
    assert _body_quotes(result, item) == []  # quoted from the abstract (no locator) only
    assert target.question.answer_phrase not in report.to_markdown()
    assert _fetched(report.methodology) == 0
    assert f"{target.pmcid} (" in report.methodology
    assert "could not be read and were used as abstracts" in report.methodology
