"""The researcher's reviews of a run: the plan before the search, the screened evidence
before the writing (:class:`RunReview`), the user's decisions on records
(:class:`EvidenceDecision`), the rows of the evidence table shown (:class:`ScreenedRecord`)
and what an edited plan changed (:func:`plan_changes`).

A run with ``Settings.review_plan`` stops after planning and waits; with
``Settings.review_evidence`` it stops after gathering. Each stop is one :class:`RunReview`,
numbered 1, 2, ... per run, stored with the run (``deepcritical.state.reviews``) and decided
by the user (approved, possibly edited; cancelled) or by its timeout.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from deepcritical.models._evidence import SOURCE_LABELS, utc_now
from deepcritical.models._plan import ResearchPlan

__all__ = [
    "MAX_REVIEW_REASON_CHARS",
    "REVIEWER_EXCLUDED",
    "REVIEWER_INCLUDED",
    "EvidenceDecision",
    "ReviewStage",
    "ReviewStatus",
    "RunReview",
    "ScreenedRecord",
    "plan_changes",
]

ReviewStage = Literal["plan", "evidence"]
"""What a review is about: the plan (before the search) or the evidence (before writing)."""
ReviewStatus = Literal["waiting", "approved", "cancelled", "timed_out"]
"""A review waits for the user; then it is approved, cancelled or timed out."""

REVIEWER_EXCLUDED = "excluded by the reviewer"
"""Start of the screening reason of a record the user excluded (the flow counts it apart)."""
REVIEWER_INCLUDED = "included by the reviewer"
"""Start of the screening reason of a record the user included after screening excluded it."""
MAX_REVIEW_REASON_CHARS = 300
"""Longest reason kept for one decision on a record."""


class ScreenedRecord(BaseModel):
    """One row of the evidence table a run shows for review: the record's evidence id
    (``E3``), title, source, year, study design (``""`` when not read), whether screening (or
    an earlier review) included it, the screening reason, its relevance (0..1) and its
    identifier keys."""

    id: str
    title: str = ""
    source: str = ""
    year: int | None = None
    design: str = ""
    included: bool = True
    reason: str = ""
    relevance: float = 0.0
    keys: list[str] = Field(default_factory=list)
    """The record's identifier keys (``pmid:123``, ``doi:...``): a decision finds its record
    by them when the run's replay numbered the records otherwise."""


class EvidenceDecision(BaseModel):
    """The user's decision on one record: ``exclude`` an included record (a ``reason`` is
    required) or ``include`` one that screening excluded (the reason is optional).

    Raises:
        pydantic.ValidationError: an exclusion without a reason, or a reason over
            :data:`MAX_REVIEW_REASON_CHARS` characters.
    """

    evidence_id: str = Field(min_length=1, max_length=40)
    action: Literal["include", "exclude"]
    reason: str = Field(default="", max_length=MAX_REVIEW_REASON_CHARS)
    keys: list[str] = Field(default_factory=list)
    """The record's identifier keys as the review showed it (filled in when the decision is
    stored), so the decision reaches the same paper whatever its evidence id on a replay."""

    @model_validator(mode="after")
    def _reason_to_exclude(self) -> EvidenceDecision:
        self.reason = " ".join(self.reason.split())
        if self.action == "exclude" and not self.reason:
            raise ValueError(f"excluding {self.evidence_id} needs a reason")
        return self

    def screening_reason(self) -> str:
        """The record's screening reason after the decision ("excluded by the reviewer:
        wrong population")."""
        head = REVIEWER_EXCLUDED if self.action == "exclude" else REVIEWER_INCLUDED
        return f"{head}: {self.reason}" if self.reason else head


class RunReview(BaseModel):
    """One review of a run (see the module docstring).

    ``number`` counts the run's reviews (1, 2, ...); ``ordinal`` counts those of its
    ``stage`` (a second evidence review follows one more search round). ``plan`` is the plan
    as proposed and ``records`` the evidence table as shown; once decided, ``reviewed_plan``
    is the plan the run goes on with, ``decisions`` the user's decisions on records,
    ``more_search`` whether one more search round was asked for, and ``changes`` what the
    decision changed, one line each ("removed checklist item harms"). Times are UTC.
    """

    number: int = Field(ge=1)
    stage: ReviewStage
    ordinal: int = Field(default=1, ge=1)
    status: ReviewStatus = "waiting"
    plan: ResearchPlan | None = None
    sources: list[str] = Field(default_factory=list)
    """The sources the run may search (a reviewed plan may keep a subset of them)."""
    records: list[ScreenedRecord] = Field(default_factory=list)
    reviewed_plan: ResearchPlan | None = None
    decisions: list[EvidenceDecision] = Field(default_factory=list)
    more_search: bool = False
    changes: list[str] = Field(default_factory=list)
    created_at: datetime = Field(default_factory=utc_now)
    decided_at: datetime | None = None

    @property
    def decided(self) -> bool:
        """True once the review is no longer waiting."""
        return self.status != "waiting"

    def methodology_line(self) -> str:
        """The report methodology's sentence about this review."""
        what = "plan" if self.stage == "plan" else "screened evidence"
        if self.status == "timed_out":
            return (
                f"The {what} was put to the user for review; the review timed out and the run "
                "went on with it as it stood."
            )
        edits = "; ".join(self.changes)
        if self.stage == "plan":
            if not self.changes:
                return "The plan was reviewed and approved unchanged by the user before the search."
            return f"The plan was reviewed and edited by the user before the search: {edits}."
        more = " One more search round was asked for." if self.more_search else ""
        if not self.changes:
            return (
                "The screened evidence was reviewed and approved unchanged by the user before "
                f"writing.{more}"
            )
        return f"The screened evidence was reviewed by the user before writing: {edits}.{more}"


