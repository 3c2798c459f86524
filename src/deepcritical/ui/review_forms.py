"""The review steps' forms as plain data, no Gradio: the plan card's field values from a
waiting plan review and the edited plan back from them (:func:`plan_fields`,
:func:`edited_plan`), and the evidence table of an evidence review with the user's
decisions from its toggles (:func:`evidence_html`, :func:`record_choices`,
:func:`evidence_decisions`).

What the user edits is sent to :func:`deepcritical.api.record_plan_review` /
:func:`~deepcritical.api.record_evidence_review` as is; they validate it (an empty checklist,
a bad date range, an exclusion without a reason are their errors). Only what these forms
must parse themselves is checked here (a date that is not ``YYYY``, ``YYYY-MM`` or
``YYYY-MM-DD``: :class:`FormError`). Every text from a source (titles, reasons) reaches the
page escaped (:func:`evidence_html`).
"""

from __future__ import annotations

import calendar
import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from deepcritical.models import (
    SOURCE_LABELS,
    EvidenceDecision,
    ResearchPlan,
    ScreenedRecord,
)

__all__ = [
    "FormError",
    "PlanFields",
    "checklist_lines",
    "edited_plan",
    "evidence_decisions",
    "evidence_html",
    "parse_date",
    "plan_fields",
    "record_choices",
]

_KEY_LINE = re.compile(r"^\s*([A-Za-z0-9_.-]{1,60})\s*:\s*(.+)$")
"""A checklist line ``key: description`` (a line without a key gets one from its words)."""
_REASON_LINE = re.compile(r"^\s*([A-Za-z]+\d+)\s*:\s*(.+)$")
"""A line of the reasons box naming its record: ``E3: wrong population``."""


class FormError(ValueError):
    """A field of a review form the form itself cannot read (message safe to show)."""


@dataclass(frozen=True)
class PlanFields:
    """The plan card's values for a waiting plan review: the refined question, the checklist
    as ``key: description`` lines, the run's sources and those the plan searches, each
    source's round-1 queries as sent (``source -> lines``), the date range as ISO dates
    (``""``: open), the language codes and the study designs."""

    refined_question: str
    checklist: str
    sources: list[str]
    searched: list[str]
    queries: dict[str, str] = field(default_factory=dict)
    published_from: str = ""
    published_to: str = ""
    languages: list[str] = field(default_factory=list)
    designs: list[str] = field(default_factory=list)


def checklist_lines(plan: ResearchPlan) -> str:
    """The plan's checklist, one ``key: description`` line per item."""
    return "\n".join(f"{c.key}: {c.description}" for c in plan.checklist)


def plan_fields(
    plan: ResearchPlan, sources: Sequence[str], sent: Mapping[str, Sequence[str]]
) -> PlanFields:
    """The card's values for ``plan`` (as proposed) of a run searching ``sources``, whose
    sources were to receive ``sent`` (source -> queries:
    :func:`deepcritical.sources.query_syntax.source_queries`)."""
    f = plan.filters
    return PlanFields(
        refined_question=plan.refined_question,
        checklist=checklist_lines(plan),
        sources=list(sources),
        searched=list(plan.sources or sources),
        queries={s: "\n".join(sent.get(s, [])) for s in sources},
        published_from=f.published_from.isoformat() if f.published_from else "",
        published_to=f.published_to.isoformat() if f.published_to else "",
        languages=list(f.languages),
        designs=[d.value for d in f.designs],
    )


def parse_date(text: str, *, end: bool) -> date | None:
    """A date typed as ``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD`` (``None`` when blank); a year
    or month alone is its first day, or with ``end`` its last.

    Raises:
        FormError: anything else, or no such day.
    """
    value = text.strip()
    if not value:
        return None
    match = re.fullmatch(r"(\d{4})(?:-(\d{1,2}))?(?:-(\d{1,2}))?", value)
    if match is None or (match.group(3) and not match.group(2)):
        raise FormError(f"{value!r} is not a date: use YYYY, YYYY-MM or YYYY-MM-DD")
    year = int(match.group(1))
    month = int(match.group(2) or (12 if end else 1))
    try:
        last = calendar.monthrange(year, month)[1]
        day = int(match.group(3) or (last if end else 1))
        return date(year, month, day)
    except ValueError:
        raise FormError(f"{value!r} is not a date: no such day") from None


