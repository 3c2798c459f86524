"""Private by default: without sign-in each browser is its own owner of runs, through a
signed visitor cookie (:mod:`deepcritical.ui.visitor`); ``DEEPCRITICAL_SHARED_HISTORY=1``
keeps the shared history of a single-user install."""

from __future__ import annotations

import logging
import stat
from pathlib import Path
from typing import Any

import gradio as gr
import httpx
import pytest
from itsdangerous import Signer
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from deepcritical.ui.app import PRIVATE_HISTORY_NOTE, SHARED_HISTORY_NOTE, history_mode_md
from deepcritical.ui.auth import Access, SignInRequired
from deepcritical.ui.downloads import DownloadShelf
from deepcritical.ui.launch import SHARED_HISTORY_WARNING, launch
from deepcritical.ui.visitor import (
    KEY_FILE,
    VISITOR_COOKIE,
    VisitorMiddleware,
    load_visitor_key,
    visitor_id,
)

KEY = b"k" * 32


async def whoami(request: Request) -> JSONResponse:
    """What a handler behind the middleware sees: the visitor of its request's cookie."""
    return JSONResponse({"visitor": visitor_id(request, KEY)})


def client() -> httpx.AsyncClient:
    app = Starlette(
        routes=[Route("/", whoami)], middleware=[Middleware(VisitorMiddleware, key=KEY)]
    )
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://app")


async def test_a_new_browser_gets_a_signed_cookie_its_first_request_already_carries() -> None:
    async with client() as http:
        first = await http.get("/")
        visitor = first.json()["visitor"]
        assert visitor  # the handler of the very first request knows its visitor
        cookie = first.headers["set-cookie"]
        assert cookie.startswith(f"{VISITOR_COOKIE}=")
        assert "HttpOnly" in cookie
        assert "SameSite=Lax" in cookie
        assert "Secure" not in cookie  # plain HTTP
        again = await http.get("/")  # the client sends the cookie back
        assert again.json()["visitor"] == visitor
        assert "set-cookie" not in again.headers


async def test_a_forged_or_edited_cookie_is_a_new_visitor() -> None:
    async with client() as http:
        mine = (await http.get("/")).json()["visitor"]
    async with client() as other:
        for forged in (mine, f"{mine}.notasignature", "x" * 40):
            other.cookies.set(VISITOR_COOKIE, forged)
            seen = (await other.get("/")).json()["visitor"]
            assert seen not in (None, mine)
            other.cookies.clear()


async def test_two_browsers_are_two_visitors_and_https_cookies_are_secure() -> None:
    async with client() as a, client() as b:
        va = (await a.get("/")).json()["visitor"]
        vb = (await b.get("/", headers={"x-forwarded-proto": "https"})).json()["visitor"]
        assert va != vb
    async with client() as c:
        response = await c.get("/", headers={"x-forwarded-proto": "https"})
        assert "Secure" in response.headers["set-cookie"]


def test_the_key_is_kept_in_the_data_directory_or_taken_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DEEPCRITICAL_UI_VISITOR_SECRET", raising=False)
    key = load_visitor_key(tmp_path / "data")
    assert len(key) == 32
    path = tmp_path / "data" / KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_visitor_key(tmp_path / "data") == key  # the same after a restart
    monkeypatch.setenv("DEEPCRITICAL_UI_VISITOR_SECRET", "operator-secret")
    assert load_visitor_key(tmp_path / "data") == b"operator-secret"


def test_private_by_default_and_shared_on_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)  # no .env of the checkout
    for name in ("DEEPCRITICAL_UI_AUTH", "DEEPCRITICAL_UI_AUTH_FILE", "SPACE_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("DEEPCRITICAL_SHARED_HISTORY", raising=False)
    private = Access.from_env(tmp_path)
    assert private.private
    assert history_mode_md(private) == PRIVATE_HISTORY_NOTE
    key = private.visitor_key
    assert key is not None
    signed = Signer(key, salt="deepcritical.visitor")
    request = gr.Request(cookies={VISITOR_COOKIE: signed.sign("v1").decode()})
    assert private.owner(request, None) == "anon:v1"
    with pytest.raises(SignInRequired, match="allow cookies"):
        private.owner(gr.Request(cookies={VISITOR_COOKIE: "v1.forged"}), None)
    with pytest.raises(SignInRequired):
        private.owner(None, None)

    demo = FakeBlocks()
    with caplog.at_level(logging.WARNING, logger="deepcritical.ui.launch"):
        launch(demo, access=private, downloads=DownloadShelf(tmp_path))  # type: ignore[arg-type]
    assert SHARED_HISTORY_WARNING not in caplog.text
    middleware = demo.launched[0]["app_kwargs"]["middleware"]
    assert VisitorMiddleware in [m.cls for m in middleware]

    monkeypatch.setenv("DEEPCRITICAL_SHARED_HISTORY", "1")
    shared = Access.from_env(tmp_path)
    assert not shared.private
    assert shared.owner(request, None) is None  # the local user, the CLI's runs included
    assert history_mode_md(shared) == SHARED_HISTORY_NOTE


class FakeBlocks:
    """Records the keyword arguments of ``launch``."""

    def __init__(self) -> None:
        self.launched: list[dict[str, Any]] = []

    def launch(self, **kwargs: Any) -> None:
        self.launched.append(kwargs)
