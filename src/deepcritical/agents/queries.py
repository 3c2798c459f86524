"""Query generators: the search queries of a round, for the unsatisfied checklist items.

Both implementations never return a query in ``tried`` (compared case- and
white-space-insensitively) nor the same query twice, and return at most ``max_queries``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, Field

from deepcritical.llm.agent_config import LLMConfig
from deepcritical.llm.lenient import LenientStrList
from deepcritical.llm.runner import ModelRetry
from deepcritical.llm.templates import render_prompt
from deepcritical.models import ChecklistItem, JudgeAssessment, ResearchPlan
from deepcritical.sources.query_syntax import mesh_query
from deepcritical.text.terms import extract_key_terms, key_term_query

__all__ = [
    "ExtractiveQueryGenerator",
    "LLMQueryGenerator",
    "QueryOutput",
    "fresh_queries",
    "item_queries",
    "query_key",
]

MAX_QUERY_CHARS = 300
"""Characters kept of one query (or plan phrase); the rest is cut."""

MAX_TRIED_SHOWN = 40


def query_key(query: str) -> str:
    """Comparison key of a query: lower case, white space collapsed, quotes ignored."""
    return " ".join(query.replace('"', " ").lower().split())


def fresh_queries(candidates: Iterable[str], tried: Sequence[str], limit: int) -> list[str]:
    """Up to ``limit`` candidates, white space collapsed, none in ``tried``, no repeats."""
    seen = {query_key(q) for q in tried}
    out: list[str] = []
    for candidate in candidates:
        text = " ".join(candidate.split())[:MAX_QUERY_CHARS].strip()
        key = query_key(text)
        if not key or key in seen:
            continue
        seen.add(key)
        out.append(text)
        if len(out) >= limit:
            break
    return out


def _facets(plan: ResearchPlan, item: ChecklistItem) -> list[str]:
    """Terms of an item's description that are not already key terms of the plan."""
    known = {t.lower() for t in plan.key_terms}
    known_words = {w for t in known for w in t.split()}
    facets = []
    for term in extract_key_terms(item.description, max_terms=8):
        low = term.lower()
        if low in known or all(w in known_words for w in low.split()):
            continue
        facets.append(term)
    return facets


def item_queries(plan: ResearchPlan, item: ChecklistItem) -> list[str]:
    """Keyword queries for one checklist item: the plan's key-term query plus each facet of
    the item's description ("metformin Alzheimer's disease clinical studies"), best first."""
    base = key_term_query(plan.key_terms) or plan.refined_question
    facets = _facets(plan, item)
    if not facets:
        return [f"{base} {item.key.replace('_', ' ')}"]
    return [f"{base} {facet}" for facet in facets]


def _interleave(groups: Sequence[Sequence[str]]) -> list[str]:
    """First of each group, then second of each group, ..."""
    out: list[str] = []
    for i in range(max((len(g) for g in groups), default=0)):
        out.extend(g[i] for g in groups if i < len(g))
    return out


class ExtractiveQueryGenerator:
    """Queries without a model.

    Order of candidates: the plan's queries (round 1, or any not yet tried); then the judge's
    ``next_queries`` (which carry the reflection's follow-ups first); then a PubMed MeSH
    query when the plan has MeSH terms (:func:`~deepcritical.sources.query_syntax.mesh_query`);
    then, for the unsatisfied checklist items in turn, the key terms combined
    with each facet of the item's description; then pairs of key terms. Returns ``[]`` when
    every candidate was tried.
    """

    async def queries(
        self,
        plan: ResearchPlan,
        assessment: JudgeAssessment | None,
        round_no: int,
        max_queries: int,
        tried: Sequence[str],
    ) -> list[str]:
        """At most ``max_queries`` new queries (none of ``tried``), best first."""
        candidates: list[str] = list(plan.queries)
        if assessment is not None:
            candidates.extend(assessment.next_queries)
        if plan.mesh_terms:  # a PubMed MeSH query (other sources get its words)
            candidates.append(mesh_query(plan.mesh_terms[:3]))
        candidates.extend(_interleave([item_queries(plan, i) for i in plan.unsatisfied()]))
        terms = plan.key_terms
        candidates.extend(f"{a} {b}" for i, a in enumerate(terms) for b in terms[i + 1 :])
        return fresh_queries(candidates, tried, max_queries)


