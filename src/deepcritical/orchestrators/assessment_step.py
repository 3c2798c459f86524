"""The assessment steps after a search round, each a role call with the extractive fallback:
hypotheses formed or revised, the evidence judged, the checklist reflected on; each emits its
event (``hypothesis``, ``judge_assessment``, ``reflection``)."""

from __future__ import annotations

from collections.abc import Sequence

from deepcritical.agents.reflection import Reflection, apply_reflection
from deepcritical.events import (
    HypothesisData,
    JudgeAssessmentData,
    ReflectionData,
    ResearchEvent,
)
from deepcritical.models import Evidence, Hypothesis, JudgeAssessment
from deepcritical.orchestrators.agent_set import AgentSet
from deepcritical.orchestrators.progress import number_hypotheses
from deepcritical.orchestrators.run_context import RunContext

__all__ = ["form_hypotheses", "judge_evidence", "reflect_on_checklist"]


async def form_hypotheses(run: RunContext, round_no: int, evidence: Sequence[Evidence]) -> None:
    """Form or revise the hypotheses from ``evidence``; emit one ``hypothesis`` event per
    current hypothesis (the previous ones stay when every generator fails)."""
    state = run.state

    async def make(a: AgentSet) -> list[Hypothesis]:
        return await a.hypotheses.hypothesize(run.plan, evidence, state.hypotheses)

    hypotheses = await run.guarded("hypothesis agent", make, "hypotheses")
    if hypotheses is not None:
        state.hypotheses = number_hypotheses(hypotheses)
    for h in state.hypotheses:
        run.emit(
            ResearchEvent(
                type="hypothesis",
                round=round_no,
                message=h.statement,
                data=HypothesisData.model_validate(h.model_dump()),
            )
        )


async def judge_evidence(
    run: RunContext, round_no: int, evidence: Sequence[Evidence]
) -> JudgeAssessment | None:
    """Assess the evidence after round ``round_no``; record and emit the assessment
    (``None`` when every judge failed)."""
    state = run.state

    async def assess(a: AgentSet) -> JudgeAssessment:
        return await a.judge.assess(run.plan, evidence, state.hypotheses, round_no, len(run.store))

    assessment = await run.guarded("judge", assess, "judging")
    if assessment is None:
        return None
    state.assessments.append(assessment)
    run.emit(
        ResearchEvent(
            type="judge_assessment",
            round=round_no,
            message=(
                f"Judge: {'sufficient' if assessment.sufficient else 'not sufficient'}"
                f" (checklist coverage {assessment.coverage:.0%})"
                + (f": {assessment.reason}" if assessment.reason else "")
                + f" → {assessment.recommendation}"
            ),
            data=JudgeAssessmentData.model_validate(assessment.model_dump()),
        )
    )
    return assessment


async def reflect_on_checklist(
    run: RunContext, round_no: int, evidence: Sequence[Evidence]
) -> Reflection | None:
    """Reflect on the checklist after round ``round_no`` (statuses written into the plan,
    follow-up queries kept for the next round); emit ``reflection``. ``None`` when every
    reflector failed."""
    state = run.state

    async def reflect(a: AgentSet) -> Reflection:
        return await a.reflector.reflect(run.plan, evidence, list(state.queries))

    reflection = await run.guarded("reflection", reflect, "reflection")
    if reflection is None:
        return None
    on_topic = set(run.on_topic_ids())
    off_topic = {i for i in run.store.ids() if i not in on_topic}
    reflection = apply_reflection(run.plan, reflection, off_topic)
    state.reflections.append(reflection)
    state.follow_ups = list(dict.fromkeys([*reflection.follow_up_queries, *state.follow_ups]))
    counts = {
        status: sum(i.status == status for i in reflection.items)
        for status in ("satisfied", "partial", "unsatisfied")
    }
    run.emit(
        ResearchEvent(
            type="reflection",
            round=round_no,
            message=(
                f"Reflection: {counts['satisfied']} satisfied, {counts['partial']} partial, "
                f"{counts['unsatisfied']} unsatisfied; "
                f"{len(reflection.follow_up_queries)} follow-up searches"
            ),
            data=ReflectionData.model_validate(reflection.model_dump(mode="json")),
        )
    )
    return reflection
