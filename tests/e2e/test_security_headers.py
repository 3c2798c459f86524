"""The running app (``deepcritical serve`` on 127.0.0.1) sends the security headers on the
page, on ``/gradio_api/...`` answers (API info, upload check, the MCP endpoint) and on the
static assets the page loads (self-hosted defaults: no framing at all)."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.e2e.conftest import AppServer

pytestmark = pytest.mark.slow

ASSET = re.compile(r"""(?:src|href)="\.?/?(assets/[^"]+\.(?:js|css))\"""")


def check_headers(response: httpx.Response) -> None:
    where = f"{response.request.method} {response.request.url.path} ({response.status_code})"
    headers = response.headers
    assert headers.get("X-Content-Type-Options") == "nosniff", where
    assert headers.get("Referrer-Policy") == "no-referrer", where
    assert headers.get_list("X-Frame-Options") == ["DENY"], where
    policy = headers.get("Content-Security-Policy", "")
    assert "frame-ancestors 'none'" in policy, where
    assert "default-src 'self'" in policy, where
    assert "object-src 'none'" in policy, where


def test_every_kind_of_response_carries_the_security_headers(app_server: AppServer) -> None:
    with httpx.Client(base_url=app_server.url, timeout=30.0) as client:
        page = client.get("/")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        check_headers(page)
        assets = ASSET.findall(page.text)
        assert assets, page.text[:2000]
        for path in assets[:3]:
            asset = client.get("/" + path)
            assert asset.status_code == 200, path
            check_headers(asset)
        for path in ("/gradio_api/info", "/config", "/gradio_api/mcp/schema"):
            answer = client.get(path)
            assert answer.status_code == 200, path
            check_headers(answer)
        check_headers(client.get("/gradio_api/no-such-route"))
