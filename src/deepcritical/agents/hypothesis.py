"""Hypothesis generators: mechanistic hypotheses from a slice of the evidence.

- :class:`LLMHypothesisGenerator`: the model reads the fenced slice and proposes hypotheses
  (drug -> target -> pathway -> effect) with supporting and contradicting evidence ids; ids
  outside the slice are dropped.
- :class:`ExtractiveHypothesisGenerator`: one hypothesis, the question phrased as a claim;
  supporting/contradicting items by their stance, read from their conclusions by calibrated
  cue rules (:mod:`deepcritical.evidence.stance`), relative to the question's polarity.

Both record each item's stance towards the first hypothesis on the item (``Evidence.stance``,
``stance_reason``): the verdict on a yes/no question is read from them.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, Field

from deepcritical.evidence.embeddings import Embedder
from deepcritical.evidence.keysentences import (
    KeySentence,
    mentioning_terms,
    rank_sentences,
    relevant_items,
)
from deepcritical.evidence.stance import read_stance
from deepcritical.llm.agent_config import LLMConfig
from deepcritical.llm.choices import with_choices
from deepcritical.llm.fencing import fence_evidence, new_fence
from deepcritical.llm.lenient import EvidenceIdList, LenientFraction, LenientStr
from deepcritical.llm.templates import render_prompt
from deepcritical.models import Evidence, Hypothesis, ResearchPlan, Screening, Stance
from deepcritical.text.question_claim import question_to_claim
from deepcritical.text.terms import extract_key_terms, required_term_count

__all__ = [
    "MODEL_NEUTRAL",
    "NOT_ADDRESSED",
    "ExtractiveHypothesisGenerator",
    "HypothesisDraft",
    "HypothesisOutput",
    "ItemStance",
    "LLMHypothesisGenerator",
    "extractive_confidence",
    "hypotheses_from_output",
    "model_stances",
    "read_stances",
    "record_stances",
]

NO_SUPPORT_MAX_CONFIDENCE = 0.2
_HYPOTHESIS_ID = re.compile(r"^H\d+$")


class HypothesisDraft(BaseModel):
    """One hypothesis as the model writes it (links it cannot name stay empty)."""

    id: LenientStr = Field(default="", description="id of a previous hypothesis revised, or ''")
    statement: str
    drug: LenientStr = ""
    target: LenientStr = ""
    pathway: LenientStr = ""
    effect: LenientStr = ""
    confidence: LenientFraction = 0.5
    supporting_evidence_ids: EvidenceIdList = Field(default_factory=list)
    contradicting_evidence_ids: EvidenceIdList = Field(default_factory=list)


class HypothesisOutput(BaseModel):
    """The LLM hypothesis generator's output."""

    hypotheses: list[HypothesisDraft] = Field(default_factory=list)


def _next_id(used: set[str]) -> str:
    n = 1
    while f"H{n}" in used:
        n += 1
    return f"H{n}"


def hypotheses_from_output(
    output: HypothesisOutput,
    allowed_ids: Sequence[str],
    previous: Sequence[Hypothesis],
    max_hypotheses: int,
) -> list[Hypothesis]:
    """Model drafts -> :class:`Hypothesis` objects citing only ``allowed_ids``.

    - evidence ids not in ``allowed_ids`` are dropped; an id listed as both supporting and
      contradicting is dropped from both (the model contradicted itself);
    - a hypothesis with no supporting evidence left has its confidence capped at 0.2;
    - drafts with an empty statement are dropped, at most ``max_hypotheses`` are kept;
    - ids: a draft keeps the id of the previous hypothesis it names (``H2``); the others get
      the next free ``H<n>``.
    """
    allowed = set(allowed_ids)
    previous_ids = {h.id for h in previous if h.id}
    used: set[str] = set()
    out: list[Hypothesis] = []
    for draft in output.hypotheses:
        statement = " ".join(draft.statement.split())
        if not statement:
            continue
        supporting = [e for e in draft.supporting_evidence_ids if e in allowed]
        contradicting = [e for e in draft.contradicting_evidence_ids if e in allowed]
        both = set(supporting) & set(contradicting)
        supporting = [e for e in supporting if e not in both]
        contradicting = [e for e in contradicting if e not in both]
        confidence = draft.confidence
        if not supporting:
            confidence = min(confidence, NO_SUPPORT_MAX_CONFIDENCE)
        hid = draft.id.strip().upper()
        if not (_HYPOTHESIS_ID.match(hid) and hid in previous_ids and hid not in used):
            hid = _next_id(used | previous_ids)
        used.add(hid)
        out.append(
            Hypothesis(
                id=hid,
                statement=statement,
                drug=draft.drug,
                target=draft.target,
                pathway=draft.pathway,
                effect=draft.effect,
                confidence=confidence,
                supporting_evidence_ids=supporting,
                contradicting_evidence_ids=contradicting,
            )
        )
        if len(out) >= max_hypotheses:
            break
    return out


