"""Choosing the implementation of every role: LLM agents when a model is given, extractive
agents otherwise (one selection path; no silent fallback here: the orchestrator decides, and
says so, when it falls back from an LLM agent to the extractive one)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic_ai.models import Model

from deepcritical.agents.appraiser import LLMStudyExtractor
from deepcritical.agents.clarifier import Clarifier, LLMClarifier, RuleClarifier
from deepcritical.agents.hypothesis import ExtractiveHypothesisGenerator, LLMHypothesisGenerator
from deepcritical.agents.judge import ExtractiveJudge, LLMJudge
from deepcritical.agents.planner import ExtractivePlanner, LLMPlanner
from deepcritical.agents.queries import ExtractiveQueryGenerator, LLMQueryGenerator
from deepcritical.agents.reflection import ExtractiveReflector, LLMReflector
from deepcritical.agents.roles import (
    HypothesisGenerator,
    Judge,
    Planner,
    QueryGenerator,
    Reflector,
    ReportWriter,
)
from deepcritical.agents.screener import LLMSourceScreener
from deepcritical.config import Settings
from deepcritical.evidence.embeddings import Embedder
from deepcritical.llm.agent_config import LLMConfig
from deepcritical.llm.structured import OutputStrategy
from deepcritical.llm.usage import UsageTracker
from deepcritical.writing.extractive import ExtractiveReportWriter
from deepcritical.writing.llm_writer import LLMReportWriter
from deepcritical.writing.rewriter import LLMSentenceRewriter

__all__ = [
    "AgentSet",
    "build_agents",
    "build_clarifier",
    "build_extractive_agents",
    "build_llm_agents",
    "llm_config",
]


@dataclass
class AgentSet:
    """The implementations of every role used by one run.

    Attributes:
        planner, queries, hypotheses, judge, writer, reflector: the role implementations
            (``reflector`` defaults to the extractive one).
        rewriter: rewrites sentences grounding found unsupported (LLM sets only; ``None``:
            unsupported sentences are removed).
        screener: the search agent's screening of each round's new records through the
            run's source tools (LLM sets only; ``None``: calibrated screening,
            :func:`deepcritical.evidence.screening.screen_items`).
        appraiser: reads study records with the model (LLM sets only; used for
            ``Settings.model_appraisals`` items per run; ``None``: rules only,
            :func:`deepcritical.evidence.study_extraction.extract_study`).
        usage: per-role LLM usage of this set (empty for extractive agents).
        mode: ``"llm"`` or ``"extractive"`` (``"custom"`` when built by hand).
    """

    planner: Planner
    queries: QueryGenerator
    hypotheses: HypothesisGenerator
    judge: Judge
    writer: ReportWriter
    usage: UsageTracker = field(default_factory=UsageTracker)
    mode: str = "custom"
    reflector: Reflector = field(default_factory=ExtractiveReflector)
    rewriter: LLMSentenceRewriter | None = None
    screener: LLMSourceScreener | None = None
    appraiser: LLMStudyExtractor | None = None


def build_extractive_agents(settings: Settings, embedder: Embedder) -> AgentSet:
    """Agents that need no model (``--llm none``); ``embedder`` ranks sentences."""
    return AgentSet(
        planner=ExtractivePlanner(),
        queries=ExtractiveQueryGenerator(),
        hypotheses=ExtractiveHypothesisGenerator(embedder),
        judge=ExtractiveJudge(min_total_evidence=_min_total_evidence(settings)),
        writer=ExtractiveReportWriter(embedder),
        mode="extractive",
    )


def build_llm_agents(
    settings: Settings,
    model: Model,
    usage: UsageTracker | None = None,
    embedder: Embedder | None = None,
) -> AgentSet:
    """LLM agents sharing ``model``, ``settings.llm_retries`` and
    ``settings.llm_timeout_seconds`` (per call), recording usage into one tracker;
    ``embedder`` lets the writer show each section the passages of full-text sources that
    match it (``None``: abstracts only)."""
    config = llm_config(settings, model, usage)
    return AgentSet(
        planner=LLMPlanner(
            config,
            max_questions=settings.max_questions,
            queries_per_question=settings.queries_per_question,
        ),
        queries=LLMQueryGenerator(config),
        hypotheses=LLMHypothesisGenerator(config),
        judge=LLMJudge(config),
        writer=LLMReportWriter(config, embedder=embedder),
        reflector=LLMReflector(config),
        rewriter=LLMSentenceRewriter(config),
        screener=LLMSourceScreener(config),
        appraiser=LLMStudyExtractor(config),
        usage=config.usage,
        mode="llm",
    )


def llm_config(settings: Settings, model: Model, usage: UsageTracker | None = None) -> LLMConfig:
    """How every LLM role of ``settings`` calls ``model``: ``settings.llm_retries``,
    ``settings.llm_timeout_seconds`` per call, the structured-output strategy, the context
    and output token bounds; usage recorded into ``usage`` (default: a new tracker)."""
    return LLMConfig(
        model=model,
        retries=settings.llm_retries,
        timeout_seconds=settings.llm_timeout_seconds,
        usage=usage or UsageTracker(),
        output=_output_strategy(settings),
        context_tokens=settings.prompt_context_tokens(),
        max_output_tokens=settings.output_token_bound(),
    )


def build_clarifier(settings: Settings, model: Model | None) -> Clarifier:
    """The clarify step's implementation: the model's (:class:`LLMClarifier`, configured as
    the roles are) when ``model`` is given, else the offline rules (:class:`RuleClarifier`)."""
    if model is None:
        return RuleClarifier()
    return LLMClarifier(llm_config(settings, model))


def build_agents(settings: Settings, model: Model | None, embedder: Embedder) -> AgentSet:
    """LLM agents when ``model`` is given (from :func:`deepcritical.llm.providers.build_model`),
    extractive agents when it is ``None``."""
    if model is None:
        return build_extractive_agents(settings, embedder)
    return build_llm_agents(settings, model, embedder=embedder)


def _output_strategy(settings: Settings) -> OutputStrategy:
    """The structured-output strategy of the run's roles: ``settings.structured_output``, or
    tool calls while it is still ``auto`` (not probed: OpenAI, Anthropic, injected models)."""
    chosen = settings.structured_output
    return "tool" if chosen == "auto" else chosen


def _min_total_evidence(settings: Settings) -> int:
    """Evidence items the extractive judge wants at partial coverage: the report's slice size,
    but never more than the evidence limit of the run."""
    return max(1, min(settings.report_max_evidence, settings.max_sources))
