"""The paging loop of search APIs that hand out a next-page token (a cursor).

Europe PMC (``cursorMark`` / ``nextCursorMark``) and ClinicalTrials.gov (``pageToken`` /
``nextPageToken``) page the same way: ask with a token, get a page and the next token, stop
when there is none. OpenAlex pages by number and stops on other signals, so it has its own loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from deepcritical.models import Evidence

__all__ = ["collect_token_pages", "page_token"]

T = TypeVar("T")


def page_token(value: object) -> str | None:
    """A next-page token read from a reply: ``value`` when it is a non-empty string, else None
    (no further page)."""
    return value if isinstance(value, str) and value else None


async def collect_token_pages(
    fetch_page: Callable[[T], Awaitable[tuple[list[Evidence], T | None]]],
    limit: int,
    first_token: T,
) -> list[Evidence]:
    """Evidence from successive pages, in page order, at most ``limit`` items.

    Args:
        fetch_page: ``await fetch_page(token)`` -> ``(items, next_token)``; ``next_token`` is
            ``None`` (or empty) on the last page. Errors it raises propagate unchanged.
        limit: how many items to collect; pages are fetched while fewer are held.
        first_token: the token of the first page (``"*"`` for Europe PMC, ``None`` for
            ClinicalTrials.gov, whose first request carries no token).

    Returns:
        Items of all pages fetched, cut to ``limit``; an item whose ``citation.id`` came on an
        earlier page is left out. Fetching stops when ``limit`` items are held, a page has no
        next token or repeats the one it was asked with (Europe PMC's end signal), or a page
        brings nothing new (a guard against an API that pages forever).
    """
    items: list[Evidence] = []
    seen: set[str] = set()
    token = first_token
    while len(items) < limit:
        page, next_token = await fetch_page(token)
        new = [e for e in page if e.citation.id not in seen]
        seen.update(e.citation.id for e in new)
        items.extend(new)
        if not next_token or next_token == token or not new:
            break
        token = next_token
    return items[:limit]