MODEL_NEUTRAL = "the model cited it neither for nor against the first hypothesis"
"""The stance reason of an item the model left out of the first hypothesis' lists."""


def model_stances(hypotheses: Sequence[Hypothesis]) -> dict[str, tuple[Stance, str]]:
    """The model's stance judgement: id -> (stance, reason) for the items the first
    hypothesis lists as supporting or contradicting (``{}`` with no hypothesis)."""
    if not hypotheses:
        return {}
    first = hypotheses[0]
    name = first.id or "H1"
    out = {
        e: (Stance.SUPPORTS, f"the model judged it to support {name}")
        for e in first.supporting_evidence_ids
    }
    out.update(
        {
            e: (Stance.CONTRADICTS, f"the model judged it to contradict {name}")
            for e in first.contradicting_evidence_ids
        }
    )
    return out


def _format_previous(previous: Sequence[Hypothesis]) -> str:
    if not previous:
        return "(none yet)"
    lines = []
    for h in previous:
        chain = " -> ".join(p for p in [h.drug, h.target, h.pathway, h.effect] if p)
        lines.append(
            f"- {h.id or '(no id)'}: {h.statement}"
            + (f" [chain: {chain}]" if chain else "")
            + f" (confidence {h.confidence:.2f})"
        )
    return "\n".join(lines)


class LLMHypothesisGenerator:
    """Hypotheses written by a model (see ``prompts/hypothesis.md``).

    Args:
        config: model, retries, timeout, usage tracker.
        max_hypotheses: hypotheses kept (1..10).
        snippet_chars: characters of each source's content shown to the model.
    """

    role = "hypothesis"

    def __init__(
        self, config: LLMConfig, max_hypotheses: int = 4, snippet_chars: int = 1200
    ) -> None:
        self.max_hypotheses = max(1, min(10, max_hypotheses))
        self.snippet_chars = snippet_chars
        self._agent = config.structured(self.role, HypothesisOutput)

    async def hypothesize(
        self,
        plan: ResearchPlan,
        evidence: Sequence[Evidence],
        previous: Sequence[Hypothesis],
    ) -> list[Hypothesis]:
        """Hypotheses citing only ids of ``evidence`` (previous ones may be revised). Each
        item's stance is recorded on it (in place): the model's judgement on the first
        hypothesis (:func:`model_stances`), neutral for the items it cites for neither side.

        Raises:
            AgentOutputError: invalid output after the retries.
            AgentModelError: the model call failed or timed out.
        """
        if not evidence:
            return []
        fence = new_fence()
        instructions = render_prompt(
            "hypothesis", max_hypotheses=self.max_hypotheses, untrusted=fence.note()
        )
        prompt = "\n".join(
            [
                f"Research question: {plan.refined_question}",
                "",
                "Previous hypotheses:",
                _format_previous(previous),
                "",
                f"Sources ({len(evidence)}; cite them only by id, "
                f"{', '.join(e.id for e in evidence)}):",
                "",
                fence_evidence(evidence, fence, self.snippet_chars),
            ]
        )
        ids = [e.id for e in evidence]
        bounded = with_choices(
            HypothesisOutput,
            {
                "hypotheses.id": ["", *(h.id for h in previous)],
                "hypotheses.supporting_evidence_ids": ids,
                "hypotheses.contradicting_evidence_ids": ids,
            },
        )
        output = await self._agent.run(instructions, prompt, None, output_type=bounded)
        hypotheses = hypotheses_from_output(output, ids, previous, self.max_hypotheses)
        record_stances(evidence, model_stances(hypotheses), MODEL_NEUTRAL)
        return hypotheses


def extractive_confidence(supporting: int, contradicting: int, prior: float = 2.0) -> float:
    """Supporting share tempered by count: ``s / (s + c) * n / (n + prior)``, n = s + c.

    0 with no evidence; e.g. 3 supporting, 0 contradicting -> 0.6; 6 and 1 -> 0.67.
    """
    n = supporting + contradicting
    if n == 0:
        return 0.0
    return round(supporting / n * n / (n + prior), 3)


@dataclass(frozen=True)
class ItemStance:
    """How one evidence item bears on the question (extractive reading).

    Attributes:
        evidence_id: the item's id.
        relevance: similarity of its best sentence to the question.
        stance: supports / contradicts / neutral, relative to the question's polarity.
        reason: why (the cue read in its conclusions, :class:`StanceReading`).
        sentences: its best-ranked finding sentences.
    """

    evidence_id: str
    relevance: float
    stance: Stance
    reason: str
    sentences: tuple[KeySentence, ...]


NOT_ADDRESSED = "its sentences do not address the question's claim closely enough"
"""The stance reason of an on-topic item the extractive reading does not weigh."""


