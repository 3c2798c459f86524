"""Citation tracking through the local stub of the APIs (:mod:`deepcritical.testing.api_stub`).

A run of :func:`deepcritical.api.research` (``llm="none"``, PubMed and OpenAlex pointed at the
stub, two results per query, the real all-MiniLM-L6-v2 embedder) asks about the NEJM
MEK-inhibition trial, which both searches return first. That trial is the seed; the stub's
citation graph gives it references (elink ``pubmed_pubmed_refs``, OpenAlex
``referenced_works``) and citing papers (elink ``pubmed_pubmed_citedin``, OpenAlex
``cites:``), among them two records the searches found already and one follow-up of the trial
(on the question's topic), the others on unrelated topics. The tests check that:

* both directions are followed through both services, and the new records are in the store
  with the note of how they were found;
* records the searches found already are folded into them, never stored twice;
* the candidates are screened: the follow-up is on-topic, the unrelated ones off-topic;
* the flow of records counts them as "records identified through citation tracking" and its
  equations hold; the methodology names the step;
* the budgets hold (``citation_candidates``; ``citation_seeds``; 0 disables the step);
* a resumed run follows no citation again (the call cache).

The tests skip when the API recordings are absent.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from pathlib import Path
from typing import Any, cast

from deepcritical.config import Settings
from deepcritical.events import EvidenceAddedData, ResearchEvent
from deepcritical.evidence.embeddings import Embedder
from deepcritical.models import Evidence, RunResult, Screening
from deepcritical.testing.api_stub import (
    CITED_BY_SEED,
    CITING_SEED,
    CITING_WORK_ID,
    PMID_ALL_SOURCES,
    PMID_BY_DOI,
    SEED_WORK_ID,
    StubAPI,
)

SEED = PMID_ALL_SOURCES
QUESTION = "Does MEK inhibition with trametinib improve survival in BRAF-mutated melanoma?"
CITATION_ROUTES = ("elink", "openalex_work")


def _settings(stub: StubAPI, tmp_path: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "llm": "none",
        "sources": ["pubmed", "openalex"],
        "max_rounds": 1,
        "max_sources": 40,
        "results_per_query": 2,
        "max_queries_per_round": 1,
        "max_full_texts": 0,
        "http_timeout_seconds": 5.0,
        "http_retries": 2,
        "data_dir": tmp_path,
        "persist_runs": False,
        "source_base_urls": {"pubmed": stub.eutils_url, "openalex": stub.openalex_url},
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)


async def _research(
    settings: Settings, embedder: Embedder
) -> tuple[list[ResearchEvent], RunResult]:
    from deepcritical.api import research

    events = [e async for e in research(QUESTION, settings, embedder=embedder)]
    last = events[-1]
    assert last.type == "done", f"run ended with {last.type}: {last.message}"
    assert last.result is not None
    return events, last.result


def _tracked(result: RunResult) -> list[Evidence]:
    return [e for e in result.evidence if e.found_by]


def _by_pmid(result: RunResult, pmid: str) -> list[Evidence]:
    return [e for e in result.evidence if e.citation.pmid == pmid]


def _tracking_line(result: RunResult) -> str:
    (line,) = [
        p for p in result.report.methodology.split("\n\n") if p.startswith("Citation tracking")
    ]
    return line


async def test_both_directions_dedup_and_screening(
    stub: StubAPI, tmp_path: Path, minilm_embedder: Embedder
) -> None:
    events, result = await _research(_settings(stub, tmp_path), minilm_embedder)

    # the seed: the trial, asked of both services in both directions
    elinks = {(r.params["linkname"], r.params["id"]) for r in stub.requests_for("elink")}
    assert elinks == {
        ("pubmed_pubmed_refs", PMID_ALL_SOURCES),
        ("pubmed_pubmed_citedin", PMID_ALL_SOURCES),
    }
    (lookup,) = stub.requests_for("openalex_work")
    assert lookup.params["key"].lower() == "doi:10.1056/nejmoa1203421"
    filters = {r.params.get("filter") for r in stub.requests_for("openalex")} - {None}
    assert f"cites:{SEED_WORK_ID}" in filters
    assert any(f and f.startswith("ids.openalex:") for f in filters)

    # backward and forward records are stored, each saying how it was found
    notes = {e.citation.id: e.found_by for e in _tracked(result)}
    for pmid in ("27797938", "11748933"):
        assert notes[pmid] == f"cited by PMID {PMID_ALL_SOURCES}"
    for pmid in CITING_SEED:
        assert notes[pmid] == f"cites PMID {PMID_ALL_SOURCES}"
    assert notes[CITING_WORK_ID] == f"cites PMID {PMID_ALL_SOURCES}"
    assert notes["W2033425827"] == f"cited by PMID {PMID_ALL_SOURCES}"

    # records the searches had found are folded into them, once, with no note
    (found_twice,) = _by_pmid(result, PMID_BY_DOI)
    assert PMID_BY_DOI in CITED_BY_SEED
    assert found_twice.found_by == ""
    assert len([e for e in result.evidence if e.citation.id == "W4396723768"]) == 1
    (seed,) = _by_pmid(result, PMID_ALL_SOURCES)
    assert seed.found_by == ""
    assert seed.screening != Screening.OFF_TOPIC

    # screened like search results: the trial's follow-up on-topic, the unrelated ones not
    (follow_up,) = [e for e in result.evidence if e.citation.id == CITING_WORK_ID]
    assert follow_up.screening in (Screening.RELEVANT, Screening.PARTIAL)
    for pmid in ("27797938", "11748933", *CITING_SEED):
        (item,) = _by_pmid(result, pmid)
        assert item.screening == Screening.OFF_TOPIC, (pmid, item.screening_reason)

    # counted: the round's event, the flow of records, the methodology
    (added,) = [e for e in events if e.type == "evidence_added"]
    tracking = added.data_as(EvidenceAddedData).citation_tracking
    assert tracking is not None
    assert "and 7 from citation tracking" in added.message
    assert tracking.seeds == [f"PMID {PMID_ALL_SOURCES}"]
    assert tracking.added == len(_tracked(result)) == 7
    assert tracking.already_found == 2
    flow = result.report.metadata.flow
    assert flow is not None
    assert flow.problems() == []
    assert flow.identified_by_citation_tracking == tracking.identified >= 9
    assert "Records identified through citation tracking" in result.report.to_markdown()
    line = _tracking_line(result)
    seeds = f"1 seed(s), the most relevant on-topic records with a PMID or DOI: PMID {SEED}."
    assert seeds in line
    assert "7 new record(s) added" in line
    assert "6 off-topic" in line


async def test_budgets(stub: StubAPI, tmp_path: Path, minilm_embedder: Embedder) -> None:
    _, capped = await _research(_settings(stub, tmp_path, citation_candidates=2), minilm_embedder)
    tracked = _tracked(capped)
    assert len(tracked) == 2
    # the most relevant candidate is kept first
    assert CITING_WORK_ID in {e.citation.id for e in tracked}
    flow = capped.report.metadata.flow
    assert flow is not None
    assert flow.problems() == []
    # 2 asked per service and direction; 2 already found, 2 kept, the others left out
    assert flow.identified_by_citation_tracking == 8
    assert flow.beyond_limit == 8 - 2 - 2
    assert "beyond the cap of 2" in _tracking_line(capped)

    stub.reset_log()
    _, off = await _research(_settings(stub, tmp_path, citation_seeds=0), minilm_embedder)
    assert not _tracked(off)
    assert not any(stub.requests_for(route) for route in CITATION_ROUTES)
    assert "Citation tracking" not in off.report.methodology
    flow = off.report.metadata.flow
    assert flow is not None
    assert flow.identified_by_citation_tracking == 0


async def test_no_repeated_call_after_resume(
    stub: StubAPI, tmp_path: Path, minilm_embedder: Embedder
) -> None:
    from deepcritical.api import research, resume

    settings = _settings(stub, tmp_path, persist_runs=True)
    run_id = ""
    stream = cast(
        "AsyncGenerator[ResearchEvent, None]",
        research(QUESTION, settings, embedder=minilm_embedder),
    )
    async with aclosing(stream):
        async for event in stream:
            run_id = run_id or event.run_id or ""
            if event.type == "evidence_added":
                assert event.data_as(EvidenceAddedData).citation_tracking is not None
                break  # the run is stopped here, after citation tracking
    assert run_id
    assert stub.requests_for("elink")
    assert stub.requests_for("openalex_work")
    first = len(stub.requests)

    stub.reset_log()
    events = [e async for e in resume(run_id, settings, embedder=minilm_embedder)]
    assert events[-1].type == "done", events[-1].message
    result = events[-1].result
    assert result is not None
    assert len(_tracked(result)) == 7
    assert stub.requests == [], f"{len(stub.requests)} of {first} requests made again"

    # the search log of the stored run counts them
    from deepcritical.state import RunStore

    runs = RunStore.open(settings)
    try:
        record = runs.get_run(run_id)
    finally:
        runs.close()
    assert record is not None
    (logged,) = [it["citation_tracking"] for it in record.iterations if "citation_tracking" in it]
    assert logged["added"] == 7
    assert logged["seeds"] == [f"PMID {SEED}"]
