"""A living review's update against the local stub of the search APIs (issue 33's done-when):
a watch is made from a finished run; the stub's PubMed gains two relevant records and one
off-topic record, and marks the record the report cited retracted; the update's new version
lists the two in "What's new", leaves the off-topic one out, drops the retracted one from
support and says so; the stub's request log shows date-bounded searches only (every
esearch with ``datetype=edat&mindate``, every Europe PMC query with ``CREATION_DATE``; the
re-check of retractions fetches by PMID, no search); a second update with nothing new writes
no version; the CLI's ``watch update`` says so in one line."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from deepcritical.api import research, update_watch, watch_run
from deepcritical.config import Settings
from deepcritical.state import RunStore
from deepcritical.testing.api_stub import PMID_ALL_SOURCES, StubData
from deepcritical.testing.growing_stub import GrowingStubAPI
from tests.integration.test_cli_research import cli_command, user_env

pytestmark = pytest.mark.slow

QUESTION = "Does MEK inhibition improve survival in BRAF-mutant melanoma?"
RELEVANT = (
    (
        "41000001",
        "Trametinib and dabrafenib improve overall survival in BRAF V600-mutant melanoma",
        "In this randomised trial of 700 patients with BRAF V600-mutant metastatic melanoma, "
        "combined MEK and BRAF inhibition with trametinib and dabrafenib improved overall "
        "survival as compared with BRAF inhibition alone (hazard ratio 0.69).",
    ),
    (
        "41000002",
        "MEK inhibition with binimetinib prolongs survival in BRAF-mutant melanoma",
        "MEK inhibition with binimetinib prolonged progression-free and overall survival in "
        "patients with BRAF-mutant advanced melanoma in a phase 3 randomised trial.",
    ),
)
OFF_TOPIC = (
    "41000003",
    "Crop rotation and soil nitrogen in winter wheat fields",
    "Rotating legumes with winter wheat raised soil nitrogen and grain yield over four "
    "seasons on clay soils; crop rotation improved wheat yields.",
)


def settings_for(stub: GrowingStubAPI, data_dir: Path) -> Settings:
    return Settings(
        data_dir=data_dir,
        llm="none",
        sources=["pubmed", "europepmc"],
        max_rounds=1,
        max_full_texts=0,
        citation_seeds=0,
        source_base_urls={"pubmed": stub.eutils_url, "europepmc": stub.europepmc_url},
    )


async def finished_run(settings: Settings) -> str:
    run_id = None
    async for event in research(QUESTION, settings):
        run_id = run_id or event.run_id
    assert run_id is not None
    return run_id


def test_an_update_searches_the_window_lists_whats_new_and_drops_the_retracted(
    stub_data: StubData, tmp_path: Path
) -> None:
    with GrowingStubAPI(stub_data) as stub:
        settings = settings_for(stub, tmp_path / "data")
        run_id = asyncio.run(finished_run(settings))
        runs = RunStore.open(settings)
        try:
            result = runs.result(run_id)
            assert result is not None
            cited = {
                r.citation.pmid: r.evidence_id for r in result.report.references if r.citation.pmid
            }
            assert PMID_ALL_SOURCES in cited  # the record that will be retracted supports v1
            watch = asyncio.run(watch_run(run_id, settings, every="7d"))
            stub.reset_log()
            for pmid, title, abstract in (*RELEVANT, OFF_TOPIC):
                stub.add_pubmed_record(pmid, title, abstract)
            stub.retract(PMID_ALL_SOURCES)

            first = asyncio.run(update_watch(watch.id, settings))

            assert (first.outcome, first.version) == ("new_version", 2), first.summary
            change = first.change
            assert change is not None
            assert sorted(r.identifier for r in change.new_included) == [
                "PMID 41000001",
                "PMID 41000002",
            ]
            assert [r.identifier for r in change.removed] == [f"PMID {PMID_ALL_SOURCES}"]
            assert change.flow.excluded == 1
            version = runs.report_version(run_id)
            assert version is not None
            whats_new = version.report.findings[0]
            assert whats_new.heading.startswith("What's new since ")
            assert "Trametinib and dabrafenib improve overall survival" in whats_new.content
            assert "binimetinib" in whats_new.content
            assert "Crop rotation" not in whats_new.content
            assert f"PMID {PMID_ALL_SOURCES}" in whats_new.content
            assert "retracted" in whats_new.content
            retracted_id = cited[PMID_ALL_SOURCES]
            assert retracted_id not in {r.evidence_id for r in version.report.references}
            assert retracted_id not in version.report.cited_ids()
            assert any(
                f.evidence_id == retracted_id for f in version.report.flagged_records
            )  # listed under "Retracted or flagged records found"
            searches = stub.requests_for("esearch")
            assert searches
            for request in searches:
                assert request.params.get("datetype") == "edat", request.params
                assert request.params.get("mindate"), request.params
            epmc = stub.requests_for("europepmc")
            assert epmc
            for request in epmc:
                assert "CREATION_DATE:[" in request.params.get("query", ""), request.params
            fetched = {
                i for r in stub.requests_for("efetch") for i in r.params.get("id", "").split(",")
            }
            assert PMID_ALL_SOURCES in fetched  # the re-check, by id

            stub.reset_log()
            second = asyncio.run(update_watch(watch.id[:8], settings))
            assert second.outcome == "nothing_new"
            assert second.version is None
            assert second.summary.startswith("Nothing relevant is new since ")
            current = runs.report_version(run_id)
            assert current is not None
            assert current.version == 2
            assert all(r.params.get("datetype") == "edat" for r in stub.requests_for("esearch"))
        finally:
            runs.close()
        cli = run_watch_cli(stub, tmp_path, "update", watch.id)
        assert cli.returncode == 0, cli.stderr
        assert cli.stdout.strip().startswith("Nothing relevant is new since ")
        listed = run_watch_cli(stub, tmp_path, "list")
        assert watch.id in listed.stdout
        private = run_watch_cli(stub, tmp_path, "webhook", watch.id, "http://10.0.0.7/h/s3cr3t")
        assert private.returncode == 2, private.stderr
        assert "s3cr3t" not in private.stderr
        hook = "https://hooks.example.org/services/T0/B0/s3cr3t"
        assert run_watch_cli(stub, tmp_path, "webhook", watch.id, hook).returncode == 0
        shown = run_watch_cli(stub, tmp_path, "show", watch.id[:8])
        assert "Webhook: https://hooks.example.org/services/..." in shown.stdout
        assert "s3cr3t" not in shown.stdout + shown.stderr
        assert "Update 3 (manual" in shown.stdout
        assert not stub.errors, stub.errors


def run_watch_cli(stub: GrowingStubAPI, root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env: dict[str, Any] = user_env()
    env["DEEPCRITICAL_SOURCE_BASE_URLS"] = json.dumps(
        {"pubmed": stub.eutils_url, "europepmc": stub.europepmc_url}
    )
    return subprocess.run(
        [*cli_command(), "--data-dir", str(root / "data"), "watch", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
