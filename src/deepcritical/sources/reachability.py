"""Is each live source reachable from here? The one check of the web app's default sources
(:mod:`deepcritical.ui.source_check`) and of ``deepcritical doctor``.

:func:`api_roots` gives the URL asked per live source: ``Settings.source_base_urls[name]``
when set (a mirror, a stub), else the source's public API root (:data:`PUBLIC_ROOTS`; the web
source's is its search engine), without user, password, query or fragment, so nothing
secret is sent. :func:`probe_reasons` asks them all at once with one ``HEAD`` each
(``seconds`` to answer, no redirects followed, no API key or other header beyond httpx's
own): any HTTP answer below 500 counts as reachable (an API root often answers 404 or 405 to
a bare ``HEAD``), except 407 (a proxy that wants credentials answered, not the source); a
5xx, a connection error or a timeout does not. :func:`probe` is the same as yes/no.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping

import httpx

from deepcritical.config import Settings
from deepcritical.sources.clinicaltrials import DEFAULT_BASE_URL as TRIALS_URL
from deepcritical.sources.europepmc import DEFAULT_BASE_URL as EUROPEPMC_URL
from deepcritical.sources.openalex import DEFAULT_BASE_URL as OPENALEX_URL
from deepcritical.sources.pubmed import DEFAULT_BASE_URL as PUBMED_URL

__all__ = ["PUBLIC_ROOTS", "TIMEOUT", "api_roots", "probe", "probe_reasons"]

TIMEOUT = 2.0
"""Seconds a source's API root has to answer (the web app's check; the doctor allows 5)."""

PUBLIC_ROOTS: dict[str, str] = {
    "pubmed": PUBMED_URL,
    "trials": TRIALS_URL,
    "europepmc": EUROPEPMC_URL,
    "openalex": OPENALEX_URL,
    "web": "https://duckduckgo.com",  # the ddgs library searches DuckDuckGo first
}
"""Live source -> its public API root (the web source's: its search engine)."""


def _bare(url: str) -> str | None:
    """``url`` without user, password, query and fragment (nothing secret is sent), or
    ``None`` when it is not an http(s) URL."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return None
    if parsed.scheme not in {"http", "https"} or not parsed.host:
        return None
    bare = httpx.URL(scheme=parsed.scheme, host=parsed.host, port=parsed.port, path=parsed.path)
    return str(bare)


def api_roots(settings: Settings, names: Collection[str] | None = None) -> dict[str, str]:
    """Live source -> the URL the check asks, for each of ``names`` (default: every live
    source of :data:`PUBLIC_ROOTS`; ``local`` and unknown names are left out):
    ``settings.source_base_urls[name]`` when set, else its public root; credentials, query
    and fragment removed, and a URL that is not http(s) left out. A web source with a ddgs
    API server is asked there."""
    roots: dict[str, str] = {}
    for name, public in PUBLIC_ROOTS.items():
        if names is not None and name not in names:
            continue
        bare = _bare(settings.source_base_urls.get(name, public))
        if bare is not None:
            roots[name] = bare
    return roots


async def _problem(client: httpx.AsyncClient, url: str, seconds: float) -> str | None:
    try:
        response = await asyncio.wait_for(client.head(url), seconds + 0.5)
    except (httpx.HTTPError, TimeoutError, OSError) as exc:
        return f"{type(exc).__name__} for {url}"
    if response.status_code >= 500 or response.status_code == 407:
        return f"HTTP {response.status_code} from {url}"
    return None


async def probe_reasons(
    roots: Mapping[str, str],
    *,
    seconds: float = TIMEOUT,
    transport: httpx.AsyncBaseTransport | None = None,
) -> dict[str, str | None]:
    """``name -> None`` (reachable) or why not (the error type or HTTP status and the URL,
    never a response body), for each ``name -> url`` of ``roots`` (URLs from
    :func:`api_roots`), asked at once. Never raises."""
    if not roots:
        return {}
    async with httpx.AsyncClient(
        timeout=seconds, follow_redirects=False, transport=transport
    ) as client:
        answers = await asyncio.gather(*(_problem(client, url, seconds) for url in roots.values()))
    return dict(zip(roots, answers, strict=True))


async def probe(
    roots: Mapping[str, str],
    *,
    seconds: float = TIMEOUT,
    transport: httpx.AsyncBaseTransport | None = None,
) -> dict[str, bool]:
    """``name -> reachable`` for each ``name -> url`` of ``roots`` (see
    :func:`probe_reasons`). Never raises."""
    reasons = await probe_reasons(roots, seconds=seconds, transport=transport)
    return {name: reason is None for name, reason in reasons.items()}
