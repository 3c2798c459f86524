"""The import pipeline of the local corpus (:class:`CorpusImporter`): records in, batch by batch.

A file is read once in full to validate it and count its items before anything is written.
Every record is cleaned and bounded (:func:`~deepcritical.corpus.records.check_record`), its
text (title + abstract, :func:`~deepcritical.corpus.text.index_text`) embedded, and each batch
of :data:`BATCH` records written vectors first (:class:`~deepcritical.corpus.dense.DenseIndex`),
then records and their BM25 rows in one SQLite transaction
(:class:`~deepcritical.corpus.documents.DocumentStore`), so the lexical index grows with each
batch and is never rebuilt.

* JSONL (PubMedQA) and records in memory: a PMID already in the corpus (or earlier in the
  same input) keeps its first version.
* PubMed XML (baseline and update files) is streamed (constant memory, :class:`_UpdateStream`):
  a record replaces the stored one of its PMID unless the stored one has a higher PMID
  version or the same content; ``<DeleteCitation>`` removes documents (rows, vectors,
  passages). Each batch commits the file's progress with it (its resume checkpoint), so an
  import killed midway resumes where it stopped; a file whose import finished is skipped whole.
* JATS full text: one document whose passages are index rows of their own
  (``"<pmid>#<position>"``), each embedded.

The import is pipelined (:class:`EmbedAhead`): a batch is embedded on a worker thread while
the batch before is written and the records of the next are read and checked; writes stay in
order on the importer's thread, each batch in its own transaction with its checkpoint.

The first vectors written record the embedder's name, path and dimension in ``meta``;
vectors of another dimension are refused. Writes take the corpus's lock (the validation pass
before them does not), so an import and a search of one corpus never interleave.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field

from deepcritical.corpus.corpus_errors import CorpusFormatError, CorpusMismatchError
from deepcritical.corpus.dense import DenseIndex
from deepcritical.corpus.documents import DocumentStore, Upsert, passage_id
from deepcritical.corpus.readers import (
    corpus_file_kind,
    read_corpus_file,
    read_full_text,
    read_pubmed_updates,
)
from deepcritical.corpus.records import bound_passages, check_record
from deepcritical.corpus.text import index_text, passage_index_text
from deepcritical.evidence.embeddings import Embedder, embedder_path
from deepcritical.formats.pubmed_xml import DeletedCitations, PubmedArticle, PubmedUpdate
from deepcritical.models import Passage

__all__ = [
    "BATCH",
    "CorpusImporter",
    "ImportResult",
    "ProgressCallback",
    "embedder_name",
    "file_sha256",
]

BATCH = 256
"""Records embedded and committed together during an import (the default)."""

RATE_MIN_TEXTS = 32
"""Texts an import must embed for its embedding rate to be recorded (fewer time the model's
warm-up more than the model)."""

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


def embedder_name(embedder: Embedder) -> str | None:
    """The embedder's ``model_name`` attribute (hub name or path), if it has one: the name a
    corpus records for the embedder that made its vectors (``meta.embedding_model``)."""
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


class CorpusImporter:
    """The import pipeline of one open corpus: the corpus's document store, its dense index
    (``dense()`` opens it on first use), the ``embedder`` its vectors come from, and the lock
    every write takes (the corpus's, shared with its search). ``directory`` only names the
    corpus in errors; ``batch_size`` records are embedded and committed together;
    ``pipelined``: embedding overlaps reading and writing (:class:`EmbedAhead`).
    :class:`~deepcritical.corpus.index.LocalCorpus` builds one and delegates its imports to it.
    """

    def __init__(
        self,
        *,
        directory: Path,
        docs: DocumentStore,
        dense: Callable[[], DenseIndex],
        embedder: Embedder,
        lock: threading.RLock,
        batch_size: int,
        pipelined: bool = True,
    ) -> None:
        self._directory = directory
        self._docs = docs
        self._dense_index = dense
        self._embedder = embedder
        self._lock = lock
        self.batch_size = batch_size
        self.pipelined = pipelined
        self.embedded = 0
        self.embed_seconds = 0.0

    def _record_rate(self, embedded_before: int, seconds_before: float) -> None:
        """Record the embedding rate of the import just done (``meta.embedding_rate``, texts
        per second of embedding alone, and ``meta.embedding_rate_path``, the path measured)
        when it embedded at least :data:`RATE_MIN_TEXTS` texts."""
        texts = self.embedded - embedded_before
        seconds = self.embed_seconds - seconds_before
        if texts >= RATE_MIN_TEXTS and seconds > 0:
            self._docs.set_meta("embedding_rate", f"{texts / seconds:.1f}")
            self._docs.set_meta("embedding_rate_path", embedder_path(self._embedder) or "")

    def add_file(
        self,
        path: Path,
        *,
        max_record_chars: int,
        skip_bad_lines: bool = False,
        progress: ProgressCallback | None = None,
    ) -> ImportResult:
        """Import a JSONL, PubMed XML or JATS file; the contract (validation first, batches,
        resume, the errors raised) is
        :meth:`LocalCorpus.add_file <deepcritical.corpus.index.LocalCorpus.add_file>`'s."""
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
            before = (self.embedded, self.embed_seconds)
            records = read_corpus_file(path, on_bad_line=_ignore if skip_bad_lines else None)
            report = None if progress is None else (lambda done: progress(done, total))
            result = self._add(records, sha, max_record_chars, report)
            self._docs.record_import(sha, path.resolve(), size, result.read, result.added)
            self._record_rate(*before)
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
            before = (self.embedded, self.embed_seconds)
            stream = _UpdateStream(self, sha, path, max_chars)
            stream.run(read_pubmed_updates(path), done, total, progress)
            self._docs.finish_import(sha, path.resolve(), total)
            self._record_rate(*before)
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
        self, articles: Iterable[PubmedArticle], *, max_record_chars: int
    ) -> ImportResult:
        """Import records already in memory (same rules as a JSONL :meth:`add_file`, no
        manifest row, nothing validated up front: see
        :meth:`LocalCorpus.add_articles
        <deepcritical.corpus.index.LocalCorpus.add_articles>`)."""
        with self._lock:
            before = (self.embedded, self.embed_seconds)
            result = self._add(iter(articles), None, max_record_chars, None)
            self._record_rate(*before)
            return result

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

        with EmbedAhead(self) as ahead:

            def flush() -> None:
                nonlocal added, skipped
                done = read
                if batch:
                    # a PMID is never in two batches (``seen``), so this batch's check need
                    # not wait for the write of the one before
                    existing = self._docs.existing([a.pmid for a, _ in batch])
                    new = [(a, t) for a, t in batch if a.pmid not in existing]
                    skipped += len(batch) - len(new)
                    added += len(new)
                    batch.clear()
                    if new:
                        ahead.submit(
                            [t for _, t in new],
                            lambda vectors: self._store(new, source_sha256, vectors),
                            after=None if progress is None else lambda: progress(done),
                        )
                        return
                ahead.drain()
                if progress is not None:
                    progress(done)

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
                    if len(batch) >= self.batch_size:
                        flush()
            flush()
        return ImportResult(
            read=read,
            added=added,
            skipped_existing=skipped,
            skipped_empty=empty,
            truncated=truncated,
        )

    def vectors(self, texts: list[str]) -> NDArray[np.float32]:
        """The embedder's vectors of ``texts`` (no database access: safe on the embedding
        thread of :class:`EmbedAhead`); the time taken is added to :attr:`embed_seconds`."""
        start = time.perf_counter()
        vectors = self._embedder.embed(texts)
        self.embed_seconds += time.perf_counter() - start
        self.embedded += len(texts)
        return vectors

    def _check_vectors(self, vectors: NDArray[np.float32]) -> None:
        """Check (and on first use record) the model, the embedding path and the dimension."""
        dim = str(vectors.shape[1])
        stored_dim = self._docs.meta("embedding_dimension")
        if stored_dim is None:
            self._docs.set_meta("embedding_model", embedder_name(self._embedder) or "")
            self._docs.set_meta("embedding_path", embedder_path(self._embedder) or "")
            self._docs.set_meta("embedding_dimension", dim)
        elif stored_dim != dim:
            raise CorpusMismatchError(
                f"the corpus in {self._directory} holds {stored_dim}-dimensional vectors; "
                f"the embedder gives {dim}"
            )

    def _write(
        self,
        rows: list[tuple[PubmedArticle, str]],
        source_sha256: str | None,
        passages: list[tuple[str, int, Passage, str]] | None = None,
    ) -> None:
        extra = passages or []
        vectors = self.vectors([t for _, t in rows] + [t for *_, t in extra])
        self._store(rows, source_sha256, vectors, extra)

    def _store(
        self,
        rows: list[tuple[PubmedArticle, str]],
        source_sha256: str | None,
        vectors: NDArray[np.float32],
        passages: list[tuple[str, int, Passage, str]] | None = None,
    ) -> None:
        """Write records (and passages) with their ``vectors``: vectors first, then the rows
        and BM25 rows in one transaction."""
        extra = passages or []
        self._check_vectors(vectors)
        ids = [a.pmid for a, _ in rows] + [passage_id(pmid, n) for pmid, n, *_ in extra]
        self._dense_index().upsert(ids, vectors)
        self._docs.insert(rows, source_sha256, extra)

    def _apply(
        self,
        upserts: list[Upsert],
        deletes: list[str],
        checkpoint: tuple[str, Path, int],
        vectors: NDArray[np.float32] | None = None,
    ) -> None:
        """Write one batch of a streamed PubMed XML import: vectors first (the passages of
        replaced and deleted documents, and deleted documents, removed; new vectors stored),
        then the records, BM25 rows and checkpoint in one transaction. ``vectors`` are those
        of ``upserts`` (computed here when ``None``)."""
        dense = self._dense_index()
        gone = self._docs.passage_ids([a.pmid for a, _, _ in upserts] + deletes) + deletes
        if gone:
            dense.delete(gone)
        if upserts:
            if vectors is None:
                vectors = self.vectors([t for _, t, _ in upserts])
            self._check_vectors(vectors)
            dense.upsert([a.pmid for a, _, _ in upserts], vectors)
        self._docs.apply(upserts, deletes, checkpoint[0], checkpoint)


