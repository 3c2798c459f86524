"""The local corpus with JATS full texts (../shared/fixtures/fulltext/pmc_oa_jats): one document
per article, its passages indexed one by one, a hit naming its paper and its section."""

from __future__ import annotations

from pathlib import Path

import pytest

from deepcritical.corpus.corpus_errors import CorpusFormatError
from deepcritical.corpus.index import LocalCorpus
from deepcritical.corpus.readers import corpus_files, read_full_text
from deepcritical.sources.local import hits_to_evidence
from deepcritical.testing.embedders import HashingEmbedder

# In the Methods of pone.0046493 (PMID 23029536) only, not in its abstract.
PHRASE = "ammonium bicarbonate"
PMID = "23029536"


@pytest.fixture
def corpus(jats_dir: Path, tmp_path: Path) -> LocalCorpus:
    local = LocalCorpus(tmp_path / "corpus", HashingEmbedder())
    for path in corpus_files([jats_dir]):
        assert local.add_file(path).added == 1
    return local


def test_directory_expands_to_its_articles(jats_dir: Path, tmp_path: Path) -> None:
    files = corpus_files([jats_dir])
    assert [f.name for f in files] == sorted(p.name for p in jats_dir.glob("*.nxml"))
    with pytest.raises(CorpusFormatError, match="no file to import"):
        corpus_files([tmp_path])


def test_phrase_in_one_body_only(jats_dir: Path) -> None:
    holders = []
    for path in corpus_files([jats_dir]):
        record, passages = read_full_text(path)
        assert PHRASE not in record.abstract_text().lower()
        if any(PHRASE in p.text.lower() for p in passages):
            holders.append(record.pmid)
    assert holders == [PMID]


def test_each_article_is_one_document_and_readding_adds_nothing(
    corpus: LocalCorpus, jats_dir: Path
) -> None:
    assert corpus.count() == 6
    again = corpus.add_file(jats_dir / "pone.0046493.nxml")
    assert (again.added, again.skipped_existing) == (0, 1)
    assert corpus.count() == 6


def test_body_phrase_finds_its_article_and_section(corpus: LocalCorpus) -> None:
    hits = corpus.search(PHRASE, 3)
    assert hits[0].article.pmid == PMID
    assert [h.article.pmid for h in hits].count(PMID) == 1
    passage = hits[0].passage
    assert passage is not None
    assert PHRASE in passage.text.lower()
    assert passage.section[0] == "Materials and Methods"
    assert passage in hits[0].passages


def test_hits_become_full_text_evidence(corpus: LocalCorpus) -> None:
    hits = corpus.search(PHRASE, 3)
    items = hits_to_evidence(hits, PHRASE)
    assert items[0].citation.pmid == PMID
    assert items[0].full_text
    assert len(items[0].passages) == len(hits[0].passages) > 10


def test_a_full_text_over_the_record_limit_keeps_the_passages_that_fit(
    jats_dir: Path, tmp_path: Path
) -> None:
    path = jats_dir / "pone.0046493.nxml"
    _, passages = read_full_text(path)
    limit = sum(len(p.text) for p in passages) // 2
    local = LocalCorpus(tmp_path / "corpus", HashingEmbedder())
    result = local.add_file(path, max_record_chars=limit)
    assert (result.added, result.truncated) == (1, 1)
    stored = local.search(PHRASE, 1)[0].passages
    assert 0 < len(stored) < len(passages)
    assert sum(len(p.text) for p in stored) <= limit
    assert stored == passages[: len(stored)]  # a prefix: the kept passages keep their offsets
