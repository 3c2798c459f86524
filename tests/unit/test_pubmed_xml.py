"""PubMed XML parsing: real efetch replies (../shared/fixtures) plus small hand-made records."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest

from deepcritical.formats.pubmed_xml import (
    AbstractSection,
    PubmedArticle,
    PubmedXMLError,
    article_to_evidence,
    iter_pubmed_xml,
    normalize_doi,
    parse_pubmed_xml,
)


def _eutils(api_fixtures: Path, name: str) -> bytes:
    return (api_fixtures / "ncbi_eutils" / name).read_bytes()


def _record(
    *,
    pmid: str = "123",
    title: str = "A title.",
    pub_date: str = "<Year>2020</Year>",
    abstract: str = "",
    authors: str = "",
    extra_article: str = "",
    pubmed_data: str = "",
) -> str:
    """One minimal <PubmedArticle> with the given fragments."""
    return (
        "<PubmedArticle><MedlineCitation><PMID Version='1'>"
        + pmid
        + "</PMID><Article><Journal><JournalIssue><PubDate>"
        + pub_date
        + "</PubDate></JournalIssue><Title>Journal of Tests</Title></Journal><ArticleTitle>"
        + title
        + "</ArticleTitle>"
        + abstract
        + (f"<AuthorList>{authors}</AuthorList>" if authors else "")
        + extra_article
        + "</Article></MedlineCitation>"
        + (f"<PubmedData>{pubmed_data}</PubmedData>" if pubmed_data else "")
        + "</PubmedArticle>"
    )


def _doc(*records: str) -> str:
    return '<?xml version="1.0" ?>\n<PubmedArticleSet>' + "".join(records) + "</PubmedArticleSet>"


def _one(record: str) -> PubmedArticle:
    articles = parse_pubmed_xml(_doc(record))
    assert len(articles) == 1
    return articles[0]


# --------------------------------------------------------------------------- real fixtures


def test_two_articles_one_without_abstract(api_fixtures: Path) -> None:
    data = _eutils(api_fixtures, "efetch_pubmed_2articles_one_without_abstract.xml")
    first, second = parse_pubmed_xml(data)

    assert first.pmid == "12091962"
    assert first.title == "The treatment of AIDS behind the walls of correctional facilities."
    assert first.abstract_sections == []
    assert first.abstract_text() == ""
    assert first.authors == ["Olivero JM"]
    assert first.journal == "Social justice (San Francisco, Calif.)"
    # PubDate is <Year>1990</Year><Season>Spring</Season>: year only, no invented month.
    assert (first.year, first.date) == (1990, "1990")
    assert first.doi is None
    assert first.pmcid is None
    assert first.publication_types == ["Journal Article", "Review"]
    assert first.keywords == ["Health Care and Public Health", "Legal Approach"]
    assert first.mesh_terms[0] == "AIDS Serodiagnosis"
    assert "United States" in first.mesh_terms
    assert len(first.mesh_terms) == 19

    assert second.pmid == "9997"
    assert (second.year, second.date) == (1976, "1976-09-28")  # Month "Sep" -> 09
    assert second.doi == "10.1016/0005-2795(76)90109-4"  # from ArticleIdList only
    assert second.abstract_text().startswith("Electron paramagnetic resonance")
    assert second.abstract_sections[0].label is None

    # Without an abstract the evidence content falls back to the title.
    ev = article_to_evidence(first, query="aids prisons", relevance=0.5)
    assert ev.content == first.title
    assert ev.query == "aids prisons"
    assert ev.relevance == 0.5


def test_two_articles_copyright_not_in_abstract(api_fixtures: Path) -> None:
    a, b = parse_pubmed_xml(_eutils(api_fixtures, "efetch_pubmed_2articles.xml"))
    assert [a.pmid, b.pmid] == ["11748933", "11700088"]
    assert "Copyright" not in a.abstract_text()
    assert a.abstract_text().endswith("cryoprotectants.") or "Elsevier" not in a.abstract_text()
    assert (a.date, b.date) == ("2001-06", "2001-11")
    assert a.authors[:2] == ["Taddei AR", "Barbato F"]
    assert len(a.authors) == 8
    assert b.authors[-1] == "De Luca F"
    assert b.journal == "Journal of magnetic resonance (San Diego, Calif. : 1997)"
    assert b.doi == "10.1006/jmre.2001.2429"
    assert b.mesh_terms == []


def test_inline_markup_and_mathml(api_fixtures: Path) -> None:
    (art,) = parse_pubmed_xml(_eutils(api_fixtures, "efetch_pubmed_inline_markup_30108519.xml"))
    assert art.pmid == "30108519"  # not one of the PMIDs in CommentsCorrections
    # <i> inside the title keeps the spacing of the surrounding text.
    assert art.title == (
        'A "Blood Relationship" Between the Overlooked Minimum Lactate Equivalent and '
        "Maximal Lactate Steady State in Trained Runners. Back to the Old Days?"
    )
    text = art.abstract_text()
    # <sub>/<sup> glue to their word; nothing glues across words.
    assert '"Minimum Lactate Equivalent" (LEmin)' in text
    assert "(BLRTs)" in text
    assert "km·h-1" in text
    assert "ml·kg-1·min-1" in text
    # MathML (V with a dot accent, subscript O2max) flattened to plain text, indentation gone.
    assert "maximal oxygen uptake ( VO2max ) 67.6" in text
    assert "running test for VO2max determination" in text
    assert "\n" not in text
    assert "  " not in text
    assert "mml" not in text
    assert "(P < 0.001; ES: 3.54)" in text

    assert art.doi == "10.3389/fphys.2018.01034"
    assert art.pmcid == "PMC6079548"
    assert art.authors == ["Garcia-Tabar I", "Gorostiaga EM"]
    assert (art.year, art.date) == (2018, "2018")  # PubDate has only the year
    assert "lactate threshold" in art.keywords
    assert art.mesh_terms == []


def test_structured_abstract_labels_and_collective_name(api_fixtures: Path) -> None:
    data = _eutils(api_fixtures, "efetch_pubmed_structured_abstract_22663011.xml")
    (art,) = parse_pubmed_xml(data)
    assert [s.label for s in art.abstract_sections] == [
        "BACKGROUND",
        "METHODS",
        "RESULTS",
        "CONCLUSIONS",
    ]
    paragraphs = art.abstract_text().split("\n\n")
    assert len(paragraphs) == 4
    assert paragraphs[0].startswith("BACKGROUND: Activating mutations in serine-threonine")
    assert paragraphs[3].startswith("CONCLUSIONS: Trametinib, as compared with chemotherapy")
    # Authors: AuthorList only (the long InvestigatorList is not authors), group name kept.
    assert art.authors[0] == "Flaherty KT"
    assert art.authors[-1] == "METRIC Study Group"
    assert "Becker JC" in art.authors
    assert len(art.authors) == 26
    assert art.doi == "10.1056/nejmoa1203421"  # ELocationID, lower-cased
    assert (art.year, art.date) == (2012, "2012-07-12")
    assert "Randomized Controlled Trial" in art.publication_types
    assert art.journal == "The New England journal of medicine"


def test_structured_abstract_with_inline_markup(api_fixtures: Path) -> None:
    data = _eutils(api_fixtures, "efetch_pubmed_structured_abstract_27797938.xml")
    (art,) = parse_pubmed_xml(data)
    assert art.title == (
        "Leucocyte telomere length, genetic variants at the TERT gene region and risk of "
        "pancreatic cancer."
    )
    assert [s.label for s in art.abstract_sections] == [
        "OBJECTIVE",
        "DESIGN",
        "RESULTS",
        "CONCLUSIONS",
    ]
    assert "p<sub>" not in art.abstract_text()
    assert "ptrend=0.048" in art.abstract_text()
    assert art.pmcid == "PMC5442267"
    assert art.doi == "10.1136/gutjnl-2016-312510"
    assert (art.year, art.date) == (2017, "2017-06")
    assert art.keywords == ["PANCREATIC CANCER"]
    assert len(art.authors) == 22

    ev = article_to_evidence(art, query="telomere pancreatic cancer", relevance=1.0)
    c = ev.citation
    assert (c.source, c.id, c.pmid) == ("pubmed", "27797938", "27797938")
    assert c.url == "https://pubmed.ncbi.nlm.nih.gov/27797938/"
    assert (c.doi, c.pmcid, c.year, c.date) == (art.doi, art.pmcid, 2017, "2017-06")
    assert c.journal == "Gut"
    assert c.authors == art.authors
    assert ev.content == art.abstract_text()
    assert ev.content.startswith("OBJECTIVE: Telomere shortening")
    assert ev.mesh_terms == art.mesh_terms
    assert ev.publication_types == art.publication_types
    assert ev.sources == ["pubmed"]
    assert ev.is_preprint is False


def test_every_efetch_fixture_parses_and_streams_identically(api_fixtures: Path) -> None:
    files = sorted((api_fixtures / "ncbi_eutils").glob("efetch_*.xml"))
    assert len(files) >= 5
    for f in files:
        parsed = parse_pubmed_xml(f.read_bytes())
        assert parsed, f.name
        assert all(a.pmid.isdigit() and a.title for a in parsed), f.name
        assert list(iter_pubmed_xml(f)) == parsed, f.name
        assert parse_pubmed_xml(f.read_text(encoding="utf-8")) == parsed, f.name


# --------------------------------------------------------------------------- small records


@pytest.mark.parametrize(
    ("pub_date", "year", "date"),
    [
        ("<Year>1990</Year><Season>Spring</Season>", 1990, "1990"),
        ("<Year>2001</Year><Season>Winter</Season>", 2001, "2001"),
        ("<MedlineDate>1998 Dec-1999 Jan</MedlineDate>", 1998, "1998-12"),
        ("<MedlineDate>2000 Spring</MedlineDate>", 2000, "2000"),
        ("<MedlineDate>1975-1976</MedlineDate>", 1975, "1975"),
        ("<Year>2019</Year><Month>Mar</Month><Day>4</Day>", 2019, "2019-03-04"),
        ("<Year>2019</Year><Month>3</Month>", 2019, "2019-03"),
        ("<Year>2019</Year><Month>December</Month>", 2019, "2019-12"),
        ("<Year>2019</Year><Month>Foo</Month><Day>4</Day>", 2019, "2019"),
    ],
)
def test_pub_date_forms(pub_date: str, year: int, date: str) -> None:
    art = _one(_record(pub_date=pub_date))
    assert (art.year, art.date) == (year, date)


def test_article_date_fallback_when_pub_date_has_no_year() -> None:
    art = _one(
        _record(
            pub_date="",
            extra_article=(
                "<ArticleDate DateType='Electronic'><Year>2021</Year><Month>02</Month>"
                "<Day>09</Day></ArticleDate>"
            ),
        )
    )
    assert (art.year, art.date) == (2021, "2021-02-09")


def test_no_date_at_all() -> None:
    art = _one(_record(pub_date=""))
    assert (art.year, art.date) == (None, None)


def test_mathml_sub_and_sup_spacing() -> None:
    abstract = (
        "<Abstract><AbstractText>Levels of CO<sub>2</sub> rose; the rate "
        '<mml:math xmlns:mml="http://www.w3.org/1998/Math/MathML">\n  <mml:mi>k</mml:mi>\n'
        "  <mml:mo>=</mml:mo>\n  <mml:msup><mml:mn>10</mml:mn><mml:mn>3</mml:mn></mml:msup>\n"
        "</mml:math> per <b>s</b>.</AbstractText></Abstract>"
    )
    art = _one(_record(title="Ca<sup>2+</sup> and <i>in vivo</i> flux", abstract=abstract))
    assert art.title == "Ca2+ and in vivo flux"
    assert art.abstract_text() == "Levels of CO2 rose; the rate k=103 per s."


def test_collective_name_and_author_forms() -> None:
    authors = (
        "<Author><LastName>Smith</LastName><ForeName>John A</ForeName>"
        "<Initials>JA</Initials></Author>"
        "<Author><LastName>Doe</LastName><ForeName>Jane Marie</ForeName></Author>"
        "<Author><LastName>King</LastName><Initials>M</Initials><Suffix>Jr</Suffix></Author>"
        "<Author ValidYN='N'><LastName>Wrong</LastName><Initials>X</Initials></Author>"
        "<Author><CollectiveName>The <i>ABC</i> Consortium</CollectiveName></Author>"
        "<Author><LastName>Plato</LastName></Author>"
    )
    art = _one(_record(authors=authors))
    assert art.authors == [
        "Smith JA",
        "Doe JM",
        "King M Jr",
        "The ABC Consortium",
        "Plato",
    ]


def test_labels_nlm_category_fallback_and_empty_sections() -> None:
    abstract = (
        "<Abstract>"
        "<AbstractText NlmCategory='BACKGROUND'>Why.</AbstractText>"
        "<AbstractText Label='Methods' NlmCategory='METHODS'>How.</AbstractText>"
        "<AbstractText Label='EMPTY'/>"
        "<AbstractText NlmCategory='UNASSIGNED'>Other.</AbstractText>"
        "</Abstract>"
    )
    art = _one(_record(abstract=abstract))
    assert art.abstract_sections == [
        AbstractSection(label="BACKGROUND", text="Why."),
        AbstractSection(label="Methods", text="How."),
        AbstractSection(label=None, text="Other."),
    ]
    assert art.abstract_text() == "BACKGROUND: Why.\n\nMethods: How.\n\nOther."


def test_ids_from_article_id_list_and_eloc_precedence() -> None:
    pubmed_data = (
        "<ArticleIdList><ArticleId IdType='pubmed'>123</ArticleId>"
        "<ArticleId IdType='doi'>https://doi.org/10.1000/FROM-LIST</ArticleId>"
        "<ArticleId IdType='pmc'>PMC999</ArticleId></ArticleIdList>"
        "<ReferenceList><Reference><ArticleIdList>"
        "<ArticleId IdType='pmc'>PMC111</ArticleId></ArticleIdList></Reference></ReferenceList>"
    )
    art = _one(_record(pubmed_data=pubmed_data))
    assert art.doi == "10.1000/from-list"
    assert art.pmcid == "PMC999"
    eloc = "<ELocationID EIdType='doi' ValidYN='Y'>10.1000/ELOC</ELocationID>"
    art2 = _one(_record(pubmed_data=pubmed_data, extra_article=eloc))
    assert art2.doi == "10.1000/eloc"


def test_normalize_doi() -> None:
    assert normalize_doi(" https://doi.org/10.1056/NEJMoa1203421 ") == "10.1056/nejmoa1203421"
    assert normalize_doi("doi:10.1/ABC") == "10.1/abc"
    assert normalize_doi("http://dx.doi.org/10.1/x") == "10.1/x"
    assert normalize_doi("not a doi") is None
    assert normalize_doi(None) is None


def test_preprint_publication_type_sets_flag() -> None:
    types = (
        "<PublicationTypeList><PublicationType UI='D000076942'>Preprint</PublicationType>"
        "</PublicationTypeList>"
    )
    art = _one(_record(extra_article=types))
    assert art.publication_types == ["Preprint"]
    ev = article_to_evidence(art, source="local")
    assert ev.is_preprint is True
    assert ev.citation.source == "local"
    assert ev.sources == ["local"]
    assert ev.relevance == 0.0


def test_book_article() -> None:
    book = (
        "<PubmedBookArticle><BookDocument><PMID Version='1'>20301295</PMID>"
        "<ArticleIdList><ArticleId IdType='bookaccession'>NBK1116</ArticleId></ArticleIdList>"
        "<Book><BookTitle book='gene'>GeneReviews</BookTitle>"
        "<PubDate><Year>1993</Year></PubDate>"
        "<AuthorList Type='editors'><Author><LastName>Adam</LastName>"
        "<Initials>MP</Initials></Author></AuthorList></Book>"
        "<ArticleTitle>Cystic Fibrosis</ArticleTitle>"
        "<AuthorList Type='authors'><Author><LastName>Ong</LastName><Initials>T</Initials>"
        "</Author></AuthorList>"
        "<Abstract><AbstractText Label='CLINICAL CHARACTERISTICS'>CF affects lungs."
        "</AbstractText></Abstract></BookDocument></PubmedBookArticle>"
    )
    (art,) = parse_pubmed_xml(_doc(book))
    assert art.pmid == "20301295"
    assert art.title == "Cystic Fibrosis"
    assert art.journal == "GeneReviews"
    assert art.authors == ["Ong T"]
    assert art.year == 1993
    assert art.abstract_text() == "CLINICAL CHARACTERISTICS: CF affects lungs."


def test_empty_set_record_without_pmid_and_delete_citation() -> None:
    assert parse_pubmed_xml("<PubmedArticleSet></PubmedArticleSet>") == []
    doc = _doc(
        _record(pmid=""),
        _record(pmid="7"),
        "<DeleteCitation><PMID Version='1'>8</PMID></DeleteCitation>",
    )
    assert [a.pmid for a in parse_pubmed_xml(doc)] == ["7"]
    assert [a.pmid for a in iter_pubmed_xml(io.BytesIO(doc.encode()))] == ["7"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty document"),
        (b"   \n", "empty document"),
        (b"<PubmedArticleSet><PubmedArticle>", "not well-formed XML"),
        ("<PubmedArticleSet><a></b></PubmedArticleSet>", "not well-formed XML"),
        (b'{"error":"API rate limit exceeded"}', "not well-formed XML"),
        (
            b"<eFetchResult><ERROR>Empty id list - nothing todo</ERROR></eFetchResult>",
            "root element <eFetchResult> is not a PubmedArticleSet: Empty id list",
        ),
    ],
)
def test_malformed_xml_raises(data: bytes | str, message: str) -> None:
    with pytest.raises(PubmedXMLError, match=message) as info:
        parse_pubmed_xml(data)
    assert isinstance(info.value, ValueError)


def test_external_entities_are_not_resolved(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    doc = (
        f'<?xml version="1.0"?><!DOCTYPE PubmedArticleSet [<!ENTITY x SYSTEM "file://{secret}">]>'
        + _doc(_record(title="Leak &x; here")).split("\n", 1)[1]
    )
    (art,) = parse_pubmed_xml(doc)
    assert art.title == "Leak here"  # the entity reference is dropped, never expanded


# --------------------------------------------------------------------------- streaming


def test_iter_gz_file_streams_all_records(tmp_path: Path) -> None:
    records = [_record(pmid=str(i), title=f"Title {i}") for i in range(1, 251)]
    path = tmp_path / "pubmed25n0001.xml.gz"
    with gzip.open(path, "wb") as fh:
        fh.write(_doc(*records).encode("utf-8"))
    it = iter_pubmed_xml(path)
    first = next(it)
    assert (first.pmid, first.title, first.year) == ("1", "Title 1", 2020)
    rest = list(it)
    assert len(rest) == 249
    assert rest[-1].pmid == "250"
    # str paths work too, and the plain-XML path is not gunzipped.
    assert len(list(iter_pubmed_xml(str(path)))) == 250
    plain = tmp_path / "small.xml"
    plain.write_text(_doc(*records[:3]), encoding="utf-8")
    assert [a.pmid for a in iter_pubmed_xml(plain)] == ["1", "2", "3"]


def test_iter_stream_is_not_closed() -> None:
    stream = io.BytesIO(_doc(_record(pmid="5")).encode())
    assert [a.pmid for a in iter_pubmed_xml(stream)] == ["5"]
    assert not stream.closed


def test_iter_truncated_file_yields_records_then_raises(tmp_path: Path) -> None:
    # Large enough that lxml reads it in several chunks: early records come out before the
    # error at the cut-off end is seen.
    doc = _doc(
        *(
            _record(
                pmid=str(i),
                abstract="<Abstract><AbstractText>" + "word " * 200 + "</AbstractText></Abstract>",
            )
            for i in range(1, 201)
        )
    )
    cut = doc[: len(doc) - 500]
    path = tmp_path / "truncated.xml"
    path.write_text(cut, encoding="utf-8")
    seen: list[str] = []
    with pytest.raises(PubmedXMLError, match=r"malformed PubMed XML in .*truncated\.xml"):
        seen.extend(art.pmid for art in iter_pubmed_xml(path))
    assert seen[:2] == ["1", "2"]
    assert "200" not in seen


def test_iter_corrupt_gzip_raises(tmp_path: Path) -> None:
    path = tmp_path / "bad.xml.gz"
    path.write_bytes(b"this is not gzip data at all")
    with pytest.raises(PubmedXMLError, match=r"bad\.xml\.gz"):
        list(iter_pubmed_xml(path))
