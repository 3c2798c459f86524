"""JATS full-text parsing: the six real PMC open-access articles of ../shared (expected values
computed here with plain XPath, independently of the parser) and hostile or broken documents."""

from __future__ import annotations

from pathlib import Path

import pytest
from lxml import etree

from deepcritical.formats.jats import (
    PASSAGE_SEPARATOR,
    JatsArticle,
    JatsError,
    is_jats_file,
    jats_to_evidence,
    parse_jats,
    read_jats,
)
from deepcritical.models import PassageKind

# file -> (PMID, PMCID, DOI, a fragment of its licence), from SOURCES.md.
ARTICLES = {
    "1471-2180-11-174.nxml": (
        "21810267",
        "PMC3166277",
        "10.1186/1471-2180-11-174",
        "creativecommons.org/licenses/by/2.0",
    ),
    "1472-6831-8-11.nxml": (
        "18405359",
        "PMC2329613",
        "10.1186/1472-6831-8-11",
        "creativecommons.org/licenses/by/2.0",
    ),
    "ehp-116-1694.nxml": ("19079722", "PMC2599765", "10.1289/ehp.11570", "publicdomain"),
    "pntd.0002065.nxml": (
        "23469300",
        "PMC3585041",
        "10.1371/journal.pntd.0002065",
        "Creative Commons Attribution License",
    ),
    "pone.0000217.nxml": (
        "17299597",
        "PMC1790863",
        "10.1371/journal.pone.0000217",
        "Creative Commons Attribution License",
    ),
    "pone.0046493.nxml": (
        "23029536",
        "PMC3460867",
        "10.1371/journal.pone.0046493",
        "Creative Commons Attribution License",
    ),
}

_PLAIN = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)

_MINIMAL = (
    "<article><front><article-meta><title-group><article-title>{title}</article-title>"
    "</title-group></article-meta></front><body><sec><title>Results</title><p>{body}</p>"
    "</sec></body></article>"
)


def _tree(path: Path) -> etree._Element:
    return etree.parse(str(path), _PLAIN).getroot()


def _nodes(el: etree._Element, path: str) -> list[etree._Element]:
    """The elements a plain XPath selects."""
    found = el.xpath(path)
    assert isinstance(found, list)
    return [n for n in found if isinstance(n, etree._Element)]


def _string(el: etree._Element, path: str) -> str:
    """XPath ``string(path)``, whitespace squashed."""
    found = el.xpath(f"string({path})")
    assert isinstance(found, str)
    return " ".join(found.split())


def _expected_sections(root: etree._Element) -> list[tuple[str, int]]:
    """(title, number of p/list children) of every body and back section, in document order."""
    secs = _nodes(root, "body//sec | back/sec | back/ack")
    out = []
    for sec in secs:
        title = _string(sec, "title")
        if not title and sec.tag == "ack":
            title = "Acknowledgments"
        out.append((title, len(_nodes(sec, "p | list"))))
    return out


def _parsed_sections(article: JatsArticle) -> list[tuple[str, int]]:
    return [
        (section.title, len(section.paragraphs))
        for top in article.sections
        for _path, section in top.walk()
        if top.title or section is not top  # the untitled run of body paragraphs is apart
    ]


@pytest.mark.parametrize("name", sorted(ARTICLES))
def test_real_article_ids_licence_title_abstract(jats_dir: Path, name: str) -> None:
    article = read_jats(jats_dir / name)
    pmid, pmcid, doi, licence = ARTICLES[name]
    assert (article.pmid, article.pmcid, article.doi) == (pmid, pmcid, doi)
    assert article.license is not None
    assert licence in article.license
    root = _tree(jats_dir / name)
    title = _string(root, "front/article-meta/title-group/article-title")
    assert article.title == title
    assert len(article.abstract) > 200
    assert is_jats_file(jats_dir / name)