def _label(source: str) -> str:
    return SOURCE_LABELS.get(source, source)


def _listed(before: list[str], after: list[str], what: str) -> list[str]:
    """ "removed X Y", "added X Z" lines for two lists of phrases (compared as written)."""
    gone = [f"removed {what} {q!r}" for q in before if q not in after]
    new = [f"added {what} {q!r}" for q in after if q not in before]
    return gone + new


def _source_query_changes(
    before: ResearchPlan, after: ResearchPlan, sent_before: Mapping[str, list[str]] | None
) -> list[str]:
    """Lines for the per-source queries ``after`` sets (``after.source_queries``) that differ
    from those each source was to receive before (``sent_before``, default
    ``before.source_queries``; a source absent from it: compared with ``[]``)."""
    old = before.source_queries if sent_before is None else sent_before
    out: list[str] = []
    for source, queries in after.source_queries.items():
        out.extend(_listed(list(old.get(source, [])), queries, f"{_label(source)} query"))
    return out


def _filter_changes(before: ResearchPlan, after: ResearchPlan) -> list[str]:
    """One line when the search filters changed: the new ones, or that none remain."""
    if after.filters == before.filters:
        return []
    lines = after.filters.lines()
    return ["search filters: " + "; ".join(lines) if lines else "search filters removed"]


def plan_changes(
    before: ResearchPlan,
    after: ResearchPlan,
    sources: list[str],
    *,
    sent_before: Mapping[str, list[str]] | None = None,
) -> list[str]:
    """What ``after`` (the reviewed plan) changed of ``before`` (the planner's), one short
    line each, in the plan's order: the refined question, checklist items removed, added or
    changed (by key), queries, MeSH terms and scope added or removed, the sources kept of
    ``sources`` (the run's), the search filters, the queries sent to a source that
    ``after.source_queries`` sets, compared with what that source was to receive
    (``sent_before``: source -> queries as sent, e.g.
    :func:`deepcritical.sources.query_syntax.source_queries` of ``before``; default
    ``before.source_queries``), then any other field changed, whole ("changed key terms:
    [...]"). ``[]`` when nothing changed."""
    out: list[str] = []
    if after.refined_question != before.refined_question:
        out.append(f"refined question changed to {after.refined_question!r}")
    old = {c.key: c for c in before.checklist}
    new = {c.key: c for c in after.checklist}
    out.extend(f"removed checklist item {k!r}" for k in old if k not in new)
    for key, item in new.items():
        if key not in old:
            out.append(f"added checklist item {key!r}: {item.description}")
        elif (item.description, item.min_evidence) != (
            old[key].description,
            old[key].min_evidence,
        ):
            out.append(f"changed checklist item {key!r}: {item.description}")
    out.extend(_listed(before.queries, after.queries, "query"))
    out.extend(_listed(before.mesh_terms, after.mesh_terms, "MeSH term"))
    out.extend(_listed(before.scope_in, after.scope_in, "scope (in)"))
    out.extend(_listed(before.scope_out, after.scope_out, "scope (out)"))
    kept_before = before.sources or sources
    kept_after = after.sources or sources
    if kept_after != kept_before:
        out.append("sources: " + ", ".join(_label(s) for s in kept_after))
    out.extend(_filter_changes(before, after))
    out.extend(_source_query_changes(before, after, sent_before))
    out.extend(_other_changes(before, after))
    return out


_NAMED = frozenset(
    {"question", "refined_question", "checklist", "queries", "mesh_terms", "scope_in",
     "scope_out", "sources", "preferences", "filters", "source_queries"}
)  # fmt: skip
"""Fields :func:`plan_changes` names one by one; any other field changed is listed whole."""


def _other_changes(before: ResearchPlan, after: ResearchPlan) -> list[str]:
    """ "changed FIELD: VALUE" for every other field of the plan the edit changed (key
    terms, sub-questions...), its value as JSON, cut to 200 characters."""
    old, new = before.model_dump(mode="json"), after.model_dump(mode="json")
    out = []
    for name in type(after).model_fields:
        if name in _NAMED or old.get(name) == new.get(name):
            continue
        value = json.dumps(new.get(name), ensure_ascii=False)
        out.append(f"changed {name.replace('_', ' ')}: {value[:200]}")
    return out
