"""Polite HTTP for search sources: per-source rate limit, retries with backoff, timeouts, and
the one place where response bodies are decoded as JSON.

One :class:`httpx.AsyncClient` is shared by all sources of a run; each source wraps it in a
:class:`SourceHttp` carrying that source's rate limit (aiolimiter) and retry policy (tenacity).
:meth:`SourceHttp.get_json` (or :func:`decode_json` on a response in hand) turns a body that is
not JSON into a :class:`~deepcritical.sources.base.SourceError` worded by the source;
:func:`json_or_none` peeks at a body that may or may not be JSON.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from aiolimiter import AsyncLimiter
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from deepcritical.sources.base import SourceError
from deepcritical.telemetry.run_metrics import observe_source_request
from deepcritical.telemetry.tracing import span

RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
USER_AGENT = "DeepCritical/0.1 (biomedical research agent; +https://github.com/deepcritical)"
MAX_RETRY_AFTER_SECONDS = 30.0
MAX_BODY_BYTES = 32 * 2**20
"""The largest answer body a source reads (32 MiB; an efetch of 100 PubMed records is about
1 MiB): a bigger one is refused while it streams in, so a misbehaving API or mirror cannot
fill the memory."""
_STALE_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})
BODY_START_BYTES = 80
"""Bytes of a body quoted in an error reason (:func:`body_start`)."""
NOT_JSON = "response is not JSON ({content_type}, HTTP {status}): {start}"
"""The default reason of :func:`decode_json`; a source may word its own (see there)."""


class RetryableHTTPError(Exception):
    """A response whose status is worth retrying (429, 5xx); carries Retry-After in seconds."""

    def __init__(self, response: httpx.Response) -> None:
        super().__init__(f"HTTP {response.status_code}")
        self.status_code = response.status_code
        self.retry_after = parse_retry_after(response.headers.get("Retry-After"))


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (now if now is not None else time.time()))


def new_http_client(timeout_seconds: float = 20.0) -> httpx.AsyncClient:
    """The run's shared client: HTTP keep-alive, redirects followed, our User-Agent."""
    return httpx.AsyncClient(
        timeout=httpx.Timeout(timeout_seconds),
        follow_redirects=True,
        headers={"User-Agent": USER_AGENT},
        limits=httpx.Limits(max_connections=20, max_keepalive_connections=10),
    )


def _is_retryable(exc: BaseException) -> bool:
    return isinstance(
        exc, RetryableHTTPError | TimeoutError | httpx.TimeoutException | httpx.TransportError
    )


class _WaitRetryAfter:
    """Exponential backoff with jitter, but never shorter than the server's Retry-After."""

    def __init__(self, initial: float, maximum: float) -> None:
        self._backoff = wait_exponential_jitter(multiplier=initial, max=maximum, jitter=initial)

    def __call__(self, state: RetryCallState) -> float:
        backoff: float = self._backoff(state)
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, RetryableHTTPError) and exc.retry_after is not None:
            return min(max(backoff, exc.retry_after), MAX_RETRY_AFTER_SECONDS)
        return backoff


def body_start(response: httpx.Response, limit: int = BODY_START_BYTES) -> str:
    """The first ``limit`` bytes of the body for an error reason: UTF-8 decoded (bad bytes
    replaced), whitespace collapsed, quoted with ``repr``; ``"empty body"`` when blank."""
    text = " ".join(response.content[:limit].decode("utf-8", "replace").split())
    return repr(text) if text else "empty body"


def json_or_none(response: httpx.Response) -> Any:
    """The body as JSON when it is a JSON object or array, else None. Never raises.

    For peeking at bodies that may or may not be JSON (an API's error object inside an XML
    or HTTP-error reply): a body not starting with ``{`` or ``[`` is not parsed at all.
    """
    body = response.content.lstrip()
    if not body.startswith((b"{", b"[")):
        return None
    try:
        return json.loads(body)
    except ValueError:  # JSONDecodeError, UnicodeDecodeError
        return None