class EmbedAhead:
    """The import pipeline's overlap: one batch is embedded on a worker thread while the
    importer's thread writes the batch before it and reads and checks the records of the next.

    :meth:`submit` starts embedding a batch, then writes the batch submitted before (its
    vectors awaited); so at most two batches are in memory and batches are written in the
    order they were submitted, each in its own transaction (with a streamed file's resume
    checkpoint), all on the caller's thread (the database is touched by no other). On leaving
    the ``with`` block normally the last batch is written; when it is left by an exception
    (Ctrl-C included), the batch still being embedded is dropped, never written: an import
    killed at any point has committed whole batches only. An importer that is not
    ``pipelined`` embeds each batch on the caller's thread, after writing the one before.
    """

    def __init__(self, importer: CorpusImporter) -> None:
        self._importer = importer
        self._pool: ThreadPoolExecutor | None = None
        if importer.pipelined:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="corpus-embed")
        self._pending: tuple[Future[NDArray[np.float32]], _Write, Callable[[], None] | None] | None
        self._pending = None

    def __enter__(self) -> EmbedAhead:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        try:
            if kind is None:
                self.drain()
        finally:
            if self._pending is not None:
                self._pending[0].cancel()
                self._pending = None
            if self._pool is not None:
                self._pool.shutdown(wait=True)

    def submit(self, texts: list[str], write: _Write, after: Callable[[], None] | None) -> None:
        """Start embedding ``texts`` (the batch's), then write the batch before; ``write``
        gets this batch's vectors when its turn comes, then ``after`` is called.

        Raises:
            whatever the previous batch's embedding or write raised.
        """
        if self._pool is not None:
            future = self._pool.submit(self._importer.vectors, texts)
        else:  # not pipelined: embed here, in turn
            self.drain()
            future = Future()
            future.set_result(self._importer.vectors(texts))
        previous, self._pending = self._pending, (future, write, after)
        if previous is not None:
            self._finish(previous)

    def drain(self) -> None:
        """Write the batch still pending, if any (waiting for its vectors)."""
        previous, self._pending = self._pending, None
        if previous is not None:
            self._finish(previous)

    @staticmethod
    def _finish(
        item: tuple[Future[NDArray[np.float32]], _Write, Callable[[], None] | None],
    ) -> None:
        future, write, after = item
        write(future.result())
        if after is not None:
            after()


