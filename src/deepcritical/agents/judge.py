"""Judges: is the evidence enough? (Advice only: the stop rules live in the orchestrator.)

- :class:`LLMJudge`: the model scores the fenced evidence slice against the checklist; its
  output model coerces string booleans ("false" is False) and "7/10" scores. ``coverage`` is
  always computed in code (:meth:`ResearchPlan.coverage`), never taken from the model.
- :class:`ExtractiveJudge`: coverage and counts, with a reasoning text that shows the numbers.

Both see the study design of each source (:mod:`deepcritical.evidence.grading`): the LLM judge
gets a design line per source in its prompt, the extractive judge weighs designs in its
clinical score (meta-analyses, systematic reviews and randomised trials count double).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from deepcritical.agents.queries import fresh_queries, item_queries
from deepcritical.evidence.design import is_mechanistic
from deepcritical.evidence.grading import (
    HIGH_LEVEL_DESIGNS,
    assess_design,
    clinical_weight,
)
from deepcritical.evidence.keysentences import mentioning_terms
from deepcritical.llm.agent_config import LLMConfig
from deepcritical.llm.fencing import Fence, fence_evidence, new_fence
from deepcritical.llm.lenient import (
    LenientBool,
    LenientRecommendation,
    LenientScore,
    LenientStrList,
)
from deepcritical.llm.templates import render_prompt
from deepcritical.models import (
    ChecklistStatus,
    Evidence,
    Hypothesis,
    JudgeAssessment,
    ResearchPlan,
)
from deepcritical.text.sentences import split_sentences
from deepcritical.text.terms import (
    extract_key_terms,
    key_term_query,
    required_term_count,
)

__all__ = [
    "ExtractiveJudge",
    "JudgeOutput",
    "LLMJudge",
]

MAX_NEXT_QUERIES = 4
MAX_REASON_CHARS = 300
"""Longest ``JudgeAssessment.reason`` (characters)."""


class JudgeOutput(BaseModel):
    """The LLM judge's output (lenient: "false" -> False, "7/10" -> 7, one string -> list)."""

    mechanism_score: LenientScore = Field(default=0, description="0 to 10")
    clinical_evidence_score: LenientScore = Field(default=0, description="0 to 10")
    sufficient: LenientBool = Field(default=False, description="JSON boolean")
    recommendation: LenientRecommendation = "continue"
    next_queries: LenientStrList = Field(default_factory=list)
    reasoning: str = ""


def design_lines(evidence: Sequence[Evidence]) -> list[str]:
    """One line per item: its study design, evidence level and what the design was read from."""
    lines = []
    for e in evidence:
        grade = assess_design(e)
        preprint = "; preprint, not peer reviewed" if e.is_preprint else ""
        lines.append(
            f"- {e.id}: {grade.design.value} (evidence level {grade.level}/10{preprint};"
            f" from {grade.basis})"
        )
    return lines


def _checklist_lines(plan: ResearchPlan) -> list[str]:
    return [
        f"- {c.key} [{c.status.value}, {len(c.evidence_ids)}/{c.min_evidence} sources"
        + (f": {', '.join(c.evidence_ids[:8])}" if c.evidence_ids else "")
        + f"]: {c.description}"
        for c in plan.checklist
    ]