@pytest.mark.parametrize("name", sorted(ARTICLES))
def test_real_article_every_section_title_and_paragraph_count(jats_dir: Path, name: str) -> None:
    article = read_jats(jats_dir / name)
    root = _tree(jats_dir / name)
    assert _parsed_sections(article) == _expected_sections(root)
    loose = len(_nodes(root, "body/p"))
    assert (article.sections[0].title == "") == (loose > 0)
    if loose:
        assert len(article.sections[0].paragraphs) == loose


@pytest.mark.parametrize("name", sorted(ARTICLES))
def test_real_article_tables_figures_references(jats_dir: Path, name: str) -> None:
    article = read_jats(jats_dir / name)
    root = _tree(jats_dir / name)
    wraps = _nodes(root, "//table-wrap")
    assert [t.label for t in article.tables] == [_string(w, "label") for w in wraps]
    for table, wrap in zip(article.tables, wraps, strict=True):
        assert table.caption
        assert len(table.rows) == len(_nodes(wrap, ".//tr[td or th]"))
    figures = _nodes(root, "//fig")
    assert len(article.figures) == len(figures)
    assert all(f.caption for f in article.figures)
    refs = _nodes(root, "back/ref-list/ref")
    assert len(article.references) == len(refs)
    pmids = {r.pmid for r in article.references if r.pmid}
    assert pmids == {
        (p.text or "").strip()
        for p in _nodes(root, "back/ref-list/ref//pub-id[@pub-id-type='pmid']")
    }


@pytest.mark.parametrize("name", sorted(ARTICLES))
def test_real_article_passages_cover_the_text_without_citation_markers(
    jats_dir: Path, name: str
) -> None:
    article = read_jats(jats_dir / name)
    passages = article.passages()
    full = PASSAGE_SEPARATOR.join(p.text for p in passages)
    for p in passages:
        assert full[p.start : p.end] == p.text
    paragraphs = [p for p in passages if p.kind is PassageKind.PARAGRAPH]
    assert len(paragraphs) == sum(n for _t, n in _parsed_sections(article)) + (
        len(article.sections[0].paragraphs) if not article.sections[0].title else 0
    )
    assert sum(p.kind is PassageKind.TABLE for p in passages) == len(article.tables)
    assert sum(p.kind is PassageKind.FIGURE for p in passages) == len(article.figures)
    assert "[]" not in full
    assert "[, ]" not in full
    assert "[–]" not in full


def test_known_sections_tables_and_nested_paths(jats_dir: Path) -> None:
    article = read_jats(jats_dir / "pone.0046493.nxml")
    tops = [s.title for s in article.sections]
    assert tops[:4] == ["Introduction", "Materials and Methods", "Results", "Discussion"]
    table = next(t for t in article.tables if t.label == "Table 2")
    assert table.section == ["Results", "In vitro inhibition studies"]
    assert "Inhibition studies using MmPPOX" in table.caption
    passage = next(p for p in article.passages() if p.label == "Table 2")
    assert passage.locator() == "Results › In vitro inhibition studies, Table 2"
    assert "MmPPOX" in passage.text
    assert " | " in passage.text


def test_citation_markers_dropped_and_inline_markup_flattened(jats_dir: Path) -> None:
    article = read_jats(jats_dir / "pntd.0002065.nxml")
    intro = article.sections[0]
    assert intro.title == "Introduction"
    # The first paragraph cites [1] and [2] in the XML; neither number nor bracket remains.
    raw = _nodes(_tree(jats_dir / "pntd.0002065.nxml"), "body/sec[1]/p[1]")[0]
    assert _nodes(raw, "xref[@ref-type='bibr']")
    assert "[" not in intro.paragraphs[0]


def test_inline_math_as_text(jats_dir: Path) -> None:
    article = read_jats(jats_dir / "pone.0000217.nxml")
    texts = [p.text for p in article.passages()]
    assert any("ν = 2⋅Ne−1 in the diploid case" in t for t in texts)


