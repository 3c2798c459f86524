"""The persistent local corpus of PubMed abstracts and its hybrid (BM25 + dense) search.

Layout of a corpus directory::

    <directory>/corpus.sqlite3   records (PubmedArticle JSON) by PMID, their BM25 index (FTS5),
                                 imported-file manifest, import checkpoints, metadata
                                 (embedding model, generation)   -- documents.py, lexical.py
    <directory>/chroma/          one dense vector per row (Chroma, cosine)  -- see dense.py
                                 (on a ``chroma run`` server instead when a server URL is given)

The SQLite database is the source of truth. Each import batch writes vectors first, then
records and their BM25 rows (one transaction), so the lexical index grows with each batch
and is never rebuilt (a corpus made before FTS5, with a ``bm25/`` directory, gets its FTS5
table built once when opened). Opening a corpus embeds nothing; searching embeds the query
only.

PubMed XML (baseline and update files) is streamed (constant memory): a record replaces the
stored one of its PMID unless the stored one has a higher PMID version or the same content;
``<DeleteCitation>`` removes documents (rows, vectors, passages). Each batch commits the
file's progress with it, so an import killed midway resumes where it stopped; a file whose
import finished is skipped whole. JSONL and JATS imports keep the first version of a PMID.

Shared corpus: with ``server_url`` (``DEEPCRITICAL_CORPUS_URL``) the vectors live on a Chroma
server and the directory (documents and FTS5 index) on a path every machine mounts: Chroma's
local server has no BM25 or full-text ranking (its ``Search`` API is not implemented outside
Chroma Cloud; ``where_document`` only filters), so the lexical side stays in SQLite, opened
with the rollback journal (WAL needs one host). One process imports at a time.

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
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field

from deepcritical.config import MAX_RECORD_CHARS
from deepcritical.corpus.corpus_errors import (
    CorpusError,
    CorpusFormatError,
    CorpusMismatchError,
    CorpusNotFoundError,
    EmptyCorpusError,
)
from deepcritical.corpus.dense import COLLECTION, DenseIndex
from deepcritical.corpus.documents import (
    DB_NAME,
    DocumentStore,
    ImportedFile,
    Upsert,
    count_documents,
    passage_id,
    split_index_id,
)
from deepcritical.corpus.readers import (
    corpus_file_kind,
    read_corpus_file,
    read_full_text,
    read_pubmed_updates,
)
from deepcritical.corpus.records import bound_passages, check_record
from deepcritical.corpus.text import index_text, passage_index_text
from deepcritical.evidence.embeddings import Embedder
from deepcritical.evidence.fusion import RRF_K, FusedHit, reciprocal_rank_fusion
from deepcritical.formats.pubmed_xml import DeletedCitations, PubmedArticle, PubmedUpdate
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
    "ProgressCallback",
    "ScoredDocument",
    "SearchMode",
]

SearchMode = Literal["hybrid", "bm25", "dense"]

BATCH = 256
"""Records embedded and committed together during an import (the default)."""

ProgressCallback = Callable[[int, int], None]
"""Called after each committed batch of a file with ``(items done, items in the file)``
(records, plus ``DeleteCitation`` blocks for PubMed XML); a resumed import starts above 0."""


class ImportResult(BaseModel):
    """What one import did. ``read == added + replaced + skipped_existing + skipped_empty``.

    ``skipped_existing`` counts records whose PMID was already in the corpus (for PubMed XML:
    with the same content or a higher PMID version), or earlier in the same file (for PubMed
    XML: superseded by a later record of the same batch); ``replaced`` PubMed XML records
    that replaced the stored record of their PMID (a newer version); ``deleted`` documents
    removed by ``DeleteCitation`` blocks; ``skipped_empty`` records with neither title nor
    abstract text; ``truncated`` the records read that were over the size limit and were cut
    (:func:`~deepcritical.corpus.records.check_record`); ``bad_lines`` the 1-based numbers
    of the JSONL lines skipped as bad (``add_file(..., skip_bad_lines=True)``; not counted
    in ``read``); ``resumed_from`` the items of the file an interrupted import had already
    committed (not read again); ``already_imported`` True when the file's import had
    finished before (nothing read).
    """

    model_config = ConfigDict(frozen=True)

    read: int = Field(ge=0)
    added: int = Field(ge=0)
    skipped_existing: int = Field(ge=0)
    skipped_empty: int = Field(default=0, ge=0)
    truncated: int = Field(default=0, ge=0)
    replaced: int = Field(default=0, ge=0)
    deleted: int = Field(default=0, ge=0)
    resumed_from: int = Field(default=0, ge=0)
    already_imported: bool = False
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

    ``server_url`` (``DEEPCRITICAL_CORPUS_URL``) keeps the vectors on that Chroma server
    (``chroma run``) in a collection named in the database (``meta.dense_collection``), so a
    corpus directory on a shared mount is searched by every machine. A corpus is either
    embedded or on a server from its first import on. ``batch_size`` records are embedded
    and committed together during an import.

    Raises:
        CorpusMismatchError: the corpus was embedded with a model of another name, or its
            vectors live elsewhere (embedded vs server).
        OSError / sqlite3.Error: the directory cannot be created or holds a broken database.
    """

    def __init__(
        self,
        directory: Path,
        embedder: Embedder,
        *,
        server_url: str | None = None,
        batch_size: int = BATCH,
    ) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._embedder = embedder
        self._server_url = server_url or None
        self._batch = max(1, batch_size)
        self._lock = threading.RLock()
        self._docs = DocumentStore(self.directory / DB_NAME, shared=self._server_url is not None)
        if self._docs.lexical_built:  # the bm25s index of an older corpus is replaced by FTS5
            shutil.rmtree(self.directory / "bm25", ignore_errors=True)
        self._dense: DenseIndex | None = None
        try:
            self._check_model(_model_name(embedder))
            self._collection = self._check_location()
        except CorpusMismatchError:
            self._docs.close()
            raise

    def _check_model(self, given: str | None) -> None:
        stored = self._docs.meta("embedding_model")
        if stored and given and stored != given:
            raise CorpusMismatchError(
                f"the corpus in {self.directory} was embedded with {stored!r}, not {given!r}; "
                "use that model and backend (DEEPCRITICAL_EMBEDDING_MODEL, "
                "DEEPCRITICAL_EMBEDDING_BACKEND=auto follows the corpus) or import into a new "
                "directory"
            )

    def _check_location(self) -> str:
        """The Chroma collection of this corpus (recorded by its first use) after checking that
        its vectors are where this object looks (embedded vs server); an empty corpus takes
        the location it is opened with."""
        where = "server" if self._server_url else "embedded"
        stored_where = self._docs.meta("dense_location") or "embedded"  # older corpora
        name = self._docs.meta("dense_collection")
        if stored_where != where and self._docs.count() == 0:
            stored_where, name = where, None
        if stored_where != where:
            raise CorpusMismatchError(
                f"the vectors of the corpus in {self.directory} are "
                f"{'on a Chroma server' if stored_where == 'server' else 'in the directory'}: "
                f"{'set' if stored_where == 'server' else 'unset'} DEEPCRITICAL_CORPUS_URL"
            )
        if name is None:
            name = COLLECTION if where == "embedded" else f"corpus-{uuid.uuid4().hex}"
            self._docs.set_meta("dense_collection", name)
            self._docs.set_meta("dense_location", where)
        return name

    # ----------------------------------------------------------------------- lifecycle

    @staticmethod
    def exists(directory: Path) -> bool:
        """True when ``directory`` holds a corpus with at least one document (read-only
        check: creates nothing)."""
        return bool(count_documents(Path(directory) / DB_NAME))

    @classmethod
    def open(
        cls, directory: Path, embedder: Embedder, *, server_url: str | None = None
    ) -> LocalCorpus:
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
        return cls(directory, embedder, server_url=server_url)

    def close(self) -> None:
        """Release the database connection; the object is unusable afterwards."""
        with self._lock:
            self._docs.close()
            if self._dense is not None:
                self._dense.close()
            self._dense = None

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
        progress: ProgressCallback | None = None,
    ) -> ImportResult:
        """Import a JSONL (PubMedQA format), PubMed XML (``.xml``/``.xml.gz``, baseline or
        update file) or JATS full-text file.

        The file is read once in full to validate it (and count its items) before anything is
        written: a bad record aborts the import and leaves the corpus unchanged, unless
        ``skip_bad_lines`` (JSONL only): then bad lines are skipped and their numbers returned
        (``ImportResult.bad_lines``), and the good records imported. Every record is cleaned
        and bounded (:func:`~deepcritical.corpus.records.check_record`: control characters
        removed, at most ``max_record_chars`` characters of text, cut at a sentence or word
        boundary; counted in ``ImportResult.truncated``). New records are embedded (title +
        abstract) in batches; each batch is committed on its own, and ``progress`` is called
        after each.

        JSONL: records whose PMID is already in the corpus are skipped (the stored version
        is kept), so importing a file again adds nothing. PubMed XML: streamed with a resume
        checkpoint (see the module docs): newer versions replace stored records,
        ``DeleteCitation`` removes them, an interrupted import resumes at its last committed
        batch and a finished file is skipped. The file's sha256 is recorded in the manifest.

        Raises:
            CorpusFormatError: unknown suffix, a bad record (file and line in the message;
                JSONL only without ``skip_bad_lines``), malformed XML or a corrupt gzip
                stream.
            OSError: the file cannot be read.
            deepcritical.evidence.embeddings.EmbeddingModelError: the model cannot be loaded.
            CorpusMismatchError: the embedder's vectors have another dimension than stored.
        """
        path = Path(path)
        kind = corpus_file_kind(path)
        if kind == "jats":
            return self._add_full_text(path, max_record_chars)
        if kind == "xml":
            return self._add_pubmed_xml(path, max_record_chars, progress)
        bad_lines: list[int] = []

        def skip(error: CorpusFormatError) -> None:
            if error.line is not None:
                bad_lines.append(error.line)

        validating = skip if skip_bad_lines else None
        total = sum(1 for _ in read_corpus_file(path, on_bad_line=validating))  # before writes
        sha, size = file_sha256(path)
        with self._lock:
            records = read_corpus_file(path, on_bad_line=_ignore if skip_bad_lines else None)
            report = None if progress is None else (lambda done: progress(done, total))
            result = self._add(records, sha, max_record_chars, report)
            self._docs.record_import(sha, path.resolve(), size, result.read, result.added)
            return result.model_copy(update={"bad_lines": tuple(bad_lines)})

    def _add_pubmed_xml(
        self, path: Path, max_chars: int, progress: ProgressCallback | None
    ) -> ImportResult:
        """Stream a PubMed baseline / update file in with its resume checkpoint."""
        total = sum(1 for _ in read_pubmed_updates(path))  # validates before any write
        sha, size = file_sha256(path)
        with self._lock:
            done, finished = self._docs.import_progress(sha)
            if finished:
                return ImportResult(read=0, added=0, skipped_existing=0, already_imported=True)
            stream = _UpdateStream(self, sha, path, max_chars)
            stream.run(read_pubmed_updates(path), done, total, progress)
            self._docs.finish_import(sha, path.resolve(), total)
            result = stream.result(resumed_from=done)
            self._docs.record_import(sha, path.resolve(), size, total, result.added)
            return result

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
        """Import records already in memory (same rules as a JSONL :meth:`add_file`, no
        manifest row).

        Unlike :meth:`add_file` nothing is validated up front: an iterable that raises midway
        leaves the batches before it imported.
        """
        with self._lock:
            return self._add(iter(articles), None, max_record_chars, None)

    def _add(
        self,
        articles: Iterator[PubmedArticle],
        source_sha256: str | None,
        max_chars: int,
        progress: Callable[[int], None] | None,
    ) -> ImportResult:
        read = added = skipped = empty = truncated = 0
        seen: set[str] = set()
        batch: list[tuple[PubmedArticle, str]] = []

        def flush() -> None:
            nonlocal added, skipped
            if batch:
                existing = self._docs.existing([a.pmid for a, _ in batch])
                new = [(a, t) for a, t in batch if a.pmid not in existing]
                skipped += len(batch) - len(new)
                if new:
                    self._write(new, source_sha256)
                    added += len(new)
                batch.clear()
            if progress is not None:
                progress(read)

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
                if len(batch) >= self._batch:
                    flush()
        flush()
        return ImportResult(
            read=read,
            added=added,
            skipped_existing=skipped,
            skipped_empty=empty,
            truncated=truncated,
        )

    def _embed(self, texts: list[str]) -> NDArray[np.float32]:
        """Vectors of ``texts``, checking (and on first use recording) the model and dimension."""
        vectors = self._embedder.embed(texts)
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
        return vectors

    def _write(
        self,
        rows: list[tuple[PubmedArticle, str]],
        source_sha256: str | None,
        passages: list[tuple[str, int, Passage, str]] | None = None,
    ) -> None:
        extra = passages or []
        vectors = self._embed([t for _, t in rows] + [t for *_, t in extra])
        ids = [a.pmid for a, _ in rows] + [passage_id(pmid, n) for pmid, n, *_ in extra]
        self._dense_index().upsert(ids, vectors)
        self._docs.insert(rows, source_sha256, extra)

    def _apply(
        self,
        upserts: list[Upsert],
        deletes: list[str],
        checkpoint: tuple[str, Path, int],
    ) -> None:
        """Write one batch of a streamed PubMed XML import: vectors first (the passages of
        replaced and deleted documents, and deleted documents, removed; new vectors stored),
        then the records, BM25 rows and checkpoint in one transaction."""
        dense = self._dense_index()
        gone = self._docs.passage_ids([a.pmid for a, _, _ in upserts] + deletes) + deletes
        if gone:
            dense.delete(gone)
        if upserts:
            dense.upsert([a.pmid for a, _, _ in upserts], self._embed([t for _, t, _ in upserts]))
        self._docs.apply(upserts, deletes, checkpoint[0], checkpoint)

    # ----------------------------------------------------------------------- indexes

    def _dense_index(self) -> DenseIndex:
        if self._dense is None:
            self._dense = DenseIndex(
                self.directory / "chroma", server_url=self._server_url, collection=self._collection
            )
        return self._dense

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
                rankings["bm25"] = [p for p, _ in self._docs.lexical_search(query, depth)]
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