class LLMJudge:
    """Assessment written by a model (see ``prompts/judge.md``).

    The model's ``sufficient`` is overruled (set to ``False``, recommendation "continue", the
    reason appended to ``reasoning``) while checklist coverage is below
    ``min_coverage_for_sufficient``: a model must not end the search on a checklist that the
    collected evidence does not cover.

    Args:
        config: model, retries, timeout, usage tracker.
        snippet_chars: characters of each source's content shown to the model.
        min_coverage_for_sufficient: coverage (0..1) below which "sufficient" is overruled.
    """

    role = "judge"

    def __init__(
        self,
        config: LLMConfig,
        snippet_chars: int = 700,
        min_coverage_for_sufficient: float = 0.5,
    ) -> None:
        self.snippet_chars = snippet_chars
        self.min_coverage_for_sufficient = min_coverage_for_sufficient
        self._agent = config.structured(self.role, JudgeOutput)

    async def assess(
        self,
        plan: ResearchPlan,
        evidence: Sequence[Evidence],
        hypotheses: Sequence[Hypothesis],
        round_no: int,
        total_evidence: int,
    ) -> JudgeAssessment:
        """Assessment after round ``round_no`` from the slice ``evidence``.

        Raises:
            AgentOutputError: invalid output after the retries.
            AgentModelError: the model call failed or timed out.
        """
        fence = new_fence()
        instructions = render_prompt("judge", untrusted=fence.note())
        prompt = self._prompt(plan, evidence, hypotheses, round_no, total_evidence, fence)
        output = await self._agent.run(instructions, prompt, None)
        coverage = plan.coverage()
        sufficient, reasoning, reason = self._verdict(output, coverage)
        return JudgeAssessment(
            mechanism_score=output.mechanism_score,
            clinical_evidence_score=output.clinical_evidence_score,
            coverage=round(coverage, 4),
            sufficient=sufficient,
            recommendation="synthesize" if sufficient else "continue",
            next_queries=[]
            if sufficient
            else fresh_queries(output.next_queries, [], MAX_NEXT_QUERIES),
            reasoning=reasoning.strip(),
            reason=reason[:MAX_REASON_CHARS],
        )

    def _verdict(self, output: JudgeOutput, coverage: float) -> tuple[bool, str, str]:
        """``(sufficient, reasoning, reason)`` of the model's output: its first sentence as
        the reason, and a "sufficient" overruled when checklist coverage is below
        ``min_coverage_for_sufficient``."""
        sufficient = output.sufficient
        reasoning = " ".join(output.reasoning.split())
        sentences = split_sentences(reasoning)
        reason = (sentences[0].rstrip(".") if sentences else "") or (
            "the model judged the evidence sufficient"
            if sufficient
            else "the model judged the evidence not yet sufficient"
        )
        if sufficient and coverage < self.min_coverage_for_sufficient:
            sufficient = False
            reason = (
                f"overruled: the model judged the evidence sufficient, but checklist coverage "
                f"is {coverage:.0%}, below {self.min_coverage_for_sufficient:.0%}"
            )
            reasoning += f" ({reason[0].upper()}{reason[1:]}.)"
        return sufficient, reasoning, reason

    def _prompt(
        self,
        plan: ResearchPlan,
        evidence: Sequence[Evidence],
        hypotheses: Sequence[Hypothesis],
        round_no: int,
        total_evidence: int,
        fence: Fence,
    ) -> str:
        """The judge's prompt: the question, round and coverage, the checklist, the current
        hypotheses, the study designs and the fenced slice of the evidence."""
        lines = [
            f"Research question: {plan.refined_question}",
            f"Search round: {round_no}; evidence items collected: {total_evidence}; "
            f"checklist coverage: {plan.coverage():.0%}",
            "",
            "Checklist:",
            *_checklist_lines(plan),
            "",
            "Current hypotheses:",
        ]
        lines.extend(
            f"- {h.id or '-'}: {h.statement} (confidence {h.confidence:.2f}; supporting "
            f"{', '.join(h.supporting_evidence_ids) or 'none'}; contradicting "
            f"{', '.join(h.contradicting_evidence_ids) or 'none'})"
            for h in hypotheses
        )
        if not hypotheses:
            lines.append("- (none)")
        if evidence:
            lines += [
                "",
                "Study designs of these sources, read from publication types, MeSH terms and "
                "keywords (weigh the clinical evidence score by them: meta-analyses, systematic "
                "reviews and randomised trials weigh most, preclinical work least):",
                *design_lines(evidence),
            ]
        lines += [
            "",
            f"A selection of {len(evidence)} of the {total_evidence} sources:",
            "",
            fence_evidence(evidence, fence, self.snippet_chars) if evidence else "(none)",
        ]
        return "\n".join(lines)


