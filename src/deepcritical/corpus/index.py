"""The persistent local corpus of PubMed abstracts and its hybrid (BM25 + dense) search.

Layout of a corpus directory::

    <directory>/corpus.sqlite3   records (PubmedArticle JSON) by PMID, imported-file manifest,
                                 metadata (embedding model, generation)   -- see documents.py
    <directory>/chroma/          one dense vector per PMID (Chroma, cosine) -- see dense.py
    <directory>/bm25/gen-<n>/    BM25 index of the documents at generation n -- see lexical.py

The SQLite database is the source of truth. Each import batch writes vectors first, then
records (one transaction); the BM25 index is rebuilt from the records after an import, and
again on the next search if it is missing or older than the records (e.g. after a crash).
Opening a corpus embeds nothing; searching embeds the query only.

Search is hybrid: the top ``N = max(5 * limit, 50)`` rows by BM25 and the top ``N`` by
cosine similarity of all-MiniLM-L6-v2 embeddings are fused with reciprocal rank fusion
(k = 60, :mod:`deepcritical.evidence.fusion`). A row is a document (title + abstract) or, for
a full-text article (JATS), one of its passages (section path + paragraph, table or figure
caption), with the id ``"<pmid>#<position>"``: a hit is the document of its best-ranked row,
and names the passage when that row is one (:attr:`ScoredDocument.passage`).

Concurrency: every public method takes an internal lock, so one ``LocalCorpus`` may be called
from several threads (e.g. through ``asyncio.to_thread``) and calls run one at a time. Several
processes may read one directory; only one should import into it at a time.
"""

from __future__ import annotations

import hashlib
import shutil
import threading
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from deepcritical.config import MAX_RECORD_CHARS
from deepcritical.corpus.dense import DenseIndex
from deepcritical.corpus.documents import (
    DocumentStore,
    ImportedFile,
    count_documents,
    passage_id,
    split_index_id,
)
from deepcritical.corpus.errors import (
    CorpusError,
    CorpusFormatError,
    CorpusMismatchError,
    CorpusNotFoundError,
    EmptyCorpusError,
)
from deepcritical.corpus.lexical import LexicalIndex
from deepcritical.corpus.readers import corpus_file_kind, read_corpus_file, read_full_text
from deepcritical.corpus.records import bound_passages, check_record
from deepcritical.corpus.text import index_text, passage_index_text
from deepcritical.evidence.embeddings import Embedder
from deepcritical.evidence.fusion import RRF_K, FusedHit, reciprocal_rank_fusion
from deepcritical.formats.pubmed_xml import PubmedArticle
from deepcritical.models import Passage

__all__ = [
    "RRF_K",
    "CorpusError",
    "CorpusFormatError",
    "CorpusMismatchError",
    "CorpusNotFoundError",
    "EmptyCorpusError",
    "ImportResult",
    "ImportedFile",
    "LocalCorpus",
    "ScoredDocument",
    "SearchMode",
]

DB_NAME = "corpus.sqlite3"
SearchMode = Literal["hybrid", "bm25", "dense"]

_BATCH = 256  # records embedded and committed together during an import


class ImportResult(BaseModel):
    """What one import did. ``read == added + skipped_existing + skipped_empty``.

    ``skipped_existing`` counts records whose PMID was already in the corpus, or earlier in
    the same file; ``skipped_empty`` records with neither title nor abstract text;
    ``truncated`` the records read that were over the size limit and were cut
    (:func:`~deepcritical.corpus.records.check_record`); ``bad_lines`` the 1-based numbers
    of the JSONL lines skipped as bad (``add_file(..., skip_bad_lines=True)``; not counted
    in ``read``).
    """

    model_config = ConfigDict(frozen=True)

    read: int = Field(ge=0)
    added: int = Field(ge=0)
    skipped_existing: int = Field(ge=0)
    skipped_empty: int = Field(default=0, ge=0)
    truncated: int = Field(default=0, ge=0)
    bad_lines: tuple[int, ...] = ()


class ScoredDocument(BaseModel):
    """A search hit: the record, its RRF score, and its 1-based rank in each list.

    ``score`` = sum of ``1 / (60 + rank)`` over the lists that ranked its best row (at most
    2/61 ≈ 0.033). ``bm25_rank`` / ``dense_rank`` are that row's ranks, ``None`` when it was
    not in that list's top N. ``passages`` is the full text of a JATS article (``[]`` for an
    abstract); ``passage`` is the one that matched when the best row was a passage, else
    ``None`` (the title and abstract matched best).
    """

    model_config = ConfigDict(frozen=True)

    article: PubmedArticle
    score: float
    bm25_rank: int | None = None
    dense_rank: int | None = None
    passages: list[Passage] = Field(default_factory=list)
    passage: Passage | None = None


