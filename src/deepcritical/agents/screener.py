"""Screening by the search agent with a model: :class:`LLMSourceScreener`.

After a search round the model is shown the refined question, the checklist (its keys and
descriptions: the run's syllabus) and the round's new records, fenced as untrusted data
(:mod:`deepcritical.llm.fencing`). It screens them through the run's question-aware source
tools (:func:`deepcritical.agents.source_tools.source_toolset` over the run's
:class:`~deepcritical.state.sources.SourceCollector`): ``save_source`` for every record that
helps answer a checklist question (``relevant_questions`` = checklist keys, ``key_excerpts`` =
verbatim passages, ``citation_id`` = the evidence id), ``get_progress`` and
``check_completion`` to see what is missing; its structured output (:class:`ScreenerOutput`)
says relevant / partial / off-topic with a reason per record, and the next queries.

Under a structured-output strategy other than tool calls (``json_schema``, ``json_object``:
a grammar, which forbids tool calls; ``prompted``), the model is not given tools: it answers
one :class:`ScreeningDecisions` object with one :class:`RecordDecision` per record of the
round, keyed by its evidence id, whose schema bounds every choice (the round's ids as the
object's keys, the status and the checklist keys as enums:
:func:`deepcritical.llm.choices.with_choices`). The screener then saves each record it called
relevant or partial through the same collector (``save_source`` with its checklist keys and
its verbatim excerpt), so what follows is the same as with the tools. A decision that names
no checklist key for a record it keeps, or a record left without a decision, goes back to the
model as a retry.

What the collector holds afterwards decides (:meth:`LLMSourceScreener.screen`): a record saved
for at least one checklist question is ``relevant`` (``partial`` when the model says so) and
answers those questions; a record not saved is ``off_topic``, with the model's reason or "the
search agent did not save it for any question". Excerpts that are not verbatim text of their
record are dropped before they are saved (:func:`verbatim_excerpts`); saves naming a record
not of this round are refused. When the call fails, the saves it made are undone
(:meth:`~deepcritical.state.sources.SourceCollector.forget_questions`) and the error raised,
so the caller can fall back to calibrated screening.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

from pydantic import BaseModel, Field, WithJsonSchema

from deepcritical.agents.queries import fresh_queries
from deepcritical.agents.source_tools import source_toolset
from deepcritical.llm.agent_config import LLMConfig
from deepcritical.llm.choices import with_choices
from deepcritical.llm.fencing import Fence, evidence_body, new_fence
from deepcritical.llm.lenient import LenientStrList, normalise_evidence_ids
from deepcritical.llm.runner import ModelRetry, StructuredAgent
from deepcritical.llm.templates import render_prompt
from deepcritical.models import Evidence, ResearchPlan, Screening
from deepcritical.state.sources import SavedSource, SourceCollector

__all__ = [
    "LLMSourceScreener",
    "RecordDecision",
    "ScreenedItem",
    "ScreenedRecord",
    "ScreenerOutput",
    "ScreeningDecisions",
    "ScreeningOutcome",
    "verbatim_excerpts",
]

MAX_NEXT_QUERIES = 4
STATUSES = ("relevant", "partial", "off_topic")
NOT_SAVED = "the search agent did not save it for any question"
_QUOTES = "\"'“”‘’«»…. "


class ScreenedItem(BaseModel):
    """The model's word on one record: ``citation_id`` (its evidence id), ``status``
    (``relevant``, ``partial`` or ``off_topic``; read leniently) and a one-line ``reason``."""

    citation_id: str
    status: str = "relevant"
    reason: str = ""

    def screening(self) -> Screening:
        """:attr:`status` as a :class:`Screening` (anything naming "off" or "irrelevant" is
        off-topic, anything naming "partial" partial, the rest relevant)."""
        text = self.status.lower()
        if "off" in text or "irrelevant" in text or "exclude" in text:
            return Screening.OFF_TOPIC
        return Screening.PARTIAL if "partial" in text else Screening.RELEVANT


class ScreenerOutput(BaseModel):
    """The screener's structured output (after its tool calls)."""

    screened: list[ScreenedItem] = Field(default_factory=list)
    next_queries: LenientStrList = Field(default_factory=list)
    progress: str = ""


