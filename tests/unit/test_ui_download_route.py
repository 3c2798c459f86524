"""Download files are served to the owner of their run only (issue 30, item 5), in each
sign-in mode, over HTTP (an ASGI app with the route's middleware, through httpx): the owner
gets the file as an attachment; another visitor, another user, a forged cookie, a signed-out
caller, an unknown token or a path outside the file's directory get 404."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from itsdangerous import Signer
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from deepcritical.ui.auth import Access
from deepcritical.ui.download_route import DownloadRoute
from deepcritical.ui.downloads import DownloadShelf, downloads_html
from deepcritical.ui.visitor import VISITOR_COOKIE, VisitorMiddleware

KEY = b"k" * 32


def write_report(directory: Path) -> list[Path]:
    directory.mkdir(parents=True)
    page = directory / "review.html"
    page.write_text("<script>window.x = 1</script><h1>Review</h1>", encoding="utf-8")
    notes = directory / "review.md"
    notes.write_text("# Review\n", encoding="utf-8")
    return [notes, page]


class FakeSession:
    """Puts ``scope["session"]`` as Gradio's SessionMiddleware would (the caller's OAuth
    info from the ``session`` header of the test request)."""

    def __init__(self, app: ASGIApp, sessions: dict[str, dict[str, Any]]) -> None:
        self.app = app
        self.sessions = sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            named = dict(scope["headers"]).get(b"x-test-session", b"").decode()
            scope = {**scope, "session": dict(self.sessions.get(named, {}))}
        await self.app(scope, receive, send)


def app_with(access: Access, shelf: DownloadShelf, *outer: Middleware) -> Starlette:
    """Gradio's app as far as the route sees it: its own routes behind the middleware."""
    app = Starlette(
        routes=[Route("/", lambda request: PlainTextResponse("page"))],
        middleware=[*outer, Middleware(DownloadRoute, shelf=shelf, access=access)],
    )
    app.cookie_id = "cid"  # type: ignore[attr-defined]  # Gradio's App has both
    app.tokens = {"tok-alice": "alice", "tok-bob": "bob"}  # type: ignore[attr-defined]
    return app


@pytest.fixture
def shelf(tmp_path: Path) -> DownloadShelf:
    return DownloadShelf(tmp_path / "dl")


def get(
    app: Starlette,
    url: str,
    cookies: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    """``GET url`` from a client holding ``cookies`` (as a browser does)."""
    transport = httpx.ASGITransport(app=app)

    async def fetch() -> httpx.Response:
        async with httpx.AsyncClient(
            transport=transport, base_url="http://app", cookies=cookies
        ) as client:
            return await client.get(url, headers=headers)

    return asyncio.run(fetch())


def visitor(value: str) -> dict[str, str]:
    return {VISITOR_COOKIE: Signer(KEY, salt="deepcritical.visitor").sign(value).decode()}


def test_anonymous_visitors_fetch_only_their_own_files(shelf: DownloadShelf) -> None:
    access = Access(visitor_key=KEY)
    paths = shelf.shelve("anon:v1", write_report)
    app = app_with(access, shelf, Middleware(VisitorMiddleware, key=KEY))
    page, notes = "/" + shelf.url(paths[1]), "/" + shelf.url(paths[0])
    mine = get(app, page, cookies=visitor("v1"))
    assert mine.status_code == 200
    assert mine.text.startswith("<script>")  # the file as written...
    assert mine.headers["content-disposition"].startswith("attachment")  # ...never a page
    assert mine.headers["content-security-policy"] == "sandbox"
    assert mine.headers["x-content-type-options"] == "nosniff"
    assert get(app, notes, cookies=visitor("v1")).text == "# Review\n"
    for cookies in (visitor("v2"), {VISITOR_COOKIE: "v1.forged"}, {}):
        refused = get(app, page, cookies=cookies)
        assert refused.status_code == 404, cookies
        assert "Review" not in refused.text
    token = paths[0].parent.name
    for url in (
        f"/dc/download/{token}/..%2F..%2Fsecret.txt",
        f"/dc/download/{token}/missing.md",
        "/dc/download/AAAAAAAAAAAAAAAAAAAAAA/review.md",
        "/dc/download/short/review.md",
    ):
        assert get(app, url, cookies=visitor("v1")).status_code == 404, url
    assert get(app, "/", cookies=visitor("v1")).text == "page"  # other routes pass on


def test_a_signed_in_users_urls_are_404_to_another_user(shelf: DownloadShelf) -> None:
    access = Access("password", {"alice": SecretStr("a"), "bob": SecretStr("b")})
    url = "/" + shelf.url(shelf.shelve("user:alice", write_report)[0])
    app = app_with(access, shelf)
    assert get(app, url, cookies={"access-token-cid": "tok-alice"}).status_code == 200
    assert get(app, url, cookies={"access-token-unsecure-cid": "tok-alice"}).status_code == 200
    assert get(app, url, cookies={"access-token-cid": "tok-bob"}).status_code == 404
    assert get(app, url, cookies={"access-token-cid": "tok-forged"}).status_code == 404
    assert get(app, url).status_code == 404


def test_hugging_face_users_are_read_from_the_signed_session(shelf: DownloadShelf) -> None:
    later, earlier = time.time() + 3600, time.time() - 10
    sessions = {
        "alice": {"oauth_info": {"userinfo": {"preferred_username": "alice"}, "expires_at": later}},
        "bob": {"oauth_info": {"userinfo": {"preferred_username": "bob"}, "expires_at": later}},
        "expired": {
            "oauth_info": {"userinfo": {"preferred_username": "alice"}, "expires_at": earlier}
        },
    }
    url = "/" + shelf.url(shelf.shelve("hf:alice", write_report)[0])
    app = app_with(Access("huggingface"), shelf, Middleware(FakeSession, sessions=sessions))
    assert get(app, url, headers={"x-test-session": "alice"}).status_code == 200
    for who in ("bob", "expired", "nobody"):
        assert get(app, url, headers={"x-test-session": who}).status_code == 404, who


def test_a_shared_history_shares_its_files(shelf: DownloadShelf) -> None:
    url = "/" + shelf.url(shelf.shelve(None, write_report)[0])
    app = app_with(Access(), shelf)
    assert get(app, url).status_code == 200
    # a file of a signed-in owner is no one's in a shared history
    other = "/" + shelf.url(shelf.shelve("anon:v1", write_report)[0])
    assert get(app, other).status_code == 404


def test_the_downloads_tab_labels_each_link_by_format(shelf: DownloadShelf) -> None:
    paths = shelf.shelve(None, write_report)
    shown = downloads_html(shelf, paths)
    assert '>Markdown (.md)</a> <span class="dc-download-name">review.md</span>' in shown
    assert f'href="{shelf.url(paths[1])}" download="review.html"' in shown
    with pytest.raises(ValueError, match="not on the download shelf"):
        shelf.url(Path("/etc/passwd"))