_Write = Callable[[NDArray[np.float32]], None]
"""Writes one batch given its vectors (on the importer's thread)."""


class _UpdateStream:
    """One streamed import of a PubMed XML file by ``importer``: items are read in order,
    records collected into batches (a later record of a PMID supersedes an earlier one in the
    same batch), each batch written with the file's checkpoint (:meth:`CorpusImporter._apply`);
    a ``DeleteCitation`` block first writes the pending batch, then deletes."""

    def __init__(self, importer: CorpusImporter, sha256: str, path: Path, max_chars: int) -> None:
        self._importer = importer
        self._sha = sha256
        self._path = path.resolve()
        self._max_chars = max_chars
        self._pending: dict[str, Upsert] = {}
        self._ahead: EmbedAhead
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
        with EmbedAhead(self._importer) as self._ahead:
            for item in items:
                self.position += 1
                if self.position <= start:
                    continue
                if isinstance(item, DeletedCitations):
                    self._flush(self.position - 1)
                    self._delete(item.pmids)
                else:
                    self._collect(item.article, item.version)
                if len(self._pending) >= self._importer.batch_size:
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
        """Write the pending records (those new, or newer than stored) at ``position``: the
        batch before is written first (a PMID may be in both), then this batch's vectors are
        computed on the embedding thread while the next records are read; it is written with
        its checkpoint when the next batch is submitted, or when the import ends."""
        if not self._pending:
            return
        self._ahead.drain()
        stored = self._importer._docs.stored(list(self._pending))
        writes: list[Upsert] = []
        for pmid, (article, text, version) in self._pending.items():
            old = stored.get(pmid)
            if old is not None and (old[0] > version or old[1] == article.model_dump_json()):
                self.counts["skipped_existing"] += 1
                continue
            self.counts["replaced" if old is not None else "added"] += 1
            writes.append((article, text, version))
        self._pending.clear()
        if not writes:
            self._commit([], [], position)
            return
        checkpoint = (self._sha, self._path, position)
        self._ahead.submit(
            [t for _, t, _ in writes],
            lambda vectors: self._importer._apply(writes, [], checkpoint, vectors),
            after=None if self._progress is None else lambda: self._report(position),
        )

    def _report(self, position: int) -> None:
        if self._progress is not None:
            self._progress(position)

    def _delete(self, pmids: list[str]) -> None:
        self._ahead.drain()
        present = sorted(self._importer._docs.existing(pmids))
        self.counts["deleted"] += len(present)
        self._commit([], present, self.position)

    def _commit(self, writes: list[Upsert], deletes: list[str], position: int) -> None:
        self._importer._apply(writes, deletes, (self._sha, self._path, position))
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
