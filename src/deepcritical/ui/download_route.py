"""The route serving the download shelf (:class:`~deepcritical.ui.downloads.DownloadShelf`) to
the owner of each file only.

:class:`DownloadRoute` is pure ASGI middleware on Gradio's FastAPI app (put there by
:func:`deepcritical.ui.launch.launch`, inside the visitor cookie's middleware). It answers
``GET``/``HEAD`` of ``.../dc/download/<token>/<file name>`` itself and passes every other
request on. The caller is identified as :meth:`deepcritical.ui.auth.Access.owner` identifies
the caller of an event, from the same credentials, read off the HTTP request:

- no sign-in, private history: the signed ``dc_visitor`` cookie (``anon:<id>``);
- no sign-in, shared history: everyone is the local user;
- passwords: Gradio's login cookie (``access-token-<cookie id>``), looked up in the Gradio
  app's own table of signed-in users (``user:<name>``);
- Hugging Face: the ``oauth_info`` Gradio's OAuth keeps in the signed session
  (``hf:<username>``).

A file that is not the caller's, or not there, is a 404 (the same answer whether it exists
for another owner or not at all). A file is sent as an attachment, with ``nosniff`` and a
``sandbox`` CSP, so that an HTML report cannot run as a page of the app's origin.
"""

from __future__ import annotations

import re
import time
from types import SimpleNamespace
from typing import Any
from urllib.parse import unquote

from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from deepcritical.ui.auth import Access, SignInRequired
from deepcritical.ui.downloads import DOWNLOAD_PATH, DownloadShelf, download_suffix
from deepcritical.ui.visitor import visitor_id

__all__ = ["NO_OWNER", "DownloadRoute", "http_owner"]

_ROUTE = re.compile(rf"/{DOWNLOAD_PATH}/([^/]+)/([^/]+)$")
_NOT_YOURS = object()
""":func:`http_owner`'s answer for a request that carries no owner the deployment accepts."""
NO_OWNER = _NOT_YOURS
"""The same, for the other routes that serve an owner's data (the watches' feeds)."""

MEDIA_TYPES = {
    ".md": "text/markdown; charset=utf-8",
    ".json": "application/json",
    ".csl.json": "application/json",
    ".html": "text/html; charset=utf-8",
    ".ris": "application/x-research-info-systems",
    ".bib": "application/x-bibtex",
}


def http_owner(access: Access, scope: Scope) -> Any:
    """The owner of the caller of the HTTP request ``scope``, named by
    :meth:`~deepcritical.ui.auth.Access.owner_of` from the credential the sign-in uses (module
    docstring), or :data:`_NOT_YOURS` when it carries none the deployment accepts (no cookie,
    signed out, a forged cookie, an expired session)."""
    try:
        return access.owner_of(_credential(access, scope))
    except SignInRequired:
        return _NOT_YOURS


def _credential(access: Access, scope: Scope) -> str | None:
    """The visitor id, password user or Hugging Face username the request ``scope``
    carries under ``access``'s sign-in; ``None`` without one."""
    cookies = Request(scope).cookies
    if access.mode == "none":
        key = access.visitor_key
        return visitor_id(SimpleNamespace(cookies=cookies), key) if key is not None else None
    if access.mode == "password":
        app = scope.get("app")
        cookie_id = getattr(app, "cookie_id", None)
        tokens = getattr(app, "tokens", None)
        if cookie_id is None or not isinstance(tokens, dict):
            return None
        token = cookies.get(f"access-token-{cookie_id}") or cookies.get(
            f"access-token-unsecure-{cookie_id}"
        )
        name = tokens.get(token) if token else None
        return name if isinstance(name, str) else None
    session = scope.get("session")
    info = session.get("oauth_info") if isinstance(session, dict) else None
    if not isinstance(info, dict):
        return None
    expires_at = info.get("expires_at")
    if isinstance(expires_at, int | float) and expires_at < time.time():
        return None
    userinfo = info.get("userinfo")
    name = userinfo.get("preferred_username") if isinstance(userinfo, dict) else None
    return name if isinstance(name, str) else None


class DownloadRoute:
    """Pure ASGI middleware serving ``shelf``'s files to their owners (module docstring).

    Args:
        app: the wrapped ASGI application.
        shelf: the download shelf the app writes to.
        access: the deployment's sign-in (the one the app was built with).
    """

    def __init__(self, app: ASGIApp, shelf: DownloadShelf, access: Access) -> None:
        self.app = app
        self.shelf = shelf
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a download request, or pass ``scope`` on."""
        match = _ROUTE.search(scope.get("path", "")) if scope["type"] == "http" else None
        if match is None:
            await self.app(scope, receive, send)
            return
        if scope.get("method") not in {"GET", "HEAD"}:
            await PlainTextResponse("Method not allowed", 405)(scope, receive, send)
            return
        owner = http_owner(self.access, scope)
        token, name = match.group(1), unquote(match.group(2))
        path = None if owner is _NOT_YOURS else self.shelf.find(token, name, owner)
        if path is None:
            await PlainTextResponse("Not found", 404)(scope, receive, send)
            return
        response = FileResponse(
            path,
            media_type=MEDIA_TYPES.get(download_suffix(path), "text/plain; charset=utf-8"),
            filename=path.name,
            headers={
                "Cache-Control": "private, no-store",
                "X-Content-Type-Options": "nosniff",
                "Content-Security-Policy": "sandbox",
            },
        )
        await response(scope, receive, send)
