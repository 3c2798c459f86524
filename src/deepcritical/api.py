"""The programmatic entry point: ``async for event in research(question, settings): ...``.

Builds everything a run needs (HTTP client, sources, evidence store, agents, orchestrator),
streams the orchestrator's events and closes what it opened, also when the consumer stops early
or the task is cancelled.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, aclosing
from typing import TYPE_CHECKING

from deepcritical.agents.factory import build_agents
from deepcritical.agents.search import SearchAgent
from deepcritical.config import Settings
from deepcritical.evidence.embeddings import Embedder, shared_embedder
from deepcritical.evidence.store import EvidenceStore
from deepcritical.llm import build_model, parse_model_spec
from deepcritical.orchestrators.events import ResearchEvent
from deepcritical.orchestrators.iterative import IterativeOrchestrator, check_question
from deepcritical.sources.base import SearchSource
from deepcritical.sources.factory import build_sources
from deepcritical.sources.http import new_http_client

if TYPE_CHECKING:
    from pydantic_ai.models import Model


async def research(
    question: str,
    settings: Settings | None = None,
    *,
    context: str | None = None,
    model: Model | None = None,
    sources: Sequence[SearchSource] | None = None,
    embedder: Embedder | None = None,
) -> AsyncIterator[ResearchEvent]:
    """Research ``question`` and stream :class:`ResearchEvent`; the last is ``done`` (its
    ``result`` holds the report and the evidence) or ``error``.

    Args:
        question: the research question (at most ``settings.max_question_chars`` characters).
        settings: run settings; defaults to :class:`Settings` read from the environment.
        context: optional background from the user, passed to the planner.
        model: a pydantic-ai model to use instead of the one ``settings.llm`` names (tests
            pass scripted models here).
        sources: search sources to use instead of those ``settings.sources`` names.
        embedder: embedder to use instead of all-MiniLM-L6-v2.

    Raises:
        QuestionError: empty or too long question (before any event).
        ModelSpecError: a bad ``settings.llm`` or a missing API key (before any event).
        deepcritical.corpus.index.CorpusNotFoundError: ``local`` source with no corpus.
    """
    settings = settings or Settings()
    question = check_question(question, settings.max_question_chars)
    llm_model = model if model is not None else build_model(settings)
    llm_label = str(parse_model_spec(settings.llm)) if model is None else _model_label(model)
    embedder = embedder or shared_embedder(settings.embedding_model)

    async with AsyncExitStack() as stack:
        client = new_http_client(settings.http_timeout_seconds)
        stack.push_async_callback(client.aclose)
        run_sources = (
            list(sources) if sources is not None else build_sources(settings, client, embedder)
        )
        store = EvidenceStore(embedder, settings.near_duplicate_threshold)
        agents = build_agents(settings, llm_model, embedder)
        fallback = build_agents(settings, None, embedder) if llm_model is not None else None
        orchestrator = IterativeOrchestrator(
            settings,
            agents,
            store,
            SearchAgent(run_sources, store, settings.results_per_query),
            [s.name for s in run_sources],
            fallback=fallback,
            llm_label=llm_label,
        )
        async with aclosing(orchestrator.run(question, context)) as events:
            async for event in events:
                yield event


def _model_label(model: Model) -> str:
    name = getattr(model, "model_name", None) or type(model).__name__
    system = getattr(model, "system", None)
    return f"{system}:{name}" if system else str(name)
