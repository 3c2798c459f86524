"""Streaming import of PubMed baseline / update XML (issue 17): versions, DeleteCitation,
resume after an interruption, globs and directories, the incremental FTS5 index and hostile
lexical queries."""

from __future__ import annotations

import gzip
import shutil
import sqlite3
from functools import partial
from pathlib import Path

import pytest
from typer.testing import CliRunner

from deepcritical.cli.main import app
from deepcritical.config import Settings
from deepcritical.corpus import lexical
from deepcritical.corpus.chroma_index import ChromaIndex
from deepcritical.corpus.corpus_errors import CorpusFormatError, CorpusMismatchError
from deepcritical.corpus.index import LocalCorpus
from deepcritical.corpus.readers import corpus_files, read_pubmed_updates
from deepcritical.formats.pubmed_xml import (
    AbstractSection,
    DeletedCitations,
    PubmedArticle,
    VersionedArticle,
)
from deepcritical.testing.embedders import HashingEmbedder

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pubmed"
BASELINE = FIXTURES / "pubmed_baseline_small.xml"
UPDATE = FIXTURES / "pubmed_update_small.xml"


def bm25_pmids(corpus: LocalCorpus, query: str) -> list[str]:
    return [h.article.pmid for h in corpus.search(query, 10, mode="bm25")]


def indexed_rows(corpus: LocalCorpus) -> int:
    with sqlite3.connect(corpus.directory / "corpus.sqlite3") as conn:
        n = lexical.indexed_count(conn)
    conn.close()
    return n


def big_xml(path: Path, n: int, *, deleted: tuple[str, ...] = ()) -> Path:
    """A PubMed XML file of ``n`` synthetic records (PMIDs 1..n), then a DeleteCitation."""
    records = "".join(
        f"<PubmedArticle><MedlineCitation><PMID Version='1'>{i}</PMID><Article>"
        f"<ArticleTitle>Record {i} about topic{i % 7}</ArticleTitle><Abstract>"
        f"<AbstractText>Abstract number {i} of the synthetic set.</AbstractText></Abstract>"
        "</Article></MedlineCitation></PubmedArticle>"
        for i in range(1, n + 1)
    )
    deletes = "".join(f"<PMID Version='1'>{p}</PMID>" for p in deleted)
    tail = f"<DeleteCitation>{deletes}</DeleteCitation>" if deleted else ""
    path.write_text(f"<PubmedArticleSet>{records}{tail}</PubmedArticleSet>", encoding="utf-8")
    return path


def test_the_reader_yields_versions_and_deletions() -> None:
    items = list(read_pubmed_updates(UPDATE))
    versions = [(i.article.pmid, i.version) for i in items if isinstance(i, VersionedArticle)]
    assert versions == [("90000002", 2), ("90000003", 1), ("90000004", 1), ("90000002", 1)]
    assert items[-1] == DeletedCitations(pmids=["90000001", "99999999"])


@pytest.mark.parametrize("batch_size", [256, 1])
def test_an_update_file_replaces_newer_versions_and_deletes(
    tmp_path: Path, batch_size: int
) -> None:
    corpus = LocalCorpus(tmp_path / "c", HashingEmbedder(), batch_size=batch_size)
    base = corpus.add_file(BASELINE)
    assert (base.read, base.added, base.replaced, base.deleted) == (3, 3, 0, 0)
    assert bm25_pmids(corpus, "metformin colorectal") == ["90000001"]

    update = corpus.add_file(UPDATE)
    assert (update.read, update.added, update.replaced, update.deleted) == (4, 1, 2, 1)
    assert update.skipped_existing == 1  # the stale version-1 copy of 90000002
    assert update.read == update.added + update.replaced + update.skipped_existing
    assert corpus.count() == 3
    assert corpus.get("90000001") is None
    revised = corpus.get("90000002")
    assert revised is not None
    assert revised.title.endswith("corrected")
    later = corpus.get("90000003")
    assert later is not None
    assert "Cholecalciferol" in later.abstract_text()
    # the lexical and dense indexes follow: old words gone, new words found, no orphan rows
    assert bm25_pmids(corpus, "metformin colorectal") == []
    assert bm25_pmids(corpus, "simvastatin stale") == []
    assert bm25_pmids(corpus, "rosuvastatin") == ["90000002"]
    assert bm25_pmids(corpus, "cholecalciferol") == ["90000003"]
    assert bm25_pmids(corpus, "zinc lozenges") == ["90000004"]
    assert indexed_rows(corpus) == 3
    assert corpus._dense_index().count() == 3
    assert all(h.article.pmid != "90000001" for h in corpus.search("metformin", 5, mode="dense"))


