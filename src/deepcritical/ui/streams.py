"""Closing event streams: a consumer that stops early (Stop button, an error, the ``done``
event) must close the run's generator so the run releases what it opened."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TypeVar

T = TypeVar("T")


@asynccontextmanager
async def closing(events: AsyncIterator[T]) -> AsyncIterator[AsyncIterator[T]]:
    """``async with closing(stream) as s``: yields ``stream``; on exit awaits its
    ``aclose()`` when it has one (async generators do), also on cancellation."""
    try:
        yield events
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()
