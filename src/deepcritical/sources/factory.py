"""Builds the search sources, the full-text fetcher and the citation graph a run uses from its
settings (one shared HTTP client)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx

from deepcritical.config import Settings
from deepcritical.evidence.embeddings import Embedder
from deepcritical.sources.base import SearchSource
from deepcritical.sources.bounded import bound_sources
from deepcritical.sources.citation_graph import CitationGraph
from deepcritical.sources.fulltext import FullTextFetcher
from deepcritical.sources.http import HttpOptions

if TYPE_CHECKING:
    from deepcritical.sources.pubmed import PubMedSource


def _http_options(settings: Settings) -> HttpOptions:
    """The HTTP options every API source takes, from :class:`Settings` (each source keeps its
    own rate limit)."""
    return HttpOptions(timeout_seconds=settings.http_timeout_seconds, tries=settings.http_retries)


def _ncbi_key(settings: Settings) -> str | None:
    """The NCBI API key in the clear, for the E-utilities clients only (never logged)."""
    return settings.ncbi_api_key.get_secret_value() if settings.ncbi_api_key else None


def build_sources(
    settings: Settings, client: httpx.AsyncClient, embedder: Embedder
) -> list[SearchSource]:
    """One source object per name in ``settings.sources``, in that order, each wrapped in a
    :class:`~deepcritical.sources.bounded.BoundedSource` (items of at most
    ``settings.max_evidence_chars`` characters of content and title, no control characters).

    Raises:
        deepcritical.corpus.index.CorpusNotFoundError: ``local`` is asked for and the corpus
            directory holds no corpus.
    """
    http = _http_options(settings)
    urls = settings.source_base_urls
    built: list[SearchSource] = []
    for name in settings.sources:
        if name == "local":
            from deepcritical.corpus.embedding import corpus_embedder
            from deepcritical.corpus.index import LocalCorpus
            from deepcritical.sources.local import LocalCorpusSource

            directory = settings.resolved_corpus_dir
            corpus = LocalCorpus.open(
                directory,
                corpus_embedder(settings, directory, embedder),
                server_url=settings.corpus_server_url,
            )
            built.append(LocalCorpusSource(corpus, settings.max_evidence_chars))
        elif name == "pubmed":
            from deepcritical.sources.pubmed import DEFAULT_BASE_URL as PUBMED_URL
            from deepcritical.sources.pubmed import PubMedSource

            built.append(
                PubMedSource(
                    client,
                    api_key=_ncbi_key(settings),
                    email=settings.ncbi_email,
                    tool=settings.ncbi_tool,
                    base_url=urls.get(name, PUBMED_URL),
                    http=http,
                )
            )
        elif name == "trials":
            from deepcritical.sources.clinicaltrials import DEFAULT_BASE_URL as TRIALS_URL
            from deepcritical.sources.clinicaltrials import ClinicalTrialsSource

            built.append(
                ClinicalTrialsSource(client, base_url=urls.get(name, TRIALS_URL), http=http)
            )
        elif name == "europepmc":
            from deepcritical.sources.europepmc import DEFAULT_BASE_URL as EPMC_URL
            from deepcritical.sources.europepmc import EuropePMCSource

            built.append(EuropePMCSource(client, base_url=urls.get(name, EPMC_URL), http=http))
        elif name == "openalex":
            from deepcritical.sources.openalex import DEFAULT_BASE_URL as OPENALEX_URL
            from deepcritical.sources.openalex import OpenAlexSource

            built.append(
                OpenAlexSource(
                    client,
                    mailto=settings.ncbi_email,
                    base_url=urls.get(name, OPENALEX_URL),
                    http=http,
                )
            )
        elif name == "web":
            from deepcritical.sources.web import WebSearchSource

            built.append(WebSearchSource(client, base_url=urls.get(name), http=http))
        else:  # Settings validates names; this guards programmatic misuse
            raise ValueError(f"unknown source {name!r}")
    return bound_sources(built, settings.max_evidence_chars)


def build_full_text(settings: Settings, client: httpx.AsyncClient) -> FullTextFetcher | None:
    """The run's full-text fetcher (Europe PMC and PMC, at the roots
    ``settings.source_base_urls`` gives ``europepmc`` and ``pubmed``), or ``None`` when
    ``settings.max_full_texts`` is 0 or the run searches no online source (``local`` only:
    an offline run never reaches the network; its corpus holds the full texts it imported).
    """
    if settings.max_full_texts <= 0 or all(name == "local" for name in settings.sources):
        return None
    from deepcritical.sources.europepmc import DEFAULT_BASE_URL as EPMC_URL
    from deepcritical.sources.pubmed import DEFAULT_BASE_URL as PUBMED_URL

    urls = settings.source_base_urls
    return FullTextFetcher(
        client,
        europepmc_url=urls.get("europepmc", EPMC_URL),
        eutils_url=urls.get("pubmed", PUBMED_URL),
        api_key=_ncbi_key(settings),
        email=settings.ncbi_email,
        tool=settings.ncbi_tool,
        max_chars=settings.max_record_chars,
        http=_http_options(settings),
    )


def build_citation_graph(settings: Settings, client: httpx.AsyncClient) -> CitationGraph | None:
    """The run's citation graph (citation tracking) over the citation services among the
    run's sources: PubMed E-utilities (``elink``, ``efetch``) when ``pubmed`` is searched,
    OpenAlex when ``openalex`` is, at the roots ``settings.source_base_urls`` gives them, each
    with its own rate limiter (the step runs after a round's searches). ``None`` when
    ``settings.citation_seeds`` or ``settings.citation_candidates`` is 0, or the run searches
    neither (a ``local`` run never reaches the network)."""
    if settings.citation_seeds <= 0 or settings.citation_candidates <= 0:
        return None
    from deepcritical.sources.openalex import DEFAULT_BASE_URL as OPENALEX_URL
    from deepcritical.sources.openalex import OpenAlexSource
    from deepcritical.sources.pubmed import DEFAULT_BASE_URL as PUBMED_URL
    from deepcritical.sources.pubmed import PubMedSource

    http = _http_options(settings)
    urls = settings.source_base_urls
    pubmed = (
        PubMedSource(
            client,
            api_key=_ncbi_key(settings),
            email=settings.ncbi_email,
            tool=settings.ncbi_tool,
            base_url=urls.get("pubmed", PUBMED_URL),
            http=http,
        )
        if "pubmed" in settings.sources
        else None
    )
    openalex = (
        OpenAlexSource(
            client,
            mailto=settings.ncbi_email,
            base_url=urls.get("openalex", OPENALEX_URL),
            http=http,
        )
        if "openalex" in settings.sources
        else None
    )
    if pubmed is None and openalex is None:
        return None
    return CitationGraph(pubmed=pubmed, openalex=openalex)


def build_pubmed(settings: Settings, client: httpx.AsyncClient) -> PubMedSource | None:
    """The PubMed E-utilities client at the root ``settings.source_base_urls`` gives
    ``pubmed`` (with the NCBI key, never logged), for lookups by PMID (a living review's
    re-check of retractions); ``None`` when the run does not search PubMed."""
    if "pubmed" not in settings.sources:
        return None
    from deepcritical.sources.pubmed import DEFAULT_BASE_URL as PUBMED_URL
    from deepcritical.sources.pubmed import PubMedSource

    return PubMedSource(
        client,
        api_key=_ncbi_key(settings),
        email=settings.ncbi_email,
        tool=settings.ncbi_tool,
        base_url=settings.source_base_urls.get("pubmed", PUBMED_URL),
        http=_http_options(settings),
    )