def test_a_finished_file_is_skipped_and_a_gzipped_copy_changes_nothing(tmp_path: Path) -> None:
    corpus = LocalCorpus(tmp_path / "c", HashingEmbedder())
    corpus.add_file(BASELINE)
    corpus.add_file(UPDATE)
    again = corpus.add_file(UPDATE)
    assert again.already_imported
    assert again.read == 0
    packed = tmp_path / "update.xml.gz"
    with UPDATE.open("rb") as src, gzip.open(packed, "wb") as dst:
        shutil.copyfileobj(src, dst)
    copy = corpus.add_file(packed)  # other bytes, same records: nothing changes
    assert (copy.read, copy.added, copy.replaced, copy.deleted) == (4, 0, 0, 0)
    assert copy.skipped_existing == 4
    assert corpus.count() == 3


def test_an_older_version_in_a_later_file_does_not_replace_a_newer_one(tmp_path: Path) -> None:
    corpus = LocalCorpus(tmp_path / "c", HashingEmbedder())
    corpus.add_file(UPDATE)
    stale = tmp_path / "stale.xml"
    text = UPDATE.read_text(encoding="utf-8")
    start = text.index("<PubmedArticle>", text.index('<PMID Version="1">90000004'))
    stale.write_text(
        "<PubmedArticleSet>" + text[start : text.index("<DeleteCitation>")] + "</PubmedArticleSet>",
        encoding="utf-8",
    )
    result = corpus.add_file(stale)  # version 1 of 90000002 after its version 2
    assert (result.read, result.replaced, result.skipped_existing) == (1, 0, 1)
    stored = corpus.get("90000002")
    assert stored is not None
    assert stored.title.endswith("corrected")


def test_an_interrupted_import_resumes_after_its_last_committed_batch(tmp_path: Path) -> None:
    source = big_xml(tmp_path / "big.xml", 50, deleted=("3", "4"))
    embedder = HashingEmbedder()
    corpus = LocalCorpus(tmp_path / "c", embedder, batch_size=10)
    seen: list[tuple[int, int]] = []

    def stop_after_two_batches(done: int, total: int) -> None:
        seen.append((done, total))
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        corpus.add_file(source, progress=stop_after_two_batches)
    assert seen == [(10, 51), (20, 51)]  # 50 records and one DeleteCitation block
    assert corpus.count() == 20
    progress: list[tuple[int, int]] = []
    result = corpus.add_file(source, progress=lambda d, t: progress.append((d, t)))
    assert result.resumed_from == 20
    assert (result.read, result.added, result.deleted) == (30, 30, 2)
    assert corpus.count() == 48
    assert progress[-1] == (51, 51)
    assert bm25_pmids(corpus, "record 50")[0] == "50"
    assert corpus.get("3") is None


def test_corpus_files_expands_globs_and_directories_in_name_order(tmp_path: Path) -> None:
    folder = tmp_path / "pubmed"
    folder.mkdir()
    names = ["pubmed25n1275.xml.gz", "pubmed25n0002.xml.gz", "pubmed25n0001.xml.gz"]
    for name in names:
        (folder / name).write_bytes(b"")
    (folder / "notes.txt").write_text("not a corpus file", encoding="utf-8")
    expected = [folder / n for n in sorted(names)]
    assert corpus_files([folder]) == expected
    assert corpus_files([folder / "*.xml.gz"]) == expected
    assert corpus_files([folder / "pubmed25n000?.xml.gz", folder]) == expected
    with pytest.raises(CorpusFormatError, match="no file to import"):
        corpus_files([folder / "*.jsonl"])
    with pytest.raises(FileNotFoundError):
        corpus_files([folder / "missing.xml"])


