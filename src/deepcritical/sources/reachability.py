"""Is each live source reachable? (``deepcritical doctor``)

:func:`source_roots` gives the API root a run would call per live source in
``settings.sources`` (``settings.source_base_urls`` or the public root; the web source has a
root only when a ddgs API server is configured); :func:`check_reachable` sends one ``GET`` to
it with a short timeout. Any HTTP answer counts as reachable (an API root often answers 404
or 400 to a bare ``GET``); a connection error or a timeout does not.
"""

from __future__ import annotations

import httpx

from deepcritical.config import Settings, redact_url
from deepcritical.sources.clinicaltrials import DEFAULT_BASE_URL as TRIALS_URL
from deepcritical.sources.europepmc import DEFAULT_BASE_URL as EPMC_URL
from deepcritical.sources.openalex import DEFAULT_BASE_URL as OPENALEX_URL
from deepcritical.sources.pubmed import DEFAULT_BASE_URL as PUBMED_URL

__all__ = ["check_reachable", "source_roots"]

_PUBLIC_ROOTS = {
    "pubmed": PUBMED_URL,
    "trials": TRIALS_URL,
    "europepmc": EPMC_URL,
    "openalex": OPENALEX_URL,
}


def source_roots(settings: Settings) -> dict[str, str | None]:
    """Live source name -> the API root a run would call (``None``: the web source searching
    in process, with no server to reach); ``local`` is left out (see the corpus check)."""
    roots: dict[str, str | None] = {}
    for name in settings.sources:
        if name == "local":
            continue
        roots[name] = settings.source_base_urls.get(name, _PUBLIC_ROOTS.get(name))
    return roots


async def check_reachable(
    client: httpx.AsyncClient, url: str, timeout_seconds: float = 5.0
) -> str | None:
    """``None`` when ``GET url`` gets any HTTP answer within ``timeout_seconds``; else why
    not (the error type and the redacted URL, never a response body)."""
    try:
        await client.get(url, timeout=timeout_seconds)
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__} for {redact_url(url)}"
    return None
