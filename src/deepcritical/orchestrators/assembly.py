"""Assembling one run's parts from its settings, in the order a reader expects: the models
first (:func:`resolve_models`, before anything is recorded, so a bad model spec records
nothing), then everything the run works with (:func:`build_run_deps`): the HTTP client, the
sources, the full-text reader and the citation graph, the call cache around each when the run
is recorded, the evidence store, the roles and their extractive fallback, and the search
agent. :mod:`deepcritical.api` then only runs the orchestrator and streams its events.

Whatever a caller gives (:class:`GivenParts`: tests pass scripted models and stub sources)
replaces what the settings would build, and is neither cached nor closed here.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deepcritical.agents.planner import SyllabusPlanner
from deepcritical.agents.search import SearchAgent
from deepcritical.config import Settings
from deepcritical.evidence.embeddings import Embedder
from deepcritical.evidence.onnx_embeddings import run_embedder
from deepcritical.evidence.screening import default_calibration
from deepcritical.evidence.store import EvidenceStore
from deepcritical.llm.chat_cache import CachedChatClient
from deepcritical.llm.model_cache import CachedModel
from deepcritical.llm.probe import resolve_endpoint
from deepcritical.llm.providers import (
    ModelSpecError,
    build_chat_client,
    build_model,
    close_chat_client,
    parse_model_spec,
)
from deepcritical.orchestrators.agent_set import build_agents
from deepcritical.orchestrators.deps import RunDeps
from deepcritical.sources.base import SearchSource
from deepcritical.sources.bounded import bound_sources
from deepcritical.sources.citation_graph import CitationLinker
from deepcritical.sources.factory import build_citation_graph, build_full_text, build_sources
from deepcritical.sources.fulltext import FullTextReader
from deepcritical.sources.http import new_http_client
from deepcritical.state.syllabus import Syllabus

if TYPE_CHECKING:
    import httpx
    from agent_framework import SupportsChatGetResponse
    from pydantic_ai.models import Model

    from deepcritical.state.lifecycle import PersistentRun

__all__ = ["GivenParts", "RunModels", "build_run_deps", "resolve_models"]


@dataclass(frozen=True)
class GivenParts:
    """What a caller gives in place of what the settings build (``None``: built): a
    pydantic-ai ``model``, the search ``sources`` (then no full text unless ``full_text`` is
    given too, and no citation tracking), the ``full_text`` reader, the ``embedder`` and the
    Magentic manager's ``chat_client``."""

    model: Model | None = None
    sources: Sequence[SearchSource] | None = None
    full_text: FullTextReader | None = None
    embedder: Embedder | None = None
    chat_client: SupportsChatGetResponse[Any] | None = None


@dataclass(frozen=True)
class RunModels:
    """A run's models, resolved before its record is opened: the ``settings`` with an
    openai-compatible endpoint's structured-output strategy and context window filled in,
    the roles' ``model`` (``None``: extractive), its ``llm_label`` for the report, the
    Magentic ``manager`` chat client (``None``: the iterative orchestrator) and the
    ``embedder``."""

    settings: Settings
    model: Model | None
    llm_label: str
    manager: SupportsChatGetResponse[Any] | None
    embedder: Embedder


async def resolve_models(settings: Settings, given: GivenParts) -> RunModels:
    """The models of a run of ``settings``: the given ones, else those ``settings.llm`` names
    (an openai-compatible endpoint is probed first:
    :func:`deepcritical.llm.probe.resolve_endpoint`); the embedder
    (:func:`~deepcritical.evidence.onnx_embeddings.run_embedder`) is loaded in a worker
    thread, off the event loop.

    Raises:
        ModelSpecError: a bad ``settings.llm``, a missing API key, or the ``magentic``
            orchestrator without a model.
    """
    model = given.model
    if model is None:
        settings = await resolve_endpoint(settings)
        model = build_model(settings)
        label = str(parse_model_spec(settings.llm))
    else:
        label = _model_label(model)
    manager = _manager_client(settings, model, given.chat_client)
    embedder = given.embedder
    if embedder is None:
        embedder = await asyncio.to_thread(
            run_embedder, settings.embedding_model, settings.embedding_backend
        )
    return RunModels(settings, model, label, manager, embedder)