def read_stances(
    evidence: Sequence[Evidence],
    question: str,
    embedder: Embedder,
    threshold: float,
    relative_to_best: float = 0.6,
    key_terms: Sequence[str] | None = None,
) -> list[ItemStance]:
    """The stance of each relevant item of ``evidence`` towards ``question``.

    An item is relevant when its best candidate sentence has similarity >= ``threshold`` and
    >= ``relative_to_best`` times the best similarity of all items, and when its title, text
    and MeSH terms mention the question's key terms (``key_terms``, default: extracted from
    the question; all of them up to three, all but one beyond, words matched by stem): an
    abstract on metformin and diabetes says nothing for or against "metformin reduces cancer
    risk in diabetes". An item screened ``relevant``
    (:mod:`deepcritical.evidence.screening`, a calibrated judgement of the same thing) is
    always read: the term and similarity rules apply to the others (partially relevant or
    unscreened items). Its stance is read from its conclusion sentences by the calibrated cue
    rules of :func:`deepcritical.evidence.stance.read_stance` (null finding -> contradicts,
    positive -> supports, hedged or mixed -> neutral; reversed for a negated question).
    """
    terms = list(key_terms) if key_terms else extract_key_terms(question)
    needed = required_term_count(len(terms))
    screened = [e for e in evidence if e.screening is Screening.RELEVANT]
    others = [e for e in evidence if e.screening is not Screening.RELEVANT]
    ranked = rank_sentences(
        [*screened, *mentioning_terms(others, terms, needed)], question, embedder
    )
    relevant = relevant_items(ranked, threshold, relative_to_best)
    by_item: dict[str, list[KeySentence]] = {}
    for s in ranked:
        by_item.setdefault(s.evidence_id, []).append(s)
    for e in screened:  # screening already found it addresses the question
        if e.id in by_item and e.id not in relevant:
            relevant[e.id] = max(s.similarity for s in by_item[e.id])
    stances: list[ItemStance] = []
    for item in evidence:
        sentences = by_item.get(item.id, [])
        if not sentences or item.id not in relevant:
            continue
        reading = read_stance(item, question)
        stances.append(
            ItemStance(
                item.id, relevant[item.id], reading.stance, reading.reason, tuple(sentences[:2])
            )
        )
    return stances


def record_stances(
    evidence: Sequence[Evidence], stances: Mapping[str, tuple[Stance, str]], default_reason: str
) -> None:
    """Set ``stance`` and ``stance_reason`` on every item of ``evidence`` (in place): from
    ``stances`` (id -> (stance, reason)), else neutral with ``default_reason``."""
    for item in evidence:
        stance, reason = stances.get(item.id, (Stance.NEUTRAL, default_reason))
        item.stance = stance
        item.stance_reason = reason


class ExtractiveHypothesisGenerator:
    """One hypothesis built from the question, with no model.

    statement: the refined question phrased as a claim (:func:`question_to_claim`); drug: the
    claim's subject when the question names one, else empty; target/pathway/effect: empty.
    Supporting/contradicting: the items whose stance (:func:`read_stances`) is supports /
    contradicts; neutral ones are in neither. Every item given gets its ``stance`` and
    ``stance_reason`` recorded on it (in place; neutral, :data:`NOT_ADDRESSED`, for the items
    not weighed). Confidence: :func:`extractive_confidence`.

    Args:
        embedder: sentence embedder (the run's).
        relevance_threshold: minimum cosine similarity between an item's best sentence and the
            question (default 0.3, for all-MiniLM-L6-v2).
        relative_to_best: an item must also reach this share of the best item's similarity.
    """

    def __init__(
        self,
        embedder: Embedder,
        relevance_threshold: float = 0.3,
        relative_to_best: float = 0.6,
    ) -> None:
        self.embedder = embedder
        self.relevance_threshold = relevance_threshold
        self.relative_to_best = relative_to_best

    async def hypothesize(
        self,
        plan: ResearchPlan,
        evidence: Sequence[Evidence],
        previous: Sequence[Hypothesis],
    ) -> list[Hypothesis]:
        """``[hypothesis]``, or ``[]`` when no item of ``evidence`` is relevant (each item's
        stance is recorded on it either way)."""
        if not evidence:
            return []
        stances = await asyncio.to_thread(
            read_stances,
            evidence,
            plan.refined_question,
            self.embedder,
            self.relevance_threshold,
            self.relative_to_best,
            plan.key_terms or None,
        )
        record_stances(
            evidence, {s.evidence_id: (s.stance, s.reason) for s in stances}, NOT_ADDRESSED
        )
        if not stances:
            return []
        supporting = [s.evidence_id for s in stances if s.stance is Stance.SUPPORTS]
        contradicting = [s.evidence_id for s in stances if s.stance is Stance.CONTRADICTS]
        claim = question_to_claim(plan.refined_question)
        hid = previous[0].id if previous and previous[0].id else "H1"
        return [
            Hypothesis(
                id=hid,
                statement=claim.statement,
                drug=claim.subject,
                confidence=extractive_confidence(len(supporting), len(contradicting)),
                supporting_evidence_ids=supporting,
                contradicting_evidence_ids=contradicting,
            )
        ]