class _UpdateStream:
    """One streamed import of a PubMed XML file into ``corpus``: items are read in order,
    records collected into batches (a later record of a PMID supersedes an earlier one in the
    same batch), each batch written with the file's checkpoint (:meth:`LocalCorpus._apply`);
    a ``DeleteCitation`` block first writes the pending batch, then deletes."""

    def __init__(self, corpus: LocalCorpus, sha256: str, path: Path, max_chars: int) -> None:
        self._corpus = corpus
        self._sha = sha256
        self._path = path.resolve()
        self._max_chars = max_chars
        self._pending: dict[str, Upsert] = {}
        self._progress: Callable[[int], None] | None = None
        self.position = 0
        names = ("read", "added", "replaced", "skipped_existing", "skipped_empty", "truncated")
        self.counts = dict.fromkeys((*names, "deleted"), 0)

    def run(
        self,
        items: Iterator[PubmedUpdate],
        start: int,
        total: int,
        progress: ProgressCallback | None,
    ) -> None:
        """Consume ``items``, skipping the first ``start`` (committed by an earlier run);
        ``progress`` is called after each committed batch."""
        if progress is not None:
            self._progress = lambda done: progress(done, total)
        for item in items:
            self.position += 1
            if self.position <= start:
                continue
            if isinstance(item, DeletedCitations):
                self._flush(self.position - 1)
                self._delete(item.pmids)
            else:
                self._collect(item.article, item.version)
            if len(self._pending) >= self._corpus._batch:
                self._flush(self.position)
        self._flush(self.position)

    def _collect(self, original: PubmedArticle, version: int) -> None:
        self.counts["read"] += 1
        checked = check_record(original, self._max_chars)
        self.counts["truncated"] += checked.truncated
        article = checked.article
        text = index_text(article)
        if not text:
            self.counts["skipped_empty"] += 1
            return
        earlier = self._pending.get(article.pmid)
        if earlier is not None:
            self.counts["skipped_existing"] += 1  # one of the two copies is not written
            if earlier[2] > version:
                return
        self._pending[article.pmid] = (article, text, version)

    def _flush(self, position: int) -> None:
        """Write the pending records (those new, or newer than stored) at ``position``."""
        if not self._pending:
            return
        stored = self._corpus._docs.stored(list(self._pending))
        writes: list[Upsert] = []
        for pmid, (article, text, version) in self._pending.items():
            old = stored.get(pmid)
            if old is not None and (old[0] > version or old[1] == article.model_dump_json()):
                self.counts["skipped_existing"] += 1
                continue
            self.counts["replaced" if old is not None else "added"] += 1
            writes.append((article, text, version))
        self._pending.clear()
        self._commit(writes, [], position)

    def _delete(self, pmids: list[str]) -> None:
        present = sorted(self._corpus._docs.existing(pmids))
        self.counts["deleted"] += len(present)
        self._commit([], present, self.position)

    def _commit(self, writes: list[Upsert], deletes: list[str], position: int) -> None:
        self._corpus._apply(writes, deletes, (self._sha, self._path, position))
        if self._progress is not None:
            self._progress(position)

    def result(self, *, resumed_from: int) -> ImportResult:
        """The counts of this run."""
        c = self.counts
        return ImportResult(
            read=c["read"],
            added=c["added"],
            replaced=c["replaced"],
            skipped_existing=c["skipped_existing"],
            skipped_empty=c["skipped_empty"],
            truncated=c["truncated"],
            deleted=c["deleted"],
            resumed_from=resumed_from,
        )
