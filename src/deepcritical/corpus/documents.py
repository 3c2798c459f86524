"""The corpus database: records by PMID, imported-file manifest, and corpus metadata (SQLite).

One file, ``<corpus dir>/corpus.sqlite3``, in WAL mode (readers in other processes are not
blocked by an import). Tables:

- ``documents(pmid PRIMARY KEY, record, text, source_sha256, added_at, version)``: ``record``
  is the :class:`PubmedArticle` as JSON, ``text`` the indexed text (:func:`index_text`),
  ``version`` the PMID version of a PubMed XML record (1 otherwise).
- ``passages(id PRIMARY KEY, pmid, position, record, text)``: the passages of a full-text
  document (a JATS article): ``id`` is ``"<pmid>#<position>"`` (:func:`passage_id`),
  ``position`` its 0-based place in the document's passage list, ``record`` the
  :class:`~deepcritical.models.Passage` as JSON, ``text`` the indexed text (section path and
  passage). Each passage is a row of the BM25 and dense indexes of its own; an abstract-only
  document has none. Added to corpora created before it when they are opened.
- ``lexical_rows`` and ``lexical`` (FTS5): the BM25 index of every document and passage text
  (:mod:`deepcritical.corpus.lexical`), written in the same transaction as the rows it indexes.
  A corpus created before it gets it built once when opened (``meta.lexical``).
- ``import_progress(sha256 PRIMARY KEY, path, items_done, finished)``: the resume checkpoint
  of a streamed PubMed XML import: how many items (records and ``DeleteCitation`` blocks) of
  the file with that content are committed, updated in the transaction of each batch.
- ``imported_files(sha256 PRIMARY KEY, path, size_bytes, first_imported_at, last_imported_at,
  records_read, records_added)``: one row per distinct file content.
- ``meta(key PRIMARY KEY, value)``: ``embedding_model``, ``embedding_path`` (the embedding
  path of its first vectors), ``embedding_rate`` and ``embedding_rate_path`` (texts/s of the
  last import's embedding alone, and the path measured), ``embedding_dimension``,
  ``generation`` (incremented by every write), ``lexical`` (the lexical index's version) and
  ``schema_version``.

Not thread-safe by itself: :class:`~deepcritical.corpus.index.LocalCorpus` serialises calls.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from deepcritical.corpus import lexical
from deepcritical.formats.pubmed_xml import PubmedArticle
from deepcritical.models import Passage

SCHEMA_VERSION = "2"
_CHUNK = 500  # host parameters per IN (...) query, well under SQLite's limit

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    pmid TEXT PRIMARY KEY,
    record TEXT NOT NULL,
    text TEXT NOT NULL,
    source_sha256 TEXT,
    added_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS passages (
    id TEXT PRIMARY KEY,
    pmid TEXT NOT NULL,
    position INTEGER NOT NULL,
    record TEXT NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS passages_pmid ON passages(pmid);
CREATE TABLE IF NOT EXISTS imported_files (
    sha256 TEXT PRIMARY KEY,
    path TEXT NOT NULL,
    size_bytes INTEGER NOT NULL,
    first_imported_at TEXT NOT NULL,
    last_imported_at TEXT NOT NULL,
    records_read INTEGER NOT NULL,
    records_added INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS import_progress (
    sha256 TEXT PRIMARY KEY,
    path TEXT NOT NULL,
    items_done INTEGER NOT NULL,
    finished INTEGER NOT NULL DEFAULT 0
);
"""

Upsert = tuple[PubmedArticle, str, int]
"""``(record, indexed text, PMID version)`` written by :meth:`DocumentStore.apply`."""


PASSAGE_MARK = "#"
"""What separates a document's PMID from a passage's position in a passage id."""


def passage_id(pmid: str, position: int) -> str:
    """The index id of a document's passage: ``passage_id("123", 4) == "123#4"``."""
    return f"{pmid}{PASSAGE_MARK}{position}"


def split_index_id(index_id: str) -> tuple[str, int | None]:
    """``"123#4"`` -> ``("123", 4)``; a document's own id ``"123"`` -> ``("123", None)``."""
    pmid, mark, position = index_id.partition(PASSAGE_MARK)
    return pmid, int(position) if mark and position.isdigit() else None


