"""SourceHttp: retries with backoff on 429/5xx (honouring Retry-After), timeouts, errors."""

from __future__ import annotations

import asyncio
import gzip
import json
import time
from collections.abc import AsyncIterator

import httpx
import pytest
import respx

from deepcritical.sources.base import SourceError
from deepcritical.sources.http import HttpOptions, SourceHttp, parse_retry_after

URL = "https://api.example.org/search"


def _http(client: httpx.AsyncClient, **kw: float) -> SourceHttp:
    opts: dict[str, float] = {"requests_per_second": 1000.0, "timeout_seconds": 2.0, "tries": 3}
    opts.update(kw)
    return SourceHttp(
        client,
        "pubmed",
        HttpOptions(
            requests_per_second=opts["requests_per_second"],
            timeout_seconds=opts["timeout_seconds"],
            tries=int(opts["tries"]),
            backoff_seconds=0.01,
        ),
    )


def test_parse_retry_after() -> None:
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    http_date = "Wed, 21 Oct 2015 07:28:00 GMT"
    assert parse_retry_after(http_date, now=1445412480.0 - 5) == pytest.approx(5.0)


@respx.mock
async def test_429_then_success_respects_retry_after() -> None:
    route = respx.get(URL).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "0.3"}, json={"error": "rate"}),
            httpx.Response(200, json={"ok": True}),
        ]
    )
    async with httpx.AsyncClient() as client:
        http = _http(client)
        t0 = time.monotonic()
        resp = await http.get(URL, params={"q": "x"})
        waited = time.monotonic() - t0
    assert resp.json() == {"ok": True}
    assert route.call_count == 2
    assert waited >= 0.3


@respx.mock
async def test_persistent_500_gives_source_error_after_all_tries() -> None:
    route = respx.get(URL).mock(return_value=httpx.Response(500, text="boom"))
    async with httpx.AsyncClient() as client:
        with pytest.raises(SourceError, match="HTTP 500 after 3 tries") as info:
            await _http(client).get(URL)
    assert route.call_count == 3
    assert info.value.source == "pubmed"


@respx.mock
async def test_404_is_not_retried() -> None:
    route = respx.get(URL).mock(return_value=httpx.Response(404, text="<html>nf</html>"))
    async with httpx.AsyncClient() as client:
        with pytest.raises(SourceError, match="HTTP 404"):
            await _http(client).get(URL)
    assert route.call_count == 1


@respx.mock
async def test_hanging_endpoint_times_out_within_budget() -> None:
    async def hang(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(30)
        return httpx.Response(200)

    respx.get(URL).mock(side_effect=hang)
    async with httpx.AsyncClient() as client:
        t0 = time.monotonic()
        with pytest.raises(SourceError, match="timed out"):
            await _http(client, timeout_seconds=0.2, tries=2).get(URL)
    assert time.monotonic() - t0 < 2.0


@respx.mock
async def test_rate_limit_spaces_requests() -> None:
    respx.get(URL).mock(return_value=httpx.Response(200, json={}))
    async with httpx.AsyncClient() as client:
        http = _http(client, requests_per_second=10.0)
        t0 = time.monotonic()
        await asyncio.gather(*(http.get(URL) for _ in range(6)))
        elapsed = time.monotonic() - t0
    # 6 requests at 10/s: at least ~5 intervals of 0.1 s (the first goes at once).
    assert elapsed >= 0.45
    assert http.requests_made == 6


@respx.mock
async def test_an_answer_over_the_body_limit_is_refused_while_it_streams_in() -> None:
    """Issue 13: API payloads were read whole, however big."""
    sent: list[int] = []

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(100):  # 100 MiB if it were all read
            sent.append(1)
            yield b"x" * 2**20

    route = respx.get(URL).mock(return_value=httpx.Response(200, content=chunks()))
    async with httpx.AsyncClient() as client:
        http = SourceHttp(
            client, "pubmed", HttpOptions(requests_per_second=1000.0, max_body_bytes=3 * 2**20)
        )
        with pytest.raises(SourceError, match=r"answer from api\.example\.org is over 3,145,728"):
            await http.get(URL)
    assert route.call_count == 1  # not retried
    assert len(sent) <= 5  # the rest was never read


@respx.mock
async def test_a_compressed_answer_is_read_decoded_once() -> None:
    payload = json.dumps({"ok": True, "text": "é" * 1000}).encode()
    respx.get(URL).mock(
        return_value=httpx.Response(
            200,
            content=gzip.compress(payload),
            headers={"Content-Encoding": "gzip", "Content-Type": "application/json"},
        )
    )
    async with httpx.AsyncClient() as client:
        response = await _http(client).get(URL)
    assert response.json() == {"ok": True, "text": "é" * 1000}
    assert response.headers["content-type"] == "application/json"
    assert "content-encoding" not in response.headers