def test_the_efetch_fixtures_stream_in_with_version_one(api_fixtures: Path, tmp_path: Path) -> None:
    corpus = LocalCorpus(tmp_path / "c", HashingEmbedder())
    for path in sorted((api_fixtures / "ncbi_eutils").glob("efetch_*.xml")):
        items = list(read_pubmed_updates(path))
        assert all(isinstance(i, VersionedArticle) and i.version == 1 for i in items)
        result = corpus.add_file(path)
        assert result.added + result.skipped_existing == result.read == len(items)
    assert corpus.count() == 7
    assert indexed_rows(corpus) == 7


@pytest.mark.parametrize(
    "query",
    [
        '"unbalanced quote',
        "aspirin AND adenoma",
        "aspirin OR NOT adenoma",
        "adenom*",
        "NEAR(aspirin adenoma, 2)",
        "(aspirin) - adenoma)",
        "title:aspirin ^adenoma",
        "'; DROP TABLE documents; --",
        "{aspirin} + [adenoma]",
        "AND OR NOT",
    ],
)
def test_hostile_queries_are_words_never_fts5_syntax(tmp_path: Path, query: str) -> None:
    corpus = LocalCorpus(tmp_path / "c", HashingEmbedder())
    article = PubmedArticle(
        pmid="3", title="Aspirin and adenoma", abstract_sections=[AbstractSection(text="Trial.")]
    )
    corpus.add_articles([article])
    hits = corpus.search(query, 5)  # raises nothing
    if "aspirin" in query.lower():
        assert [h.article.pmid for h in hits] == ["3"]
    assert corpus.count() == 1


def test_fts_query_quotes_words_and_drops_stopwords() -> None:
    assert lexical.fts_query('the "aspirin" AND adenom*') == '"aspirin" OR "adenom"'
    assert lexical.fts_query("the of with") is None
    assert lexical.fts_query("") is None


def test_the_lexical_index_grows_add_after_add(tmp_path: Path) -> None:
    corpus = LocalCorpus(tmp_path / "c", HashingEmbedder())
    for n, word in enumerate(["zinc", "ferritin", "melatonin"], start=1):
        article = PubmedArticle(
            pmid=str(n), title=f"{word} trial", abstract_sections=[AbstractSection(text="x")]
        )
        corpus.add_articles([article])
        assert bm25_pmids(corpus, word) == [str(n)]
        assert indexed_rows(corpus) == n
    assert bm25_pmids(corpus, "trials") == ["1", "2", "3"]  # Porter: trials -> trial


def test_a_corpus_on_a_server_is_not_opened_as_embedded(tmp_path: Path) -> None:
    corpus = LocalCorpus(tmp_path / "c", HashingEmbedder())
    corpus.add_file(BASELINE)
    corpus.close()
    with pytest.raises(CorpusMismatchError, match="unset DEEPCRITICAL_CORPUS_URL"):
        LocalCorpus(tmp_path / "c", HashingEmbedder(), server_url="http://127.0.0.1:9")


def test_frequent_words_are_left_out_past_the_postings_budget(tmp_path: Path) -> None:
    corpus = LocalCorpus(tmp_path / "c", HashingEmbedder())
    articles = [
        PubmedArticle(
            pmid=str(n),
            title=f"Patients study {'hydatidiform mole' if n == 7 else 'cohort'}",
            abstract_sections=[AbstractSection(text="Patients were followed.")],
        )
        for n in range(1, 31)
    ]
    corpus.add_articles(articles)
    corpus.close()
    with sqlite3.connect(tmp_path / "c" / "corpus.sqlite3") as conn:
        words = lexical.query_words("Patients with a hydatidiform mole need a study?")
        assert words == ["patients", "hydatidiform", "mole", "need", "study"]
        assert lexical.word_rows(conn, '"patients"', 10) == 11  # counted up to the cap only
        assert lexical.word_rows(conn, '"mole"', 10) == 1
        every = '"patients" OR "hydatidiform" OR "mole" OR "need" OR "study"'
        exact = lexical.LexicalQuery(every, None)
        assert lexical.selective_query(conn, words, budget=1000) == exact  # all fit
        rarest = lexical.LexicalQuery('"hydatidiform" OR "mole" OR "need"', None)
        assert lexical.selective_query(conn, words, budget=10) == rarest
        hits = lexical.search(conn, "patients hydatidiform mole", 5, budget=10)
        assert [i for i, _ in hits] == ["7"]
        assert len(lexical.search(conn, "patients hydatidiform mole", 50, budget=1000)) == 30
    conn.close()


