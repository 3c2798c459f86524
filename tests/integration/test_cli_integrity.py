"""Integrity flags end to end, offline, through the ``deepcritical`` console script.

A local corpus of 60 PubMedQA abstracts, the real PubMed record of the METRIC trial (PMID
22663011, ``../shared/fixtures/api/ncbi_eutils``) and a hand-made retracted near-copy of it
(``tests/fixtures/pubmed_retracted_copy_of_22663011.xml``: another PMID, a slightly different
title, inflated figures, ``Retracted Publication`` and a ``RetractionIn`` notice) is imported
with ``corpus add``; ``research --llm none --sources local`` then asks about the trial. The
report must cite the trial and list the retracted copy, flagged, in "Retracted or flagged
records found", never citing it, in the Markdown, the JSON, the web app's HTML and its
evidence table.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import pytest

from deepcritical.models import RunResult
from deepcritical.report.validation import citation_problems
from deepcritical.ui.citation_links import report_html
from deepcritical.ui.render import evidence_rows, evidence_table_html
from tests.integration.test_cli_research import Run, run_cli

TRIAL_PMID = "22663011"
COPY_PMID = "99663011"
RETRACTED_COPY = (
    Path(__file__).resolve().parents[1] / "fixtures" / ("pubmed_retracted_copy_of_22663011.xml")
)
PUBMEDQA_RECORDS = 60
QUESTION = (
    "Does trametinib improve progression-free survival compared with chemotherapy in patients "
    "with metastatic melanoma with a BRAF V600E or V600K mutation?"
)
HEADING = "## Retracted or flagged records found"


@dataclass(frozen=True)
class IntegrityRun:
    corpus_add: Run
    research: Run
    markdown: str
    result: RunResult


@pytest.fixture(scope="module")
def integrity_run(
    pubmedqa_dir: Path, api_fixtures: Path, tmp_path_factory: pytest.TempPathFactory
) -> IntegrityRun:
    """``corpus add`` of the three files, then ``research --llm none --sources local``."""
    root = tmp_path_factory.mktemp("integrity")
    sample = root / "pubmedqa_sample.jsonl"
    with (pubmedqa_dir / "corpus.jsonl").open(encoding="utf-8") as handle:
        sample.write_text("".join(islice(handle, PUBMEDQA_RECORDS)), encoding="utf-8")
    trial = api_fixtures / "ncbi_eutils" / "efetch_pubmed_structured_abstract_22663011.xml"
    data_dir = root / "data"
    added = run_cli(
        "--data-dir", data_dir, "corpus", "add", sample, trial, RETRACTED_COPY, cwd=root
    )
    assert added.returncode == 0, added.describe()
    out = root / "run" / "report.md"
    research = run_cli(
        "--data-dir", data_dir, "research", QUESTION, "--llm", "none", "--sources", "local",
        "--out", out, cwd=root,
    )  # fmt: skip
    assert research.returncode == 0, research.describe()
    result = RunResult.model_validate_json(out.with_suffix(".json").read_text(encoding="utf-8"))
    return IntegrityRun(added, research, out.read_text(encoding="utf-8"), result)


def _ids(result: RunResult) -> tuple[str, str]:
    by_pmid = {e.citation.pmid: e.id for e in result.evidence}
    assert TRIAL_PMID in by_pmid, "the trial was not retrieved"
    assert COPY_PMID in by_pmid, "the retracted copy was not retrieved"
    return by_pmid[TRIAL_PMID], by_pmid[COPY_PMID]


def test_the_trial_is_cited_and_the_retracted_copy_never(integrity_run: IntegrityRun) -> None:
    result = integrity_run.result
    report = result.report
    trial, copy = _ids(result)
    assert trial in report.cited_ids()
    referenced = {r.evidence_id for r in report.references}
    assert trial in referenced
    assert copy not in referenced
    assert copy not in report.cited_ids()
    for h in report.hypotheses_tested:
        assert copy not in h.supporting_evidence_ids + h.contradicting_evidence_ids
    assert citation_problems(report, {e.id: e for e in result.evidence}) == []
    # the inflated figures of the copy reach no part of the report but its listing
    body = integrity_run.markdown.split(HEADING, 1)[0]
    assert "0.21; 95% confidence interval" not in body
    assert "0.45; 95% confidence interval [CI], 0.33 to 0.63" in body
    assert report.metadata.verdict == "yes"
    flow = report.metadata.flow
    assert flow is not None
    assert flow.retracted == 1
    assert flow.problems() == []


def test_the_retracted_copy_is_listed_with_its_notice(integrity_run: IntegrityRun) -> None:
    markdown = integrity_run.markdown
    assert HEADING in markdown
    section = markdown.split(HEADING, 1)[1].split("\n## ", 1)[0]
    assert f"PMID: {COPY_PMID}." in section
    assert (
        "**[RETRACTED: Retracted Publication; Retraction in: N Engl J Med. 2013 Jan 3;368(1):99."
        " PMID: 99663012]** *(not cited)*"
    ) in section
    assert f"PMID: {TRIAL_PMID}" not in section
    references = markdown.split("\n## References\n", 1)[1]
    assert COPY_PMID not in references
    assert "- Excluded as retracted: 1" in markdown
    flagged = integrity_run.result.report.flagged_records
    assert [(f.citation.pmid, f.cited) for f in flagged] == [(COPY_PMID, False)]
    (copy,) = [e for e in integrity_run.result.evidence if e.citation.pmid == COPY_PMID]
    assert [f.source for f in copy.citation.integrity_flags] == [
        "PubMed PublicationType",
        "PubMed CommentsCorrections RetractionIn",
    ]


def test_the_web_app_shows_the_flag(integrity_run: IntegrityRun) -> None:
    result = integrity_run.result
    _, copy = _ids(result)
    page = report_html(result)
    assert "Retracted or flagged records found" in page
    assert "RETRACTED: Retracted Publication" in page
    rows = evidence_rows(result)
    (row,) = [r for r in rows if r.id == copy]
    assert row.retracted
    assert not row.cited
    table = evidence_table_html(rows)
    assert f'class="dc-evidence-row dc-retracted" data-id="{copy}"' in table
    assert "dc-flag-retracted" in table
