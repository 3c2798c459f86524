"""Identifier normalisation, identifier keys and cross-source merging."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from deepcritical.evidence.identifiers import (
    identifier_keys,
    merge_evidence,
    normalize_doi,
    normalize_nct,
    normalize_pmcid,
    normalize_pmid,
    normalize_url,
    primary_key,
)
from deepcritical.models import Citation, Evidence, Passage

PMID_CASES: list[tuple[str | int | None, str | None]] = [
    ("123", "123"),
    (123, "123"),
    ("  42 ", "42"),
    ("PMID: 123", "123"),
    ("pmid:123", "123"),
    ("PMID 20516115", "20516115"),
    ("pubmed/123", "123"),
    ("MED/20516115", "20516115"),
    ("0012", "12"),
    ("https://pubmed.ncbi.nlm.nih.gov/123/", "123"),
    ("http://pubmed.ncbi.nlm.nih.gov/123", "123"),
    ("pubmed.ncbi.nlm.nih.gov/123/", "123"),
    ("https://www.ncbi.nlm.nih.gov/pubmed/5555?dopt=Abstract", "5555"),
    ("https://europepmc.org/article/MED/20516115", "20516115"),
    ("https://europepmc.org/abstract/MED/20516115", "20516115"),
    ("", None),
    (None, None),
    ("0", None),
    ("12a", None),
    ("PMC123", None),
    ("10.1/x", None),
    ("https://example.org/123", None),
    ("https://www.ncbi.nlm.nih.gov/pmc/articles/PMC3040717/", None),
]

PMCID_CASES: list[tuple[str | int | None, str | None]] = [
    ("PMC123", "PMC123"),
    ("pmc123", "PMC123"),
    ("PMC 123", "PMC123"),
    ("PMCID: PMC3040717", "PMC3040717"),
    ("PMC3040717.1", "PMC3040717"),
    ("https://www.ncbi.nlm.nih.gov/pmc/articles/PMC3040717/", "PMC3040717"),
    ("https://pmc.ncbi.nlm.nih.gov/articles/PMC3040717/", "PMC3040717"),
    ("https://europepmc.org/article/PMC/PMC3040717", "PMC3040717"),
    ("https://europepmc.org/articles/PMC3040717", "PMC3040717"),
    ("123", None),  # bare digits could be a PMID
    ("PMC", None),
    ("PMCabc", None),
    ("https://europepmc.org/article/MED/20516115", None),
    (None, None),
]

DOI_CASES: list[tuple[str | int | None, str | None]] = [
    ("10.1158/0008-5472.CAN-09-4563", "10.1158/0008-5472.can-09-4563"),
    ("doi:10.1/X", "10.1/x"),
    ("DOI: 10.1/X", "10.1/x"),
    ("https://doi.org/10.1/x", "10.1/x"),
    ("http://dx.doi.org/10.1016/J.ADDR.2015.01.008", "10.1016/j.addr.2015.01.008"),
    ("doi.org/10.1/x", "10.1/x"),
    ("https://doi.org/10.1002/%28SICI%291097-4636", "10.1002/(sici)1097-4636"),
    ("doi: https://doi.org/10.1/A;", "10.1/a"),
    ("10.1000/abc.", "10.1000/abc"),
    ("10.1000/abc,", "10.1000/abc"),
    ("(10.1/x)", "10.1/x"),
    # balanced brackets are part of the DOI, an extra closing one is not
    (
        "10.1002/(sici)1097(199603)31:3<359::aid>3.0.co;2-n",
        "10.1002/(sici)1097(199603)31:3<359::aid>3.0.co;2-n",
    ),
    ("10.1002/(sici)1097(199603)", "10.1002/(sici)1097(199603)"),
    ("10.1002/abc)", "10.1002/abc"),
    ("10.1101/2025.06.02.657315", "10.1101/2025.06.02.657315"),
    ("https://onlinelibrary.wiley.com/doi/full/10.1002/ijc.35507", "10.1002/ijc.35507"),
    ("https://www.science.org/doi/10.1126/science.abc1234", "10.1126/science.abc1234"),
    ("11.1/x", None),
    ("10.1", None),
    ("10.1/", None),
    ("10.1000/abc def", None),
    ("https://example.org/10.1/x", None),
    ("", None),
    (None, None),
]

NCT_CASES: list[tuple[str | int | None, str | None]] = [
    ("NCT01234567", "NCT01234567"),
    ("nct01234567", "NCT01234567"),
    ("NCT 01234567", "NCT01234567"),
    (" NCT00763412 ", "NCT00763412"),
    ("https://clinicaltrials.gov/study/NCT00763412", "NCT00763412"),
    ("https://www.clinicaltrials.gov/ct2/show/NCT00763412?term=x", "NCT00763412"),
    ("https://classic.clinicaltrials.gov/ct2/show/nct00763412", "NCT00763412"),
    ("NCT0123456", None),
    ("NCT012345678", None),
    ("01234567", None),
    ("https://example.org/NCT00763412", None),
    (None, None),
]

URL_CASES: list[tuple[str | int | None, str | None]] = [
    ("HTTPS://Example.ORG:443/Path/?utm_source=x&a=1#frag", "https://example.org/Path?a=1"),
    ("http://example.org:80/", "http://example.org"),
    ("https://example.org", "https://example.org"),
    ("http://example.org:8080/a/", "http://example.org:8080/a"),
    ("https://x.org/a?UTM_Medium=b&utm_campaign=c", "https://x.org/a"),
    ("https://x.org/a?b=2&a=1&fbclid=zz", "https://x.org/a?b=2&a=1"),  # order kept
    ("https://x.org/a b", "https://x.org/a%20b"),
    ("https://[::1]:8080/a", "https://[::1]:8080/a"),
    ("ftp://x.org/a", None),
    ("example.org/a", None),
    ("https://x.org:99999/", None),
    ("https:///path", None),
    ("", None),
    (None, None),
]

Normaliser = Callable[[Any], str | None]


@pytest.mark.parametrize(
    ("func", "raw", "expected"),
    [(normalize_pmid, r, e) for r, e in PMID_CASES]
    + [(normalize_pmcid, r, e) for r, e in PMCID_CASES]
    + [(normalize_doi, r, e) for r, e in DOI_CASES]
    + [(normalize_nct, r, e) for r, e in NCT_CASES]
    + [(normalize_url, r, e) for r, e in URL_CASES],
    ids=lambda v: repr(v) if not callable(v) else v.__name__,
)
def test_normalisers(func: Normaliser, raw: str | int | None, expected: str | None) -> None:
    assert func(raw) == expected


@pytest.mark.parametrize(
    ("func", "cases"),
    [
        (normalize_pmid, PMID_CASES),
        (normalize_pmcid, PMCID_CASES),
        (normalize_doi, DOI_CASES),
        (normalize_nct, NCT_CASES),
        (normalize_url, URL_CASES),
    ],
    ids=["pmid", "pmcid", "doi", "nct", "url"],
)
def test_normalisers_are_idempotent(
    func: Normaliser, cases: list[tuple[str | int | None, str | None]]
) -> None:
    for _, expected in cases:
        if expected is not None:
            assert func(expected) == expected


def cite(**kw: object) -> Citation:
    data: dict[str, object] = {"source": "pubmed", "id": ""}
    data.update(kw)
    return Citation.model_validate(data)


@pytest.mark.parametrize(
    ("citation", "keys"),
    [
        (
            cite(
                id="20516115",
                pmid="20516115",
                doi="https://doi.org/10.1158/0008-5472.CAN-09-4563",
                pmcid="pmc3040717",
                url="https://pubmed.ncbi.nlm.nih.gov/20516115/",
            ),
            [
                "pmid:20516115",
                "doi:10.1158/0008-5472.can-09-4563",
                "pmcid:PMC3040717",
                "url:https://pubmed.ncbi.nlm.nih.gov/20516115",
            ],
        ),
        # PubMed native id is a PMID
        (cite(id="123"), ["pmid:123"]),
        (cite(source="local", id="123"), ["pmid:123"]),
        # digits from another source are not assumed to be a PMID
        (cite(source="openalex", id="123"), []),
        # derived from the URL when the fields are empty
        (
            cite(source="web", id="x", url="https://pubmed.ncbi.nlm.nih.gov/123/"),
            ["pmid:123", "url:https://pubmed.ncbi.nlm.nih.gov/123"],
        ),
        (
            cite(source="web", id="x", url="https://doi.org/10.1/X"),
            ["doi:10.1/x", "url:https://doi.org/10.1/X"],
        ),
        (
            cite(source="trials", id="", url="https://clinicaltrials.gov/study/NCT00763412"),
            ["nct:NCT00763412", "url:https://clinicaltrials.gov/study/NCT00763412"],
        ),
        # derived from the native id
        (cite(source="trials", id="NCT00763412"), ["nct:NCT00763412"]),
        (
            cite(source="openalex", id="https://doi.org/10.1016/j.addr.2015.01.008"),
            ["doi:10.1016/j.addr.2015.01.008", "url:https://doi.org/10.1016/j.addr.2015.01.008"],
        ),
        (cite(source="europepmc", id="PMC3040717"), ["pmcid:PMC3040717"]),
        (
            cite(source="europepmc", id="PPR1031776", doi="10.1101/2025.06.02.657315"),
            ["doi:10.1101/2025.06.02.657315"],
        ),
        (
            cite(source="web", id="https://Example.org/page/?utm_source=x#top"),
            ["url:https://example.org/page"],
        ),
        # a dedicated field wins over a conflicting URL
        (
            cite(source="web", id="x", pmid="1", url="https://pubmed.ncbi.nlm.nih.gov/2/"),
            ["pmid:1", "url:https://pubmed.ncbi.nlm.nih.gov/2"],
        ),
        # an unparseable dedicated field falls back to the URL
        (
            cite(source="web", id="x", pmid="n/a", url="https://pubmed.ncbi.nlm.nih.gov/2/"),
            ["pmid:2", "url:https://pubmed.ncbi.nlm.nih.gov/2"],
        ),
        (cite(source="web", id="doc-7"), []),
    ],
)
def test_identifier_keys(citation: Citation, keys: list[str]) -> None:
    assert identifier_keys(citation) == keys


def test_primary_key_follows_priority() -> None:
    c = cite(source="europepmc", id="x", doi="10.1/x", pmcid="PMC5", nct_id="NCT01234567")
    assert primary_key(c) == "doi:10.1/x"
    assert primary_key(c.model_copy(update={"pmid": "9"})) == "pmid:9"
    assert primary_key(cite(source="web", id="x", url="https://a.org/b")) == "url:https://a.org/b"


def test_primary_key_without_identifier_raises() -> None:
    with pytest.raises(ValueError, match="no usable identifier"):
        primary_key(cite(source="web", id="doc-7", title="A title"))


EVIDENCE_FIELDS = {
    "relevance",
    "mesh_terms",
    "publication_types",
    "checklist_keys",
    "is_preprint",
    "retrieved_at",
    "sources",
    "query",
}


def ev(content: str = "abstract", **citation: object) -> Evidence:
    """Evidence whose citation gets every keyword except the Evidence-level ones."""
    extra = {k: citation.pop(k) for k in list(citation) if k in EVIDENCE_FIELDS}
    return Evidence.model_validate({"content": content, "citation": cite(**citation), **extra})


def test_merge_pubmed_and_europepmc_records_of_one_paper() -> None:
    pubmed = ev(
        "BRCA1 BRCT missense variants were assessed by structural and functional assays.",
        source="pubmed",
        id="20516115",
        pmid="20516115",
        title="Comprehensive analysis of missense variations in the BRCT domain of BRCA1.",
        authors=["Lee MS", "Green R"],
        url="https://pubmed.ncbi.nlm.nih.gov/20516115/",
        relevance=0.4,
        mesh_terms=["BRCA1 Protein", "Mutation, Missense"],
        publication_types=["Journal Article"],
        checklist_keys=["mechanism"],
    )
    pubmed = pubmed.model_copy(update={"id": "E4"})
    epmc = ev(
        "Short abstract.",
        source="europepmc",
        id="20516115",
        pmid="20516115",
        doi="10.1158/0008-5472.CAN-09-4563",
        pmcid="PMC3040717",
        title="",
        authors=["Lee MS", "Green R", "Marsillac SM"],
        journal="Cancer Res",
        year=2010,
        date="2010-06-01",
        url="https://europepmc.org/article/MED/20516115",
        relevance=0.9,
        mesh_terms=["mutation, missense", "Humans"],
        publication_types=["research-article", "journal article"],
        checklist_keys=["trials"],
    )
    merged = merge_evidence(pubmed, epmc)
    c = merged.citation
    assert merged.id == "E4"
    assert merged.content == pubmed.content  # the longer abstract
    assert c.title == pubmed.citation.title  # non-empty title kept
    assert c.authors == ["Lee MS", "Green R", "Marsillac SM"]
    assert (c.pmid, c.doi, c.pmcid) == ("20516115", "10.1158/0008-5472.can-09-4563", "PMC3040717")
    assert (c.journal, c.year, c.date) == ("Cancer Res", 2010, "2010-06-01")
    assert c.url == "https://pubmed.ncbi.nlm.nih.gov/20516115/"  # existing URL preferred
    assert (c.source, c.id) == ("pubmed", "20516115")
    assert merged.sources == ["pubmed", "europepmc"]
    assert merged.relevance == 0.9
    assert merged.mesh_terms == ["BRCA1 Protein", "Mutation, Missense", "Humans"]
    assert merged.publication_types == ["Journal Article", "research-article"]
    assert merged.checklist_keys == ["mechanism", "trials"]
    # inputs untouched
    assert (pubmed.sources, pubmed.citation.doi) == (["pubmed"], None)
    assert epmc.citation.title == ""


def test_merge_takes_longer_content_and_missing_title_from_new() -> None:
    old = ev("short", source="openalex", id="W1", doi="10.1/x", title="")
    new = ev("a much longer abstract text", source="pubmed", id="7", title="The title")
    merged = merge_evidence(old, new)
    assert merged.content == "a much longer abstract text"
    assert merged.citation.title == "The title"
    assert merged.citation.pmid == "7"  # derived from the PubMed native id
    assert merged.citation.doi == "10.1/x"


def test_merge_keeps_the_full_text_of_either_side() -> None:
    body = [Passage(section=["Results"], start=0, end=4, text="Body")]
    abstract = ev("abstract", source="pubmed", id="7")
    full = ev("abstract", source="local", id="7").model_copy(update={"passages": body})
    assert merge_evidence(abstract, full).passages == body
    assert merge_evidence(full, abstract).passages == body
    assert merge_evidence(full, abstract).full_text
    assert not merge_evidence(abstract, abstract).full_text


def test_merge_fills_identifiers_derived_from_urls() -> None:
    old = ev(source="web", id="a", url="https://pubmed.ncbi.nlm.nih.gov/31/")
    new = ev(source="web", id="b", url="https://doi.org/10.5/Y")
    merged = merge_evidence(old, new)
    assert (merged.citation.pmid, merged.citation.doi) == ("31", "10.5/y")
    assert merged.citation.url == "https://pubmed.ncbi.nlm.nih.gov/31/"


def test_merge_existing_identifier_wins_conflict() -> None:
    merged = merge_evidence(ev(id="1", doi="10.1/a"), ev(id="1", doi="10.1/b"))
    assert merged.citation.doi == "10.1/a"


def test_merge_dates_refine_and_never_regress() -> None:
    a = ev(id="1", date="2019", year=2019)
    b = ev(id="1", date="2019-03-14", year=2019)
    assert merge_evidence(a, b).citation.date == "2019-03-14"
    assert merge_evidence(b, a).citation.date == "2019-03-14"
    c = ev(id="1", date="2020-01")
    assert merge_evidence(a, c).citation.date == "2019"  # conflicting: existing kept


@pytest.mark.parametrize(
    ("old_preprint", "new_preprint", "expected"),
    [(True, True, True), (True, False, False), (False, True, False), (False, False, False)],
)
def test_merge_preprint_only_when_both_are(
    old_preprint: bool, new_preprint: bool, expected: bool
) -> None:
    merged = merge_evidence(
        ev(id="1", is_preprint=old_preprint), ev(id="1", is_preprint=new_preprint)
    )
    assert merged.is_preprint is expected


def test_merge_peer_reviewed_venue_wins_over_preprint() -> None:
    preprint = ev(id="1", journal="bioRxiv", year=2023, date="2023-05", is_preprint=True)
    paper = ev(id="1", journal="Nature", year=2024, date="2024-02-01")
    merged = merge_evidence(preprint, paper)
    assert (merged.citation.journal, merged.citation.year) == ("Nature", 2024)
    assert merged.is_preprint is False


def test_merge_is_idempotent() -> None:
    item = ev(
        "text",
        id="5",
        pmid="5",
        doi="10.1/x",
        authors=["A"],
        mesh_terms=["M"],
        relevance=0.3,
        retrieved_at=datetime(2024, 1, 1, tzinfo=UTC),
    )
    assert merge_evidence(item, item) == item
    # identifiers implied by the native id are written into the fields, once
    bare = ev("text", id="5")
    once = merge_evidence(bare, bare)
    assert once.citation.pmid == "5"
    assert merge_evidence(once, bare) == once
