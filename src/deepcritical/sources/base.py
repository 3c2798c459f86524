"""The protocol every search source implements, and the error it raises."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from deepcritical.models import Evidence


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
    """A search source: ``await source.search(query, limit)`` -> up to ``limit`` evidence items.

    ``name`` is the :class:`~deepcritical.models.SourceName` value. Items come back in the
    source's relevance order with ``relevance`` in 0..1 and ``query`` set to the query.
    Implementations raise :class:`SourceError` (never a bare httpx/parse error) when they
    cannot answer; an empty list means "no hits".
    """

    name: str

    async def search(self, query: str, limit: int) -> list[Evidence]:
        """Search for ``query``; return at most ``limit`` items."""
        ...
