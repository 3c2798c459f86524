"""Screening: does an evidence item address the run's question?

Every item gets a calibrated **relevance** to the refined question, in 0..1 and comparable
across runs and questions (not rank-normalised): the probability, under a logistic model, that
the item is one that answers the question. Its inputs (:class:`ScreeningFeatures`) are

- ``similarity``: the cosine between the question and the item (title and text, the embedding
  the evidence store keeps for it; all-MiniLM-L6-v2 in production);
- ``coverage``: the share of the question's key concepts (:func:`deepcritical.text.terms.
  extract_key_terms`: population/condition, intervention/exposure, outcome...) that the item's
  title, text or MeSH terms mention.

The model's parameters (:class:`RelevanceCalibration`) are fitted on the PubMedQA dev questions
(the gold abstract against the other abstracts retrieved for the question) by
``benchmarks/fit_relevance.py`` and shipped in ``relevance_calibration.json`` beside this
module. An item whose full text was read (:attr:`Evidence.passages`) is also scored on each of the
passages of its full text that best answer the question (:func:`deepcritical.evidence.passages.
rank_passages`; similarity to the passage, concepts in the title, the passage and the MeSH
terms), and keeps the best of these and its abstract's: a paper whose answer lies in its body
is not screened out for what its abstract leaves unsaid. The calibration, fitted on abstracts,
is applied to a passage as to an abstract of similar length.

From the relevance, an item is ``relevant``, ``partial`` or ``off_topic``
(:class:`~deepcritical.models.Screening`), with a one-line reason. Off-topic items stay in the
store but reach no checklist item, hypothesis, judge, writer, verdict or reference.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np
from numpy.typing import NDArray

from deepcritical.evidence.mmr import unit_rows
from deepcritical.evidence.passages import PASSAGES_PER_QUERY, rank_passages
from deepcritical.evidence.store import EvidenceStore
from deepcritical.models import Evidence, Passage, Screening
from deepcritical.text.terms import extract_key_terms, matched_terms

__all__ = [
    "RelevanceCalibration",
    "ScreeningFeatures",
    "ScreeningResult",
    "default_calibration",
    "screen_items",
    "screening_features",
]

CALIBRATION_FILE = "relevance_calibration.json"


@dataclass(frozen=True)
class ScreeningFeatures:
    """What screening reads from one item: cosine ``similarity`` to the question (-1..1), the
    key ``terms`` of the question and the ones the item mentions (``matched``)."""

    similarity: float
    terms: tuple[str, ...]
    matched: tuple[str, ...]

    @property
    def coverage(self) -> float:
        """Share of the question's key terms the item mentions (1.0 when it has none)."""
        return len(self.matched) / len(self.terms) if self.terms else 1.0


@dataclass(frozen=True)
class RelevanceCalibration:
    """The logistic model of relevance and its two cut-offs.

    ``relevance = 1 / (1 + exp(-(intercept + similarity_weight * similarity +
    coverage_weight * coverage)))``; ``relevant_at`` <= relevance: relevant; ``partial_at`` <=
    relevance < ``relevant_at``: partial; below: off-topic.
    """

    intercept: float
    similarity_weight: float
    coverage_weight: float
    relevant_at: float
    partial_at: float
    embedding_model: str = "sentence-transformers/all-MiniLM-L6-v2"
    """The embedding model whose cosines the model was fitted on (it holds for no other)."""

    def fits(self, embedder: object) -> bool:
        """Whether ``embedder`` is the model this calibration was fitted on (its
        ``model_name`` names it, with or without the ``sentence-transformers/`` prefix)."""
        name = str(getattr(embedder, "model_name", ""))
        return bool(name) and name.rsplit("/", 1)[-1] == self.embedding_model.rsplit("/", 1)[-1]

    def score(self, similarity: float, coverage: float) -> float:
        """The calibrated relevance (0..1) of an item of cosine ``similarity`` to the
        question mentioning the share ``coverage`` of its key concepts."""
        z = self.intercept + self.similarity_weight * similarity + self.coverage_weight * coverage
        return 1.0 / (1.0 + math.exp(-max(min(z, 50.0), -50.0)))

    def relevance(self, features: ScreeningFeatures) -> float:
        """The calibrated relevance (0..1) of an item with ``features``."""
        return self.score(features.similarity, features.coverage)

    def status(self, relevance: float) -> Screening:
        """The screening status of an item of ``relevance``."""
        if relevance >= self.relevant_at:
            return Screening.RELEVANT
        if relevance >= self.partial_at:
            return Screening.PARTIAL
        return Screening.OFF_TOPIC