async def build_run_deps(
    models: RunModels,
    given: GivenParts,
    stack: AsyncExitStack,
    *,
    syllabus: Syllabus | None = None,
    persisted: PersistentRun | None = None,
) -> tuple[RunDeps, SupportsChatGetResponse[Any] | None]:
    """Everything one run works with, and the Magentic manager's chat client (``None``: run
    the iterative orchestrator). What is built here is closed by ``stack`` (the model's
    provider client, the manager's chat client, the HTTP client); with ``persisted`` (a
    recorded run) the built sources, full-text reader, citation graph, model and chat client
    go through its call cache, and the search agent's tools save into it.

    Raises:
        deepcritical.corpus.index.CorpusNotFoundError: ``local`` source with no corpus.
    """
    settings, model, manager = models.settings, models.model, models.manager
    if given.model is None and model is not None:  # its provider's HTTP client is ours
        await stack.enter_async_context(model)
    if manager is not None and given.chat_client is None:
        stack.push_async_callback(close_chat_client, manager)
    client = new_http_client(settings.http_timeout_seconds)
    stack.push_async_callback(client.aclose)
    sources = _sources(settings, client, models.embedder, given, persisted)
    if persisted is not None and given.model is None and model is not None:
        model = persisted.cached_model = CachedModel(model, persisted.cache)
    if persisted is not None and given.chat_client is None and manager is not None:
        manager = CachedChatClient(manager, persisted.cache)
    deps = _run_deps(settings, model, models.llm_label, models.embedder, sources, syllabus)
    deps = dataclasses.replace(
        deps,
        full_text=_full_text_reader(settings, client, given, persisted),
        citations=_citation_linker(settings, client, given, persisted),
    )
    if persisted is not None:  # the search agent's tools save into the recorded run
        deps = dataclasses.replace(
            deps, collector=persisted.collector_for(deps.store), reviews=persisted.reviews
        )
    return deps, manager


def _sources(
    settings: Settings,
    client: httpx.AsyncClient,
    embedder: Embedder,
    given: GivenParts,
    persisted: PersistentRun | None,
) -> list[SearchSource]:
    """The given sources, else those ``settings.sources`` names, through the call cache when
    the run is recorded."""
    if given.sources is not None:
        return list(given.sources)
    built = build_sources(settings, client, embedder)
    if persisted is None:
        return built
    # the call cache keeps bounded items; answers it kept before a lower limit are bounded
    # again on the way out
    return bound_sources(persisted.wrap_sources(built), settings.max_evidence_chars)


def _full_text_reader(
    settings: Settings,
    client: httpx.AsyncClient,
    given: GivenParts,
    persisted: PersistentRun | None,
) -> FullTextReader | None:
    """The run's full-text reader: the given one; else none when the caller gave its own
    sources; else the one built from ``settings`` (wrapped in the call cache when the run
    is recorded)."""
    if given.full_text is not None or given.sources is not None:
        return given.full_text
    built = build_full_text(settings, client)
    if built is None or persisted is None:
        return built
    return persisted.wrap_full_text(built)


def _citation_linker(
    settings: Settings,
    client: httpx.AsyncClient,
    given: GivenParts,
    persisted: PersistentRun | None,
) -> CitationLinker | None:
    """The run's citation tracking: none when the caller gave its own sources; else the
    citation graph built from ``settings`` (wrapped in the call cache when the run is
    recorded, so a resumed run asks nothing again)."""
    if given.sources is not None:
        return None
    built = build_citation_graph(settings, client)
    if built is None or persisted is None:
        return built
    return persisted.wrap_citations(built)


def _manager_client(
    settings: Settings,
    model: Model | None,
    chat_client: SupportsChatGetResponse[Any] | None,
) -> SupportsChatGetResponse[Any] | None:
    """The Magentic manager's chat client (``chat_client``, else one built from
    ``settings.llm``); ``None`` for the iterative orchestrator.

    Raises:
        ModelSpecError: the magentic orchestrator without a model.
    """
    if settings.orchestrator != "magentic":
        return None
    if model is None:
        raise ModelSpecError(
            "the magentic orchestrator needs a model (its manager and agents are LLMs): give "
            "--llm (e.g. openai:gpt-4o or openai-compatible:MODEL@URL), or use "
            "--orchestrator iterative, which also runs with --llm none"
        )
    return chat_client if chat_client is not None else build_chat_client(settings)


def _run_deps(
    settings: Settings,
    model: Model | None,
    llm_label: str,
    embedder: Embedder,
    sources: Sequence[SearchSource],
    syllabus: Syllabus | None,
) -> RunDeps:
    """The dependencies of one run: a fresh evidence store, the role implementations for
    ``model`` (extractive with ``None``; the extractive set as the fallback of an LLM set),
    the syllabus planner when the syllabus is fixed, and the search agent over ``sources``."""
    store = EvidenceStore(embedder, settings.near_duplicate_threshold)
    agents = build_agents(settings, model, embedder)
    fallback = build_agents(settings, None, embedder) if model is not None else None
    if syllabus is not None:
        agents = dataclasses.replace(agents, planner=SyllabusPlanner(agents.planner, syllabus))
        if fallback is not None:
            fallback = dataclasses.replace(
                fallback, planner=SyllabusPlanner(fallback.planner, syllabus)
            )
    search = SearchAgent(
        sources, store, settings.results_per_query, pubmed_date_from=settings.pubmed_date_from
    )
    calibration = default_calibration()
    return RunDeps(
        settings=settings,
        agents=agents,
        store=store,
        search=search,
        source_names=[s.name for s in sources],
        fallback=fallback,
        llm_label=llm_label,
        screening=calibration if calibration.fits(embedder) else None,
    )


def _model_label(model: Model) -> str:
    """How the report names a given model: ``system:name`` (``openai:gpt-4o``)."""
    name = str(getattr(model, "model_name", None) or type(model).__name__)
    system = getattr(model, "system", None)
    if not system or name.startswith(f"{system}:"):
        return name
    return f"{system}:{name}"
