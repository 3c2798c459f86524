"""The answer to a follow-up question on a finished run: extractive, from that run's evidence
store only, checked like the report.

No model and no new retrieval. The candidates are the run's on-topic items (screening did not
find them off-topic, no source marks them as retracted: the rule of
:meth:`deepcritical.orchestrators.run.ResearchRun.on_topic`). They are picked as the extractive
report writer picks its quotes (:class:`~deepcritical.writing.extractive.ExtractiveReportWriter`):
an item must mention :data:`~deepcritical.writing.extractive.MIN_KEY_TERMS` of the question's
key terms, and its best sentence must reach ``min_similarity`` to the question and
``relative_to_best`` of the best item's. The :data:`MAX_SOURCES` best items are quoted, one or
two sentences each, verbatim with their marker (``... lower risk [E3].``).

Then the report's checks: the quotes become a one-section report
(:meth:`~deepcritical.models.FollowUp.as_report`) with its references
(:func:`~deepcritical.report.citation_markers.references_for`), checked by
:func:`~deepcritical.report.validation.validate_report` and grounded by
:func:`~deepcritical.report.grounding.ground_report` with the run's embedder; only what
survives is kept. When nothing is relevant or nothing survives, the answer is
:data:`NOT_ANSWERED` with the suggestion to start a new run seeded with the question.

Text from sources is data: quoted verbatim, never interpreted.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from deepcritical.evidence.embeddings import Embedder
from deepcritical.evidence.keysentences import (
    KeySentence,
    mentioning_terms,
    rank_sentences,
    relevant_items,
    top_per_item,
)
from deepcritical.models import (
    ANSWER_HEADING,
    Evidence,
    FollowUp,
    ReportSection,
    ResearchReport,
    RunResult,
    marker_ids,
    on_topic_items,
)
from deepcritical.report.citation_markers import add_marker, references_for
from deepcritical.report.grounding import DEFAULT_THRESHOLD, ground_report
from deepcritical.report.validation import citation_problems, validate_report
from deepcritical.text.terms import extract_key_terms
from deepcritical.writing.extractive import MIN_KEY_TERMS

__all__ = [
    "MAX_SOURCES",
    "NOT_ANSWERED",
    "SENTENCES_PER_SOURCE",
    "answer_follow_up",
    "new_run_suggestion",
    "on_topic",
]

MAX_SOURCES = 3
"""Sources an answer quotes at most (the best by their best sentence)."""
SENTENCES_PER_SOURCE = 2
"""Sentences quoted per source at most."""
NOT_ANSWERED = "The evidence of this run does not answer this question."
"""The answer when no evidence of the run fits the question."""


def on_topic(result: RunResult) -> list[Evidence]:
    """The run's items that a report or an answer may cite, in store order: screening did not
    find them off-topic and no source marks them as retracted."""
    return on_topic_items(result.evidence)


def new_run_suggestion(question: str) -> str:
    """What to do when a run's evidence does not answer ``question``: the command that starts
    a new run seeded with it (the question shell-quoted)."""
    return (
        "Start a new run seeded with this question: "
        f"`deepcritical research {shlex.quote(question)}`"
    )


def _picks(
    question: str,
    evidence: Sequence[Evidence],
    embedder: Embedder,
    min_similarity: float,
    relative_to_best: float,
) -> list[list[KeySentence]]:
    """The quotes of the :data:`MAX_SOURCES` best relevant items, best item first, each
    item's sentences in reading order (the extractive writer's selection)."""
    terms = extract_key_terms(question)
    mentioning = mentioning_terms(evidence, terms, min(MIN_KEY_TERMS, len(terms)))
    ranked = rank_sentences(mentioning, question, embedder)
    relevant = relevant_items(ranked, min_similarity, relative_to_best)
    kept = [s for s in ranked if s.evidence_id in relevant]
    picks = top_per_item(kept, SENTENCES_PER_SOURCE)
    return list(picks.values())[:MAX_SOURCES]


def _unanswered(question: str, checked: ResearchReport | None = None) -> FollowUp:
    """The "does not answer" follow-up, with the figures of the checks when they ran."""
    follow_up = FollowUp(
        question=question,
        answer=NOT_ANSWERED,
        answered=False,
        suggestion=new_run_suggestion(question),
    )
    if checked is not None:
        follow_up.citation_validation = checked.metadata.citation_validation
        follow_up.grounding_check = checked.metadata.grounding_check
        follow_up.grounding_score = checked.metadata.grounding_score
        follow_up.grounding = checked.grounding
    return follow_up


def answer_follow_up(
    question: str,
    result: RunResult,
    embedder: Embedder,
    *,
    min_similarity: float = 0.3,
    relative_to_best: float = 0.5,
    threshold: float = DEFAULT_THRESHOLD,
) -> FollowUp:
    """The answer to ``question`` from the evidence of the finished run ``result`` (see the
    module docstring).

    Args:
        question: the follow-up question, already checked
            (:func:`deepcritical.orchestrators.deps.check_question`).
        result: the run's stored result; only its on-topic evidence is read.
        embedder: the run's embedder (the default thresholds are for all-MiniLM-L6-v2).
        min_similarity: cosine similarity an item's best sentence must reach (0.3, as the
            extractive report writer's).
        relative_to_best: share of the best item's similarity it must reach too (0.5).
        threshold: the grounding threshold (cosine similarity, ``Settings.grounding_threshold``).

    Returns:
        The :class:`~deepcritical.models.FollowUp`; its citations pass
        :func:`~deepcritical.report.validation.citation_problems` against the run's on-topic
        evidence. Synchronous and CPU-bound (embeddings): call it through
        ``asyncio.to_thread`` from async code. The embedder's own errors propagate.
    """
    evidence = on_topic(result)
    picks = _picks(question, evidence, embedder, min_similarity, relative_to_best)
    if not picks:
        return _unanswered(question)
    text = "\n\n".join(
        " ".join(add_marker(s.text, s.evidence_id) for s in group) for group in picks
    )
    draft = FollowUp(question=question, answer=text, answered=True).as_report()
    draft.references = references_for(draft.texts(), evidence)
    by_id = {e.id: e for e in evidence}
    checked = validate_report(draft, by_id)
    checked = ground_report(checked, by_id, embedder, threshold=threshold)
    answer = _surviving_answer(checked)
    if not answer or citation_problems(checked, by_id):
        return _unanswered(question, checked)
    return FollowUp(
        question=question,
        answer=answer,
        answered=True,
        references=checked.references,
        citation_validation=checked.metadata.citation_validation,
        grounding_check=checked.metadata.grounding_check,
        grounding_score=checked.metadata.grounding_score,
        grounding=checked.grounding,
    )


def _surviving_answer(checked: ResearchReport) -> str:
    """The answer's text after the checks: the answer section's content when it still cites
    something, else ``""``."""
    sections: list[ReportSection] = [s for s in checked.findings if s.heading == ANSWER_HEADING]
    text = sections[0].content.strip() if sections else ""
    return text if marker_ids(text) else ""