def decode_json(response: httpx.Response, source: str, reason: str = NOT_JSON) -> Any:
    """The body as JSON (any top-level type: the caller's parser checks the shape).

    Args:
        response: a received response (its body is read).
        source: the source name for the error.
        reason: the error reason, a :meth:`str.format` template with the fields
            ``{content_type}`` (media type without parameters, ``"no content-type"`` when the
            header is missing), ``{status}`` (HTTP status code), ``{start}``
            (:func:`body_start`) and ``{error}`` (the JSON decoder's message).

    Raises:
        SourceError: the body is not JSON (an HTML error page, a body cut short, bytes that
            are not UTF-8); ``reason`` filled in.
    """
    try:
        return json.loads(response.content)
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        content_type = response.headers.get("content-type", "no content-type").split(";")[0]
        raise SourceError(
            source,
            reason.format(
                content_type=content_type,
                status=response.status_code,
                start=body_start(response),
                error=exc,
            ),
        ) from exc


@dataclass(frozen=True)
class HttpOptions:
    """How a source calls its API, the same fields for every source: ``timeout_seconds`` per
    attempt; ``tries`` in all (the first included) for 429/5xx/timeouts/connection errors;
    ``backoff_seconds`` before the first retry (doubling with jitter, capped at 10 s);
    ``requests_per_second``, the rate limit (``None``: the source's own, e.g. NCBI's 3 per
    second without a key and 10 with one); ``max_body_bytes``, the largest body read
    (decoded bytes; a longer one is a :class:`SourceError`, not retried).

    Raises:
        ValueError: ``tries`` below 1, or a timeout, backoff or rate that is not positive.
    """

    timeout_seconds: float = 20.0
    tries: int = 3
    backoff_seconds: float = 0.5
    requests_per_second: float | None = None
    max_body_bytes: int = MAX_BODY_BYTES

    def __post_init__(self) -> None:
        if self.tries < 1:
            raise ValueError("tries must be at least 1")
        if self.timeout_seconds <= 0 or self.backoff_seconds < 0:
            raise ValueError("timeout_seconds must be positive and backoff_seconds not negative")
        if self.requests_per_second is not None and self.requests_per_second <= 0:
            raise ValueError("requests_per_second must be positive")

    def rate(self, default: float) -> float:
        """Requests per second: the one set here, else the source's ``default``."""
        return self.requests_per_second if self.requests_per_second is not None else default


@dataclass
class _Outcome:
    """How a request went: its last status (an HTTP status, ``timeout``, ``connection_error``,
    ``error``) and its tries."""

    status: str = "error"
    tries: int = 0


