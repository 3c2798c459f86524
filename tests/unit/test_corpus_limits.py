"""Input limits of the corpus import (issue 13 item 5 and 7): every record is cleaned of control
characters and bounded to ``max_record_chars``; ``skip_bad_lines`` imports the good lines of a
file with bad ones and says which were skipped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deepcritical.corpus.corpus_errors import CorpusFormatError
from deepcritical.corpus.index import LocalCorpus
from deepcritical.corpus.readers import read_corpus_file
from deepcritical.corpus.records import check_record
from deepcritical.corpus.text import index_text
from deepcritical.formats.pubmed_xml import AbstractSection, PubmedArticle
from deepcritical.testing.embedders import HashingEmbedder

SENTENCE = "Metformin was associated with a lower incidence of colorectal cancer. "


def article(**fields: Any) -> PubmedArticle:
    values: dict[str, Any] = {"pmid": "1", "title": "A title", **fields}
    return PubmedArticle.model_validate(values)


def write_jsonl(path: Path, lines: list[Any]) -> Path:
    text = "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines)
    path.write_text(text + "\n", encoding="utf-8")
    return path


def rec(pmid: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"pmid": pmid, "abstract_sections": [{"label": "RESULTS", "text": text}], **extra}


# --------------------------------------------------------------------------- check_record
def test_a_record_within_the_limit_is_the_same_object() -> None:
    small = article(abstract_sections=[AbstractSection(label="R", text=SENTENCE)])
    checked = check_record(small, 10_000)
    assert checked.article is small
    assert not checked.truncated


def test_a_record_over_the_limit_is_cut_at_a_sentence_and_keeps_its_identity() -> None:
    big = article(
        year=2020,
        doi="10.1/x",
        abstract_sections=[
            AbstractSection(label="BACKGROUND", text=SENTENCE * 10),
            AbstractSection(label="RESULTS", text=SENTENCE * 100),
            AbstractSection(label="CONCLUSIONS", text="Never reached."),
        ],
        authors=["Smith J", "Doe A"],
    )
    checked = check_record(big, 2_000)
    cut = checked.article
    assert checked.truncated
    assert (
        sum(len(s.text) + len(s.label or "") for s in cut.abstract_sections) + len(cut.title)
        <= 2_000
    )
    assert [s.label for s in cut.abstract_sections] == ["BACKGROUND", "RESULTS"]
    assert cut.abstract_sections[1].text.endswith("cancer.")
    assert (SENTENCE * 100).startswith(cut.abstract_sections[1].text)
    assert (cut.pmid, cut.year) == ("1", 2020)
    assert cut.authors == []  # nothing left for the metadata: entries are dropped, never cut
    assert cut.doi is None


def test_control_characters_are_removed_from_every_field() -> None:
    dirty = article(
        title="Metformin\x00 and cancer",
        abstract_sections=[AbstractSection(label="RES\x1bULTS", text="Lower\x00 risk.\r\nYes.")],
        authors=["Smith\x07 J", "\x00"],
        journal="J\x00 Med",
    )
    checked = check_record(dirty, 10_000)
    cleaned = checked.article
    assert not checked.truncated  # cleaning is not truncation
    assert cleaned.title == "Metformin and cancer"
    assert cleaned.abstract_sections == [AbstractSection(label="RESULTS", text="Lower risk.\nYes.")]
    assert cleaned.authors == ["Smith J"]
    assert cleaned.journal == "J Med"
    assert "\x00" not in cleaned.model_dump_json()


# --------------------------------------------------------------------------- import
def test_a_50_mb_record_is_truncated_on_import_and_counted(tmp_path: Path) -> None:
    huge = rec("2", SENTENCE * 740_000)  # about 52 MB of abstract
    path = write_jsonl(tmp_path / "huge.jsonl", [rec("1", SENTENCE), huge])
    assert len(huge["abstract_sections"][0]["text"]) > 50_000_000
    local = LocalCorpus(tmp_path / "corpus", HashingEmbedder())
    result = local.add_file(path, max_record_chars=200_000)
    assert (result.read, result.added, result.truncated) == (2, 2, 1)
    stored = local.get("2")
    assert stored is not None
    assert 100_000 < len(index_text(stored)) <= 200_000
    assert stored.abstract_sections[0].text.endswith("cancer.")
    small = local.get("1")
    assert small is not None
    assert small.abstract_sections[0].text == SENTENCE
    db_size = (tmp_path / "corpus" / "corpus.sqlite3").stat().st_size
    assert db_size < 5_000_000


def test_the_default_limit_is_200k_characters(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "big.jsonl", [rec("1", "word " * 50_000)])  # 250,000
    local = LocalCorpus(tmp_path / "corpus", HashingEmbedder())
    assert local.add_file(path).truncated == 1
    stored = local.get("1")
    assert stored is not None
    assert 190_000 < len(stored.abstract_sections[0].text) <= 200_000 - len("RESULTS")


def test_imported_text_holds_no_control_characters(tmp_path: Path) -> None:
    dirty = rec("1", "Lower\u0000 risk\u001b[0m.", title="T\u0000")
    path = write_jsonl(tmp_path / "nul.jsonl", [dirty])
    local = LocalCorpus(tmp_path / "corpus", HashingEmbedder())
    assert local.add_file(path).added == 1
    stored = local.get("1")
    assert stored is not None
    assert stored.title == "T"
    assert stored.abstract_sections[0].text == "Lower risk[0m."


# --------------------------------------------------------------------------- bad lines
BAD = [
    rec("1", "Metformin lowers glucose."),
    '{"pmid": "2", "abstract_sections": [',  # line 2: not JSON
    rec("3", "Statins lower cholesterol."),
    json.dumps({"abstract": "no identifier"}),  # line 4: no PMID
    "",
    rec("6", "Aspirin thins the blood."),
    json.dumps(rec("7", "x", mesh_terms="not a list")),  # line 7: wrong type
]


def test_a_reader_given_on_bad_line_skips_bad_lines_and_reports_them(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", BAD)
    latin = b'{"pmid": "8", "title": "caf\xe9"}\n'
    path.write_bytes(path.read_bytes() + latin)  # line 8: not UTF-8
    errors: list[CorpusFormatError] = []
    pmids = [a.pmid for a in read_corpus_file(path, on_bad_line=errors.append)]
    assert pmids == ["1", "3", "6"]
    assert [e.line for e in errors] == [2, 4, 7, 8]
    assert "not UTF-8" in str(errors[-1])


def test_without_skipping_the_first_bad_line_aborts_and_names_its_number(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", BAD)
    local = LocalCorpus(tmp_path / "corpus", HashingEmbedder())
    with pytest.raises(CorpusFormatError) as info:
        local.add_file(path)
    assert info.value.line == 2
    assert str(info.value).startswith(f"{path}:2: ")
    assert local.count() == 0


def test_skip_bad_lines_imports_the_good_lines_and_lists_the_bad(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", BAD)
    local = LocalCorpus(tmp_path / "corpus", HashingEmbedder())
    result = local.add_file(path, skip_bad_lines=True)
    assert result.bad_lines == (2, 4, 7)
    assert (result.read, result.added) == (3, 3)
    assert {p for p in ("1", "3", "6") if local.get(p) is not None} == {"1", "3", "6"}
    again = local.add_file(path, skip_bad_lines=True)
    assert again.bad_lines == (2, 4, 7)
    assert again.added == 0


def test_a_corrupt_gzip_still_aborts_with_nothing_written(tmp_path: Path) -> None:
    import gzip

    good = "\n".join(json.dumps(rec(str(i), f"Record {i}.")) for i in range(1, 400)).encode()
    path = tmp_path / "broken.jsonl.gz"
    path.write_bytes(gzip.compress(good)[:-30])
    local = LocalCorpus(tmp_path / "corpus", HashingEmbedder())
    with pytest.raises(CorpusFormatError, match="corrupt gzip"):
        local.add_file(path, skip_bad_lines=True)
    assert local.count() == 0
