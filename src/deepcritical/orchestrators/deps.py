"""What one research run works with, built once per run at the edge (:mod:`deepcritical.api`),
and the one check of the question.

Both orchestrators take a :class:`RunDeps`; :class:`~deepcritical.orchestrators.run.
ResearchRun` reads its settings, roles, store and search from it, so the run's dependencies
are written down in one place.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from opentelemetry.trace import Span

from deepcritical.agents.search import SearchAgent
from deepcritical.config import Settings
from deepcritical.evidence.screening import RelevanceCalibration
from deepcritical.evidence.store import EvidenceStore
from deepcritical.models import SearchFilters
from deepcritical.orchestrators.agent_set import AgentSet
from deepcritical.sources.citation_graph import CitationLinker
from deepcritical.sources.fulltext import FullTextReader
from deepcritical.state.reviews import ReviewBook
from deepcritical.state.sources import SourceCollector
from deepcritical.text.control import strip_control_chars

__all__ = ["QuestionError", "RunDeps", "check_context", "check_question", "requested_filters"]


class QuestionError(ValueError):
    """The research question is empty or longer than ``Settings.max_question_chars``."""


def check_question(question: str, max_chars: int) -> str:
    """The question without control characters (NUL, escape sequences...:
    :func:`~deepcritical.text.control.strip_control_chars`) and with its white space
    collapsed (runs of spaces and newlines become one space, none at either end): the form
    every step, output and the run database get.

    Raises:
        QuestionError: empty (also when it held control characters only), or more than
            ``max_chars`` characters.
    """
    text = " ".join(strip_control_chars(question).split())
    if not text:
        raise QuestionError("the research question is empty")
    if len(text) > max_chars:
        raise QuestionError(
            f"the research question has {len(text)} characters; the limit is {max_chars} "
            "(put background material in the context instead)"
        )
    return text


def requested_filters(settings: Settings, default: SearchFilters | None = None) -> SearchFilters:
    """The search filters the run was asked for (``Settings.search_filters``, set by
    ``api.research(filters=...)``, the CLI's filter options or ``DEEPCRITICAL_SEARCH_FILTERS``),
    as a :class:`SearchFilters`; ``default`` (else no filters) when none were asked for.

    Raises:
        pydantic.ValidationError: the stored fields are not valid filters (the message names
            the field and the accepted values).
    """
    filters = SearchFilters.model_validate(settings.search_filters)
    if filters.is_empty():
        return default if default is not None else filters
    return filters


def check_context(context: str | None) -> str | None:
    """The user's background text for the planner without control characters
    (:func:`~deepcritical.text.control.strip_control_chars`; lines and tabs kept); ``None``
    when there is none or nothing is left."""
    if context is None:
        return None
    return strip_control_chars(context).strip() or None


@dataclass(frozen=True)
class RunDeps:
    """The dependencies of one run (never shared between runs).

    Attributes:
        settings: limits (``max_rounds``, ``max_sources``, ``time_budget_seconds``...) and
            report settings.
        agents: the role implementations in use (LLM or extractive).
        store: this run's evidence store.
        search: the search agent bound to this run's sources and store.
        source_names: the names of the sources searched (report metadata, events).
        fallback: extractive implementations used when an LLM role fails; ``None`` when
            ``agents`` are extractive already.
        llm_label: the model spec shown in the report (never a key).
        clock: monotonic clock, in seconds.
        screening: the relevance calibration that screens every new item
            (:mod:`deepcritical.evidence.screening`); ``None``: items are not screened (the
            store's embedder has no calibration; the report says so).
        collector: the run's source collector (the recorder's, when the run is recorded):
            the search agent's source tools save into it; ``None``: the run opens a private
            one in memory when its screener needs it.
        full_text: fetches open-access full texts by PMCID (up to
            ``settings.max_full_texts`` per run); ``None``: the run reads none (offline runs,
            ``max_full_texts=0``).
        citations: follows the references and citing papers of the run's best studies
            (citation tracking, once per run); ``None``: no citation tracking (offline runs,
            no PubMed or OpenAlex among the sources, a budget of 0).
        reviews: the run's reviews in the run database (the researcher's review of the plan
            and of the evidence, :mod:`deepcritical.orchestrators.review_step`); ``None``
            when the run is not recorded.
        trace_parent: the run's ``run`` span, the parent of its stages' spans
            (:class:`~deepcritical.telemetry.run_trace.RunObserver`); ``None`` when tracing
            is off.
    """

    settings: Settings
    agents: AgentSet
    store: EvidenceStore
    search: SearchAgent
    source_names: Sequence[str]
    fallback: AgentSet | None = None
    llm_label: str = "none"
    clock: Callable[[], float] = field(default=time.monotonic)
    screening: RelevanceCalibration | None = None
    collector: SourceCollector | None = None
    reviews: ReviewBook | None = None
    full_text: FullTextReader | None = None
    citations: CitationLinker | None = None
    trace_parent: Span | None = None
