"""Where a DOI ends, decided in one place (``models._markers``) and the same in every reader
(issue 31, item 3): the citation grammar of report text, citation validation, the writer's
marker normalisation and identifier fields. Before, three patterns disagreed (``\\S+``,
``[^\\s,;\\]]+`` and ``[^\\s\\[\\],;]+``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from deepcritical.evidence.identifiers import normalize_doi
from deepcritical.models import Citation, Evidence, ResearchReport, clean_doi
from deepcritical.report import citation_problems, validate_report
from deepcritical.report.citation_markers import PaperIds, normalise_markers
from deepcritical.text.sentences import CITATION_GROUP

LANCET = "10.1016/S0140-6736(20)30183-5"  # a DOI with parentheses of its own
SRC = Path(__file__).resolve().parents[2] / "src" / "deepcritical"


@pytest.mark.parametrize(
    ("written", "doi"),
    [
        ("10.1/abc)", "10.1/abc"),  # the prose's parenthesis closes after it
        ("10.1/abc]", "10.1/abc"),
        ("10.1/abc,", "10.1/abc"),
        ("10.1/abc.", "10.1/abc"),
        ("10.1/abc;", "10.1/abc"),
        ("10.1/abc).", "10.1/abc"),
        (f"{LANCET}).", LANCET.lower()),  # its own parentheses are kept
        (LANCET, LANCET.lower()),
        ("https://doi.org/10.1/ABC.", "10.1/abc"),
        ("doi: 10.1/abc", "10.1/abc"),
    ],
)
def test_a_doi_ends_before_trailing_punctuation_and_unbalanced_brackets(
    written: str, doi: str
) -> None:
    assert clean_doi(written) == doi
    assert normalize_doi(written) == doi


def evidence() -> dict[str, Evidence]:
    items = [
        Evidence(
            id="E1",
            content="Metformin and dementia.",
            citation=Citation(source="pubmed", id="123", pmid="123", title="Cohort"),
        ),
        Evidence(
            id="E2",
            content="A meta-analysis of cognition.",
            citation=Citation(source="europepmc", id=LANCET, doi=LANCET.lower(), title="Meta"),
        ),
    ]
    return {e.id: e for e in items}


@pytest.mark.parametrize(
    ("marker", "cited"),
    [
        (f"[doi:{LANCET}]", ["E2"]),
        (f"[doi:{LANCET}, PMID: 123]", ["E2", "E1"]),
        (f"[doi:{LANCET}; PMID: 123]", ["E2", "E1"]),
        (f"[https://doi.org/{LANCET}]", ["E2"]),
        (f"[doi: {LANCET.lower()}.]", ["E2"]),
    ],
)
def test_a_doi_in_a_marker_cites_its_evidence(marker: str, cited: list[str]) -> None:
    report = ResearchReport(
        title="T", research_question="Q?", executive_summary=f"Cognition improved {marker}."
    )
    out = validate_report(report, evidence())
    assert out.cited_ids() == cited, out.executive_summary
    assert citation_problems(out, evidence()) == []
    assert out.metadata.citation_validation.markers_removed == 0
    papers = PaperIds.of(list(evidence().values()))
    assert normalise_markers(f"Cognition improved {marker}.", papers) == (
        f"Cognition improved [{', '.join(cited)}]."
    )


def test_a_doi_in_prose_is_one_citation_group_up_to_its_bracket() -> None:
    text = f"As reported (see [doi:{LANCET}]), cognition improved."
    found = [m.group() for m in CITATION_GROUP.finditer(text)]
    assert found == [f"[doi:{LANCET}]"]


@pytest.mark.parametrize(
    "written",
    [r"10\.\d", r"PMC\d+", r"NCT\d{8}"],  # a DOI's, a PMCID's and an NCT ID's pattern
)
def test_no_identifier_pattern_outside_its_one_module(written: str) -> None:
    """``grep`` for the identifier patterns in src finds them in models/_markers.py only
    (evidence/identifiers.py reads identifier fields with lenient parsers of its own)."""
    holders = sorted(str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if written in p.read_text())
    assert holders == ["models/_markers.py"]
