"""The web app's security headers without a server: the frame-ancestors setting (self-hosted,
Space, operator's list, malformed values) and the middleware on plain, streamed, error and
WebSocket traffic of a small Starlette app (in process)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route, WebSocketRoute
from starlette.testclient import TestClient
from starlette.websockets import WebSocket

from deepcritical.ui.headers import (
    FRAME_ANCESTORS_VARIABLE,
    SPACE_FRAME_ANCESTORS,
    content_security_policy,
    frame_ancestors_from_env,
    parse_frame_ancestors,
    security_headers,
    security_middleware,
)


def directives(policy: str) -> dict[str, list[str]]:
    """``{directive: [sources]}`` of a Content-Security-Policy value."""
    out: dict[str, list[str]] = {}
    for part in policy.split(";"):
        name, *sources = part.split()
        assert name not in out, f"{name} given twice"
        out[name] = sources
    return out


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("none", ("'none'",)),
        ("'self'", ("'self'",)),
        ("self, https://huggingface.co/", ("'self'", "https://huggingface.co")),
        ("https://*.Example.org:8443 http://localhost:7860", ("https://*.example.org:8443", "http://localhost:7860")),
    ],
)  # fmt: skip
def test_frame_ancestors_are_parsed(value: str, expected: tuple[str, ...]) -> None:
    assert parse_frame_ancestors(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        " , ",
        "https://evil.example; script-src *",  # no second directive smuggled in
        "https://x.example/path",
        "javascript:alert(1)",
        "ftp://files.example",
        "*",
        "none self",
        "https://x.example\r\nSet-Cookie: a=b",
    ],
)
def test_malformed_frame_ancestors_are_refused(value: str) -> None:
    with pytest.raises(ValueError, match=FRAME_ANCESTORS_VARIABLE):
        parse_frame_ancestors(value)


def test_frame_ancestors_default_to_none_self_hosted_and_to_the_hub_on_a_space() -> None:
    assert frame_ancestors_from_env({}) == ("'none'",)
    assert frame_ancestors_from_env({FRAME_ANCESTORS_VARIABLE: "  "}) == ("'none'",)
    assert frame_ancestors_from_env({"SPACE_ID": "org/deepcritical"}) == SPACE_FRAME_ANCESTORS
    assert SPACE_FRAME_ANCESTORS == ("'self'", "https://huggingface.co")
    operator = {"SPACE_ID": "org/deepcritical", FRAME_ANCESTORS_VARIABLE: "https://lab.example"}
    assert frame_ancestors_from_env(operator) == ("https://lab.example",)


def test_the_policy_allows_only_the_app_and_what_gradio_needs() -> None:
    policy = directives(content_security_policy(("'none'",)))
    assert policy["default-src"] == ["'self'"]
    assert policy["script-src"] == ["'self'", "'unsafe-inline'", "'unsafe-eval'"]
    assert policy["connect-src"] == ["'self'"]
    assert policy["img-src"] == ["'self'", "data:", "blob:"]
    assert policy["font-src"] == ["'self'", "data:"]
    assert policy["object-src"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"]
    for sources in policy.values():  # no wildcard and no other host anywhere
        assert not [s for s in sources if s == "*" or s.startswith(("http:", "https:"))]


@pytest.mark.parametrize(
    ("ancestors", "frame_option"),
    [(("'none'",), "DENY"), (("'self'",), "SAMEORIGIN"), (SPACE_FRAME_ANCESTORS, None)],
)
def test_x_frame_options_follows_the_ancestors(
    ancestors: tuple[str, ...], frame_option: str | None
) -> None:
    headers = dict(security_headers(ancestors))
    assert headers.get("X-Frame-Options") == frame_option
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "no-referrer"
    frame = directives(headers["Content-Security-Policy"])["frame-ancestors"]
    assert frame == list(ancestors)


async def _chunks() -> AsyncIterator[bytes]:
    for n in range(3):
        yield f"data: {n}\n\n".encode()


def small_app(environ: dict[str, str]) -> Starlette:
    async def page(_: Request) -> Response:
        return PlainTextResponse("page", headers={"X-Frame-Options": "ALLOWALL"})

    async def events(_: Request) -> Response:
        return StreamingResponse(_chunks(), media_type="text/event-stream")

    async def socket(ws: WebSocket) -> None:
        await ws.accept()
        await ws.send_text("hello")
        await ws.close()

    return Starlette(
        routes=[Route("/", page), Route("/events", events), WebSocketRoute("/ws", socket)],
        middleware=[security_middleware(environ)],
    )


def test_the_middleware_sets_the_headers_on_every_http_response() -> None:
    with TestClient(small_app({})) as client:
        page = client.get("/")
        stream = client.get("/events")
        missing = client.get("/nowhere")
        with client.websocket_connect("/ws") as ws:
            assert ws.receive_text() == "hello"
    assert page.text == "page"
    assert stream.text == "data: 0\n\ndata: 1\n\ndata: 2\n\n"
    assert missing.status_code == 404
    for response in (page, stream, missing):
        assert response.headers["X-Frame-Options"] == "DENY"  # the app's own value replaced
        assert response.headers.get_list("X-Frame-Options") == ["DENY"]
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert response.headers["Referrer-Policy"] == "no-referrer"
        policy = directives(response.headers["Content-Security-Policy"])
        assert policy["frame-ancestors"] == ["'none'"]


def test_on_a_space_the_hub_may_frame_the_app_and_be_asked() -> None:
    with TestClient(small_app({"SPACE_ID": "org/deepcritical"})) as client:
        response = client.get("/")
    assert "X-Frame-Options" not in response.headers
    policy = directives(response.headers["Content-Security-Policy"])
    assert policy["frame-ancestors"] == ["'self'", "https://huggingface.co"]
    assert policy["connect-src"] == ["'self'", "https://huggingface.co"]


def test_a_malformed_setting_stops_the_start() -> None:
    with pytest.raises(ValueError, match="not none, self or an origin"):
        security_middleware({FRAME_ANCESTORS_VARIABLE: "https://x.example/; script-src *"})