class RecordDecision(BaseModel):
    """The model's word on one record when it screens without tools: a one-line ``reason``,
    the ``status`` (``relevant``, ``partial``, ``off_topic``; an enum in the schema, read
    leniently as :class:`ScreenedItem` reads it), the ``checklist_keys`` it helps answer
    (bounded per call to the plan's keys) and one ``excerpt`` copied from it (kept only when
    verbatim). The schema bounds the strings (``maxLength``) so that a small model's answer
    for a whole round fits its output budget."""

    reason: str = Field(default="", json_schema_extra={"maxLength": 100})
    status: Annotated[str, WithJsonSchema({"type": "string", "enum": list(STATUSES)})] = "relevant"
    checklist_keys: LenientStrList = Field(
        default_factory=list, json_schema_extra={"minItems": 1, "maxItems": 3}
    )
    excerpt: str = Field(default="", json_schema_extra={"maxLength": 120})

    def item(self, citation_id: str) -> ScreenedItem:
        """This decision as the :class:`ScreenedItem` of record ``citation_id``."""
        return ScreenedItem(citation_id=citation_id, status=self.status, reason=self.reason)


class ScreeningDecisions(BaseModel):
    """The screener's output without tools: ``decisions`` maps each record's evidence id to
    its :class:`RecordDecision` (the schema of a call lists exactly the round's ids as keys),
    then up to 2 ``next_queries`` and one line of ``progress``."""

    decisions: dict[str, RecordDecision] = Field(default_factory=dict)
    next_queries: LenientStrList = Field(default_factory=list, json_schema_extra={"maxItems": 2})
    progress: str = Field(default="", json_schema_extra={"maxLength": 100})


@dataclass(frozen=True)
class _Round:
    """What a call's decisions are checked against: the round's ids and the checklist keys."""

    ids: tuple[str, ...]
    keys: frozenset[str]


def _decisions_by_id(output: ScreeningDecisions) -> dict[str, RecordDecision]:
    """The decisions keyed by normalised evidence id (``"e3"``, ``"[E3]"`` -> ``"E3"``)."""
    by_id: dict[str, RecordDecision] = {}
    for key, decision in output.decisions.items():
        ids = normalise_evidence_ids(key)
        if len(ids) == 1:
            by_id.setdefault(ids[0], decision)
    return by_id


def _check_decisions(shown: _Round, output: ScreeningDecisions) -> ScreeningDecisions:
    """Every record of the round has a decision; every record kept (relevant or partial)
    names at least one checklist key of the plan (unknown keys are dropped first). Anything
    else goes back to the model with what is wrong."""
    by_id = _decisions_by_id(output)
    problems = []
    missing = [i for i in shown.ids if i not in by_id]
    if missing:
        problems.append(f"give a decision for every record; missing: {', '.join(missing)}")
    kept: dict[str, RecordDecision] = {}
    for evidence_id in shown.ids:
        decision = by_id.get(evidence_id)
        if decision is None:
            continue
        keys = [k.strip() for k in decision.checklist_keys if k.strip() in shown.keys]
        kept[evidence_id] = decision.model_copy(update={"checklist_keys": keys})
        off = decision.item(evidence_id).screening() == Screening.OFF_TOPIC
        if not off and not keys:
            problems.append(
                f"{evidence_id} is kept but names no checklist key; use keys from: "
                + ", ".join(sorted(shown.keys))
                + ", or call it off_topic"
            )
    if problems:
        raise ModelRetry("; ".join(problems))
    return output.model_copy(update={"decisions": kept})


@dataclass(frozen=True)
class ScreenedRecord:
    """The screening of one record: ``status`` and ``reason``; ``checklist_keys`` the checklist
    questions it was saved for (empty when off-topic); ``excerpts`` its saved verbatim
    passages."""

    evidence_id: str
    status: Screening
    reason: str
    checklist_keys: tuple[str, ...] = ()
    excerpts: tuple[str, ...] = ()


@dataclass(frozen=True)
class ScreeningOutcome:
    """A round's screening: one :class:`ScreenedRecord` per record (in the order given),
    ``next_queries`` (at most 4, for the next round) and ``progress``, the collector's
    completion check after the round (one line, < 500 characters)."""

    records: list[ScreenedRecord]
    next_queries: list[str]
    progress: str


def _normalise(text: str) -> str:
    return " ".join(text.split())


