"""The programmatic entry point: ``async for event in research(question, settings): ...``.

Builds everything a run needs (HTTP client, sources, evidence store, agents, orchestrator),
streams the orchestrator's events and closes what it opened, also when the consumer stops early
or the task is cancelled.

Every run is recorded in the run database unless ``Settings.persist_runs`` is false
(:mod:`deepcritical.state`): the ``started`` event's ``data["run_id"]`` names it, it is
checkpointed after every event, and :func:`resume` continues an interrupted run.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import AsyncExitStack, aclosing
from typing import TYPE_CHECKING, Any

from deepcritical.agents.planner import SyllabusPlanner
from deepcritical.agents.search import SearchAgent
from deepcritical.config import Settings
from deepcritical.events import ResearchEvent
from deepcritical.evidence.embeddings import Embedder
from deepcritical.evidence.onnx_embeddings import run_embedder
from deepcritical.evidence.screening import default_calibration
from deepcritical.evidence.store import EvidenceStore
from deepcritical.llm.chat_cache import CachedChatClient
from deepcritical.llm.llm_errors import describe_error
from deepcritical.llm.model_cache import CachedModel
from deepcritical.llm.probe import resolve_endpoint
from deepcritical.llm.providers import (
    ModelSpecError,
    build_chat_client,
    build_model,
    close_chat_client,
    parse_model_spec,
)
from deepcritical.models import ReportPreferences
from deepcritical.orchestrators.agent_set import build_agents
from deepcritical.orchestrators.deps import RunDeps, check_context, check_question
from deepcritical.orchestrators.iterative import IterativeOrchestrator
from deepcritical.sources.base import SearchSource
from deepcritical.sources.bounded import bound_sources
from deepcritical.sources.citation_graph import CitationLinker
from deepcritical.sources.factory import build_citation_graph, build_full_text, build_sources
from deepcritical.sources.fulltext import FullTextReader
from deepcritical.sources.http import new_http_client
from deepcritical.state.errors import run_not_found, run_not_resumable
from deepcritical.state.syllabus import Syllabus

if TYPE_CHECKING:
    import httpx
    from agent_framework import SupportsChatGetResponse
    from pydantic_ai.models import Model

    from deepcritical.orchestrators.magentic import MagenticOrchestrator
    from deepcritical.state.lifecycle import PersistentRun


async def research(
    question: str,
    settings: Settings | None = None,
    *,
    context: str | None = None,
    preferences: ReportPreferences | None = None,
    model: Model | None = None,
    sources: Sequence[SearchSource] | None = None,
    full_text: FullTextReader | None = None,
    embedder: Embedder | None = None,
    chat_client: SupportsChatGetResponse[Any] | None = None,
    syllabus: Syllabus | None = None,
    owner: str | None = None,
) -> AsyncIterator[ResearchEvent]:
    """Research ``question`` and stream :class:`ResearchEvent`; the last is ``done`` (its
    ``result`` holds the report and the evidence) or ``error``.

    Args:
        question: the research question (at most ``settings.max_question_chars`` characters).
        settings: run settings; defaults to :class:`Settings` read from the environment.
        context: optional background from the user, passed to the planner.
        preferences: the user's report preferences (audience, length, focus), given to the
            report writer; defaults: scientists, standard length, no particular focus.
        model: a pydantic-ai model to use instead of the one ``settings.llm`` names (tests
            pass scripted models here).
        sources: search sources to use instead of those ``settings.sources`` names.
        full_text: the full-text fetcher to use instead of the one built from ``settings``
            (:func:`~deepcritical.sources.factory.build_full_text`); with ``sources`` given
            and no ``full_text``, the run reads no full text.
        embedder: embedder to use instead of all-MiniLM-L6-v2.
        chat_client: the Magentic manager's agent-framework chat client, instead of the one
            :func:`~deepcritical.llm.providers.build_chat_client` makes from ``settings.llm`` (tests
            pass scripted clients here); used when ``settings.orchestrator`` is ``magentic``.
        syllabus: a fixed syllabus whose questions replace the planner's checklist.
        owner: the user the recorded run belongs to (the web app passes its signed-in user,
            ``user:alice`` or ``hf:alice``); ``None``, the default, is the local user, whose
            runs the CLI's ``deepcritical runs`` commands show.

    Recording (``settings.persist_runs``, default on): the run is stored in the run database
    (``settings.database_url`` or ``<data_dir>/deepcritical.db``) and checkpointed after every
    event; ``data["run_id"]`` of the ``started`` event is its id. Sources and models built
    from ``settings`` are wrapped in the call cache (sources and models passed in are not).

    Raises:
        QuestionError: empty or too long question (before any event).
        ModelSpecError: a bad ``settings.llm`` or a missing API key, or the ``magentic``
            orchestrator without a model (before any event).
        deepcritical.corpus.index.CorpusNotFoundError: ``local`` source with no corpus.
        sqlalchemy.exc.SQLAlchemyError: the run database cannot be opened (before any event).
    """
    async with aclosing(
        _research(
            question,
            settings or Settings(),
            context=context,
            preferences=preferences,
            model=model,
            sources=sources,
            full_text=full_text,
            embedder=embedder,
            chat_client=chat_client,
            syllabus=syllabus,
            owner=owner,
        )
    ) as events:
        async for event in events:
            yield event


async def resume(
    run_id: str,
    settings: Settings | None = None,
    *,
    model: Model | None = None,
    sources: Sequence[SearchSource] | None = None,
    full_text: FullTextReader | None = None,
    embedder: Embedder | None = None,
    chat_client: SupportsChatGetResponse[Any] | None = None,
    owner: str | None = None,
    time_budget_seconds: float | None = None,
) -> AsyncIterator[ResearchEvent]:
    """Continue the stored run ``run_id`` of ``owner`` (``None``, the default: the local user)
    to its report, streaming events as :func:`research`.

    The stored question, context, report preferences, syllabus and settings are used again;
    API keys and the database location come from ``settings`` (default: the environment) at
    resume time. The completed steps replay from the call cache with no search (or cached
    LLM) call, the run continues live where it stopped, sources are saved idempotently (none
    lost, none duplicated) and the same run row is updated (``in_progress`` again, then
    ``completed``). Full texts fetched before come from the call cache too. ``model``,
    ``sources``, ``full_text``, ``embedder`` and ``chat_client`` replace what ``settings``
    builds, as in :func:`research`.

    The time budget starts afresh at the resume: the stored ``time_budget_seconds``, or
    ``time_budget_seconds`` when given (seconds, > 0). A run that stopped on its time budget
    (status ``time_budget``, with a report) can be resumed to search on with a new budget.

    Only one process continues a run (the resume lease,
    :func:`deepcritical.state.lease.claim_run`): a run whose heartbeat is younger than 60 s
    is refused; an older one (its process died) is taken over.

    Raises:
        RunNotFoundError: no run with this id among ``owner``'s runs (a unique prefix of 6+
            characters is accepted; another owner's run is not found).
        RunNotResumableError: the run already completed (its report is stored).
        RunInProgressError: the run is still running in another process (on the first
            iteration, before any event).
        pydantic.ValidationError: ``time_budget_seconds`` is not > 0.
    """
    from deepcritical.state.run_store import RunStore

    base = settings or Settings()
    store = await asyncio.to_thread(RunStore.open, base)
    try:
        record = await asyncio.to_thread(lambda: store.get_run(run_id, owner=owner))
    finally:
        store.close()
    if record is None:
        raise run_not_found(run_id)
    if not record.resumable:
        raise run_not_resumable(record.id, record.status)
    stored = {k: v for k, v in record.settings.items() if k in Settings.model_fields}
    stored.update(data_dir=base.data_dir, database_url=base.database_url, persist_runs=True)
    if time_budget_seconds is not None:
        stored["time_budget_seconds"] = time_budget_seconds
    run_settings = Settings(**stored)
    syllabus = (
        Syllabus.model_validate(record.syllabus)
        if record.syllabus_fixed and record.syllabus
        else None
    )
    async with aclosing(
        _research(
            record.question,
            run_settings,
            context=record.context,
            preferences=(
                ReportPreferences.model_validate(record.preferences) if record.preferences else None
            ),
            model=model,
            sources=sources,
            full_text=full_text,
            embedder=embedder,
            chat_client=chat_client,
            syllabus=syllabus,
            run_id=record.id,
            owner=owner,
        )
    ) as events:
        async for event in events:
            yield event


async def _run_embedder(settings: Settings) -> Embedder:
    """:func:`~deepcritical.evidence.onnx_embeddings.run_embedder` of ``settings``, loaded (once
    per export cache: exported) in a worker thread, off the event loop."""
    return await asyncio.to_thread(
        run_embedder, settings.embedding_model, settings.embedding_backend
    )


async def _research(
    question: str,
    settings: Settings,
    *,
    context: str | None,
    preferences: ReportPreferences | None = None,
    model: Model | None,
    sources: Sequence[SearchSource] | None,
    embedder: Embedder | None,
    full_text: FullTextReader | None = None,
    chat_client: SupportsChatGetResponse[Any] | None,
    syllabus: Syllabus | None,
    run_id: str | None = None,
    owner: str | None = None,
) -> AsyncGenerator[ResearchEvent, None]:
    question = check_question(question, settings.max_question_chars)
    context = check_context(context)
    _log_to_stderr()
    settings, llm_model = await _run_model(settings, model)
    llm_label = str(parse_model_spec(settings.llm)) if model is None else _model_label(model)
    manager_client = _manager_client(settings, llm_model, chat_client)
    embedder = embedder or await _run_embedder(settings)

    async with AsyncExitStack() as stack:
        persisted: PersistentRun | None = None
        if settings.persist_runs:
            from deepcritical.state.lifecycle import PersistentRun

            persisted = await PersistentRun.open(
                settings,
                question,
                context,
                syllabus,
                run_id,
                preferences=preferences.model_dump(mode="json") if preferences else None,
                owner=owner,
            )
            stack.push_async_callback(persisted.aclose)
        if model is None and llm_model is not None:  # its provider's HTTP client is ours
            await stack.enter_async_context(llm_model)
        if manager_client is not None and chat_client is None:
            stack.push_async_callback(close_chat_client, manager_client)
        client = new_http_client(settings.http_timeout_seconds)
        stack.push_async_callback(client.aclose)
        run_sources = (
            list(sources) if sources is not None else build_sources(settings, client, embedder)
        )
        if persisted is not None and sources is None:
            # the call cache keeps bounded items; answers it kept before a lower limit are
            # bounded again on the way out
            cached = persisted.wrap_sources(run_sources)
            run_sources = bound_sources(cached, settings.max_evidence_chars)
        reader = _full_text_reader(settings, client, full_text, sources, persisted)
        if persisted is not None and model is None and llm_model is not None:
            llm_model = persisted.cached_model = CachedModel(llm_model, persisted.cache)
        if persisted is not None and chat_client is None and manager_client is not None:
            manager_client = CachedChatClient(manager_client, persisted.cache)
        deps = _run_deps(settings, llm_model, llm_label, embedder, run_sources, syllabus)
        deps = dataclasses.replace(
            deps, full_text=reader, citations=_citation_linker(settings, client, sources, persisted)
        )
        if persisted is not None:  # the search agent's tools save into the recorded run
            deps = dataclasses.replace(deps, collector=persisted.collector_for(deps.store))
        store = deps.store
        orchestrator: IterativeOrchestrator | MagenticOrchestrator
        if manager_client is not None:
            from deepcritical.orchestrators.magentic import MagenticOrchestrator

            orchestrator = MagenticOrchestrator(deps, chat_client=manager_client)
        else:
            orchestrator = IterativeOrchestrator(deps)
        if persisted is None:
            async with aclosing(orchestrator.run(question, context, preferences)) as events:
                async for event in events:
                    yield event
            return
        await persisted.attach(store)
        try:
            async with aclosing(orchestrator.run(question, context, preferences)) as events:
                async for event in events:
                    warning = await persisted.record(event)
                    yield event
                    if warning is not None:
                        yield warning
        except (GeneratorExit, asyncio.CancelledError, KeyboardInterrupt):
            persisted.end("cancelled", "the run was stopped before its report")
            raise
        except Exception as exc:
            persisted.end("failed", describe_error(exc)[:2000])
            raise
        persisted.end("failed", "the run ended without a report")


async def _run_model(settings: Settings, model: Model | None) -> tuple[Settings, Model | None]:
    """``(settings, model)`` of a run: ``model`` when given (tests, callers with their own),
    else the one built from ``settings.llm``, with an openai-compatible endpoint's
    structured-output strategy and context window resolved first
    (:func:`deepcritical.llm.probe.resolve_endpoint`)."""
    if model is not None:
        return settings, model
    settings = await resolve_endpoint(settings)
    return settings, build_model(settings)


def _full_text_reader(
    settings: Settings,
    client: httpx.AsyncClient,
    given: FullTextReader | None,
    sources: Sequence[SearchSource] | None,
    persisted: PersistentRun | None,
) -> FullTextReader | None:
    """The run's full-text reader: ``given``; else none when the caller gave its own
    ``sources``; else the one built from ``settings`` (wrapped in the call cache when the run
    is recorded)."""
    if given is not None or sources is not None:
        return given
    built = build_full_text(settings, client)
    if built is None or persisted is None:
        return built
    return persisted.wrap_full_text(built)


def _citation_linker(
    settings: Settings,
    client: httpx.AsyncClient,
    sources: Sequence[SearchSource] | None,
    persisted: PersistentRun | None,
) -> CitationLinker | None:
    """The run's citation tracking: none when the caller gave its own ``sources``; else the
    citation graph built from ``settings`` (wrapped in the call cache when the run is
    recorded, so a resumed run asks nothing again)."""
    if sources is not None:
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


def _log_to_stderr() -> None:
    """structlog prints to stdout by default; a library must not write into its caller's
    stdout, so send our log lines to stderr unless the application configured structlog."""
    import sys

    import structlog

    if not structlog.is_configured():
        structlog.configure(logger_factory=structlog.PrintLoggerFactory(file=sys.stderr))


def _model_label(model: Model) -> str:
    name = str(getattr(model, "model_name", None) or type(model).__name__)
    system = getattr(model, "system", None)
    if not system or name.startswith(f"{system}:"):
        return name
    return f"{system}:{name}"
