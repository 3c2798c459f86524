"""Which model endpoints the server's operator configured (and so trusts with the server's keys).

The server's ``openai_compatible_api_key`` may only travel to a base URL its operator chose:
the one in the operator's own ``Settings.llm`` and those in ``Settings.model_base_urls``. A
URL typed by a web visitor is compared with them by :func:`normalise_base_url` (scheme, host,
port and path, as the HTTP client reads them; credentials, query and fragment ignored).
"""

from __future__ import annotations

import httpx

from deepcritical.config import Settings
from deepcritical.llm.providers import ModelSpecError, parse_model_spec

__all__ = ["normalise_base_url", "operator_endpoint", "operator_endpoints"]


def normalise_base_url(url: str) -> str | None:
    """``url`` as ``scheme://host:port/path`` (lower-case scheme and host, explicit port, no
    trailing slash, no credentials, query or fragment), or ``None`` when it does not parse
    as an http(s) URL with a host.

    Parsed by :class:`httpx.URL`, the parser of the HTTP client that sends the request, so
    ``http://a@127.0.0.1:80@evil.com/v1`` normalises to the host httpx would connect to.

    >>> normalise_base_url("HTTP://User:pw@Example.org/v1/?k=1")
    'http://example.org:80/v1'
    """
    try:
        parsed = httpx.URL(url.strip())
        host = parsed.raw_host.decode("ascii").lower().rstrip(".")
    except (httpx.InvalidURL, UnicodeError, TypeError):
        return None
    scheme = parsed.scheme.lower()
    if scheme not in {"http", "https"} or not host:
        return None
    port = parsed.port or (443 if scheme == "https" else 80)
    host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{host}:{port}{parsed.path.rstrip('/')}"


def operator_endpoints(settings: Settings) -> dict[str, str]:
    """The operator's model base URLs: normalised form -> the URL as configured (which may
    carry the operator's credentials). From ``settings.llm`` (when it is an
    ``openai-compatible`` spec) and ``settings.model_base_urls``; unparsable entries are
    skipped. ``settings`` must be the operator's, never a visitor's copy."""
    urls = list(settings.model_base_urls)
    try:
        spec = parse_model_spec(settings.llm)
    except ModelSpecError:
        spec = None
    if spec is not None and spec.base_url:
        urls.insert(0, spec.base_url)
    out: dict[str, str] = {}
    for url in urls:
        key = normalise_base_url(url)
        if key is not None:
            out.setdefault(key, url.rstrip("/"))
    return out


def operator_endpoint(settings: Settings, base_url: str) -> str | None:
    """The operator's configured URL that ``base_url`` names (see :func:`operator_endpoints`),
    or ``None`` when ``base_url`` is not one of the operator's endpoints."""
    key = normalise_base_url(base_url)
    return None if key is None else operator_endpoints(settings).get(key)