def verbatim_excerpts(evidence: Evidence, excerpts: Sequence[str]) -> list[str]:
    """The excerpts that are verbatim text of ``evidence`` (its title or content), white space
    collapsed and surrounding quotes or ellipses stripped; the others are dropped.
    Case-sensitive: a paraphrase or a change of case is not verbatim."""
    haystack = _normalise(f"{evidence.citation.title}\n{evidence.content}")
    kept = []
    for excerpt in excerpts:
        clean = _normalise(str(excerpt)).strip(_QUOTES)
        if clean and clean in haystack and clean not in kept:
            kept.append(clean)
    return kept


class LLMSourceScreener:
    """The search agent's screening of a round's new records (see the module docstring and
    ``prompts/screener.md``).

    Args:
        config: model, retries, timeout, usage tracker.
        snippet_chars: characters of each record's text shown to the model.
    """

    role = "screener"

    def __init__(self, config: LLMConfig, snippet_chars: int = 900) -> None:
        self.snippet_chars = snippet_chars
        self.uses_tools = config.output == "tool"
        """Whether the model screens through the source tools (tool-call output), or answers
        one :class:`ScreeningDecisions` (every other strategy)."""
        self._agent = config.structured(self.role, ScreenerOutput)
        self._decider: StructuredAgent[_Round, ScreeningDecisions] = config.structured(
            self.role, ScreeningDecisions, _Round, validator=_check_decisions
        )

    async def screen(
        self,
        plan: ResearchPlan,
        evidence: Sequence[Evidence],
        collector: SourceCollector,
        round_no: int = 1,
    ) -> ScreeningOutcome:
        """Screen ``evidence`` (the round's new records) into ``collector``: through its
        tools (:attr:`uses_tools`), else by one bounded :class:`ScreeningDecisions` answer
        whose kept records are saved into it.

        Args:
            plan: the run's plan (refined question, checklist: the collector's syllabus).
            evidence: the new records, with store ids.
            collector: the run's source collector; its syllabus must be set.
            round_no: the search round (shown to the model).

        Returns:
            the :class:`ScreeningOutcome` (nothing is written into the evidence items).

        Raises:
            AgentOutputError: invalid output after the retries.
            AgentModelError: the model call failed or timed out.
            StateError: the collector cannot be read.
        """
        if not evidence:
            return ScreeningOutcome([], [], "")
        if not self.uses_tools:
            return await self._screen_by_decisions(plan, evidence, collector, round_no)
        by_id = {e.id: e for e in evidence}
        fence = new_fence()
        instructions = render_prompt(
            "screener", untrusted=fence.note(), max_queries=MAX_NEXT_QUERIES
        )
        tools = source_toolset(collector, review=lambda cid, ex: self._review(by_id, cid, ex))
        try:
            output = await self._agent.run(
                instructions, self._prompt(plan, evidence, fence, round_no), None, [tools]
            )
        except Exception:
            await asyncio.to_thread(collector.forget_questions, list(by_id))
            raise
        judged = {j.citation_id.strip(): j for j in output.screened}
        contradicted = [  # saved, but called off-topic: the stricter word wins
            cid
            for cid, j in judged.items()
            if cid in by_id and j.screening() == Screening.OFF_TOPIC
        ]
        if contradicted:
            await asyncio.to_thread(collector.forget_questions, contradicted)
        return await self._outcome(plan, evidence, collector, judged, output.next_queries)

    async def _screen_by_decisions(
        self,
        plan: ResearchPlan,
        evidence: Sequence[Evidence],
        collector: SourceCollector,
        round_no: int,
    ) -> ScreeningOutcome:
        """Screen without tools: one :class:`ScreeningDecisions` answer whose schema bounds
        the ids and keys of this round, then the kept records saved through ``collector``
        (undone when a save fails)."""
        fence = new_fence()
        keys = [c.key for c in plan.checklist]
        shown = _Round(tuple(e.id for e in evidence), frozenset(keys))
        output_type = with_choices(
            ScreeningDecisions,
            {"decisions": list(shown.ids), "decisions.checklist_keys": keys},
        )
        progress = await asyncio.to_thread(collector.get_progress)
        instructions = render_prompt("screener_decisions", untrusted=fence.note(), max_queries=2)
        prompt = self._prompt(plan, evidence, fence, round_no, progress.text())
        output = await self._decider.run(instructions, prompt, shown, output_type=output_type)
        judged: dict[str, ScreenedItem] = {}
        try:
            for e in evidence:
                decision = output.decisions[e.id]  # every id: checked by _check_decisions
                judged[e.id] = decision.item(e.id)
                if judged[e.id].screening() == Screening.OFF_TOPIC:
                    continue
                c = e.citation
                await asyncio.to_thread(
                    collector.save_source,
                    c.source,
                    c.id,
                    c.url,
                    c.title,
                    decision.checklist_keys,
                    verbatim_excerpts(e, [decision.excerpt]),
                    e.id,
                )
        except Exception:
            await asyncio.to_thread(collector.forget_questions, list(shown.ids))
            raise
        return await self._outcome(plan, evidence, collector, judged, output.next_queries)

    @staticmethod
    async def _outcome(
        plan: ResearchPlan,
        evidence: Sequence[Evidence],
        collector: SourceCollector,
        judged: dict[str, ScreenedItem],
        next_queries: Sequence[str],
    ) -> ScreeningOutcome:
        """The round's outcome from what ``collector`` now holds and the model's word."""
        saved = await asyncio.to_thread(collector.saved_by_citation, [e.id for e in evidence])
        completion = await asyncio.to_thread(collector.check_completion)
        keys = {c.key for c in plan.checklist}
        return ScreeningOutcome(
            records=[_record(e.id, saved.get(e.id), judged.get(e.id), keys) for e in evidence],
            next_queries=fresh_queries(next_queries, [], MAX_NEXT_QUERIES),
            progress=completion.text(),
        )

    @staticmethod
    def _review(
        by_id: dict[str, Evidence], citation_id: str | None, excerpts: list[str]
    ) -> list[str]:
        """Refuse saves that name no record of this round; keep verbatim excerpts only."""
        item = by_id.get((citation_id or "").strip())
        if item is None:
            raise ValueError(
                "citation_id must be the id of one of this round's records: "
                + ", ".join(list(by_id)[:20])
            )
        return verbatim_excerpts(item, excerpts)

    def _prompt(
        self,
        plan: ResearchPlan,
        evidence: Sequence[Evidence],
        fence: Fence,
        round_no: int,
        progress: str | None = None,
    ) -> str:
        lines = [
            f"Research question: {plan.refined_question}",
            f"Search round: {round_no}",
            "",
            "Checklist questions (key: description; sources needed):",
            *(f"- {c.key}: {c.description} ({c.min_evidence})" for c in plan.checklist),
            *([f"Sources saved so far: {progress}"] if progress else []),
            "",
            f"The {len(evidence)} new records of this round "
            f"(ids: {', '.join(e.id for e in evidence)}):",
            "",
        ]
        blocks = []
        for e in evidence:
            c = e.citation
            record = f"Record: source_type={c.source}; external_id={c.id}; url={c.url or 'none'}"
            blocks.append(fence.wrap(e.id, record + "\n" + evidence_body(e, self.snippet_chars)))
        return "\n".join(lines) + "\n\n".join(blocks)


