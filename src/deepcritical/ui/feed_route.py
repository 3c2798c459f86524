"""The Atom feeds of living reviews, served by the web app to their owner only:
:class:`FeedRoute`.

Pure ASGI middleware on Gradio's FastAPI app (put there by
:func:`deepcritical.ui.launch.launch`, beside the download route). It answers ``GET``/
``HEAD`` of

- ``.../dc/feeds/watches.atom``: every watch of the caller, each update an entry;
- ``.../dc/feeds/watch/<watch id>.atom``: one watch of the caller;

and passes every other request on. The caller is identified as for the download files and
the runs (:func:`~deepcritical.ui.download_route.http_owner`: the visitor cookie, the
password sign-in's cookie, the Hugging Face session). A watch that is not the caller's, or
not there, is a 404, the same answer either way; a caller without the credential the
deployment needs gets 404 too. Feeds are built by
:func:`~deepcritical.formats.atom_feed.watches_feed`.
"""

from __future__ import annotations

import asyncio
import re
import threading

from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from deepcritical.config import Settings
from deepcritical.formats.atom_feed import ATOM_MEDIA_TYPE, watches_feed
from deepcritical.state.run_store import RunStore
from deepcritical.state.watch_store import WatchNotFoundError, WatchStore
from deepcritical.ui.auth import Access
from deepcritical.ui.download_route import NO_OWNER, http_owner

__all__ = ["FEED_PATH", "FeedRoute", "watch_feed_path"]

FEED_PATH = "dc/feeds"
_ROUTE = re.compile(rf"/{FEED_PATH}/(?:watches|watch/([0-9a-f]{{6,32}}))\.atom$")


def watch_feed_path(watch_id: str | None = None) -> str:
    """The path (no leading slash) of one watch's feed, or of all the caller's watches."""
    return f"{FEED_PATH}/watch/{watch_id}.atom" if watch_id else f"{FEED_PATH}/watches.atom"


class FeedRoute:
    """Pure ASGI middleware serving the feeds of the watches in ``settings``' run database
    to their owners (module docstring).

    Args:
        app: the wrapped ASGI application.
        settings: where the run database is (opened at the first feed asked for).
        access: the deployment's sign-in (the one the app was built with).
    """

    def __init__(self, app: ASGIApp, settings: Settings, access: Access) -> None:
        self.app = app
        self.settings = settings
        self.access = access
        self._runs: RunStore | None = None
        self._lock = threading.Lock()

    def _store(self) -> WatchStore:
        with self._lock:
            if self._runs is None:
                self._runs = RunStore.open(self.settings)
            return WatchStore(self._runs)

    def _feed(self, owner: str | None, watch_id: str | None, url: str) -> bytes | None:
        """The feed's bytes, or ``None`` when ``owner`` has no such watch."""
        watches = self._store()
        try:
            chosen = (
                [watches.require(watch_id, owner=owner)]
                if watch_id
                else watches.list_watches(owner=owner)
            )
        except WatchNotFoundError:
            return None
        items = [(w, watches.updates(w.id, owner=owner)) for w in chosen]
        title = (
            f"DeepCritical living review: {chosen[0].question}"
            if watch_id
            else "DeepCritical living reviews"
        )
        return watches_feed(items, title=title, feed_key=watch_id or f"owner:{owner}", self_url=url)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a feed request, or pass ``scope`` on."""
        match = _ROUTE.search(scope.get("path", "")) if scope["type"] == "http" else None
        if match is None:
            await self.app(scope, receive, send)
            return
        if scope.get("method") not in {"GET", "HEAD"}:
            await PlainTextResponse("Method not allowed", 405)(scope, receive, send)
            return
        owner = http_owner(self.access, scope)
        body = None
        if owner is not NO_OWNER:
            url = str(scope.get("path", ""))
            body = await asyncio.to_thread(self._feed, owner, match.group(1), url)
        if body is None:
            await PlainTextResponse("Not found", 404)(scope, receive, send)
            return
        response = Response(
            body,
            media_type=ATOM_MEDIA_TYPE,
            headers={"Cache-Control": "private, no-store", "X-Content-Type-Options": "nosniff"},
        )
        await response(scope, receive, send)