class ExtractiveJudge:
    """Assessment from counts, with no model.

    - ``coverage`` = :meth:`ResearchPlan.coverage`;
    - ``sufficient`` when coverage >= 0.99, or coverage >= 0.66 with at least
      ``min_total_evidence`` items collected;
    - ``clinical_evidence_score`` = 2 points per unit of
      :func:`~deepcritical.evidence.grading.clinical_weight` over the slice, at most 10: a
      peer-reviewed meta-analysis, systematic review or randomised trial counts 4 points, any
      other clinical design (or an item of unknown design that studies people) 2, preclinical
      work and narrative reviews 0;
    - ``mechanism_score`` = 2 points per item of the slice that reads as mechanistic
      (:func:`~deepcritical.evidence.design.is_mechanistic`), at most 10;
    - never sufficient while fewer than ``min_direct_evidence`` items of the slice bear on
      the whole question (mention its key terms, see :func:`matched_terms`): checklist
      coverage by similarity alone can be met by papers on neighbouring topics;
    - ``next_queries``: keyword queries for the unsatisfied checklist items (empty when
      sufficient); ``reasoning`` states every number used.

    Args:
        min_total_evidence: evidence items needed for "sufficient" at partial coverage.
        min_direct_evidence: items mentioning the question's key terms needed for "sufficient".
    """

    FULL_COVERAGE = 0.99
    PARTIAL_COVERAGE = 0.66

    def __init__(self, min_total_evidence: int = 10, min_direct_evidence: int = 2) -> None:
        self.min_total_evidence = min_total_evidence
        self.min_direct_evidence = min_direct_evidence

    async def assess(
        self,
        plan: ResearchPlan,
        evidence: Sequence[Evidence],
        hypotheses: Sequence[Hypothesis],
        round_no: int,
        total_evidence: int,
    ) -> JudgeAssessment:
        """Assessment after round ``round_no`` (never raises)."""
        coverage = plan.coverage()
        terms = plan.key_terms or extract_key_terms(plan.refined_question)
        needed = required_term_count(len(terms))
        direct = len(mentioning_terms(evidence, terms, needed))
        on_question = direct >= self.min_direct_evidence
        full = coverage >= self.FULL_COVERAGE
        enough = coverage >= self.PARTIAL_COVERAGE and total_evidence >= self.min_total_evidence
        sufficient = (full or enough) and on_question
        weights = [clinical_weight(e) for e in evidence]
        clinical = sum(w > 0 for w in weights)
        strong = sum(
            w > 0 and assess_design(e).design in HIGH_LEVEL_DESIGNS and not e.is_preprint
            for e, w in zip(evidence, weights, strict=True)
        )
        clinical_score = min(10, 2 * sum(weights))
        mechanistic = sum(is_mechanistic(e) for e in evidence)
        unsatisfied = plan.unsatisfied()
        next_queries = [] if sufficient else _next_queries(plan, terms, on_question)
        n_sat = sum(c.status == ChecklistStatus.SATISFIED for c in plan.checklist)
        n_part = sum(c.status == ChecklistStatus.PARTIAL for c in plan.checklist)
        if (full or enough) and not on_question:
            why = (
                f"only {direct} of the items assessed mention the question's key terms "
                f"({', '.join(terms)}); at least {self.min_direct_evidence} are needed"
            )
        elif full:
            why = "every checklist item is satisfied"
        elif enough:
            why = (
                f"coverage is at least {self.PARTIAL_COVERAGE:.0%} and {total_evidence} items "
                f"reach the minimum of {self.min_total_evidence}"
            )
        else:
            why = (
                f"coverage is below {self.FULL_COVERAGE:.0%} and either below "
                f"{self.PARTIAL_COVERAGE:.0%} or with fewer than {self.min_total_evidence} items"
            )
        reasoning = (
            f"Round {round_no}: {n_sat} of {len(plan.checklist)} checklist items satisfied and "
            f"{n_part} partial (coverage {coverage:.0%}); {total_evidence} evidence items "
            f"collected. Of the {len(evidence)} items assessed, {clinical} read as clinical "
            f"studies, {strong} of them meta-analyses, systematic reviews or randomised trials "
            f"counted double (clinical score {clinical_score}/10), and {mechanistic} mention "
            f"mechanisms (mechanism score {min(10, 2 * mechanistic)}/10), judged by study "
            "design and keywords. "
            f"{'Sufficient' if sufficient else 'Not sufficient'}: {why}."
        )
        if unsatisfied and not full:
            reasoning += (
                " Missing: "
                + "; ".join(
                    f"{c.key} ({len(c.evidence_ids)}/{c.min_evidence})" for c in unsatisfied
                )
                + "."
            )
        return JudgeAssessment(
            mechanism_score=min(10, 2 * mechanistic),
            clinical_evidence_score=clinical_score,
            coverage=round(coverage, 4),
            sufficient=sufficient,
            recommendation="synthesize" if sufficient else "continue",
            next_queries=next_queries,
            reasoning=reasoning,
            reason=why[:MAX_REASON_CHARS],
        )


def _next_queries(plan: ResearchPlan, terms: Sequence[str], on_question: bool) -> list[str]:
    """The next round's queries: the first query of each unsatisfied checklist item, then
    their others; the question's key terms first when too few items mention them."""
    groups = [item_queries(plan, item) for item in plan.unsatisfied()]
    if not on_question:
        groups.insert(0, [key_term_query(list(terms))])
    firsts = [g[0] for g in groups if g]
    rest = [q for g in groups for q in g[1:]]
    return fresh_queries([*firsts, *rest], [], MAX_NEXT_QUERIES)
