"""The source-collection tools of a gathering agent, as a pydantic-ai ``FunctionToolset``.

``save_source``, ``get_progress`` and ``check_completion`` call a
:class:`~deepcritical.state.sources.SourceCollector`; each returns one flat line of at most
499 characters whatever the number of sources, so the agent's context stays small. Bad input
(an unknown question key, an unknown citation id, an empty id) is sent back to the model as a
retry prompt with the clear error message (it lists the valid question keys).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic_ai import FunctionToolset, ModelRetry

from deepcritical.state.errors import StateError
from deepcritical.state.sources import MAX_RESPONSE_CHARS, SourceCollector

__all__ = ["GATHERING_INSTRUCTIONS", "ExcerptReview", "source_toolset"]

GATHERING_INSTRUCTIONS = (
    "You collect sources for a research syllabus. Save every relevant source you find with "
    "save_source (assign it to every question it helps answer; pass short verbatim excerpts). "
    "Call get_progress to see what is missing and check_completion before you stop."
)
"""Instructions for an agent using :func:`source_toolset` (fixed size)."""


ExcerptReview = Callable[[str | None, list[str]], list[str]]
"""``(citation_id, key_excerpts) -> key_excerpts kept``: checks a save before it is made; it
may drop excerpts (e.g. ones that are not verbatim) or raise ``ValueError`` to refuse the save
(the message goes back to the model)."""


def _retry(exc: Exception) -> ModelRetry:
    return ModelRetry(str(exc)[:MAX_RESPONSE_CHARS])


def source_toolset(
    collector: SourceCollector, review: ExcerptReview | None = None
) -> FunctionToolset[Any]:
    """A toolset with ``save_source``, ``get_progress`` and ``check_completion`` on
    ``collector`` (the tools are synchronous: pydantic-ai runs them in worker threads).

    ``review`` (optional) sees every save first (:data:`ExcerptReview`); when it drops
    excerpts, the tool's answer says how many.
    """
    toolset: FunctionToolset[Any] = FunctionToolset()

    @toolset.tool_plain
    def save_source(
        source_type: str,
        external_id: str,
        url: str | None,
        title: str,
        relevant_questions: list[str],
        key_excerpts: list[str] | None = None,
        citation_id: str | None = None,
    ) -> str:
        """Save a source once and assign it to the questions it helps answer.

        Args:
            source_type: pubmed, trials, europepmc, openalex, web or local.
            external_id: the source's id (PMID, NCT ID, DOI or URL).
            url: link to the record.
            title: the record's title.
            relevant_questions: question keys from the syllabus.
            key_excerpts: up to 3 short verbatim passages.
            citation_id: an existing citation id; omit to register a new one.
        """
        try:
            excerpts = list(key_excerpts or [])
            kept = review(citation_id, excerpts) if review is not None else excerpts
            message = collector.save_source(
                source_type,
                external_id,
                url,
                title,
                relevant_questions,
                kept,
                citation_id,
            ).message
        except (StateError, ValueError) as exc:
            raise _retry(exc) from exc
        dropped = len(excerpts) - len(kept)
        if dropped:
            note = f" ({dropped} excerpt(s) dropped: not verbatim text of the source)"
            message = message[: MAX_RESPONSE_CHARS - len(note)] + note
        return message

    @toolset.tool_plain
    def get_progress() -> str:
        """Sources saved per question against their minimums, and the next focus."""
        try:
            return collector.get_progress().text()
        except StateError as exc:
            raise _retry(exc) from exc

    @toolset.tool_plain
    def check_completion() -> str:
        """Whether every question has enough sources; what is missing otherwise."""
        try:
            return collector.check_completion().text()
        except StateError as exc:
            raise _retry(exc) from exc

    return toolset