def _model_name(embedder: Embedder) -> str | None:
    """The embedder's ``model_name`` attribute (hub name or path), if it has one."""
    name = getattr(embedder, "model_name", None)
    return name if isinstance(name, str) and name else None


def _ignore(_error: CorpusFormatError) -> None:
    """A bad line seen again on the import pass (the validation pass counted it)."""


def file_sha256(path: Path) -> tuple[str, int]:
    """``(hex sha256, size in bytes)`` of a file's bytes (as stored, i.e. still gzipped)."""
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


class LocalCorpus:
    """A persistent corpus of PubMed records under ``directory`` with hybrid search.

    The constructor opens the corpus there, creating an empty one (directory, database) when
    there is none; use :meth:`open` to require an existing, non-empty corpus. Vectors come from
    ``embedder``. A corpus remembers the ``model_name`` of the embedder that embedded it (when
    it has one) and the vector dimension, and refuses an embedder with another name or
    dimension.

    Raises:
        CorpusMismatchError: the corpus was embedded with a model of another name.
        OSError / sqlite3.Error: the directory cannot be created or holds a broken database.
    """

    def __init__(self, directory: Path, embedder: Embedder) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._embedder = embedder
        self._lock = threading.RLock()
        self._docs = DocumentStore(self.directory / DB_NAME)
        self._dense: DenseIndex | None = None
        self._lexical: LexicalIndex | None = None
        stored = self._docs.meta("embedding_model")
        given = _model_name(embedder)
        if stored and given and stored != given:
            self._docs.close()
            raise CorpusMismatchError(
                f"the corpus in {self.directory} was embedded with {stored!r}, not {given!r}; "
                "use that model and backend (DEEPCRITICAL_EMBEDDING_MODEL, "
                "DEEPCRITICAL_EMBEDDING_BACKEND=auto follows the corpus) or import into a new "
                "directory"
            )

    # ----------------------------------------------------------------------- lifecycle

    @staticmethod
    def exists(directory: Path) -> bool:
        """True when ``directory`` holds a corpus with at least one document (read-only
        check: creates nothing)."""
        return bool(count_documents(Path(directory) / DB_NAME))

    @classmethod
    def open(cls, directory: Path, embedder: Embedder) -> LocalCorpus:
        """Open an existing, non-empty corpus.

        Raises:
            CorpusNotFoundError: ``directory`` holds no corpus.
            EmptyCorpusError: it holds a corpus with no documents (subclass of the above).
            CorpusMismatchError: the corpus was embedded with a different model.
        """
        directory = Path(directory)
        n = count_documents(directory / DB_NAME)
        if n is None:
            raise CorpusNotFoundError(directory)
        if n == 0:
            raise EmptyCorpusError(directory)
        return cls(directory, embedder)

    def close(self) -> None:
        """Release the database connection; the object is unusable afterwards."""
        with self._lock:
            self._docs.close()
            self._dense = None
            self._lexical = None

    def __enter__(self) -> LocalCorpus:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ----------------------------------------------------------------------- reading

    def count(self) -> int:
        """Number of documents."""
        with self._lock:
            return self._docs.count()

    @property
    def is_empty(self) -> bool:
        """True when the corpus holds no document."""
        return self.count() == 0

    def get(self, pmid: str) -> PubmedArticle | None:
        """The record with this PMID, or ``None``."""
        with self._lock:
            return self._docs.get(pmid)

    def imported_files(self) -> list[ImportedFile]:
        """The manifest of imported files (one row per distinct content, by sha256)."""
        with self._lock:
            return self._docs.imported_files()

    # ----------------------------------------------------------------------- importing

    def add_file(
        self,
        path: Path,
        *,
        max_record_chars: int = MAX_RECORD_CHARS,
        skip_bad_lines: bool = False,
    ) -> ImportResult:
        """Import a JSONL (PubMedQA format) or PubMed XML (``.xml``/``.xml.gz``) file.

        The file is read once in full to validate it before anything is written: a bad record
        aborts the import and leaves the corpus unchanged, unless ``skip_bad_lines`` (JSONL
        only): then bad lines are skipped and their numbers returned
        (``ImportResult.bad_lines``), and the good records imported. Every record is cleaned
        and bounded (:func:`~deepcritical.corpus.records.check_record`: control characters
        removed, at most ``max_record_chars`` characters of text, cut at a sentence or word
        boundary; counted in ``ImportResult.truncated``). Records whose PMID is already in
        the corpus are skipped (the stored version is kept: a revised record in a PubMed update
        file does not replace it, and ``DeleteCitation`` blocks are ignored), so importing a
        file again adds nothing. New records are embedded (title + abstract) in batches of
        256; each batch is committed on its own, so an import interrupted by a crash can be
        resumed by running it again. The file's sha256 is recorded in the manifest; the BM25
        index is rebuilt.

        Raises:
            CorpusFormatError: unknown suffix, a bad record (file and line in the message;
                JSONL only without ``skip_bad_lines``), malformed XML or a corrupt gzip
                stream.
            OSError: the file cannot be read.
            deepcritical.evidence.embeddings.EmbeddingModelError: the model cannot be loaded.
            CorpusMismatchError: the embedder's vectors have another dimension than stored.
        """
        path = Path(path)
        if corpus_file_kind(path) == "jats":
            return self._add_full_text(path, max_record_chars)
        bad_lines: list[int] = []

        def skip(error: CorpusFormatError) -> None:
            if error.line is not None:
                bad_lines.append(error.line)

        validating = skip if skip_bad_lines else None
        for _ in read_corpus_file(path, on_bad_line=validating):  # raises before any write
            pass
        sha, size = file_sha256(path)
        with self._lock:
            records = read_corpus_file(path, on_bad_line=_ignore if skip_bad_lines else None)
            result = self._add(records, sha, max_record_chars)
            self._docs.record_import(sha, path.resolve(), size, result.read, result.added)
            if result.added:
                self._refresh_lexical()
            return result.model_copy(update={"bad_lines": tuple(bad_lines)})

    def _add_full_text(self, path: Path, max_chars: int) -> ImportResult:
        """Import one JATS article: its record (bounded as any other) and its passages (at most
        ``max_chars`` characters of them: :func:`bound_passages`), each embedded and indexed as
        a row of its own."""
        original, read = read_full_text(path)  # raises before any write
        sha, size = file_sha256(path)
        checked = check_record(original, max_chars)
        passages, dropped = bound_passages(read, max_chars)
        article = checked.article
        with self._lock:
            exists = bool(self._docs.existing([article.pmid]))
            if not exists:
                rows = [(article.pmid, n, p, passage_index_text(p)) for n, p in enumerate(passages)]
                self._write([(article, index_text(article))], sha, rows)
                self._refresh_lexical()
            self._docs.record_import(sha, path.resolve(), size, 1, 0 if exists else 1)
        return ImportResult(
            read=1,
            added=0 if exists else 1,
            skipped_existing=1 if exists else 0,
            truncated=int(checked.truncated or dropped),
        )

    def add_articles(
        self, articles: Iterable[PubmedArticle], *, max_record_chars: int = MAX_RECORD_CHARS
    ) -> ImportResult:
        """Import records already in memory (same rules as :meth:`add_file`, no manifest row).

        Unlike :meth:`add_file` nothing is validated up front: an iterable that raises midway
        leaves the batches before it imported.
        """
        with self._lock:
            result = self._add(iter(articles), None, max_record_chars)
            if result.added:
                self._refresh_lexical()
            return result

    def _add(
        self, articles: Iterator[PubmedArticle], source_sha256: str | None, max_chars: int
    ) -> ImportResult:
        read = added = skipped = empty = truncated = 0
        seen: set[str] = set()
        batch: list[tuple[PubmedArticle, str]] = []

        def flush() -> None:
            nonlocal added, skipped
            if not batch:
                return
            existing = self._docs.existing([a.pmid for a, _ in batch])
            new = [(a, t) for a, t in batch if a.pmid not in existing]
            skipped += len(batch) - len(new)
            if new:
                self._write(new, source_sha256)
                added += len(new)
            batch.clear()

        for original in articles:
            read += 1
            checked = check_record(original, max_chars)
            article = checked.article
            truncated += checked.truncated
            text = index_text(article)
            if not text:
                empty += 1
            elif article.pmid in seen:
                skipped += 1
            else:
                seen.add(article.pmid)
                batch.append((article, text))
                if len(batch) >= _BATCH:
                    flush()
        flush()
        return ImportResult(
            read=read,
            added=added,
            skipped_existing=skipped,
            skipped_empty=empty,
            truncated=truncated,
        )

    def _write(
        self,
        rows: list[tuple[PubmedArticle, str]],
        source_sha256: str | None,
        passages: list[tuple[str, int, Passage, str]] | None = None,
    ) -> None:
        extra = passages or []
        vectors = self._embedder.embed([t for _, t in rows] + [t for *_, t in extra])
        dim = str(vectors.shape[1])
        stored_dim = self._docs.meta("embedding_dimension")
        if stored_dim is None:
            self._docs.set_meta("embedding_model", _model_name(self._embedder) or "")
            self._docs.set_meta("embedding_dimension", dim)
        elif stored_dim != dim:
            raise CorpusMismatchError(
                f"the corpus in {self.directory} holds {stored_dim}-dimensional vectors; "
                f"the embedder gives {dim}"
            )
        ids = [a.pmid for a, _ in rows] + [passage_id(pmid, n) for pmid, n, *_ in extra]
        self._dense_index().upsert(ids, vectors)
        self._docs.insert(rows, source_sha256, extra)

    # ----------------------------------------------------------------------- indexes

    def _dense_index(self) -> DenseIndex:
        if self._dense is None:
            self._dense = DenseIndex(self.directory / "chroma")
        return self._dense

    def _lexical_dir(self, generation: int) -> Path:
        return self.directory / "bm25" / f"gen-{generation}"

    def _refresh_lexical(self) -> LexicalIndex:
        """The BM25 index for the current generation: in memory, else from disk, else built
        from the records and saved (older generations are deleted)."""
        generation = self._docs.generation()
        if self._lexical is not None and self._lexical.generation == generation:
            return self._lexical
        target = self._lexical_dir(generation)
        try:
            self._lexical = LexicalIndex.load(target)
            return self._lexical
        except (OSError, ValueError, KeyError):
            pass
        pairs = list(self._docs.iter_texts())
        index = LexicalIndex.build([p for p, _ in pairs], [t for _, t in pairs], generation)
        tmp = target.with_name(f"{target.name}.tmp-{uuid.uuid4().hex}")
        shutil.rmtree(tmp, ignore_errors=True)
        index.save(tmp)
        try:
            tmp.rename(target)
        except OSError:  # another process saved the same generation first
            shutil.rmtree(tmp, ignore_errors=True)
        for old in target.parent.iterdir():
            if old.name.startswith("gen-") and ".tmp-" not in old.name and old != target:
                shutil.rmtree(old, ignore_errors=True)
        self._lexical = index
        return index

    # ----------------------------------------------------------------------- searching

    def search(
        self, query: str, limit: int, *, mode: SearchMode = "hybrid"
    ) -> list[ScoredDocument]:
        """The ``limit`` best documents for ``query``, best first.

        ``mode="hybrid"`` fuses the top ``N = max(5 * limit, 50)`` of BM25 and of dense
        (cosine) search with RRF, k = 60; ``"bm25"`` and ``"dense"`` rank by one list alone
        (same scoring, one term). An empty query or ``limit <= 0`` gives ``[]``.

        Raises:
            EmptyCorpusError: the corpus holds no document (``deepcritical corpus add FILE``).
            deepcritical.evidence.embeddings.EmbeddingModelError: the model cannot be loaded.
            CorpusMismatchError: the query vector has another dimension than the corpus.
        """
        if limit <= 0 or not query.strip():
            return []
        depth = max(5 * limit, 50)
        with self._lock:
            if self._docs.count() == 0:
                raise EmptyCorpusError(self.directory)
            rankings: dict[str, list[str]] = {}
            if mode in ("hybrid", "bm25"):
                rankings["bm25"] = [p for p, _ in self._refresh_lexical().search(query, depth)]
            if mode in ("hybrid", "dense"):
                rankings["dense"] = [p for p, _ in self._dense_search(query, depth)]
            fused = reciprocal_rank_fusion(rankings, k=RRF_K)
            # each document once, at the rank of its best row (itself or a passage)
            best: dict[str, tuple[int | None, FusedHit]] = {}
            for hit in fused:
                pmid, position = split_index_id(hit.id)
                best.setdefault(pmid, (position, hit))
            order = list(best)
            hits: list[ScoredDocument] = []
            # fetch records in rank order; a vector whose record is missing (an import that
            # crashed between the two writes) is passed over
            for start in range(0, len(order), limit):
                if len(hits) >= limit:
                    break
                chunk = order[start : start + limit]
                docs = self._docs.get_many(chunk)
                hits.extend(self._scored(docs[pmid], *best[pmid]) for pmid in chunk if pmid in docs)
        return hits[:limit]

    def _scored(
        self, article: PubmedArticle, position: int | None, hit: FusedHit
    ) -> ScoredDocument:
        passages = self._docs.passages(article.pmid)
        matched = passages[position] if position is not None and position < len(passages) else None
        return ScoredDocument(
            article=article,
            score=hit.score,
            bm25_rank=hit.ranks.get("bm25"),
            dense_rank=hit.ranks.get("dense"),
            passages=passages,
            passage=matched,
        )

    def _dense_search(self, query: str, k: int) -> list[tuple[str, float]]:
        vector = self._embedder.embed([query])[0]
        stored_dim = self._docs.meta("embedding_dimension")
        if stored_dim is not None and int(stored_dim) != vector.shape[0]:
            raise CorpusMismatchError(
                f"the corpus in {self.directory} holds {stored_dim}-dimensional vectors; "
                f"the embedder gives {vector.shape[0]}"
            )
        return self._dense_index().query(vector, k)