class QueryOutput(BaseModel):
    """The LLM query generator's output."""

    queries: LenientStrList = Field(default_factory=list, description="new queries, best first")


class FirstQueryOutput(QueryOutput):
    """:class:`QueryOutput` when nothing has been searched yet: its schema asks for at least
    one query (a grammar then cannot answer ``[]``, which the validator would send back)."""

    queries: LenientStrList = Field(
        default_factory=list,
        description="new queries, best first",
        json_schema_extra={"minItems": 1},
    )


@dataclass(frozen=True)
class _QueryDeps:
    tried: tuple[str, ...]
    max_queries: int


def _validate_queries(deps: _QueryDeps, output: QueryOutput) -> QueryOutput:
    if not output.queries and not deps.tried:  # nothing searched yet: an empty list ends the run
        raise ModelRetry(
            "no query has been searched yet: propose at least one search query for the question"
        )
    if output.queries and not fresh_queries(output.queries, deps.tried, deps.max_queries):
        raise ModelRetry(
            "every query you proposed was already tried; propose different queries "
            "(other synonyms, mechanisms, study designs or populations), or an empty list"
        )
    return output


class LLMQueryGenerator:
    """Queries written by a model (see ``prompts/queries.md``); proposals that repeat tried
    queries are sent back once per retry, then filtered out."""

    role = "query_generator"

    def __init__(self, config: LLMConfig) -> None:
        self._agent = config.structured(
            self.role, QueryOutput, _QueryDeps, validator=_validate_queries
        )

    async def queries(
        self,
        plan: ResearchPlan,
        assessment: JudgeAssessment | None,
        round_no: int,
        max_queries: int,
        tried: Sequence[str],
    ) -> list[str]:
        """At most ``max_queries`` new queries (none of ``tried``), best first.

        Raises:
            AgentOutputError: invalid output after the retries.
            AgentModelError: the model call failed or timed out.
        """
        instructions = render_prompt("queries", max_queries=max_queries, untrusted="")
        prompt = build_query_prompt(plan, assessment, round_no, max_queries, tried)
        output = await self._agent.run(
            instructions,
            prompt,
            _QueryDeps(tuple(tried), max_queries),
            output_type=None if tried else FirstQueryOutput,
        )
        return fresh_queries(output.queries, tried, max_queries)


def build_query_prompt(
    plan: ResearchPlan,
    assessment: JudgeAssessment | None,
    round_no: int,
    max_queries: int,
    tried: Sequence[str],
) -> str:
    """The user message of the LLM query generator (plain text, no source text)."""
    lines = [
        f"Research question: {plan.refined_question}",
        f"Key terms: {', '.join(plan.key_terms) or '(none)'}",
        f"MeSH terms: {', '.join(plan.mesh_terms) or '(none)'}",
        f"Search round: {round_no}",
    ]
    if plan.sub_questions:
        lines += ["", "Sub-questions:", *(f"- {q.question}" for q in plan.sub_questions)]
    lines += ["", "Checklist items still lacking evidence:"]
    unsatisfied = plan.unsatisfied()
    lines.extend(
        f"- {c.key} ({c.status.value}, {len(c.evidence_ids)}/{c.min_evidence} sources): "
        f"{c.description}"
        for c in unsatisfied
    )
    if not unsatisfied:
        lines.append("- (none: look for confirming or conflicting evidence)")
    if assessment is not None:
        lines += ["", f"Judge's reasoning: {assessment.reasoning or '(none)'}"]
        if assessment.next_queries:
            lines.append("Judge's suggested queries: " + "; ".join(assessment.next_queries))
    shown = list(tried)[-MAX_TRIED_SHOWN:]
    lines += ["", "Queries already tried (do not repeat):"]
    if shown:
        lines.extend(f"- {q}" for q in shown)
    else:
        lines.append("- (none)")
    lines += ["", f"Write at most {max_queries} new queries."]
    return "\n".join(lines)