def _checklist(text: str, proposed: ResearchPlan) -> list[dict[str, Any]]:
    """The checklist lines as items; a kept key keeps its ``min_evidence``, a line without
    a key gets one from its first words (``item-3`` when it has none)."""
    before = {c.key: c for c in proposed.checklist}
    items: list[dict[str, Any]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        match = _KEY_LINE.match(line)
        if match:
            key, description = match.group(1), match.group(2)
        else:
            words = re.findall(r"[a-z0-9]+", line.lower())[:4]
            key, description = "-".join(words) or f"item-{n}", line
        item: dict[str, Any] = {"key": key, "description": description.strip()}
        if key in before:
            item["min_evidence"] = before[key].min_evidence
        items.append(item)
    return items


def edited_plan(
    proposed: ResearchPlan,
    sent: Mapping[str, Sequence[str]],
    *,
    refined_question: str,
    checklist: str,
    searched: Sequence[str],
    queries: Mapping[str, str],
    published_from: str,
    published_to: str,
    languages: Sequence[str],
    designs: Sequence[str],
) -> dict[str, Any]:
    """The plan the card's values make, as JSON for
    :func:`deepcritical.api.record_plan_review`: ``proposed`` with the refined question,
    the checklist (``key: description`` lines), the sources searched, the filters, and as
    ``source_queries`` the query lines of each searched source whose list differs from what
    it was to receive (``sent``, one entry per source of the run; the others keep their
    translated queries).

    Raises:
        FormError: a date the form cannot read, or no source ticked.
    """
    if not searched:
        raise FormError("tick at least one source to search")
    data = proposed.model_dump(mode="json")
    filters = dict(data.get("filters") or {})
    low = parse_date(published_from, end=False)
    high = parse_date(published_to, end=True)
    filters.update(
        published_from=low.isoformat() if low else None,
        published_to=high.isoformat() if high else None,
        languages=list(languages),
        designs=list(designs),
    )
    own = dict(proposed.source_queries)
    for source in searched:
        lines = [q.strip() for q in queries.get(source, "").splitlines() if q.strip()]
        if lines != list(sent.get(source, [])):
            own[source] = lines
    data.update(
        refined_question=refined_question,
        checklist=_checklist(checklist, proposed),
        sources=[] if set(searched) == set(sent) else list(searched),  # []: all the run's
        filters=filters,
        source_queries=own,
    )
    return data


def record_choices(records: Sequence[ScreenedRecord]) -> list[tuple[str, str]]:
    """The evidence toggles: ``(label, record id)`` per record, the label its id and title
    (plain text: Gradio shows a choice's label as text)."""
    return [(f"{r.id}: {r.title[:120] or '(untitled)'}", r.id) for r in records]


def evidence_html(records: Sequence[ScreenedRecord]) -> str:
    """The evidence table of a review: id, title, source, year, study design, whether
    screening included the record and its screening reason; every value escaped."""
    e = html.escape
    head = "".join(
        f"<th scope='col'>{h}</th>"
        for h in ("Id", "Title", "Source", "Year", "Design", "Screening", "Reason")
    )
    rows = []
    for r in records:
        state = "included" if r.included else "excluded"
        rows.append(
            f'<tr class="dc-review-row dc-review-{state}" data-id="{e(r.id, quote=True)}">'
            f"<td>{e(r.id)}</td><td>{e(r.title)}</td>"
            f"<td>{e(SOURCE_LABELS.get(r.source, r.source))}</td>"
            f"<td>{r.year if r.year is not None else ''}</td><td>{e(r.design)}</td>"
            f"<td>{state}</td><td>{e(r.reason)}</td></tr>"
        )
    included = sum(r.included for r in records)
    caption = f"{included} of {len(records)} records included by screening"
    return (
        f'<table class="dc-evidence dc-review-table"><caption>{e(caption)}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _reasons(text: str) -> tuple[dict[str, str], str]:
    """The reasons box: ``(record id -> its own reason, the reason for the others)``; a
    line ``E3: reason`` names its record, the other lines together are the general reason."""
    own: dict[str, str] = {}
    general: list[str] = []
    for line in text.splitlines():
        match = _REASON_LINE.match(line)
        if match:
            own[match.group(1)] = match.group(2).strip()
        elif line.strip():
            general.append(line.strip())
    return own, " ".join(general)


def evidence_decisions(
    records: Sequence[ScreenedRecord], kept: Sequence[str], reasons: str
) -> list[EvidenceDecision]:
    """The user's decisions from the toggles: an included record not in ``kept`` is
    excluded, an excluded record in ``kept`` included; each exclusion's reason is its own
    ``E3: reason`` line of ``reasons``, else the box's other text.

    Raises:
        pydantic.ValidationError: an exclusion with no reason (the message names the
            record).
    """
    own, general = _reasons(reasons)
    wanted = set(kept)
    out: list[EvidenceDecision] = []
    for r in records:
        if r.included and r.id not in wanted:
            reason = own.get(r.id, general)
            out.append(EvidenceDecision(evidence_id=r.id, action="exclude", reason=reason))
        elif not r.included and r.id in wanted:
            out.append(
                EvidenceDecision(evidence_id=r.id, action="include", reason=own.get(r.id, ""))
            )
    return out
