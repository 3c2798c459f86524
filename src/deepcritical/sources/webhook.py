"""A living review's webhook: each update's change summary POSTed as JSON to the URL its
owner gave (:func:`post_webhook`, :func:`update_payload`).

The URL is checked by the SSRF guard (:mod:`deepcritical.sources.netguard`) when it is set
(:func:`check_webhook_url`: no private, loopback or local host, http(s) only) and again,
with its name resolved, before every delivery; redirects are not followed (a redirect could
lead to a private address). The payload holds the change summary only: question, update
number, outcome, the records named, the verdict; never a key, a setting or the URL itself. A
webhook URL may embed a token (Slack-style), so it is never logged: messages show it
redacted (:func:`deepcritical.config.redact_url`, host and path only).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from deepcritical.logs import get_logger
from deepcritical.models import Watch, WatchUpdate
from deepcritical.sources.http import USER_AGENT
from deepcritical.sources.netguard import UnsafeURLError, check_public_url, check_public_url_async

__all__ = [
    "WEBHOOK_TIMEOUT_SECONDS",
    "WebhookError",
    "WebhookGuard",
    "check_webhook_url",
    "post_webhook",
    "shown_url",
    "update_payload",
]

log = get_logger(__name__)

WEBHOOK_TIMEOUT_SECONDS = 10.0
WebhookGuard = Callable[[str], Awaitable[None]]
"""``await guard(url)`` raises :class:`UnsafeURLError` for a URL that must not be called
(default: :func:`~deepcritical.sources.netguard.check_public_url_async`; tests allow their
own loopback receiver)."""


class WebhookError(Exception):
    """A webhook delivery failed (connection refused, timeout...)."""


def shown_url(url: str) -> str:
    """``url`` as it may be shown: scheme, host, port and the first path segment, the rest
    (tokens) replaced by ``...``."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return "(an unparsable URL)"
    port = f":{parsed.port}" if parsed.port else ""
    first = parsed.path.strip("/").split("/", 1)[0]
    rest = "/..." if parsed.path.strip("/").count("/") or parsed.query else ""
    return f"{parsed.scheme}://{parsed.host}{port}/{first}{rest}"


def check_webhook_url(url: str) -> str:
    """``url`` stripped, when it may be a webhook (http or https, a host that may be public:
    no DNS lookup here; deliveries check again).

    Raises:
        UnsafeURLError: an unparsable or non-http(s) URL, or a private, loopback, link-local
            or local host (its message shows the URL redacted).
    """
    url = url.strip()
    try:
        check_public_url(url)
    except UnsafeURLError as exc:
        raise UnsafeURLError(shown_url(url), exc.reason) from None
    return url


def update_payload(watch: Watch, update: WatchUpdate) -> dict[str, Any]:
    """The JSON a webhook receives for ``update`` of ``watch`` (no secret, no setting)."""
    change = update.change
    return {
        "event": "watch.update",
        "watch_id": watch.id,
        "question": watch.question,
        "update": update.number,
        "outcome": update.outcome,
        "version": update.version,
        "summary": update.summary,
        "finished_at": update.finished_at.isoformat(),
        "since": change.since.isoformat() if change else None,
        "until": change.until.isoformat() if change else None,
        "new_included": [r.model_dump() for r in change.new_included] if change else [],
        "removed": [r.model_dump() for r in change.removed] if change else [],
        "corrected": [r.model_dump() for r in change.corrected] if change else [],
        "verdict": {
            "before": change.verdict_before if change else None,
            "after": change.verdict_after if change else None,
            "certainty_before": change.certainty_before if change else None,
            "certainty_after": change.certainty_after if change else None,
        },
    }


async def post_webhook(
    url: str,
    payload: dict[str, Any],
    *,
    guard: WebhookGuard | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    timeout_seconds: float = WEBHOOK_TIMEOUT_SECONDS,
) -> int:
    """POST ``payload`` as JSON to ``url`` once the guard allows it; the HTTP status.

    Raises:
        UnsafeURLError: the guard refused the URL (nothing was sent).
        WebhookError: the request failed (connection, timeout); the message never holds the
            URL's path or query.
    """
    check = guard or check_public_url_async
    try:
        await check(url)
    except UnsafeURLError as exc:
        raise UnsafeURLError(shown_url(url), exc.reason) from None
    async with httpx.AsyncClient(
        timeout=httpx.Timeout(timeout_seconds),
        follow_redirects=False,
        headers={"User-Agent": USER_AGENT},
        transport=transport,
    ) as client:
        try:
            response = await client.post(url, json=payload)
        except httpx.HTTPError as exc:
            raise WebhookError(f"webhook {shown_url(url)} failed: {type(exc).__name__}") from None
    if response.status_code >= 300:
        log.warning("webhook answered", url=shown_url(url), status=response.status_code)
    return response.status_code