def _record(
    evidence_id: str,
    saved: SavedSource | None,
    judged: ScreenedItem | None,
    checklist_keys: set[str],
) -> ScreenedRecord:
    """One record's screening from what the collector holds (``saved``) and the model's word
    (``judged``): saved for a checklist question -> relevant or partial; not saved, or called
    off-topic by the model (even when saved: the stricter word wins) -> off-topic."""
    reason = _normalise(judged.reason)[:300] if judged is not None else ""
    keys = tuple(k for k in (saved.questions if saved else []) if k in checklist_keys)
    if judged is not None and judged.screening() == Screening.OFF_TOPIC:
        keys = ()
    if not keys:
        excluded = judged is not None and judged.screening() == Screening.OFF_TOPIC and reason
        return ScreenedRecord(
            evidence_id,
            Screening.OFF_TOPIC,
            f"off-topic: {reason}" if excluded else f"off-topic: {NOT_SAVED}",
        )
    partial = judged is not None and judged.screening() == Screening.PARTIAL
    status = Screening.PARTIAL if partial else Screening.RELEVANT
    head = "bears on part of the question" if partial else "addresses the question"
    why = f"{head}: saved by the search agent for {', '.join(keys)}"
    return ScreenedRecord(
        evidence_id,
        status,
        f"{why} ({reason})" if reason else why,
        checklist_keys=keys,
        excerpts=tuple(saved.key_excerpts) if saved else (),
    )