@cache
def default_calibration() -> RelevanceCalibration:
    """The shipped calibration (``relevance_calibration.json`` in this package).

    Raises:
        FileNotFoundError, KeyError, ValueError: the file is missing or malformed (a broken
            installation).
    """
    text = resources.files("deepcritical.evidence").joinpath(CALIBRATION_FILE).read_text("utf-8")
    data = json.loads(text)
    return RelevanceCalibration(
        intercept=float(data["intercept"]),
        similarity_weight=float(data["similarity_weight"]),
        coverage_weight=float(data["coverage_weight"]),
        relevant_at=float(data["relevant_at"]),
        partial_at=float(data["partial_at"]),
        embedding_model=str(data["embedding_model"]),
    )


@dataclass(frozen=True)
class ScreeningResult:
    """The screening of one item: its calibrated ``relevance``, ``status`` and ``reason``."""

    evidence_id: str
    relevance: float
    status: Screening
    reason: str


def _mentioned_text(evidence: Evidence) -> str:
    return f"{evidence.citation.title}\n{evidence.content}\n{' '.join(evidence.mesh_terms)}"


def screening_features(
    store: EvidenceStore, question: str, ids: Sequence[str]
) -> dict[str, ScreeningFeatures]:
    """The features of the store's items ``ids`` for ``question``: id -> features.

    Raises:
        KeyError: an id is not in the store.
    """
    terms = tuple(extract_key_terms(question))
    similarity = store.similarity(question, ids)
    return {
        evidence_id: ScreeningFeatures(
            similarity=similarity[evidence_id],
            terms=terms,
            matched=tuple(matched_terms(_mentioned_text(store.require(evidence_id)), terms)),
        )
        for evidence_id in dict.fromkeys(ids)
    }


def _reason(status: Screening, features: ScreeningFeatures, where: str = "") -> str:
    concepts = (
        f"mentions {len(features.matched)} of {len(features.terms)} key concepts"
        + (f" ({', '.join(features.matched)})" if features.matched else "")
        if features.terms
        else "the question has no key concept to look for"
    )
    verdict = {
        Screening.RELEVANT: "addresses the question",
        Screening.PARTIAL: "bears on part of the question",
        Screening.OFF_TOPIC: "off-topic",
    }[status]
    about = f" in its full text ({where})" if where else ""
    return f"{verdict}{about}: similarity {features.similarity:.2f} to the question; {concepts}"


def _passage_text(evidence: Evidence, passage: Passage) -> str:
    return f"{evidence.citation.title}\n{passage.text}\n{' '.join(evidence.mesh_terms)}"


def _best_passage(
    store: EvidenceStore,
    question: str,
    vector: NDArray[np.float32],
    evidence: Evidence,
    terms: tuple[str, ...],
    calibration: RelevanceCalibration,
) -> tuple[float, ScreeningFeatures, str] | None:
    """``(relevance, features, locator)`` of the passage of ``evidence``'s full text that
    scores best for ``question`` (embedded as ``vector``), among those that best answer it;
    ``None`` without passages."""
    if not evidence.passages:
        return None
    embedder = store.embedder
    best: tuple[float, ScreeningFeatures, str] | None = None
    for scored in rank_passages(evidence, question, vector, embedder, PASSAGES_PER_QUERY):
        features = ScreeningFeatures(
            similarity=scored.similarity,
            terms=terms,
            matched=tuple(matched_terms(_passage_text(evidence, scored.passage), terms)),
        )
        relevance = calibration.relevance(features)
        if best is None or relevance > best[0]:
            best = (relevance, features, scored.passage.locator())
    return best


def screen_items(
    store: EvidenceStore,
    question: str,
    ids: Sequence[str],
    calibration: RelevanceCalibration,
) -> list[ScreeningResult]:
    """Screen the store's items ``ids`` against ``question`` and record the outcome on each
    item (``relevance``, ``screening``, ``screening_reason``; the source's rank is kept in
    ``search_rank``); the results, in ``ids`` order.
    A full-text item is scored on its abstract and on its best passages, and keeps the best
    (the reason then names the passage). Blocking (it embeds the question): call it in a
    worker thread from async code.

    Raises:
        KeyError: an id is not in the store.
    """
    results = []
    terms = tuple(extract_key_terms(question))
    vector: NDArray[np.float32] | None = None
    for evidence_id, features in screening_features(store, question, ids).items():
        item = store.require(evidence_id)
        relevance = calibration.relevance(features)
        where = ""
        if item.passages and vector is None:  # embedded once, for the first full text
            vector = unit_rows(np.asarray(store.embedder.embed([question]), dtype=np.float32))[0]
        body = (
            _best_passage(store, question, vector, item, terms, calibration)
            if vector is not None
            else None
        )
        if body is not None and body[0] > relevance:
            relevance, features, where = body
        status = calibration.status(relevance)
        if item.search_rank is None:  # the source's rank, before the score replaces it
            item.search_rank = item.relevance
        item.relevance = round(relevance, 4)
        item.screening = status
        item.screening_reason = _reason(status, features, where)
        results.append(ScreeningResult(evidence_id, item.relevance, status, item.screening_reason))
    return results
