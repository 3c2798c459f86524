"""The protocol every search source implements, the error it raises, and the rank-to-relevance
rule the API sources share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from deepcritical.models import Evidence, SearchFilters


class SourceError(Exception):
    """A source could not answer: HTTP failure after retries, timeout, or an unparsable body.

    ``source`` is the :class:`~deepcritical.models.SourceName` value; ``str(err)`` is a short
    human-readable reason, e.g. ``"HTTP 503 after 3 tries"``, shown in run events and in the
    report's methodology. Never contains API keys.
    """

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(reason)
        self.source = source
        self.reason = reason


@runtime_checkable
class SearchSource(Protocol):
    """A search source: ``await source.search(query, limit, filters=...)`` -> up to ``limit``
    evidence items.

    ``name`` is the :class:`~deepcritical.models.SourceName` value. Items come back in the
    source's relevance order with ``relevance`` in 0..1 and ``query`` set to the query.
    ``filters`` (the plan's :class:`~deepcritical.models.SearchFilters`; ``None`` or empty:
    none) is applied in the API's own query or parameters where the API has them; what it
    cannot apply is screened after retrieval by the caller (:meth:`SearchFilters.excludes`).
    Callers pass ``filters`` only when some are set, so a source without the parameter still
    answers unfiltered searches. Implementations raise :class:`SourceError` (never a bare
    httpx/parse error) when they cannot answer; an empty list means "no hits".
    """

    name: str

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        """Search for ``query`` within ``filters``; return at most ``limit`` items."""
        ...


def relevance_from_rank(rank: int, count: int) -> float:
    """Relevance in 0..1 from a 0-based ``rank`` among ``count`` ranked results:
    ``1 - rank / count`` (the first 1.0, the last ``1 / count``)."""
    return 1.0 - rank / count


def rank_in_order(items: Sequence[Evidence], query: str) -> None:
    """Set ``query`` and ``relevance`` (:func:`relevance_from_rank`, by position in ``items``)
    on every item, in place: for sources whose API returns results best first."""
    for rank, item in enumerate(items):
        item.query = query
        item.relevance = relevance_from_rank(rank, len(items))