def test_mathml_reduced_to_its_tokens() -> None:
    body = (
        'Uptake of <inline-formula><mml:math xmlns:mml="http://www.w3.org/1998/Math/MathML">'
        "<mml:msub><mml:mi>O</mml:mi><mml:mn>2</mml:mn></mml:msub></mml:math></inline-formula>"
        ' rose <xref ref-type="bibr" rid="B1">1</xref>, see <xref ref-type="fig">Figure 1</xref>.'
    )
    article = parse_jats(_MINIMAL.format(title="T", body=body))
    assert article.sections[0].paragraphs == ["Uptake of O2 rose, see Figure 1."]


def test_evidence_carries_the_passages(jats_dir: Path) -> None:
    article = read_jats(jats_dir / "ehp-116-1694.nxml")
    item = jats_to_evidence(article)
    assert item.full_text
    assert item.citation.pmid == "19079722"
    assert item.citation.pmcid == "PMC2599765"
    assert item.content == article.abstract
    assert item.passages == article.passages()
    assert item.passages[0].section_label() == "Body"


# --------------------------------------------------------------------------- hostile input


def test_xxe_to_a_local_file_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET-CONTENT", encoding="utf-8")
    doc = (
        f'<?xml version="1.0"?><!DOCTYPE article [<!ENTITY xxe SYSTEM "file://{secret}">]>'
        + _MINIMAL.format(title="&xxe;", body="&xxe;")
    )
    with pytest.raises(JatsError, match="declares entities"):
        parse_jats(doc.encode())


def test_xxe_parameter_entity_to_etc_passwd_is_refused() -> None:
    doc = '<!DOCTYPE article [<!ENTITY % p SYSTEM "file:///etc/passwd"> %p;]>' + _MINIMAL.format(
        title="T", body="x"
    )
    with pytest.raises(JatsError, match="declares entities"):
        parse_jats(doc)


def test_billion_laughs_is_refused_in_any_encoding() -> None:
    entities = ['<!ENTITY l0 "lol">'] + [
        f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10)
    ]
    doc = f"<!DOCTYPE article [{''.join(entities)}]>" + _MINIMAL.format(title="&l9;", body="&l9;")
    for data in (doc.encode("utf-8"), doc.encode("utf-16")):
        with pytest.raises(JatsError, match=r"declares entities|entity bomb refused"):
            parse_jats(data)


def test_external_dtd_and_external_entity_reference_are_not_read(tmp_path: Path) -> None:
    dtd = tmp_path / "evil.dtd"
    dtd.write_text('<!ENTITY title "FROM-THE-DTD">', encoding="utf-8")
    doc = f'<!DOCTYPE article SYSTEM "file://{dtd}">' + _MINIMAL.format(
        title="Kept &title;", body="Text."
    )
    article = parse_jats(doc)
    assert "FROM-THE-DTD" not in article.model_dump_json()
    assert article.title.startswith("Kept")
    passwd = '<!DOCTYPE article SYSTEM "file:///etc/passwd">' + _MINIMAL.format(
        title="T", body="Text."
    )
    assert "root:" not in parse_jats(passwd).model_dump_json()


def test_truncated_file_gives_a_clear_error(jats_dir: Path, tmp_path: Path) -> None:
    data = (jats_dir / "pone.0046493.nxml").read_bytes()
    cut = tmp_path / "cut.nxml"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(JatsError, match=r"cut\.nxml: truncated \(it ends before </article>\)"):
        read_jats(cut)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "empty document"),
        (b"<article><front>", "truncated"),
        (b"<article><p></q></article>", "malformed XML"),
        (b"<PubmedArticleSet/>", "is not a JATS <article>"),
    ],
)
def test_bad_documents_say_why(data: bytes, reason: str) -> None:
    with pytest.raises(JatsError, match=reason):
        parse_jats(data)


def test_pubmed_xml_is_not_jats(tmp_path: Path) -> None:
    path = tmp_path / "set.xml"
    path.write_bytes(b"<?xml version='1.0'?><PubmedArticleSet></PubmedArticleSet>")
    assert not is_jats_file(path)