class ImportedFile(BaseModel):
    """A row of the imported-file manifest (times are ISO-8601 UTC).

    ``records_read`` is from the last import; ``records_added`` is summed over imports.
    """

    sha256: str
    path: str
    size_bytes: int
    first_imported_at: str
    last_imported_at: str
    records_read: int
    records_added: int


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


DB_NAME = "corpus.sqlite3"
"""The corpus database's file name inside the corpus directory."""


def read_only_row(db_path: Path, sql: str) -> tuple[Any, ...] | None:
    """The first row of ``sql`` on the database at ``db_path`` opened read-only (so a wrong
    directory is never written to); ``None`` when there is no such file, it is not a
    database, the query fails (no such table) or it returns no row."""
    if not db_path.is_file():
        return None
    try:
        conn = sqlite3.connect(f"{db_path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        row = conn.execute(sql).fetchone()
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    return None if row is None else tuple(row)


def count_documents(db_path: Path) -> int | None:
    """Documents in the database at ``db_path``, opened read-only; ``None`` when there is no
    such file or it holds no corpus table."""
    row = read_only_row(db_path, "SELECT COUNT(*) FROM documents")
    return None if row is None else int(row[0])


def rows_in(
    conn: sqlite3.Connection, query: str, keys: Sequence[str] | Sequence[int]
) -> Iterator[tuple[Any, ...]]:
    """The rows of ``query`` (whose ``IN ({marks})`` takes the keys) for ``keys``, asked
    in chunks of at most 500 host parameters, lazily (a caller may stop early)."""
    for start in range(0, len(keys), _CHUNK):
        chunk = list(keys[start : start + _CHUNK])
        yield from conn.execute(query.format(marks=",".join("?" * len(chunk))), chunk)


class DocumentStore:
    """Records, manifest and metadata in one SQLite file (created when missing).

    Raises:
        sqlite3.Error: the file is not a SQLite database or cannot be written.
    """

    def __init__(self, db_path: Path, *, shared: bool = False) -> None:
        self.path = db_path
        self._conn = sqlite3.connect(db_path, check_same_thread=False, timeout=30.0)
        # WAL needs every process on one host (shared memory); a file on a mount that several
        # machines share uses the rollback journal instead
        self._conn.execute(f"PRAGMA journal_mode={'DELETE' if shared else 'WAL'}")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        with self._conn:
            self._conn.executescript(_SCHEMA)
            columns = {r[1] for r in self._conn.execute("PRAGMA table_info(documents)")}
            if "version" not in columns:
                self._conn.execute(
                    "ALTER TABLE documents ADD COLUMN version INTEGER NOT NULL DEFAULT 1"
                )
            self._conn.execute(
                "INSERT INTO meta(key, value) VALUES ('schema_version', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (SCHEMA_VERSION,),
            )
        self.lexical_built = self._ensure_lexical()

    def _ensure_lexical(self) -> bool:
        """Create the FTS5 index, and fill it from the stored texts when it is missing or of
        another version (a corpus created before it): True when it was (re)built now."""
        with self._conn:
            self._conn.executescript(lexical.SCHEMA)
        if self.meta("lexical") == lexical.LEXICAL_VERSION:
            return False
        with self._conn:
            lexical.rebuild(self._conn, self.iter_texts())
            self._set_meta("lexical", lexical.LEXICAL_VERSION)
        return True

    def close(self) -> None:
        """Close the connection (further calls raise ``sqlite3.ProgrammingError``)."""
        self._conn.close()

    # ----------------------------------------------------------------------- metadata

    def meta(self, key: str) -> str | None:
        """The metadata value for ``key``, or ``None``."""
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Set a metadata value (committed at once)."""
        with self._conn:
            self._set_meta(key, value)

    def _set_meta(self, key: str, value: str) -> None:
        self._conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def _bump_generation(self) -> None:
        self._conn.execute(
            "INSERT INTO meta(key, value) VALUES ('generation', '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )

    def generation(self) -> int:
        """Number of insert batches ever committed (changes whenever documents change)."""
        return int(self.meta("generation") or 0)

    # ----------------------------------------------------------------------- documents

    def count(self) -> int:
        """Number of documents."""
        return int(self._conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0])

    def _rows_in(self, query: str, keys: Sequence[str]) -> Iterator[tuple[Any, ...]]:
        return rows_in(self._conn, query, keys)

    def existing(self, pmids: Sequence[str]) -> set[str]:
        """The subset of ``pmids`` already stored."""
        query = "SELECT pmid FROM documents WHERE pmid IN ({marks})"
        return {str(r[0]) for r in self._rows_in(query, pmids)}

    def insert(
        self,
        rows: Sequence[tuple[PubmedArticle, str]],
        source_sha256: str | None,
        passages: Sequence[tuple[str, int, Passage, str]] = (),
    ) -> None:
        """Store ``(article, indexed text)`` pairs and ``(pmid, position, passage, indexed
        text)`` rows, and index their texts (BM25), in one transaction; bump the generation.

        Rows whose PMID (passages: whose id) is already stored are left unchanged (first
        version wins).
        """
        now = _now()
        with self._conn:
            added: list[tuple[str, str]] = []
            for article, text in rows:
                cursor = self._conn.execute(
                    "INSERT OR IGNORE INTO documents(pmid, record, text, source_sha256, added_at) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (article.pmid, article.model_dump_json(), text, source_sha256, now),
                )
                if cursor.rowcount:
                    added.append((article.pmid, text))
            for pmid, n, passage, text in passages:
                cursor = self._conn.execute(
                    "INSERT OR IGNORE INTO passages(id, pmid, position, record, text) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (passage_id(pmid, n), pmid, n, passage.model_dump_json(), text),
                )
                if cursor.rowcount:
                    added.append((passage_id(pmid, n), text))
            lexical.add_rows(self._conn, added)
            self._bump_generation()

    def stored(self, pmids: Sequence[str]) -> dict[str, tuple[int, str]]:
        """PMID -> ``(version, record JSON)`` for those of ``pmids`` that are stored."""
        query = "SELECT pmid, version, record FROM documents WHERE pmid IN ({marks})"
        return {str(p): (int(v), str(r)) for p, v, r in self._rows_in(query, pmids)}

    def passage_ids(self, pmids: Sequence[str]) -> list[str]:
        """The index ids of the passages of the documents ``pmids``."""
        query = "SELECT id FROM passages WHERE pmid IN ({marks})"
        return [str(r[0]) for r in self._rows_in(query, pmids)]

    def _remove(self, pmid: str, *, keep_document: bool) -> None:
        """Unindex a document and its passages and delete its passages (and the document
        unless ``keep_document``), inside the caller's transaction."""
        rows = [
            (str(i), str(t))
            for i, t in self._conn.execute(
                "SELECT pmid, text FROM documents WHERE pmid = ? "
                "UNION ALL SELECT id, text FROM passages WHERE pmid = ?",
                (pmid, pmid),
            )
        ]
        lexical.remove_rows(self._conn, rows)
        self._conn.execute("DELETE FROM passages WHERE pmid = ?", (pmid,))
        if not keep_document:
            self._conn.execute("DELETE FROM documents WHERE pmid = ?", (pmid,))

    def apply(
        self,
        upserts: Sequence[Upsert],
        deletes: Sequence[str],
        source_sha256: str | None,
        checkpoint: tuple[str, Path, int] | None = None,
    ) -> None:
        """One transaction of a streamed PubMed XML import: store or replace the ``upserts``
        (a replaced document loses its passages), delete the documents ``deletes`` (PMIDs not
        stored are ignored), keep the BM25 index in step, bump the generation, and when
        ``checkpoint = (file sha256, path, items done)`` is given record that progress."""
        now = _now()
        with self._conn:
            for pmid in deletes:
                self._remove(pmid, keep_document=False)
            for article, text, version in upserts:
                self._remove(article.pmid, keep_document=True)
                self._conn.execute(
                    "INSERT INTO documents(pmid, record, text, source_sha256, added_at, version) "
                    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(pmid) DO UPDATE SET "
                    "record = excluded.record, text = excluded.text, "
                    "source_sha256 = excluded.source_sha256, added_at = excluded.added_at, "
                    "version = excluded.version",
                    (article.pmid, article.model_dump_json(), text, source_sha256, now, version),
                )
            lexical.add_rows(self._conn, [(a.pmid, t) for a, t, _ in upserts])
            self._bump_generation()
            if checkpoint is not None:
                sha, path, done = checkpoint
                self._conn.execute(
                    "INSERT INTO import_progress(sha256, path, items_done) VALUES (?, ?, ?) "
                    "ON CONFLICT(sha256) DO UPDATE SET path = excluded.path, "
                    "items_done = excluded.items_done",
                    (sha, str(path), done),
                )

    def import_progress(self, sha256: str) -> tuple[int, bool]:
        """``(items committed, finished)`` of the streamed import of the file with this
        content; ``(0, False)`` when it was never started."""
        row = self._conn.execute(
            "SELECT items_done, finished FROM import_progress WHERE sha256 = ?", (sha256,)
        ).fetchone()
        return (0, False) if row is None else (int(row[0]), bool(row[1]))

    def finish_import(self, sha256: str, path: Path, items: int) -> None:
        """Mark the streamed import of the file with this content finished."""
        with self._conn:
            self._conn.execute(
                "INSERT INTO import_progress(sha256, path, items_done, finished) "
                "VALUES (?, ?, ?, 1) ON CONFLICT(sha256) DO UPDATE SET "
                "path = excluded.path, items_done = excluded.items_done, finished = 1",
                (sha256, str(path), items),
            )

    def lexical_search(self, query: str, k: int) -> list[tuple[str, float]]:
        """Up to ``k`` ``(index id, BM25 score)`` pairs, best first
        (:func:`deepcritical.corpus.lexical.search`)."""
        return lexical.search(self._conn, query, k)

    def get(self, pmid: str) -> PubmedArticle | None:
        """The record with this PMID, or ``None``."""
        row = self._conn.execute("SELECT record FROM documents WHERE pmid = ?", (pmid,)).fetchone()
        return None if row is None else PubmedArticle.model_validate_json(row[0])

    def get_many(self, pmids: Iterable[str]) -> dict[str, PubmedArticle]:
        """PMID -> record for those of ``pmids`` that are stored."""
        query = "SELECT pmid, record FROM documents WHERE pmid IN ({marks})"
        rows = self._rows_in(query, list(dict.fromkeys(pmids)))
        return {str(p): PubmedArticle.model_validate_json(r) for p, r in rows}

    def added_times(self, pmids: Iterable[str]) -> dict[str, datetime]:
        """PMID -> when the record was written into the corpus (``documents.added_at``: its
        first import, or the import of the newer PMID version that replaced it; aware UTC),
        for those of ``pmids`` that are stored."""
        query = "SELECT pmid, added_at FROM documents WHERE pmid IN ({marks})"
        rows = self._rows_in(query, list(dict.fromkeys(pmids)))
        out: dict[str, datetime] = {}
        for pmid, text in rows:
            when = datetime.fromisoformat(str(text))
            out[str(pmid)] = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
        return out

    def passages(self, pmid: str) -> list[Passage]:
        """The passages of the document with this PMID in order; ``[]`` for an abstract."""
        rows = self._conn.execute(
            "SELECT record FROM passages WHERE pmid = ? ORDER BY position", (pmid,)
        )
        return [Passage.model_validate_json(r[0]) for r in rows]

    def iter_texts(self) -> Iterator[tuple[str, str]]:
        """``(index id, indexed text)`` for every document (id = PMID) in insertion order, then
        every passage (id = :func:`passage_id`) in insertion order."""
        for query in (
            "SELECT pmid, text FROM documents ORDER BY rowid",
            "SELECT id, text FROM passages ORDER BY rowid",
        ):
            for index_id, text in self._conn.execute(query):
                yield str(index_id), str(text)

    # ----------------------------------------------------------------------- manifest

    def record_import(
        self, sha256: str, path: Path, size_bytes: int, read: int, added: int
    ) -> None:
        """Add or update the manifest row of an imported file."""
        now = _now()
        with self._conn:
            self._conn.execute(
                "INSERT INTO imported_files(sha256, path, size_bytes, first_imported_at, "
                "last_imported_at, records_read, records_added) VALUES (?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(sha256) DO UPDATE SET path = excluded.path, "
                "last_imported_at = excluded.last_imported_at, "
                "records_read = excluded.records_read, "
                "records_added = records_added + excluded.records_added",
                (sha256, str(path), size_bytes, now, now, read, added),
            )

    def imported_files(self) -> list[ImportedFile]:
        """The manifest, oldest import first."""
        rows = self._conn.execute(
            "SELECT sha256, path, size_bytes, first_imported_at, last_imported_at, "
            "records_read, records_added FROM imported_files ORDER BY first_imported_at, rowid"
        )
        keys = list(ImportedFile.model_fields)
        return [ImportedFile.model_validate(dict(zip(keys, r, strict=True))) for r in rows]
