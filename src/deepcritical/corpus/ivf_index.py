"""Dense vectors of an embedded corpus, compressed for 10^6 .. 10^7 documents: a FAISS index
(exact below :data:`TRAIN_AT` vectors, IVF with 8-bit scalar quantisation above) over a
vector log in SQLite.

Layout under ``<corpus dir>/dense/``::

    vectors.sqlite3    every vector (unit-normalised, float16: 768 bytes at 384 dimensions)
                       under an integer key (AUTOINCREMENT, never reused) with its index id,
                       and the keys removed since the index was last saved; committed with
                       each upsert or delete: the source of truth
    index.<K>.faiss    the FAISS index of the log's vectors with keys <= K, saved now and then
                       (written to a temporary file, then renamed; older files are removed)

On open the newest index file is read and brought up to the log (vectors with keys > K
added, keys removed since removed), so a process killed mid-import loses no vector that its
log committed; without a file the index is built from the log.

The index (cosine similarity as the inner product of unit vectors):

* below :data:`TRAIN_AT` vectors, ``IndexFlatIP`` under an id map: exact search;
* from :data:`TRAIN_AT` on, ``IndexIVFScalarQuantizer`` (``QT_8bit``, 384 bytes a vector at
  384 dimensions, a quarter of float32): ``nlist`` (a power of two near 4 sqrt(n)) k-means
  cells trained on up to 64 log vectors per cell, drawn at random; :data:`NPROBE` cells
  scanned per query, and the best few hundred re-ranked by their float16 vectors from the
  log.
  Retrained from the log once it has grown :data:`RETRAIN_GROWTH` times past the size it was
  trained at, so the cells keep up with the corpus. Measured on synthetic vectors
  (``benchmarks/bench_dense_index.py``, 2 cores): recall@10 against exact search 1.000 at
  10^6 and 10^7, query p95 2.8 and 22.5 ms, peak RSS of the import 1.7 and 6.6 GB.

Other processes that opened the same corpus see new vectors at their next query (the log is
read past their highest key); a key removed while they held it is dropped when its id is
looked up. One process writes at a time (the corpus's rule).
"""

from __future__ import annotations

import math
import os
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from deepcritical.corpus.documents import rows_in
from deepcritical.logs import get_logger

log = get_logger(__name__)