def test_words_each_past_the_budget_rank_the_first_words_newest_rows(tmp_path: Path) -> None:
    """Every word in more rows than the budget: BM25 ranks the first word's newest rows only
    (the budget's worth), not every row it is in."""
    corpus = LocalCorpus(tmp_path / "c", HashingEmbedder())
    corpus.add_articles(
        [
            PubmedArticle(
                pmid=str(n),
                title=f"Patients in a {'cohort' if n % 2 else 'trial'}",
                abstract_sections=[AbstractSection(text="Patients were followed" + " up" * n)],
            )
            for n in range(1, 31)
        ]
    )
    corpus.close()
    with sqlite3.connect(tmp_path / "c" / "corpus.sqlite3") as conn:
        words = ["patients", "cohort"]  # 30 and 15 rows
        newest = lexical.LexicalQuery('"patients"', 10)
        assert lexical.selective_query(conn, words, budget=10) == newest
        hits = lexical.search(conn, "patients cohort", 50, budget=10)
        # the last 10 imported only, ranked by BM25 among themselves: the shorter rows first
        assert [int(i) for i, _ in hits] == list(range(21, 31))
        with pytest.raises(ValueError, match="no query words"):
            lexical.selective_query(conn, [], budget=10)
        assert len(lexical.search(conn, "patients cohort", 50, budget=100)) == 30  # exact
    conn.close()


def test_corpus_add_of_a_missing_path_or_an_empty_pattern_imports_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    runner = CliRunner()
    missing = runner.invoke(
        app, ["--data-dir", str(data), "corpus", "add", str(tmp_path / "missing.xml")]
    )
    assert missing.exit_code == 2  # wrong input, as for any missing argument
    assert "no such file or directory" in " ".join(missing.output.split())
    empty = runner.invoke(
        app, ["--data-dir", str(data), "corpus", "add", str(tmp_path / "none" / "*.xml.gz")]
    )
    assert empty.exit_code == 1
    assert "no file to import" in " ".join(empty.output.split())
    assert not (data / "corpus").exists()


def test_the_corpus_url_and_its_token_are_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPCRITICAL_CORPUS_URL", "http://:tok3n-secret@127.0.0.1:8000")
    settings = Settings()
    assert settings.corpus_url is not None
    assert settings.corpus_url.get_secret_value().endswith("@127.0.0.1:8000")
    assert "tok3n-secret" not in repr(settings) + str(settings.public_dict())
    with pytest.raises(ValueError, match="must be http") as error:
        ChromaIndex(Path("unused"), server_url="ftp://:tok3n-secret@host")
    assert "tok3n-secret" not in str(error.value)


def record(seen: list[tuple[int, int]], done: int, total: int) -> None:
    seen.append((done, total))


@pytest.mark.parametrize("name", ["big.xml", "big.jsonl"])
def test_pipelined_and_sequential_imports_write_the_same_corpus(tmp_path: Path, name: str) -> None:
    source = big_xml(tmp_path / "big.xml", 35, deleted=("3", "4"))
    if name.endswith(".jsonl"):
        with LocalCorpus(tmp_path / "x", HashingEmbedder(), batch_size=10) as xml_corpus:
            xml_corpus.add_file(source)
            lines = [xml_corpus.get(str(i)) for i in range(1, 36)]
        source = tmp_path / name
        source.write_text(
            "\n".join(a.model_dump_json() for a in lines if a is not None) + "\n",
            encoding="utf-8",
        )
    outcomes = []
    for pipelined in (False, True):
        progress: list[tuple[int, int]] = []
        directory = tmp_path / f"c-{pipelined}"
        with LocalCorpus(directory, HashingEmbedder(), batch_size=10, pipelined=pipelined) as c:
            result = c.add_file(source, progress=partial(record, progress))
            hits = [h.article.pmid for h in c.search("record 17 topic3", 5)]
            outcomes.append((result, progress, c.count(), c._dense_index().count(), hits))
    assert outcomes[0] == outcomes[1]
    assert outcomes[1][2] == 33  # 35 records, 2 deleted (XML) or never written (JSONL)
    assert outcomes[1][1][-1][0] == outcomes[1][1][-1][1]  # progress reached the end
