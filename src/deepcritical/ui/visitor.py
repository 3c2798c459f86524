"""Anonymous visitors: without sign-in, each browser is its own owner of runs.

:class:`VisitorMiddleware` (pure ASGI, put on Gradio's FastAPI app by
:func:`deepcritical.ui.launch.launch`) gives every HTTP request a visitor: the id in its
``dc_visitor`` cookie when the cookie's signature (``itsdangerous``, HMAC-SHA1 over the id with
the server's key) holds, else a new random id (128 bits, ``secrets.token_urlsafe``), which the
request then carries as if the browser had sent it and the response sets as an ``HttpOnly``,
``SameSite=Lax`` cookie for a year (``Secure`` behind HTTPS). A forged or edited cookie is
not honoured: its request gets a new id, so it sees none of the runs of the id it claimed.

:func:`visitor_id` reads the id back from a Gradio request (the queue's requests carry the
browser's cookies); :meth:`deepcritical.ui.auth.Access.owner` makes it the owner
``anon:<id>``. An API client that keeps no cookies is a new visitor on every call: its runs
are its own and no one else's.

The key: ``DEEPCRITICAL_UI_VISITOR_SECRET`` when set, else 32 random bytes kept in
``<data dir>/ui-visitor.key`` (created with mode 0600), so visitors keep their history across
restarts. Anyone holding the key could sign any id: it is a secret like a password.
"""

from __future__ import annotations

import os
import secrets
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any

from itsdangerous import BadSignature, Signer
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "KEY_FILE",
    "VISITOR_COOKIE",
    "VisitorMiddleware",
    "load_visitor_key",
    "visitor_id",
]

VISITOR_COOKIE = "dc_visitor"
KEY_FILE = "ui-visitor.key"
KEY_ENV = "DEEPCRITICAL_UI_VISITOR_SECRET"
MAX_AGE_SECONDS = 365 * 24 * 3600
_SALT = "deepcritical.visitor"


def load_visitor_key(data_dir: Path) -> bytes:
    """The server's visitor key: ``DEEPCRITICAL_UI_VISITOR_SECRET`` (UTF-8) when set, else
    the 32 bytes of ``data_dir/ui-visitor.key``, created (mode 0600) on first use.

    Raises:
        OSError: the key file can be neither read nor created.
    """
    secret = os.environ.get(KEY_ENV, "")
    if secret:
        return secret.encode("utf-8")
    path = data_dir / KEY_FILE
    try:
        return path.read_bytes()
    except FileNotFoundError:
        pass
    data_dir.mkdir(parents=True, exist_ok=True)
    key = secrets.token_bytes(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first: use theirs
        return path.read_bytes()
    with os.fdopen(fd, "wb") as handle:
        handle.write(key)
    return key


def _signer(key: bytes) -> Signer:
    return Signer(key, salt=_SALT)


def _verified(value: str | None, key: bytes) -> str | None:
    """The visitor id of a signed cookie ``value``; ``None`` when absent or forged."""
    if not value:
        return None
    try:
        return _signer(key).unsign(value).decode("ascii")
    except (BadSignature, UnicodeDecodeError):
        return None


def visitor_id(request: Any, key: bytes) -> str | None:
    """The visitor id a Gradio request (or any request with ``cookies``) carries in its
    signed ``dc_visitor`` cookie; ``None`` without a valid one."""
    try:
        cookies = dict(request.cookies) if request is not None else {}
    except (AttributeError, TypeError, ValueError):  # no cookies at all
        return None
    value = cookies.get(VISITOR_COOKIE)  # a dict, or Gradio's ``Obj`` made one
    return _verified(value if isinstance(value, str) else None, key)


def _request_cookie(scope: Scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"cookie":
            jar: SimpleCookie = SimpleCookie()
            try:
                jar.load(value.decode("latin-1"))
            except Exception:  # noqa: BLE001 - a malformed Cookie header: no visitor cookie
                return None
            morsel = jar.get(VISITOR_COOKIE)
            if morsel is not None:
                return morsel.value
    return None


class VisitorMiddleware:
    """Pure ASGI middleware giving every HTTP request a signed visitor cookie (see the
    module docstring); WebSocket and lifespan traffic pass through.

    Args:
        app: the wrapped ASGI application.
        key: the server's visitor key (:func:`load_visitor_key`).
    """

    def __init__(self, app: ASGIApp, key: bytes) -> None:
        self.app = app
        self.key = key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve ``scope``, minting a visitor when its request has no valid cookie."""
        if scope["type"] != "http" or _verified(_request_cookie(scope), self.key) is not None:
            await self.app(scope, receive, send)
            return
        value = _signer(self.key).sign(secrets.token_urlsafe(16)).decode("ascii")
        headers = [(k, v) for k, v in scope.get("headers", []) if k != b"cookie"]
        others = [v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"cookie"]
        jar = "; ".join([*others, f"{VISITOR_COOKIE}={value}"])  # the later value wins
        scope = {**scope, "headers": [*headers, (b"cookie", jar.encode("latin-1"))]}
        secure = scope.get("scheme") == "https" or any(
            k == b"x-forwarded-proto" and v == b"https" for k, v in headers
        )
        cookie = (
            f"{VISITOR_COOKIE}={value}; Path=/; Max-Age={MAX_AGE_SECONDS}; HttpOnly; SameSite=Lax"
            + ("; Secure" if secure else "")
        )

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message).append("Set-Cookie", cookie)
            await send(message)

        await self.app(scope, receive, send_with_cookie)
