"""Search sources that fail on purpose, for tests of how a run survives them."""

from __future__ import annotations

import asyncio

from deepcritical.models import Evidence, SearchFilters
from deepcritical.sources.base import SourceError

__all__ = ["FailingSource", "HangingSource"]


class FailingSource:
    """A source whose every search raises :class:`~deepcritical.sources.base.SourceError`
    (``name``: the source named in the error; ``reason``: its message, as the HTTP client
    writes one after its retries)."""

    def __init__(self, name: str = "broken", reason: str = "HTTP 503 after 3 tries") -> None:
        self.name = name
        self.reason = reason
        self.calls = 0

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        """Raises :class:`~deepcritical.sources.base.SourceError` (counted in ``calls``)."""
        self.calls += 1
        raise SourceError(self.name, self.reason)


class HangingSource:
    """A source that answers nothing for ``seconds`` (then no evidence), so a run must stop
    it by its time budget or by cancellation; ``cancelled`` counts the searches cancelled."""

    def __init__(self, name: str = "slow", seconds: float = 3600.0) -> None:
        self.name = name
        self.seconds = seconds
        self.cancelled = 0

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        """Sleeps ``seconds`` and returns ``[]``; re-raises a cancellation after counting it."""
        try:
            await asyncio.sleep(self.seconds)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return []
