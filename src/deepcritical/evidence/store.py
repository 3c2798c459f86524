"""The run's evidence store: every document collected, deduplicated, embedded, in memory.

One store per run: create it with the run and let it go with the run; there is
no module-level instance. Items get run-local ids ``E1``, ``E2``, ... in insertion order; ids are
never reused and items are never removed.

Deduplication on :meth:`EvidenceStore.add`:

1. **Identifiers**. An incoming item sharing any identifier key
   (:func:`~deepcritical.evidence.identifiers.identifier_keys`: PMID, DOI, PMCID, NCT ID, URL)
   with a stored item, or with an earlier item of the same batch, is folded into it with
   :func:`~deepcritical.evidence.identifiers.merge_evidence`. Items with no identifier at all
   get a ``hash:`` key from their normalised title and content.
2. **Near duplicates by embedding**. Only the items that survive step 1 are
   compared, against the stored items and against earlier new items of the same batch; stored
   items are never compared with each other. Cosine similarity ``>= near_duplicate_threshold``
   folds the new item into the most similar one, unless the two carry different values of the
   same authority identifier (two PMIDs, two DOIs, two PMCIDs or two NCT IDs: two records
   the authorities keep apart, e.g. two title-only "Erratum" notices).

Stored citations carry canonical identifiers
(:func:`~deepcritical.evidence.identifiers.canonical_citation`: a PubMed native id fills
``pmid``, a doi.org URL fills ``doi``, DOIs are lower-cased) and, when they have no title, the
title derived from the stored content (``Citation.derived_title``, by
:func:`~deepcritical.evidence.titles.with_derived_title`, renewed whenever an item is stored,
merged or updated). The derived title is display data: keys and embeddings never read it.

Embeddings: ``title + "\\n" + content``, cut to :data:`EMBED_MAX_CHARS` characters, embedded in
one batch per :meth:`~EvidenceStore.add`; rows are L2-normalised so cosine similarity is a dot
product. An item whose embedded text changes through a merge or :meth:`~EvidenceStore.update`
is re-embedded.

The store is safe to call from several threads (one re-entrant lock); methods return the stored
:class:`~deepcritical.models.Evidence` objects themselves, not copies: after changing a stored
item's identifiers, title or content, call :meth:`~EvidenceStore.update` so the key index and
the embedding follow.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from deepcritical.evidence.embeddings import Embedder
from deepcritical.evidence.identifiers import (
    canonical_citation,
    identifier_keys,
    merge_evidence,
    normalize_doi,
    normalize_nct,
    normalize_pmcid,
    normalize_pmid,
    normalize_url,
    strong_identifiers,
)
from deepcritical.evidence.mmr import mmr, unit_rows
from deepcritical.evidence.titles import with_derived_title
from deepcritical.models import Citation, Evidence

__all__ = ["EMBED_MAX_CHARS", "AddResult", "EvidenceStore", "embedding_text"]

EMBED_MAX_CHARS = 2000
"""Characters of ``title + "\\n" + content`` that are embedded."""

_WORDS = re.compile(r"\w+")


def embedding_text(evidence: Evidence) -> str:
    """The text embedded for ``evidence``: title, newline, content; at most 2000 characters."""
    title = evidence.citation.title.strip()
    content = evidence.content.strip()
    text = f"{title}\n{content}" if title and content else (title or content)
    return text[:EMBED_MAX_CHARS]


def _content_key(evidence: Evidence) -> str:
    """``hash:<hex>`` of the normalised title + content (for items with no identifier)."""
    words = _WORDS.findall(f"{evidence.citation.title} {evidence.content}".casefold())
    basis = " ".join(words) or f"{evidence.citation.source}:{evidence.citation.id}"
    return "hash:" + hashlib.sha256(basis.encode("utf-8")).hexdigest()[:24]


def _keys(evidence: Evidence) -> list[str]:
    return identifier_keys(evidence.citation) or [_content_key(evidence)]


def _conflict(a: Citation, b: Citation) -> bool:
    """True when both citations carry a different value of the same authority identifier."""
    ia, ib = strong_identifiers(a), strong_identifiers(b)
    return any(ia[kind] != ib[kind] for kind in ia.keys() & ib.keys())


@dataclass
class AddResult:
    """What :meth:`EvidenceStore.add` did with a batch.

    Attributes:
        added: the new stored items, ids assigned (``E<n>``), in insertion order.
        merged: ids of items that absorbed at least one identifier duplicate (an item stored
            before the call, or one added earlier in the same batch), each once, in order of
            first absorption.
        near_duplicates: ids of items that absorbed at least one near duplicate by embedding
            (same conventions as ``merged``).
        identifier_copies: incoming items folded into another record by a shared identifier
            (one stored before the call or one of the same batch).
        near_duplicate_copies: incoming items folded into another record as near duplicates.

    Every incoming item is counted once: ``len(items) == len(added) + identifier_copies +
    near_duplicate_copies``.
    """

    added: list[Evidence] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    near_duplicates: list[str] = field(default_factory=list)
    identifier_copies: int = 0
    near_duplicate_copies: int = 0

    @property
    def added_ids(self) -> list[str]:
        """Ids of :attr:`added`, in order."""
        return [e.id for e in self.added]


def _append_once(ids: list[str], evidence_id: str) -> None:
    if evidence_id not in ids:
        ids.append(evidence_id)


@dataclass
class _Pending:
    """A group of incoming items of one batch that share identifier keys (no id yet)."""

    evidence: Evidence
    keys: list[str]
    absorbed_identifier_dup: bool = False
    alive: bool = True


class EvidenceStore:
    """In-memory evidence store of one run: dedup, ids, embeddings, search, diverse selection.

    Args:
        embedder: turns texts into L2-normalised float32 vectors (``(n, d)``).
        near_duplicate_threshold: cosine similarity in ``(0, 1]`` at or above which a new item
            is a near duplicate of an existing one.

    Raises:
        ValueError: ``near_duplicate_threshold`` outside ``(0, 1]``.
    """

    def __init__(self, embedder: Embedder, near_duplicate_threshold: float = 0.97) -> None:
        if not 0.0 < near_duplicate_threshold <= 1.0:
            raise ValueError(
                f"near_duplicate_threshold must be in (0, 1], got {near_duplicate_threshold!r}"
            )
        self._embedder = embedder
        self.near_duplicate_threshold = near_duplicate_threshold
        self._lock = threading.RLock()
        self._items: dict[str, Evidence] = {}  # insertion order == row order of _matrix
        self._row: dict[str, int] = {}  # evidence id -> row of _matrix
        self._texts: dict[str, str] = {}  # evidence id -> embedded text
        self._key_index: dict[str, str] = {}  # identifier key -> evidence id
        self._matrix: NDArray[np.float32] | None = None  # (capacity, d); rows [0, len) used
        self._next_number = 1

    # ------------------------------------------------------------------ container protocol
    @property
    def embedder(self) -> Embedder:
        """The embedder of this store (the run's; also used by the report's grounding)."""
        return self._embedder

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, evidence_id: object) -> bool:
        return isinstance(evidence_id, str) and evidence_id in self._items

    def __iter__(self) -> Iterator[Evidence]:
        """Iterate over a snapshot of the stored items, in insertion order."""
        return iter(self.all())

    def ids(self) -> list[str]:
        """Evidence ids in insertion order."""
        with self._lock:
            return list(self._items)

    def all(self) -> list[Evidence]:
        """Every stored item, in insertion order."""
        with self._lock:
            return list(self._items.values())

    def get(self, evidence_id: str) -> Evidence | None:
        """The stored item with this id, or ``None``."""
        with self._lock:
            return self._items.get(evidence_id)

    def require(self, evidence_id: str) -> Evidence:
        """The stored item with this id.

        Raises:
            KeyError: no such id in this run's store.
        """
        with self._lock:
            item = self._items.get(evidence_id)
            if item is None:
                raise KeyError(
                    f"evidence id {evidence_id!r} is not in this run's evidence store "
                    f"({len(self._items)} items)"
                )
            return item

    def find_by_identifier(self, key_or_citation: str | Citation) -> Evidence | None:
        """The stored item matching an identifier, or ``None``.

        Args:
            key_or_citation: a key (``"pmid:123"``, ``"doi:10.1/x"``, ``"pmcid:PMC1"``,
                ``"nct:NCT01234567"``, ``"url:https://..."``, ``"hash:..."``; the value is
                normalised, so ``"doi:https://doi.org/10.1/X"`` works), or a citation whose keys
                are tried in priority order. Keys of records merged into an item keep finding it.
        """
        if isinstance(key_or_citation, Citation):
            keys = identifier_keys(key_or_citation)
        else:
            keys = [_normalise_key(key_or_citation)]
        with self._lock:
            for key in keys:
                evidence_id = self._key_index.get(key)
                if evidence_id is not None:
                    return self._items[evidence_id]
        return None

    # ------------------------------------------------------------------ adding
    def add(self, items: Sequence[Evidence]) -> AddResult:
        """Add a batch of items, deduplicating by identifier and then by embedding.

        The incoming objects are not modified: the store keeps copies, with ids ``E<n>``
        assigned in order (whatever ``id`` they came with). Re-adding items already stored adds
        nothing (they are identifier duplicates). See the module docstring for the rules.

        Returns:
            :class:`AddResult` with the new items and the ids of items that absorbed duplicates.

        Raises:
            ValueError: the embedder returned an array of the wrong shape.
        """
        result = AddResult()
        with self._lock:
            dirty: set[str] = set()  # ids whose embedded text may have changed
            pending: list[_Pending] = []
            batch_index: dict[str, int] = {}  # key -> index into pending
            for incoming in items:
                self._absorb_by_identifier(incoming, pending, batch_index, dirty, result)
            self._add_survivors([p for p in pending if p.alive], dirty, result)
            self._reembed(dirty)
            # items that absorbed later items of the batch were replaced by merged copies
            result.added = [self._items[e.id] for e in result.added]
        return result

    def _absorb_by_identifier(
        self,
        incoming: Evidence,
        pending: list[_Pending],
        batch_index: dict[str, int],
        dirty: set[str],
        result: AddResult,
    ) -> None:
        keys = _keys(incoming)
        stored_id = next((self._key_index[k] for k in keys if k in self._key_index), None)
        batch_hits = sorted({batch_index[k] for k in keys if k in batch_index})
        if stored_id is not None:
            # Fold the incoming item, and any pending group it bridges to, into the stored one.
            target = self._items[stored_id]
            absorbed = list(keys)
            bridged = sum(pending[idx].alive for idx in batch_hits)
            for idx in batch_hits:
                target = merge_evidence(target, pending[idx].evidence)
                absorbed.extend(pending[idx].keys)
                pending[idx].alive = False
            self._replace(merge_evidence(target, incoming), absorbed)
            dirty.add(stored_id)
            _append_once(result.merged, stored_id)
            result.identifier_copies += 1 + bridged  # the item and the batch groups it bridges
            return
        if batch_hits:
            first, *others = batch_hits
            entry = pending[first]
            result.identifier_copies += 1 + sum(pending[idx].alive for idx in others)
            for idx in others:
                entry.evidence = merge_evidence(entry.evidence, pending[idx].evidence)
                entry.keys.extend(pending[idx].keys)
                pending[idx].alive = False
            entry.evidence = merge_evidence(entry.evidence, incoming)
            entry.keys.extend(keys)
            entry.absorbed_identifier_dup = True
        else:
            copy = incoming.model_copy(deep=True)
            copy.citation = canonical_citation(copy.citation)
            entry = _Pending(copy, list(keys))
            pending.append(entry)
            first = len(pending) - 1
        entry.keys = list(dict.fromkeys([*entry.keys, *_keys(entry.evidence)]))
        for key in entry.keys:
            batch_index[key] = first

    def _add_survivors(self, survivors: list[_Pending], dirty: set[str], result: AddResult) -> None:
        if not survivors:
            return
        texts = [embedding_text(p.evidence) for p in survivors]
        vectors = self._embed(texts)
        for entry, text, vector in zip(survivors, texts, vectors, strict=True):
            absorber = self._near_duplicate_of(entry.evidence, vector)
            if absorber is not None:
                self._replace(merge_evidence(self._items[absorber], entry.evidence), entry.keys)
                dirty.add(absorber)
                _append_once(result.near_duplicates, absorber)
                result.near_duplicate_copies += 1
                continue
            evidence = with_derived_title(entry.evidence)
            evidence.id = f"E{self._next_number}"
            self._next_number += 1
            self._items[evidence.id] = evidence
            self._texts[evidence.id] = text
            self._append_row(evidence.id, vector)
            self._index_keys(evidence.id, entry.keys)
            result.added.append(evidence)
            if entry.absorbed_identifier_dup:
                _append_once(result.merged, evidence.id)

    def _near_duplicate_of(self, evidence: Evidence, vector: NDArray[np.float32]) -> str | None:
        """Id of the most similar existing item at or above the threshold, or ``None``.

        ``vector`` (one NEW item) is compared with every row: the items stored before this
        batch and the new items accepted so far in it. Stored items are never compared with
        each other. An item with a conflicting authority identifier is skipped.
        """
        rows = self._rows_matrix()
        if rows.shape[0] == 0:
            return None
        sims = rows @ vector
        ids = list(self._items)
        for row in np.argsort(-sims, kind="stable"):
            if sims[row] < self.near_duplicate_threshold:
                break
            candidate = ids[int(row)]
            if not _conflict(self._items[candidate].citation, evidence.citation):
                return candidate
        return None

    # ------------------------------------------------------------------ updating
    def update(self, evidence: Evidence) -> None:
        """Replace the stored item with ``evidence.id`` by ``evidence`` (e.g. new checklist keys).

        The store keeps ``evidence`` itself (not a copy). New identifiers are indexed (a key
        already owned by another item stays with that item; keys are never removed, so old
        spellings keep finding the item); the item is re-embedded when its title or content
        changed.

        Raises:
            KeyError: ``evidence.id`` is not in the store.
        """
        with self._lock:
            self.require(evidence.id)
            self._replace(evidence)
            self._reembed({evidence.id})

    def _replace(self, evidence: Evidence, extra_keys: Sequence[str] = ()) -> None:
        """Store ``evidence`` under its id (its derived title renewed) and index its keys (no
        re-embedding)."""
        self._items[evidence.id] = with_derived_title(evidence)
        self._index_keys(evidence.id, [*_keys(evidence), *extra_keys])

    def _index_keys(self, evidence_id: str, keys: Sequence[str]) -> None:
        for key in keys:
            self._key_index.setdefault(key, evidence_id)

    # ------------------------------------------------------------------ embeddings
    def _embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        vectors = np.asarray(self._embedder.embed(list(texts)), dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise ValueError(
                f"embedder returned shape {vectors.shape} for {len(texts)} texts; "
                "expected (n, dimension)"
            )
        return unit_rows(vectors)

    def _append_row(self, evidence_id: str, vector: NDArray[np.float32]) -> None:
        row = len(self._row)
        if self._matrix is None:
            self._matrix = np.zeros((64, vector.shape[0]), dtype=np.float32)
        elif vector.shape[0] != self._matrix.shape[1]:
            raise ValueError(
                f"embedding dimension changed from {self._matrix.shape[1]} to {vector.shape[0]}"
            )
        if row >= self._matrix.shape[0]:
            grown = np.zeros((self._matrix.shape[0] * 2, self._matrix.shape[1]), np.float32)
            grown[:row] = self._matrix[:row]
            self._matrix = grown
        self._matrix[row] = vector
        self._row[evidence_id] = row

    def _rows_matrix(self) -> NDArray[np.float32]:
        """View of the used rows, ``(len, d)``; ``(0, 0)`` before the first embedding."""
        if self._matrix is None:
            return np.zeros((0, 0), dtype=np.float32)
        return self._matrix[: len(self._row)]

    def _matrix_rows(self, ids: Sequence[str]) -> NDArray[np.float32]:
        """Copy of the rows of ``ids`` (all known), ``(len(ids), d)``."""
        if self._matrix is None:
            return np.zeros((0, self._dimension()), dtype=np.float32)
        return self._matrix[[self._row[i] for i in ids]]

    def _reembed(self, ids: set[str]) -> None:
        changed = [
            i for i in self._items if i in ids and embedding_text(self._items[i]) != self._texts[i]
        ]
        if not changed:
            return
        texts = [embedding_text(self._items[i]) for i in changed]
        vectors = self._embed(texts)
        if self._matrix is None:  # pragma: no cover - changed ids always have rows
            return
        for evidence_id, text, vector in zip(changed, texts, vectors, strict=True):
            self._matrix[self._row[evidence_id]] = vector
            self._texts[evidence_id] = text

    def _dimension(self) -> int:
        if self._matrix is not None:
            return int(self._matrix.shape[1])
        return int(self._embedder.dimension)

    def embeddings(self, ids: Sequence[str] | None = None) -> NDArray[np.float32]:
        """Embeddings as a new float32 array ``(len(ids), d)``, rows in the order of ``ids``.

        Args:
            ids: evidence ids (default: every item, in insertion order).

        Raises:
            KeyError: an id is not in the store.
        """
        with self._lock:
            wanted = list(self._items) if ids is None else list(ids)
            for evidence_id in wanted:
                self.require(evidence_id)
            if not wanted:
                return np.zeros((0, self._dimension()), dtype=np.float32)
            return np.array(self._matrix_rows(wanted), dtype=np.float32)

    def _query_vector(self, text: str) -> NDArray[np.float32]:
        vector: NDArray[np.float32] = self._embed([text])[0]
        return vector

    # ------------------------------------------------------------------ retrieval
    def search(self, query: str, k: int) -> list[tuple[Evidence, float]]:
        """The ``k`` items most similar to ``query``: ``(evidence, cosine)``, best first.

        Cosine similarity is in ``[-1, 1]``; ties keep insertion order. ``k <= 0`` or an empty
        store gives ``[]``.
        """
        if k <= 0 or not self._items:
            return []
        query_vector = self._query_vector(query)  # outside the lock: the model is slow
        with self._lock:
            ids = list(self._items)
            sims = self._rows_matrix() @ query_vector
            order = np.argsort(-sims, kind="stable")[:k]
            return [(self._items[ids[i]], float(sims[i])) for i in order]

    def select_diverse(
        self,
        query: str,
        k: int,
        lambda_: float = 0.7,
        candidate_ids: Sequence[str] | None = None,
    ) -> list[Evidence]:
        """Up to ``k`` items relevant to ``query`` and unlike each other (MMR), in pick order.

        Args:
            query: text the items should be relevant to.
            k: how many items; all candidates when ``k`` exceeds them, ``[]`` when ``k <= 0``.
            lambda_: relevance/diversity trade-off in ``[0, 1]`` (1 = pure relevance).
            candidate_ids: ids to choose from (default: the whole store); repeats ignored.

        Raises:
            ValueError: ``lambda_`` outside ``[0, 1]``.
            KeyError: a candidate id is not in the store.
        """
        with self._lock:
            ids = list(self._items) if candidate_ids is None else list(dict.fromkeys(candidate_ids))
            for evidence_id in ids:
                self.require(evidence_id)
            if not 0.0 <= lambda_ <= 1.0:
                raise ValueError(f"lambda_ must be in [0, 1], got {lambda_!r}")
            if not ids or k <= 0:
                return []
        query_vector = self._query_vector(query)
        with self._lock:
            picks = mmr(query_vector, self._matrix_rows(ids), k, lambda_)
            return [self._items[ids[i]] for i in picks]

    def similarity(self, text: str, ids: Sequence[str]) -> dict[str, float]:
        """Cosine similarity (``[-1, 1]``) between ``text`` and each item: id -> similarity.

        Raises:
            KeyError: an id is not in the store.
        """
        with self._lock:
            wanted = list(dict.fromkeys(ids))
            for evidence_id in wanted:
                self.require(evidence_id)
            if not wanted:
                return {}
        query_vector = self._query_vector(text)
        with self._lock:
            sims = self._matrix_rows(wanted) @ query_vector
            return {evidence_id: float(s) for evidence_id, s in zip(wanted, sims, strict=True)}


_NORMALISERS: dict[str, Callable[[str], str | None]] = {
    "pmid": normalize_pmid,
    "doi": normalize_doi,
    "pmcid": normalize_pmcid,
    "nct": normalize_nct,
    "url": normalize_url,
}


def _normalise_key(key: str) -> str:
    """``kind:value`` with the value normalised; other keys are returned as given."""
    kind, sep, value = key.strip().partition(":")
    normaliser = _NORMALISERS.get(kind.strip().lower()) if sep else None
    normalised = normaliser(value) if normaliser else None
    return f"{kind.strip().lower()}:{normalised}" if normalised else key.strip()
