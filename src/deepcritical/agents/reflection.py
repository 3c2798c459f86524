"""Reflection after a search round: which checklist items are satisfied, partial or
unsatisfied, and which follow-up searches the next round should run.

- :class:`ExtractiveReflector` (no model) reads the statuses the evidence assignment gave
  the checklist (:func:`~deepcritical.agents.checklist.assign_to_checklist`) and proposes
  keyword queries for every item not satisfied
  (:func:`~deepcritical.agents.queries.item_queries`).
- :class:`LLMReflector` shows the model the checklist and the compressed findings (one line
  per evidence item: id, design, title and the start of its text, fenced as data) and asks
  for a status and what is missing per item, plus follow-up queries.

:func:`apply_reflection` writes the statuses into the plan, with one rule in code: an item
with no on-topic evidence assigned is never "satisfied" (a model's say-so does not replace
evidence, and off-topic evidence is no evidence).
The orchestrator stops gathering when every item is satisfied (stop reason
``all_satisfied``) and puts the follow-up queries first in the next round.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from pydantic import BaseModel, Field

from deepcritical.agents.queries import fresh_queries, item_queries
from deepcritical.evidence.digest import compressed_findings
from deepcritical.llm.agent_config import LLMConfig
from deepcritical.llm.choices import with_choices
from deepcritical.llm.fencing import new_fence
from deepcritical.llm.lenient import LenientStrList
from deepcritical.llm.templates import render_prompt
from deepcritical.models import ChecklistStatus, Evidence, ResearchPlan

__all__ = [
    "MAX_FOLLOW_UPS",
    "ExtractiveReflector",
    "ItemReflection",
    "LLMReflector",
    "Reflection",
    "apply_reflection",
]

MAX_FOLLOW_UPS = 6
"""Follow-up queries kept from one reflection."""


class ItemReflection(BaseModel):
    """The state of one checklist item after a round."""

    key: str
    status: ChecklistStatus
    missing: str = Field(default="", description="what evidence is still missing (one line)")


class Reflection(BaseModel):
    """What a reflection step concluded after a round."""

    items: list[ItemReflection] = Field(default_factory=list)
    follow_up_queries: LenientStrList = Field(default_factory=list)
    reasoning: str = ""

    @property
    def all_satisfied(self) -> bool:
        """True when there is at least one item and every item is satisfied."""
        return bool(self.items) and all(i.status == ChecklistStatus.SATISFIED for i in self.items)


def apply_reflection(
    plan: ResearchPlan, reflection: Reflection, off_topic: Collection[str] = ()
) -> Reflection:
    """Set the plan's checklist statuses from ``reflection``; return the reflection as
    applied (every plan item once, in plan order; unknown keys ignored; items the
    reflection left out keep their status; "satisfied" or "partial" without evidence becomes
    "unsatisfied", so checklist coverage never counts an item that nothing answers, and
    evidence ids in ``off_topic`` do not count as evidence)."""
    given = {r.key: r for r in reflection.items}
    applied: list[ItemReflection] = []
    for item in plan.checklist:
        r = given.get(item.key)
        status = r.status if r is not None else item.status
        counted = [i for i in item.evidence_ids if i not in off_topic]
        if not counted:
            status = ChecklistStatus.UNSATISFIED
        item.status = status
        applied.append(ItemReflection(key=item.key, status=status, missing=r.missing if r else ""))
    return reflection.model_copy(update={"items": applied})


class ExtractiveReflector:
    """Reflection without a model: the assignment's statuses, keyword follow-ups."""

    async def reflect(
        self, plan: ResearchPlan, evidence: Sequence[Evidence], tried: Sequence[str]
    ) -> Reflection:
        """Statuses of ``plan``'s checklist and at most :data:`MAX_FOLLOW_UPS` new queries
        (none of ``tried``) for the items not satisfied (never raises)."""
        open_items = [c for c in plan.checklist if c.status != ChecklistStatus.SATISFIED]
        candidates = [q for c in open_items for q in item_queries(plan, c)]
        return Reflection(
            items=[
                ItemReflection(
                    key=c.key,
                    status=c.status,
                    missing=(
                        ""
                        if c.status == ChecklistStatus.SATISFIED
                        else f"{len(c.evidence_ids)} of {c.min_evidence} sources"
                    ),
                )
                for c in plan.checklist
            ],
            follow_up_queries=fresh_queries(candidates, tried, MAX_FOLLOW_UPS),
            reasoning=(
                f"{len(plan.checklist) - len(open_items)} of {len(plan.checklist)} checklist "
                "items have the evidence they need (assignment by similarity)."
            ),
        )


class ReflectionOutput(Reflection):
    """The model's reflection."""


class LLMReflector:
    """Reflection by a model (``prompts/reflection.md``)."""

    role = "reflection"

    def __init__(self, config: LLMConfig) -> None:
        self._agent = config.structured(self.role, ReflectionOutput)

    async def reflect(
        self, plan: ResearchPlan, evidence: Sequence[Evidence], tried: Sequence[str]
    ) -> Reflection:
        """The model's statuses and at most :data:`MAX_FOLLOW_UPS` new follow-up queries.

        Raises:
            AgentOutputError: invalid output after the retries.
            AgentModelError: the model call failed or timed out.
        """
        fence = new_fence()
        instructions = render_prompt(
            "reflection", max_queries=MAX_FOLLOW_UPS, untrusted=fence.note()
        )
        lines = [
            f"Research question: {plan.refined_question}",
            "",
            "Checklist (key, evidence assigned by similarity, description):",
            *(
                f"- {c.key} ({len(c.evidence_ids)}/{c.min_evidence} sources: "
                f"{', '.join(c.evidence_ids) or 'none'}): {c.description}"
                for c in plan.checklist
            ),
            "",
            f"Findings so far ({len(evidence)} sources, one line each):",
            *(compressed_findings(evidence, fence) or ["(none)"]),
            "",
            "Queries already tried (do not repeat):",
            *(f"- {q}" for q in list(tried)[-30:]),
        ]
        bounded = with_choices(ReflectionOutput, {"items.key": [c.key for c in plan.checklist]})
        output = await self._agent.run(instructions, "\n".join(lines), None, output_type=bounded)
        return Reflection(
            items=output.items,
            follow_up_queries=fresh_queries(output.follow_up_queries, tried, MAX_FOLLOW_UPS),
            reasoning=output.reasoning,
        )