LOG_NAME = "vectors.sqlite3"
TRAIN_AT = 100_000
"""Vectors at which the exact index gives way to IVF-SQ8 (exact search of 10^5 vectors of 384
dimensions takes ~10 ms on one core)."""
RETRAIN_GROWTH = 8
"""The IVF cells are retrained when the log holds this many times the vectors trained on."""
NPROBE = 64
"""IVF cells scanned per query."""
REFINE = 4
REFINE_MIN = 100
"""Under IVF a query re-ranks the index's top ``max(REFINE * k, REFINE_MIN)`` by their float16
vectors (exact order among near neighbours)."""
SAMPLES_PER_CELL = 64
"""Training vectors per IVF cell (k-means), drawn at random from the log."""
SAVE_EVERY = 200_000
"""Vectors added or removed since the last save after which the index file is written again,
or a quarter of the index's size when that is more (so the files written total a few times
the final one); also on close and after training. A killed process's unsaved vectors are
read back from the log when the index is next opened."""
_CHUNK = 50_000  # log rows read per step when catching up or rebuilding

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    key INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    vector BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS removed (key INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def _faiss() -> Any:
    import faiss

    return faiss


def ivf_cells(n: int) -> int:
    """The number of IVF cells for ``n`` training-time vectors: the power of two nearest
    4 sqrt(n), at least 256."""
    return max(256, 1 << round(math.log2(4 * math.sqrt(max(n, 1)))))


class IvfIndex:
    """Index id -> vector store with nearest-neighbour search, on the FAISS index and SQLite
    log of ``directory`` (see the module docs); the same methods as
    :class:`~deepcritical.corpus.chroma_index.ChromaIndex`.

    Args:
        directory: the corpus's ``dense/`` directory (created when missing).

    Raises:
        sqlite3.Error: the log is unreadable.
        RuntimeError: (FAISS) an index file that cannot be read is skipped for an older one
            or a rebuild from the log; nothing is raised for it.
    """

    def __init__(self, directory: Path) -> None:
        self._directory = Path(directory)
        self._directory.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(
            self._directory / LOG_NAME, check_same_thread=False, timeout=30.0
        )
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.executescript(_SCHEMA)
        self._index: Any = None
        self._through = 0  # the highest log key the in-memory index has seen
        self._unsaved = 0  # vectors added or removed since the last save, by this process
        self._load()

    # ----------------------------------------------------------------------- lifecycle

    def close(self) -> None:
        """Save the index when this process changed it, and close the log."""
        if self._unsaved:
            self._save()
        self._conn.close()

    def _files(self) -> list[tuple[int, Path]]:
        found = []
        for path in self._directory.glob("index.*.faiss"):
            through = path.name.split(".")[1]
            if through.isdigit():
                found.append((int(through), path))
        return sorted(found, reverse=True)

    def _load(self) -> None:
        faiss = _faiss()
        for through, path in self._files():
            try:
                index = faiss.read_index(str(path))
            except RuntimeError:
                log.warning("dense index file unreadable; using an older one", file=path.name)
                continue
            self._index, self._through = index, through
            self._direct_map()
            break
        removed = [k for (k,) in self._conn.execute("SELECT key FROM removed")]
        if self._index is not None and removed:
            self._remove_keys(removed)
        self._catch_up()

    def _save(self) -> None:
        """Write the index to ``index.<K>.faiss`` (temporary file, rename), remove older files
        and the removal log it now holds."""
        if self._index is None:
            return
        faiss = _faiss()
        target = self._directory / f"index.{self._through}.faiss"
        temporary = target.with_suffix(".faiss.tmp")
        faiss.write_index(self._index, str(temporary))
        os.replace(temporary, target)
        for through, path in self._files():
            if through < self._through:  # a newer file (another process's) is kept
                path.unlink(missing_ok=True)
        with self._conn:
            self._conn.execute("DELETE FROM removed WHERE key <= ?", (self._through,))
        self._unsaved = 0

    # ----------------------------------------------------------------------- the index

    def _direct_map(self) -> None:
        """An IVF index removes by id through a hash table (no scan of every cell)."""
        faiss = _faiss()
        ivf = faiss.try_extract_index_ivf(self._index)
        if ivf is not None and ivf.direct_map.type != faiss.DirectMap.Hashtable:
            ivf.set_direct_map_type(faiss.DirectMap.Hashtable)
        if ivf is not None:
            ivf.nprobe = NPROBE

    def _is_ivf(self) -> bool:
        return self._index is not None and _faiss().try_extract_index_ivf(self._index) is not None

    def _new_exact(self, dimension: int) -> Any:
        faiss = _faiss()
        return faiss.IndexIDMap(faiss.IndexFlatIP(dimension))

    def _log_rows(
        self, after: int, upto: int | None = None
    ) -> Iterator[tuple[NDArray[np.int64], list[str], NDArray[np.float32]]]:
        """(keys, ids, float32 vectors) of the log's rows with ``after < key <= upto`` (no
        upper bound when ``None``), in key order, in chunks of :data:`_CHUNK`."""
        last = after
        bound = -1 if upto is None else upto
        while True:
            rows = self._conn.execute(
                "SELECT key, id, vector FROM vectors WHERE key > ? AND (? < 0 OR key <= ?) "
                "ORDER BY key LIMIT ?",
                (last, bound, bound, _CHUNK),
            ).fetchall()
            if not rows:
                return
            keys = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            vectors = np.stack([np.frombuffer(r[2], dtype=np.float16) for r in rows])
            last = int(keys[-1])
            yield keys, [str(r[1]) for r in rows], vectors.astype(np.float32)

    def _catch_up(self) -> None:
        """Add the log's vectors past :attr:`_through` (other processes' writes, or this
        process's before a kill), training first when the log has grown enough."""
        (count,) = self._conn.execute("SELECT count(*) FROM vectors").fetchone()
        if self._needs_training(int(count)):
            self._train(int(count))
            return
        for keys, _, vectors in self._log_rows(self._through):
            self._add(keys, vectors)

    def _needs_training(self, count: int) -> bool:
        if count < TRAIN_AT:
            return False
        if not self._is_ivf():
            return True
        trained = int(self._meta("trained_on") or self._index.ntotal or 1)
        return count >= RETRAIN_GROWTH * trained

    def _train(self, count: int) -> None:
        """Train a new IVF-SQ8 index on a random sample of the log and fill it from the log;
        then save it."""
        faiss = _faiss()
        cells = ivf_cells(count)
        log.info("training the dense IVF index", vectors=count, cells=cells)
        train = self._sample(SAMPLES_PER_CELL * cells)
        cells = min(cells, max(1, len(train) // 39))  # k-means wants >= 39 points a cell
        dimension = int(train.shape[1])
        self._index = None  # the old index's memory goes before the new one fills
        quantizer = faiss.IndexFlatIP(dimension)
        index = faiss.IndexIVFScalarQuantizer(
            quantizer, dimension, cells, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
        )
        index.cp.niter = 10
        index.cp.max_points_per_centroid = SAMPLES_PER_CELL
        index.train(train)
        del train
        self._index, self._through = index, 0
        self._direct_map()
        for keys, _, vectors in self._log_rows(0):
            self._add(keys, vectors)
        with self._conn:
            self._conn.execute(
                "INSERT OR REPLACE INTO meta VALUES ('trained_on', ?)", (str(count),)
            )
        self._unsaved = 1
        self._save()

    def _sample(self, n: int) -> NDArray[np.float32]:
        """Up to ``n`` log vectors drawn at random (seeded), float32 ``(m, d)``: keys drawn
        uniformly up to the highest, so no period in the import order (a file sorted by
        journal, synthetic copies in turn) shows in the sample as a stride would make it."""
        (top,) = self._conn.execute("SELECT max(key) FROM vectors").fetchone()
        rng = np.random.default_rng(0)
        wanted = rng.choice(int(top), size=min(int(top), n + n // 4), replace=False) + 1
        rows: list[NDArray[np.float16]] = []
        sql = "SELECT vector FROM vectors WHERE key IN ({marks})"
        for (blob,) in rows_in(self._conn, sql, [int(k) for k in wanted]):
            rows.append(np.frombuffer(blob, dtype=np.float16))
            if len(rows) >= n:
                break
        return np.stack(rows[:n]).astype(np.float32)

    def _add(self, keys: NDArray[np.int64], vectors: NDArray[np.float32]) -> None:
        if self._index is None:
            self._index = self._new_exact(int(vectors.shape[1]))
        self._index.add_with_ids(np.ascontiguousarray(vectors), keys)
        self._through = max(self._through, int(keys.max()))

    def _remove_keys(self, keys: Sequence[int]) -> None:
        """Remove ``keys`` from the index: through the IVF's hash table (which takes an
        ``IDSelectorArray`` only), or by one pass over the exact index (``IDSelectorBatch``)."""
        if self._index is not None and keys:
            faiss = _faiss()
            array = np.asarray(keys, dtype=np.int64)
            if self._is_ivf():
                self._index.remove_ids(faiss.IDSelectorArray(len(array), faiss.swig_ptr(array)))
            else:
                self._index.remove_ids(faiss.IDSelectorBatch(array))

    def _meta(self, key: str) -> str | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _after_write(self, changed: int) -> None:
        self._unsaved += changed
        size = int(self._index.ntotal) if self._index is not None else 0
        if self._needs_training(size):
            self._train(size)
        elif self._unsaved >= max(SAVE_EVERY, size // 4):
            self._save()

    # ----------------------------------------------------------------------- the interface

    def count(self) -> int:
        """Number of stored vectors (the log's rows)."""
        (n,) = self._conn.execute("SELECT count(*) FROM vectors").fetchone()
        return int(n)

    def _keys_of(self, ids: Sequence[str]) -> list[int]:
        sql = "SELECT key FROM vectors WHERE id IN ({marks})"
        return [int(k) for (k,) in rows_in(self._conn, sql, ids)]

    def upsert(self, pmids: Sequence[str], vectors: NDArray[np.float32]) -> None:
        """Store one vector per id (replacing any vector already stored under that id; of an
        id given twice, the last vector), unit-normalised and rounded to float16: logged in
        one transaction, then added to the index.

        Raises:
            ValueError: ``vectors`` is not ``(len(pmids), d)``, or ``d`` is not the index's.
        """
        if vectors.ndim != 2 or vectors.shape[0] != len(pmids):
            raise ValueError(f"expected {len(pmids)} vectors, got shape {vectors.shape}")
        if not len(pmids):
            return
        if self._index is not None and vectors.shape[1] != self._index.d:
            raise ValueError(f"expected {self._index.d}-dimensional vectors")
        last = {pmid: i for i, pmid in enumerate(pmids)}
        order = list(last.values())
        unit = np.asarray(vectors[order], dtype=np.float32)
        norms = np.linalg.norm(unit, axis=1, keepdims=True)
        unit = (unit / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        ids = list(last)
        with self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            old = self._keys_of(ids)
            self._log_removal(old)
            row = self._conn.execute(
                "SELECT seq FROM sqlite_sequence WHERE name = 'vectors'"
            ).fetchone()
            first = (int(row[0]) if row else 0) + 1
            half = unit.astype(np.float16)
            self._conn.executemany(
                "INSERT INTO vectors (key, id, vector) VALUES (?, ?, ?)",
                ((first + i, pmid, half[i].tobytes()) for i, pmid in enumerate(ids)),
            )
        self._remove_keys(old)
        self._catch_up_to(first - 1)
        # the log's float16 values, so this index equals one rebuilt from the log
        self._add(np.arange(first, first + len(ids), dtype=np.int64), half.astype(np.float32))
        self._after_write(len(ids) + len(old))

    def _log_removal(self, keys: list[int]) -> None:
        """Inside the caller's transaction: delete the log rows of ``keys`` and note them."""
        self._conn.executemany("DELETE FROM vectors WHERE key = ?", ((k,) for k in keys))
        self._conn.executemany("INSERT OR IGNORE INTO removed VALUES (?)", ((k,) for k in keys))

    def _catch_up_to(self, key: int) -> None:
        """Add other writers' log rows up to ``key`` (none when this process is the only one)."""
        if key > self._through:
            for keys, _, vectors in self._log_rows(self._through, key):
                self._add(keys, vectors)

    def delete(self, ids: Sequence[str]) -> None:
        """Remove the vectors of ``ids`` (ids not stored are ignored)."""
        if not ids:
            return
        with self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            old = self._keys_of(list(ids))
            self._log_removal(old)
        self._remove_keys(old)
        if old:
            self._after_write(len(old))

    def query(self, vector: NDArray[np.float32], k: int) -> list[tuple[str, float]]:
        """Up to ``k`` ``(id, cosine similarity)`` pairs nearest to ``vector``, best first.

        Under IVF the index's top ``max(REFINE * k, REFINE_MIN)`` (8-bit scores) are re-ranked
        by their float16 vectors from the log, so the order among near neighbours is exact
        (8-bit scores cannot tell apart near-copies whose cosines differ by ~0.002)."""
        self._refresh()
        if self._index is None or k <= 0 or self._index.ntotal == 0:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(query))
        if norm > 0:
            query = query / norm
        total = int(self._index.ntotal)
        want = min(max(REFINE * k, REFINE_MIN) if self._is_ivf() else k + 10, total)
        while True:
            _, keys = self._index.search(query.reshape(1, -1), want)
            found = [int(key) for key in keys[0] if key >= 0]
            hits = self._rescored(found, query)
            if len(hits) >= k or want >= total:
                return hits[:k]
            want = min(2 * want, total)

    def _rescored(self, keys: list[int], query: NDArray[np.float32]) -> list[tuple[str, float]]:
        """``(id, cosine)`` of the log's rows among ``keys`` (a key no longer in the log is
        dropped), best first, by their float16 vectors."""
        ids: list[str] = []
        rows: list[NDArray[np.float16]] = []
        sql = "SELECT id, vector FROM vectors WHERE key IN ({marks})"
        for index_id, blob in rows_in(self._conn, sql, keys):
            ids.append(str(index_id))
            rows.append(np.frombuffer(blob, dtype=np.float16))
        if not ids:
            return []
        scores = np.stack(rows).astype(np.float32) @ query
        order = np.argsort(-scores, kind="stable")
        return [(ids[i], float(scores[i])) for i in order]

    def _refresh(self) -> None:
        """Bring the index up to the log before a query: another process's new vectors are
        added; when they take the log past a training size, the index is read again from the
        newest file (which that process's training wrote) and brought up to the log."""
        (key,) = self._conn.execute("SELECT max(key) FROM vectors").fetchone()
        newest = int(key or 0)
        if newest <= self._through:
            return
        held = int(self._index.ntotal) if self._index is not None else 0
        if self._needs_training(held + newest - self._through):
            self._index, self._through = None, 0
            self._load()
        else:
            self._catch_up_to(newest)

    def stored(self) -> Iterator[tuple[list[str], NDArray[np.float32]]]:
        """Every stored vector from the log, as ``(ids, float32 array (len(ids), d))`` chunks
        of up to 50,000 in the order they were written (an exact search's input, a rebuild)."""
        for _, ids, vectors in self._log_rows(0):
            yield ids, vectors
