"""Every source's items bounded before the run (and its call cache) keeps them.

A record of 50 MB in the local corpus (imported before the import had a size limit) was kept
whole by the evidence store, copied into the run database once per search call by the call
cache, split into sentences and embedded by several steps: minutes and gigabytes for one
record. Even a record at the import limit (200,000 characters) costs the extractive steps
about a minute. :class:`BoundedSource` wraps a source so that what it returns holds at most
``Settings.max_evidence_chars`` characters (default 20,000) of content and of title, without
control characters, whatever the source (a corpus, an API payload, a mirror) sent.
"""

from __future__ import annotations

from collections.abc import Sequence

from deepcritical.models import Evidence, SearchFilters
from deepcritical.sources.base import SearchSource
from deepcritical.text.control import strip_control_chars
from deepcritical.text.truncation import cut_at_boundary

__all__ = ["BoundedSource", "bound_evidence", "bound_sources"]


def bound_evidence(item: Evidence, max_chars: int) -> Evidence:
    """``item`` with control characters removed from its content and title
    (:func:`~deepcritical.text.control.strip_control_chars`) and each of them cut to at most
    ``max_chars`` characters at a sentence or word boundary
    (:func:`~deepcritical.text.truncation.cut_at_boundary`: a verbatim prefix). The same
    object when nothing changes; never raises."""
    content = cut_at_boundary(strip_control_chars(item.content), max_chars)
    title = cut_at_boundary(strip_control_chars(item.citation.title), max_chars)
    if content == item.content and title == item.citation.title:
        return item
    citation = item.citation.model_copy(update={"title": title})
    return item.model_copy(update={"content": content, "citation": citation})


class BoundedSource:
    """``inner``, with every item it returns passed through :func:`bound_evidence`.

    ``name`` is ``inner``'s; errors are ``inner``'s (:class:`~deepcritical.sources.base.
    SourceError`).
    """

    def __init__(self, inner: SearchSource, max_chars: int) -> None:
        self.inner = inner
        self.name = inner.name
        self.max_chars = max_chars

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        """``inner.search(query, limit, filters=filters)`` (``filters`` passed on only when
        some are set), each item bounded."""
        if filters is None or filters.is_empty():
            items = await self.inner.search(query, limit)
        else:
            items = await self.inner.search(query, limit, filters=filters)
        return [bound_evidence(e, self.max_chars) for e in items]


def bound_sources(sources: Sequence[SearchSource], max_chars: int) -> list[SearchSource]:
    """Each of ``sources`` wrapped in a :class:`BoundedSource` of ``max_chars``."""
    return [BoundedSource(source, max_chars) for source in sources]