class SourceHttp:
    """GET requests for one source, rate-limited and retried.

    Args:
        client: the run's shared :class:`httpx.AsyncClient`.
        source: the source name, used in errors.
        options: timeout, tries, backoff, rate limit and body bound (:class:`HttpOptions`).
        default_rate: the source's own rate limit (requests per second), used when
            ``options`` sets none.
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        source: str,
        options: HttpOptions | None = None,
        *,
        default_rate: float = 1.0,
    ) -> None:
        options = options or HttpOptions()
        self.client = client
        self.source = source
        self.timeout_seconds = options.timeout_seconds
        self.tries = options.tries
        self.backoff_seconds = options.backoff_seconds
        self.max_body_bytes = options.max_body_bytes
        self.requests_per_second = options.rate(default_rate)
        # aiolimiter is a leaky bucket: max_rate requests per time_period seconds. A bucket of 1
        # per 1/rate seconds spaces requests evenly (no bursts that trip NCBI's limiter).
        self.limiter = AsyncLimiter(1, 1.0 / self.requests_per_second)
        self.requests_made = 0

    async def get(
        self,
        url: str,
        params: Mapping[str, Any] | None = None,
        *,
        accept: Callable[[httpx.Response], bool] | None = None,
    ) -> httpx.Response:
        """GET ``url`` and return a 2xx response, or an error response for which ``accept``
        returns True (returned at once, unretried: for APIs that put an answer in an error
        body, e.g. "no results" sent as HTTP 500).

        The body is read as it streams in, at most ``max_body_bytes`` of it.

        Raises:
            SourceError: non-retryable status (e.g. 400, 404), a body over
                ``max_body_bytes``, or retries exhausted, or timeouts on every try. The
                message names the last failure and the try count.
        """
        started = time.monotonic()
        outcome = _Outcome()
        attributes = {"deepcritical.source": self.source, "server.address": _host(url)}
        with span("source request", attributes) as current:
            try:
                return await self._get(url, params, accept, outcome)
            finally:
                observe_source_request(self.source, outcome.status, time.monotonic() - started)
                if current is not None:
                    current.set_attributes(
                        {"deepcritical.status": outcome.status, "deepcritical.tries": outcome.tries}
                    )
                    if outcome.status.isdigit():
                        current.set_attribute("http.response.status_code", int(outcome.status))

    async def _get(
        self,
        url: str,
        params: Mapping[str, Any] | None,
        accept: Callable[[httpx.Response], bool] | None,
        outcome: _Outcome,
    ) -> httpx.Response:
        """:meth:`get`'s tries; ``outcome`` holds the last status and the try count."""
        try:
            async for attempt in AsyncRetrying(
                stop=stop_after_attempt(self.tries),
                wait=_WaitRetryAfter(self.backoff_seconds, 10.0),
                retry=retry_if_exception(_is_retryable),
                reraise=True,
            ):
                with attempt:
                    outcome.tries += 1
                    outcome.status = "error"
                    async with self.limiter:
                        self.requests_made += 1
                        response = await asyncio.wait_for(
                            self._fetch(url, params), timeout=self.timeout_seconds
                        )
                    outcome.status = str(response.status_code)
                    if accept is not None and response.status_code >= 400 and accept(response):
                        return response
                    if response.status_code in RETRY_STATUS:
                        raise RetryableHTTPError(response)
                    if response.status_code >= 400:
                        raise SourceError(
                            self.source, f"HTTP {response.status_code} from {_host(url)}"
                        )
                    return response
        except RetryableHTTPError as exc:
            raise SourceError(
                self.source, f"HTTP {exc.status_code} after {outcome.tries} tries"
            ) from exc
        except (TimeoutError, httpx.TimeoutException) as exc:
            outcome.status = "timeout"
            raise SourceError(
                self.source, f"timed out after {self.timeout_seconds:g} s ({outcome.tries} tries)"
            ) from exc
        except httpx.TransportError as exc:
            outcome.status = "connection_error"
            raise SourceError(
                self.source, f"connection failed ({type(exc).__name__}) after {outcome.tries} tries"
            ) from exc
        raise SourceError(self.source, "no attempt was made")  # pragma: no cover

    async def _fetch(self, url: str, params: Mapping[str, Any] | None) -> httpx.Response:
        """GET ``url``; the response with its (decoded) body read, at most
        ``max_body_bytes`` of it.

        Raises:
            SourceError: the body is longer.
            httpx.HTTPError: the request or the body failed (as ``client.get`` raises).
        """
        body = bytearray()
        async with self.client.stream("GET", url, params=params) as streamed:
            async for chunk in streamed.aiter_bytes():
                body += chunk
                if len(body) > self.max_body_bytes:
                    raise SourceError(
                        self.source,
                        f"answer from {_host(url)} is over {self.max_body_bytes:,} bytes",
                    )
        headers = [
            (k, v) for k, v in streamed.headers.multi_items() if k.lower() not in _STALE_HEADERS
        ]
        return httpx.Response(
            streamed.status_code, headers=headers, content=bytes(body), request=streamed.request
        )

    async def get_json(
        self, url: str, params: Mapping[str, Any] | None = None, *, reason: str = NOT_JSON
    ) -> Any:
        """GET ``url`` (:meth:`get`) and return the body decoded as JSON (:func:`decode_json`;
        the top-level type is left to the caller's parser).

        Raises:
            SourceError: everything :meth:`get` raises, or a body that is not JSON (``reason``
                filled in, see :func:`decode_json`; such a body is not retried).
        """
        return decode_json(await self.get(url, params), self.source, reason)


def _host(url: str) -> str:
    return httpx.URL(url).host or url
