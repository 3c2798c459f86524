"""Corpus file readers: PubMedQA JSONL (real corpus and small files) and PubMed XML (.xml/.gz)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from deepcritical.corpus.corpus_errors import CorpusFormatError
from deepcritical.corpus.readers import corpus_file_kind, read_corpus_file, read_full_text
from deepcritical.corpus.text import index_text


def write_jsonl(path: Path, records: list[Any]) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def record(pmid: Any, text: str = "Metformin lowers glucose.", **extra: Any) -> dict[str, Any]:
    return {
        "pmid": pmid,
        "year": 2001,
        "mesh_terms": ["Humans"],
        "abstract_sections": [{"label": "RESULTS", "text": text}],
        **extra,
    }


def test_real_pubmedqa_corpus_reads_every_record(pubmedqa_dir: Path) -> None:
    articles = list(read_corpus_file(pubmedqa_dir / "corpus.jsonl"))
    assert len(articles) == 1000
    assert len({a.pmid for a in articles}) == 1000
    assert all(a.pmid.isdigit() for a in articles)
    assert all(a.title == "" for a in articles)  # PubMedQA records have no title
    assert all(a.abstract_sections and index_text(a) for a in articles)
    years = [a.year for a in articles]
    assert sum(y is None for y in years) == 58  # 58 records have "year": null
    assert all(1900 < y < 2100 for y in years if y is not None)
    first = articles[0]
    assert first.pmid == "1571683"
    assert first.year == 1992
    assert first.abstract_sections[0].label == "OBJECTIVE"
    assert first.abstract_sections[0].text.startswith("To assess quality of storage of vaccines")
    assert "Vaccines" in first.mesh_terms
    # the indexed text keeps the section texts, not their labels
    assert index_text(first).startswith("To assess quality of storage of vaccines")


def test_optional_fields_are_mapped(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "c.jsonl",
        [
            record(
                12345,
                title="Metformin and cancer",
                authors=["Smith JA", "Doe J"],
                journal="Lancet",
                doi="10.1000/xyz",
                keywords=["diabetes"],
            ),
            {"pmid": "678", "abstract": "A plain abstract."},
        ],
    )
    a, b = list(read_corpus_file(path))
    assert a.pmid == "12345"  # integer PMIDs become strings
    assert a.title == "Metformin and cancer"
    assert a.authors == ["Smith JA", "Doe J"]
    assert a.journal == "Lancet"
    assert a.doi == "10.1000/xyz"
    assert a.keywords == ["diabetes"]
    assert a.year == 2001
    assert index_text(a) == "Metformin and cancer Metformin lowers glucose."
    assert b.abstract_sections[0].label is None
    assert b.abstract_text() == "A plain abstract."
    assert b.year is None
    assert b.mesh_terms == []


def test_blank_lines_are_skipped_and_gzip_is_read(tmp_path: Path) -> None:
    text = "\n".join([json.dumps(record("1")), "", "   ", json.dumps(record("2"))]) + "\n"
    plain = tmp_path / "c.jsonl"
    plain.write_text(text, encoding="utf-8")
    packed = tmp_path / "c.JSONL.gz"  # suffix match is case-insensitive
    packed.write_bytes(gzip.compress(text.encode()))
    assert [a.pmid for a in read_corpus_file(plain)] == ["1", "2"]
    assert [a.pmid for a in read_corpus_file(packed)] == ["1", "2"]


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ('{"pmid": "2", "year": 1999', "invalid JSON"),
        ('["not", "an", "object"]', "expected a JSON object, found list"),
        (json.dumps({"year": 1999, "abstract_sections": []}), "'pmid' is missing"),
        (json.dumps(record("")), "'pmid' is missing"),
        (json.dumps(record("PMC123")), "not a PMID"),
        (json.dumps(record(True)), "not a PMID"),
        (json.dumps(record("3", mesh_terms="Humans")), "bad record for PMID 3"),
        (json.dumps({"pmid": "4", "abstract_sections": "text"}), "bad record for PMID 4"),
        (json.dumps({"pmid": "5", "abstract_sections": [{"label": "X"}]}), "bad record"),
    ],
)
def test_bad_line_names_file_and_line(tmp_path: Path, bad_line: str, message: str) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", [record("1"), "", bad_line, record("9")])
    reader = read_corpus_file(path)
    assert next(reader).pmid == "1"  # records before the bad line stream out first
    with pytest.raises(CorpusFormatError) as err:
        next(reader)
    assert err.value.line == 3
    assert err.value.path == path
    assert str(err.value).startswith(f"{path}:3: ")
    assert message in str(err.value)


def test_non_utf8_and_corrupt_gzip_are_format_errors(tmp_path: Path) -> None:
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(json.dumps(record("1")).encode() + b"\n" + b'{"pmid": "2\xe9"}\n')
    with pytest.raises(CorpusFormatError, match="not UTF-8"):
        list(read_corpus_file(latin))
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(gzip.compress(b'{"pmid": "1"}\n' * 200)[:40])
    with pytest.raises(CorpusFormatError, match="corrupt gzip"):
        list(read_corpus_file(broken))


@pytest.mark.parametrize("name", ["corpus.json", "corpus.csv", "corpus.gz", "corpus", "a.xml.zip"])
def test_unknown_suffix_is_rejected_before_reading(tmp_path: Path, name: str) -> None:
    path = tmp_path / name  # does not even exist: the suffix check comes first
    with pytest.raises(CorpusFormatError, match=r"unsupported file type; expected one of \.jsonl"):
        read_corpus_file(path)


def test_file_kinds() -> None:
    assert corpus_file_kind(Path("a.jsonl")) == "jsonl"
    assert corpus_file_kind(Path("a.jsonl.gz")) == "jsonl"
    assert corpus_file_kind(Path("pubmed25n0001.xml.gz")) == "xml"
    assert corpus_file_kind(Path("EFETCH.XML")) == "xml"
    assert corpus_file_kind(Path("article.NXML")) == "jats"


def test_jats_told_from_pubmed_xml_by_root_element(jats_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "article.xml"
    copy.write_bytes((jats_dir / "pntd.0002065.nxml").read_bytes())
    assert corpus_file_kind(copy) == "jats"
    record, passages = read_full_text(copy)
    assert (record.pmid, record.pmcid) == ("23469300", "PMC3585041")
    assert record.abstract_text().startswith("Rift Valley fever")
    assert passages[0].section == ["Introduction"]
    assert list(read_corpus_file(copy)) == [record]
    pubmed = tmp_path / "set.xml"
    pubmed.write_bytes(b"<PubmedArticleSet></PubmedArticleSet>")
    assert corpus_file_kind(pubmed) == "xml"


def test_full_text_without_pmid_or_truncated_is_refused(tmp_path: Path) -> None:
    no_pmid = tmp_path / "a.nxml"
    no_pmid.write_bytes(b"<article><front><article-meta/></front></article>")
    with pytest.raises(CorpusFormatError, match="has no PMID"):
        read_full_text(no_pmid)
    cut = tmp_path / "b.nxml"
    cut.write_bytes(b"<article><front><article-meta>")
    with pytest.raises(CorpusFormatError, match=r"b\.nxml: truncated"):
        read_full_text(cut)


def test_pubmed_xml_and_gzipped_copy(api_fixtures: Path, tmp_path: Path) -> None:
    source = api_fixtures / "ncbi_eutils" / "efetch_pubmed_2articles.xml"
    plain = list(read_corpus_file(source))
    assert [a.pmid for a in plain] == ["11748933", "11700088"]
    assert plain[0].title.startswith("Is cryopreservation a homogeneous process?")
    assert plain[0].abstract_text()
    packed = tmp_path / "efetch.xml.gz"
    with source.open("rb") as src, gzip.open(packed, "wb") as dst:
        shutil.copyfileobj(src, dst)
    assert list(read_corpus_file(packed)) == plain


def test_structured_xml_abstract_keeps_sections(api_fixtures: Path) -> None:
    path = api_fixtures / "ncbi_eutils" / "efetch_pubmed_structured_abstract_27797938.xml"
    (article,) = read_corpus_file(path)
    assert article.pmid == "27797938"
    assert len(article.abstract_sections) >= 3
    assert all(s.label for s in article.abstract_sections)


def test_malformed_xml_is_a_format_error_naming_the_file(
    api_fixtures: Path, tmp_path: Path
) -> None:
    source = api_fixtures / "ncbi_eutils" / "efetch_pubmed_2articles.xml"
    truncated = tmp_path / "truncated.xml"
    data = source.read_bytes()
    truncated.write_bytes(data[: len(data) * 3 // 4])
    with pytest.raises(CorpusFormatError) as err:
        list(read_corpus_file(truncated))
    assert str(truncated) in str(err.value)
    assert isinstance(err.value, ValueError)
