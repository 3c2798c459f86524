"""The persistent local corpus of PubMed abstracts (:class:`LocalCorpus`): open, import, search.

Layout of a corpus directory::

    <directory>/corpus.sqlite3   records (PubmedArticle JSON) by PMID, their BM25 index (FTS5),
                                 imported-file manifest, import checkpoints, metadata
                                 (embedding model, generation)   -- documents.py, lexical.py
    <directory>/dense/           one dense vector per row: FAISS (exact, then IVF-SQ8) over a
                                 SQLite vector log  -- see dense.py, ivf_index.py
    <directory>/chroma/          instead, in a corpus made before that: Chroma (cosine), or on
                                 a ``chroma run`` server when a server URL is given

The SQLite database is the source of truth. A corpus made before FTS5, with a ``bm25/``
directory, gets its FTS5 table built once when opened. Opening a corpus embeds nothing;
searching embeds the query only. :class:`LocalCorpus` opens and closes the stores and checks
that the embedder and the vectors' location are the corpus's own; its imports are
:mod:`deepcritical.corpus.ingest` (batches, PMID versions, deletions, the resume checkpoint
of a killed import) and its searches :mod:`deepcritical.corpus.hybrid` (BM25 and dense fused
with RRF).

Shared corpus: with ``server_url`` (``DEEPCRITICAL_CORPUS_URL``) the vectors live on a Chroma
server and the directory (documents and FTS5 index) on a path every machine mounts: Chroma's
local server has no BM25 or full-text ranking (its ``Search`` API is not implemented outside
Chroma Cloud; ``where_document`` only filters), so the lexical side stays in SQLite, opened
with the rollback journal (WAL needs one host). One process imports at a time.

Concurrency: every public method takes an internal lock (one lock per corpus, shared by its
importer and its search), so one ``LocalCorpus`` may be called from several threads (e.g.
through ``asyncio.to_thread``) and calls run one at a time; a file's validation pass, before
its first write, runs outside the lock. Several processes may read one directory; only one
should import into it at a time.
"""

from __future__ import annotations

import shutil
import threading
import uuid
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from types import TracebackType

from deepcritical.config import MAX_RECORD_CHARS
from deepcritical.corpus.chroma_index import COLLECTION
from deepcritical.corpus.corpus_errors import (
    CorpusError,
    CorpusFormatError,
    CorpusMismatchError,
    CorpusNotFoundError,
    EmptyCorpusError,
)
from deepcritical.corpus.dense import DenseIndex, DenseKind, open_dense_index
from deepcritical.corpus.documents import DB_NAME, DocumentStore, ImportedFile, count_documents
from deepcritical.corpus.hybrid import HybridSearch, ScoredDocument, SearchMode
from deepcritical.corpus.ingest import (
    BATCH,
    CorpusImporter,
    ImportResult,
    ProgressCallback,
    embedder_name,
)
from deepcritical.evidence.embeddings import Embedder
from deepcritical.formats.pubmed_xml import PubmedArticle

__all__ = [
    "CorpusError",
    "CorpusFormatError",
    "CorpusMismatchError",
    "CorpusNotFoundError",
    "EmptyCorpusError",
    "ImportedFile",
    "LocalCorpus",
]


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
    and committed together during an import; ``pipelined`` (default) embeds a batch on a
    worker thread while the batch before is written and the next one read
    (:class:`~deepcritical.corpus.ingest.EmbedAhead`), ``False`` does one after the other.

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
        pipelined: bool = True,
    ) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._server_url = server_url or None
        self._lock = threading.RLock()
        self._docs = DocumentStore(self.directory / DB_NAME, shared=self._server_url is not None)
        if self._docs.lexical_built:  # the bm25s index of an older corpus is replaced by FTS5
            shutil.rmtree(self.directory / "bm25", ignore_errors=True)
        self._dense: DenseIndex | None = None
        try:
            self._check_model(embedder_name(embedder))
            self._collection = self._check_location()
            self._kind = self._check_kind()
        except CorpusMismatchError:
            self._docs.close()
            raise
        self._importer = CorpusImporter(
            directory=self.directory,
            docs=self._docs,
            dense=self._dense_index,
            embedder=embedder,
            lock=self._lock,
            batch_size=max(1, batch_size),
            pipelined=pipelined,
        )
        self._searcher = HybridSearch(
            directory=self.directory,
            docs=self._docs,
            dense=self._dense_index,
            embedder=embedder,
            lock=self._lock,
        )

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

    def _check_kind(self) -> DenseKind:
        """The dense index of this corpus (``meta.dense_index``): Chroma on a server and in an
        embedded corpus made before the compressed index, FAISS IVF-SQ8 in a new embedded
        one; an empty corpus takes the one its location gives."""
        stored = self._docs.meta("dense_index")
        kind: DenseKind
        if self._docs.count() == 0:
            kind = "chroma" if self._server_url else "faiss-ivf-sq8"
        elif stored is None or stored == "chroma":
            kind = "chroma"
        elif stored == "faiss-ivf-sq8":
            kind = "faiss-ivf-sq8"
        else:
            raise CorpusMismatchError(
                f"the corpus in {self.directory} has a dense index of an unknown kind {stored!r}"
            )
        if stored != kind:
            self._docs.set_meta("dense_index", kind)
        return kind

    @property
    def dense_kind(self) -> DenseKind:
        """The dense index this corpus's vectors are in (``"faiss-ivf-sq8"`` or ``"chroma"``)."""
        return self._kind

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

    def added_times(self, pmids: Iterable[str]) -> dict[str, datetime]:
        """PMID -> when the document was written into the corpus (aware UTC), for those of
        ``pmids`` that are stored (:meth:`DocumentStore.added_times`)."""
        with self._lock:
            return self._docs.added_times(pmids)

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
        checkpoint (:mod:`deepcritical.corpus.ingest`): newer versions replace stored records,
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
        return self._importer.add_file(
            path,
            max_record_chars=max_record_chars,
            skip_bad_lines=skip_bad_lines,
            progress=progress,
        )

    def add_articles(
        self, articles: Iterable[PubmedArticle], *, max_record_chars: int = MAX_RECORD_CHARS
    ) -> ImportResult:
        """Import records already in memory (same rules as a JSONL :meth:`add_file`, no
        manifest row).

        Unlike :meth:`add_file` nothing is validated up front: an iterable that raises midway
        leaves the batches before it imported.
        """
        return self._importer.add_articles(articles, max_record_chars=max_record_chars)

    # ----------------------------------------------------------------------- indexes

    def _dense_index(self) -> DenseIndex:
        if self._dense is None:
            self._dense = open_dense_index(
                self._kind, self.directory, server_url=self._server_url, collection=self._collection
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
        return self._searcher.search(query, limit, mode=mode)
