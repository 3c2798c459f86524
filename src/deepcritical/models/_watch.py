"""Living reviews: a watched question (:class:`Watch`), each of its updates
(:class:`WatchUpdate`) and what an update found changed (:class:`WatchChange`).

A watch holds the question, the plan and public settings of the run that is its current
version, its schedule (``every_seconds``) and where the last update's window ended
(``checked_until``): an update searches only for records added to each source since then.
:func:`parse_every` reads a schedule as written on the command line (``7d``, ``30d``,
``12h``, ``2s``).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, Field

from deepcritical.models._evidence import Evidence, utc_now

__all__ = [
    "ChangedRecord",
    "UpdateFlow",
    "UpdateOutcome",
    "Watch",
    "WatchChange",
    "WatchUpdate",
    "format_every",
    "parse_every",
]

UpdateOutcome = Literal["new_version", "nothing_new", "failed"]
"""How an update ended: a new report version, nothing relevant new (no version), or an
error (no version; the next update covers the same window again)."""

_EVERY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$", re.IGNORECASE)
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
MIN_EVERY_SECONDS = 1.0
"""The shortest schedule accepted (seconds; tests use 2 s, people days)."""


def parse_every(text: str) -> float:
    """Seconds of a schedule written ``<number><unit>``, unit ``s``, ``m``, ``h``, ``d`` or
    ``w``: ``"7d"`` -> 604800.0, ``"2s"`` -> 2.0.

    Raises:
        ValueError: another form, or less than :data:`MIN_EVERY_SECONDS`.
    """
    found = _EVERY.match(text)
    if found is None:
        raise ValueError(
            f"schedule {text!r} not understood: write a number and a unit, e.g. 7d, 30d, 12h"
        )
    seconds = float(found.group(1)) * _UNIT_SECONDS[found.group(2).lower()]
    if seconds < MIN_EVERY_SECONDS:
        raise ValueError(f"schedule {text!r} is shorter than {MIN_EVERY_SECONDS:g} s")
    return seconds


def format_every(seconds: float | None) -> str:
    """A schedule in the largest whole unit of days, hours, minutes or seconds: 604800 ->
    ``"7d"``, 2 -> ``"2s"``; ``None`` -> ``"manual"``."""
    if seconds is None:
        return "manual"
    for unit in ("d", "h", "m"):
        size = _UNIT_SECONDS[unit]
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


class ChangedRecord(BaseModel):
    """A record an update names: its evidence id in the watch's run, title, identifier
    (``PMID 123``, ``DOI ...``, ``NCT...`` or the URL) and why it is named (for a removed
    record: ``"retracted"``; for a corrected one the flag's label and notice)."""

    evidence_id: str
    title: str
    identifier: str = ""
    reason: str = ""

    @classmethod
    def of(cls, evidence: Evidence, reason: str = "") -> ChangedRecord:
        """The line of ``evidence``."""
        c = evidence.citation
        if c.pmid:
            ident = f"PMID {c.pmid}"
        elif c.doi:
            ident = f"DOI {c.doi}"
        elif c.nct_id:
            ident = c.nct_id
        else:
            ident = c.url or c.id
        return cls(
            evidence_id=evidence.id, title=c.display_title(), identifier=ident, reason=reason
        )

    def line(self) -> str:
        """``"Title (PMID 123)"``, with the reason after a dash when there is one."""
        text = f"{self.title} ({self.identifier})" if self.identifier else self.title
        return f"{text} - {self.reason}" if self.reason else text


class UpdateFlow(BaseModel):
    """The flow of one update's records, PRISMA-style: ``identified_per_source`` (records
    each source returned for the window), ``already_known`` (records the watch had already
    screened, skipped), ``duplicates`` (copies of one new record from several sources or
    queries), ``new`` (distinct new records) ``== excluded + included + retracted_new``,
    ``excluded``
    (screened off-topic), ``included`` (on-topic, retracted ones aside) and ``retracted_new``
    (new records a source already marks retracted)."""

    identified_per_source: dict[str, int] = Field(default_factory=dict)
    already_known: int = 0
    duplicates: int = 0
    new: int = 0
    excluded: int = 0
    included: int = 0
    retracted_new: int = 0

    @property
    def identified(self) -> int:
        """Records every source returned together."""
        return sum(self.identified_per_source.values())

    def lines(self) -> list[str]:
        """The flow as markdown list lines."""
        per_source = ", ".join(f"{k} {v}" for k, v in self.identified_per_source.items())
        return [
            f"- Records identified: {self.identified}" + (f" ({per_source})" if per_source else ""),
            f"- Already known to this review (not screened again): {self.already_known}",
            f"- Duplicates of another new record: {self.duplicates}",
            f"- New records screened: {self.new}",
            f"- Excluded as off-topic: {self.excluded}",
            f"- Retracted when found: {self.retracted_new}",
            f"- Included: {self.included}",
        ]


class WatchChange(BaseModel):
    """What one update found changed since ``since`` (aware UTC).

    Attributes:
        since: the start of the update's window (the previous update's end).
        until: the end of its window.
        new_included: new on-topic records, in relevance order.
        removed: known records dropped from support (retracted since the last version).
        corrected: known records that gained another integrity flag (erratum, correction,
            expression of concern); still cited, the flag shown.
        updated: known on-topic trial registrations ClinicalTrials.gov returned for the window
            (their status or results changed since): changed, not new; their stored record
            is refreshed, their screening kept.
        verdict_before, verdict_after: the report's yes / no / uncertain verdict before and
            after (``None`` when the question has none).
        certainty_before, certainty_after: the verdict's certainty level, before and after.
        verdict_reason: the new version's reason for its verdict (when it changed).
        flow: the flow of the update's records.
    """

    since: datetime
    until: datetime
    new_included: list[ChangedRecord] = Field(default_factory=list)
    removed: list[ChangedRecord] = Field(default_factory=list)
    corrected: list[ChangedRecord] = Field(default_factory=list)
    updated: list[ChangedRecord] = Field(default_factory=list)
    verdict_before: str | None = None
    verdict_after: str | None = None
    certainty_before: str | None = None
    certainty_after: str | None = None
    verdict_reason: str = ""
    flow: UpdateFlow = Field(default_factory=UpdateFlow)

    @property
    def relevant(self) -> bool:
        """Whether anything relevant changed: a new included record, a removed, corrected or
        updated one (an update without any writes no version)."""
        return bool(self.new_included or self.removed or self.corrected or self.updated)

    @property
    def verdict_changed(self) -> bool:
        """Whether the verdict or its certainty changed."""
        return (self.verdict_before, self.certainty_before) != (
            self.verdict_after,
            self.certainty_after,
        )

    def heading(self) -> str:
        """``"What's new since 2026-11-28"`` (the window's start, UTC date)."""
        return f"What's new since {self.since.date().isoformat()}"

    def summary(self) -> str:
        """One line: what changed, or that nothing relevant is new."""
        if not self.relevant:
            return f"Nothing relevant is new since {self.since.date().isoformat()}."
        parts = [f"{len(self.new_included)} new included {_plural(len(self.new_included))}"]
        if self.removed:
            parts.append(f"{len(self.removed)} removed (retracted)")
        if self.corrected:
            parts.append(f"{len(self.corrected)} corrected or flagged")
        if self.updated:
            parts.append(f"{len(self.updated)} trial {_registrations(len(self.updated))} updated")
        if self.verdict_changed:
            parts.append(
                f"verdict {self.verdict_before or 'none'} -> {self.verdict_after or 'none'}"
                + _certainty_change(self)
            )
        return f"{self.heading()}: " + "; ".join(parts) + "."

    def markdown(self) -> str:
        """The content of the report's "What's new since DATE" section (markdown, no citation
        markers: records are named by title and identifier)."""
        out = ["**New included studies**"]
        out += [f"- {r.line()}" for r in self.new_included] or ["- None"]
        out += ["", "**Studies removed from support**"]
        out += [f"- {r.line()}" for r in self.removed] or ["- None"]
        if self.corrected:
            out += ["", "**Known studies corrected or flagged**"]
            out += [f"- {r.line()}" for r in self.corrected]
        if self.updated:
            out += ["", "**Trials whose status or results changed**"]
            out += [f"- {r.line()}" for r in self.updated]
        out += ["", "**Verdict**"]
        if self.verdict_changed:
            reason = f" {self.verdict_reason}" if self.verdict_reason else ""
            out.append(
                f"- Changed from {self.verdict_before or 'none'} to "
                f"{self.verdict_after or 'none'}{_certainty_change(self)}.{reason}"
            )
        else:
            out.append(
                f"- Unchanged ({self.verdict_after or 'none'}"
                + (f", certainty {self.certainty_after}" if self.certainty_after else "")
                + ")."
            )
        out += ["", "**Flow of this update's records**", *self.flow.lines()]
        return "\n".join(out)


def _plural(n: int) -> str:
    return "study" if n == 1 else "studies"


def _registrations(n: int) -> str:
    return "registration" if n == 1 else "registrations"


def _certainty_change(change: WatchChange) -> str:
    if change.certainty_before == change.certainty_after:
        return ""
    return (
        f" (certainty {change.certainty_before or 'not rated'} -> "
        f"{change.certainty_after or 'not rated'})"
    )


class Watch(BaseModel):
    """A watched question (a living review).

    Attributes:
        id: 32 hex characters.
        owner: the user it belongs to (``None``: the local user), as for runs.
        question: the research question.
        run_id: the run whose report versions are the review's versions.
        plan: the run's reviewed plan (:class:`~deepcritical.models.ResearchPlan` as JSON).
        settings: the run's public settings (no secrets).
        queries: the searches each update repeats for its window.
        every_seconds: the schedule (``None``: updated by hand only).
        paused: a paused watch is never updated on schedule.
        webhook_url: where each update's change summary is posted (``None``: nowhere). It may
            hold a token: shown redacted, never logged.
        created_at: when it was made (UTC).
        checked_until: the end of the last update's window; the next update searches for
            records added since then.
        next_due_at: when the next scheduled update is due (``None``: not scheduled).
        last_update_at: when the last update ended (``None``: never updated).
        last_summary: the last update's one-line summary.
        version: the newest report version of its run.
        unseen: updates with changes the owner has not looked at yet.
    """

    id: str
    owner: str | None = None
    question: str
    run_id: str
    plan: dict[str, Any] | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    queries: list[str] = Field(default_factory=list)
    every_seconds: float | None = None
    paused: bool = False
    webhook_url: str | None = None
    created_at: datetime = Field(default_factory=utc_now)
    checked_until: datetime
    next_due_at: datetime | None = None
    last_update_at: datetime | None = None
    last_summary: str = ""
    version: int = 1
    unseen: int = 0

    def due_after(self, moment: datetime) -> datetime | None:
        """The next due time once an update ended at ``moment`` (``None`` without a
        schedule): ``moment + every``, so periods missed while nothing ran give one update,
        not one per period."""
        if self.every_seconds is None:
            return None
        return moment + timedelta(seconds=self.every_seconds)


class WatchUpdate(BaseModel):
    """One update of a watch.

    Attributes:
        watch_id: the watch.
        number: 1, 2, ... per watch.
        started_at, finished_at: when it ran (UTC).
        outcome: see :data:`UpdateOutcome`.
        version: the report version it wrote (``None`` unless ``new_version``).
        summary: its one-line summary (an error's short text when ``failed``).
        change: what changed (``None`` when it failed).
        trigger: ``"schedule"`` (a worker) or ``"manual"`` (``watch update``, the web app).
        seen: whether the owner has looked at it.
    """

    watch_id: str
    number: int = Field(ge=1)
    started_at: datetime
    finished_at: datetime
    outcome: UpdateOutcome
    version: int | None = None
    summary: str = ""
    change: WatchChange | None = None
    trigger: Literal["schedule", "manual"] = "manual"
    seen: bool = False
