"""Question-aware source collection: :class:`SourceCollector`.

A run saves each source it finds once (:meth:`SourceCollector.save_source`), assigned to the
syllabus questions it helps answer; the collector answers how far each question is
(:meth:`~SourceCollector.get_progress`), whether collection can stop
(:meth:`~SourceCollector.check_completion`) and hands the sources, grouped by question, to
the report writer (:meth:`~SourceCollector.finalize_sources`).

Deduplication: a source is the same as a saved one when it has the same ``source_type`` and
``external_id``, or shares any identifier key (PMID, DOI, PMCID, NCT ID, URL: see
:func:`deepcritical.evidence.identifiers.identifier_keys`), or names the same ``citation_id``.
Saving it again adds its new questions, excerpts and identifiers to the saved source.

Every answer meant for an agent (``SaveResult.message``, ``Progress.text()``,
``Completion.text()``) is one flat string of at most :data:`MAX_RESPONSE_CHARS` characters,
whatever the number of sources: the agent's context does not grow with the collection.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from deepcritical.evidence.identifiers import identifier_keys
from deepcritical.models import DERIVED_TITLE_MARK, SOURCE_LABELS, Citation, utc_now
from deepcritical.state.errors import StateError, UnknownCitationError
from deepcritical.state.numbering import last_number
from deepcritical.state.run_store import RunStore
from deepcritical.state.saved import UNASSIGNED, SavedSource, sources_by_question
from deepcritical.state.schema import (
    MAX_EXTERNAL_ID_CHARS,
    MAX_KEY_CHARS,
    SourceKeyRow,
    SourceQuestionRow,
    SourceRow,
)
from deepcritical.state.syllabus import Syllabus

__all__ = [
    "MAX_RESPONSE_CHARS",
    "UNASSIGNED",
    "Completion",
    "Progress",
    "QuestionProgress",
    "SaveResult",
    "SavedSource",
    "SourceCollector",
    "sources_by_question",
]

MAX_RESPONSE_CHARS = 499
"""Longest answer (characters) given to an agent."""
MAX_EXCERPTS = 3
MAX_EXCERPT_CHARS = 500


def _clip(text: str, limit: int = MAX_RESPONSE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _join_within(parts: Sequence[str], prefix: str, suffix: str, sep: str = ", ") -> str:
    """``prefix + sep.join(parts) + suffix`` within the response limit; parts that do not
    fit are replaced by ``+N more``."""
    out = prefix
    for i, part in enumerate(parts):
        more = f"{sep}+{len(parts) - i} more" if i else f"+{len(parts)} more"
        piece = (sep if i else "") + part
        rest = len(parts) - i - 1
        reserve = len(f"{sep}+{rest} more") if rest else 0
        if len(out) + len(piece) + reserve + len(suffix) > MAX_RESPONSE_CHARS:
            return _clip(out + more + suffix)
        out += piece
    return _clip(out + suffix)


def _db_key(key: str) -> str:
    """An identifier key short enough for the key index (long URLs are hashed)."""
    if len(key) <= MAX_KEY_CHARS:
        return key
    return "sha256:" + hashlib.sha256(key.encode("utf-8")).hexdigest()


class SaveResult(BaseModel):
    """What :meth:`SourceCollector.save_source` did: the source number (run-local, from 1),
    whether it was new, its citation id and the agent-facing ``message`` (< 500 chars)."""

    number: int
    created: bool
    citation_id: str
    message: str


class QuestionProgress(BaseModel):
    """Sources saved for one question against its minimum."""

    key: str
    label: str
    count: int
    min_sources: int

    @property
    def done(self) -> bool:
        """At least ``min_sources`` sources."""
        return self.count >= self.min_sources

    def mark(self) -> str:
        """``✓`` done, ``⚠`` started, ``✗`` nothing yet."""
        return "✓" if self.done else ("⚠" if self.count else "✗")


class Progress(BaseModel):
    """Per-question counts, total sources, a one-line summary and the question to work on
    next (``None`` when every question has its minimum)."""

    questions: list[QuestionProgress]
    total_sources: int
    summary: str
    next_focus: str | None

    def text(self) -> str:
        """The progress as one flat line of at most 499 characters."""
        parts = [f"{q.key} {q.count}/{q.min_sources} {q.mark()}" for q in self.questions]
        focus = f" Next focus: {self.next_focus}." if self.next_focus else " All done."
        return _join_within(parts, f"{self.summary} ", "." + focus, sep=" · ")


class Completion(BaseModel):
    """Whether collection can stop: ``ready``; ``progress`` 0..1 (mean over questions of
    ``min(count / min_sources, 1)``); ``missing`` sources per unfinished question; a
    ``suggestion`` of what to do next."""

    ready: bool
    progress: float
    missing: dict[str, int]
    suggestion: str

    def text(self) -> str:
        """The completion check as one flat line of at most 499 characters."""
        head = f"{'READY' if self.ready else 'NOT READY'} ({self.progress:.0%})."
        if self.ready:
            return _clip(f"{head} {self.suggestion}")
        parts = [f"{k} needs {n}" for k, n in self.missing.items()]
        return _join_within(parts, f"{head} Missing: ", f". {self.suggestion}")


class SourceCollector:
    """Saves and counts the sources of one run, per syllabus question.

    Args:
        runs: the run database.
        run_id: the run the sources belong to (its row must exist).
        syllabus: the questions; may be set later (:attr:`syllabus`) when it comes from the
            plan. Saving with question keys needs it.
        citation_exists: tells whether a ``citation_id`` names a citation of the run (e.g.
            an evidence id of the run's store); without it only registered citations exist.

    Thread-safe (one lock per collector); one collector per run and process.
    """

    def __init__(
        self,
        runs: RunStore,
        run_id: str,
        syllabus: Syllabus | None = None,
        citation_exists: Callable[[str], bool] | None = None,
    ) -> None:
        self.runs = runs
        self.run_id = run_id
        self.syllabus = syllabus
        self.citation_exists = citation_exists
        self._lock = threading.RLock()

    def _require_syllabus(self) -> Syllabus:
        if self.syllabus is None:
            raise StateError("the run has no syllabus yet (its plan is not made)")
        return self.syllabus

    # --- saving -------------------------------------------------------------------------

    def save_source(
        self,
        source_type: str,
        external_id: str,
        url: str | None,
        title: str,
        relevant_questions: Sequence[str],
        key_excerpts: Sequence[str] | None = None,
        citation_id: str | None = None,
    ) -> SaveResult:
        """Save a source once and assign it to ``relevant_questions`` (in one transaction).

        Args:
            source_type: the source name (``pubmed``, ``trials``, ``europepmc``...).
            external_id: the source's own id (PMID, NCT ID, DOI, URL...), at most 2000 chars.
            url: link to the record, if any.
            title: the record's title.
            relevant_questions: syllabus question keys (at least one).
            key_excerpts: short verbatim passages (3 kept, 500 characters each).
            citation_id: an existing citation of the run; ``None`` registers ``S<number>``.

        Returns:
            the :class:`SaveResult`; its ``message`` reads e.g.
            ``✓ Saved source #12 (PubMed) → clinical.efficacy (6/5 ✓), clinical.safety (3/5 ⚠)``.

        Raises:
            UnknownQuestionError: a key not in the syllabus (the message lists valid keys).
            UnknownCitationError: ``citation_id`` is not a citation of this run.
            ValueError: empty ``source_type``/``external_id``/``relevant_questions``, or an
                ``external_id`` longer than 2000 characters.
            StateError: no syllabus yet.
        """
        with self._lock:
            return self.runs.transact(
                lambda s: self.save_in(
                    s,
                    source_type,
                    external_id,
                    url,
                    title,
                    relevant_questions,
                    key_excerpts,
                    citation_id,
                )
            )

    def save_in(
        self,
        session: Session,
        source_type: str,
        external_id: str,
        url: str | None,
        title: str,
        relevant_questions: Sequence[str],
        key_excerpts: Sequence[str] | None = None,
        citation_id: str | None = None,
        *,
        identifiers: Sequence[str] | None = None,
        evidence: dict[str, Any] | None = None,
        allow_unassigned: bool = False,
    ) -> SaveResult:
        """:meth:`save_source` inside the caller's transaction ``session``.

        Extra args: ``identifiers`` (identifier keys; default: derived from source_type,
        external_id and url), ``evidence`` (the full evidence item as JSON, kept for
        exports), ``allow_unassigned`` (accept no question: a run's recorder saves every
        evidence item, also those matching no checklist item).
        """
        source_type, external_id = source_type.strip(), external_id.strip()
        questions = self._checked_questions(
            source_type, external_id, relevant_questions, allow_unassigned
        )
        if identifiers is None:
            identifiers = identifier_keys(Citation(source=source_type, id=external_id, url=url))
        keys = list(dict.fromkeys(_db_key(k) for k in identifiers))

        row = self._find(session, source_type, external_id, keys, citation_id)
        created = row is None
        if row is None:
            row = self._new_row(
                session, source_type, external_id, url, title, key_excerpts, citation_id, evidence
            )
        else:
            _update_row(row, url, title, key_excerpts, evidence)
        self._add_keys(session, row.id, keys)
        self._add_questions(session, row.id, questions)
        return SaveResult(
            number=row.number,
            created=created,
            citation_id=row.citation_id,
            message=self._save_message(session, row, created),
        )

    def _checked_questions(
        self,
        source_type: str,
        external_id: str,
        relevant_questions: Sequence[str],
        allow_unassigned: bool,
    ) -> list[str]:
        """The syllabus question keys a source is saved under, checked.

        Raises:
            ValueError: an empty or too long id, or no question where one is needed.
            SyllabusError: an unknown question key.
        """
        if not source_type or not external_id:
            raise ValueError("source_type and external_id must not be empty")
        if len(external_id) > MAX_EXTERNAL_ID_CHARS:
            raise ValueError(
                f"external_id has {len(external_id)} characters; the limit is "
                f"{MAX_EXTERNAL_ID_CHARS}"
            )
        if relevant_questions or not allow_unassigned:
            questions = self._require_syllabus().require(relevant_questions)
        else:
            questions = []
        if not questions and not allow_unassigned:
            raise ValueError(
                "relevant_questions needs at least one question key; valid keys: "
                + ", ".join(self._require_syllabus().keys)
            )
        return list(questions)

    def _new_row(
        self,
        session: Session,
        source_type: str,
        external_id: str,
        url: str | None,
        title: str,
        key_excerpts: Sequence[str] | None,
        citation_id: str | None,
        evidence: dict[str, Any] | None,
    ) -> SourceRow:
        """A new source row of this run, numbered after the last one.

        Raises:
            UnknownCitationError: ``citation_id`` is not a citation of this run.
        """
        if citation_id is not None and not (
            self.citation_exists is not None and self.citation_exists(citation_id)
        ):
            raise UnknownCitationError(
                f"unknown citation_id {citation_id!r}: it is not a citation of this run; "
                "omit citation_id to register a new citation for this source"
            )
        number = last_number(session, SourceRow.number, self.run_id) + 1
        row = SourceRow(
            run_id=self.run_id,
            number=number,
            source_type=source_type,
            external_id=external_id,
            url=url,
            title=title.strip(),
            citation_id=citation_id or f"S{number}",
            key_excerpts=_excerpts([], key_excerpts or []),
            evidence=evidence,
            created_at=utc_now(),
        )
        session.add(row)
        session.flush()
        return row

    def _find(
        self,
        session: Session,
        source_type: str,
        external_id: str,
        keys: Sequence[str],
        citation_id: str | None,
    ) -> SourceRow | None:
        row = session.scalar(
            select(SourceRow).where(
                SourceRow.run_id == self.run_id,
                SourceRow.source_type == source_type,
                SourceRow.external_id == external_id,
            )
        )
        if row is None and keys:
            source_id = session.scalar(
                select(SourceKeyRow.source_id)
                .where(SourceKeyRow.run_id == self.run_id, SourceKeyRow.key.in_(list(keys)))
                .limit(1)
            )
            row = session.get(SourceRow, source_id) if source_id is not None else None
        if row is None and citation_id is not None:
            row = session.scalar(
                select(SourceRow).where(
                    SourceRow.run_id == self.run_id, SourceRow.citation_id == citation_id
                )
            )
        return row

    def _add_keys(self, session: Session, source_id: int, keys: Sequence[str]) -> None:
        if not keys:
            return
        taken = set(
            session.scalars(
                select(SourceKeyRow.key).where(
                    SourceKeyRow.run_id == self.run_id, SourceKeyRow.key.in_(list(keys))
                )
            )
        )
        for key in keys:
            if key not in taken:  # a key of another saved source stays with that source
                session.add(SourceKeyRow(run_id=self.run_id, key=key, source_id=source_id))

    def _add_questions(self, session: Session, source_id: int, questions: Sequence[str]) -> None:
        if not questions:
            return
        have = set(
            session.scalars(
                select(SourceQuestionRow.question_key).where(
                    SourceQuestionRow.source_id == source_id
                )
            )
        )
        for key in questions:
            if key not in have:
                session.add(
                    SourceQuestionRow(source_id=source_id, question_key=key, run_id=self.run_id)
                )
        session.flush()

    def _save_message(self, session: Session, row: SourceRow, created: bool) -> str:
        label = SOURCE_LABELS.get(row.source_type, row.source_type)
        head = (
            f"✓ Saved source #{row.number} ({label})"
            if created
            else f"= Source #{row.number} ({label}) was already saved"
        )
        keys = list(
            session.scalars(
                select(SourceQuestionRow.question_key).where(SourceQuestionRow.source_id == row.id)
            )
        )
        if not keys:
            return _clip(f"{head} (no question)")
        counts = self._counts(session, keys)
        specs = {q.key: q for q in self.syllabus.questions} if self.syllabus else {}
        parts = []
        for key in self.syllabus.keys if self.syllabus else keys:
            if key not in counts:
                continue
            minimum = specs[key].min_sources if key in specs else 1
            q = QuestionProgress(key=key, label=key, count=counts[key], min_sources=minimum)
            parts.append(f"{key} ({q.count}/{q.min_sources} {q.mark()})")
        return _join_within(parts, f"{head} → ", "")

    def _counts(self, session: Session, keys: Sequence[str] | None = None) -> dict[str, int]:
        query = (
            select(SourceQuestionRow.question_key, func.count())
            .where(SourceQuestionRow.run_id == self.run_id)
            .group_by(SourceQuestionRow.question_key)
        )
        if keys is not None:
            query = query.where(SourceQuestionRow.question_key.in_(list(keys)))
        return {str(k): int(n) for k, n in session.execute(query).all()}

    # --- progress -----------------------------------------------------------------------

    def get_progress(self) -> Progress:
        """Sources per question against their minimums (two aggregate queries).

        Raises:
            StateError: no syllabus yet.
        """
        syllabus = self._require_syllabus()

        def read(session: Session) -> tuple[dict[str, int], int]:
            total = session.scalar(
                select(func.count()).select_from(SourceRow).where(SourceRow.run_id == self.run_id)
            )
            return self._counts(session), int(total or 0)

        with self._lock:
            counts, total = self.runs.transact(read)
        questions = [
            QuestionProgress(
                key=q.key, label=q.label, count=counts.get(q.key, 0), min_sources=q.min_sources
            )
            for q in syllabus.questions
        ]
        done = sum(q.done for q in questions)
        pending = [q for q in questions if not q.done]
        focus = min(pending, key=lambda q: q.count / q.min_sources, default=None)
        return Progress(
            questions=questions,
            total_sources=total,
            summary=f"{total} sources saved; {done}/{len(questions)} questions complete",
            next_focus=focus.key if focus else None,
        )

    def check_completion(self) -> Completion:
        """Whether every question has its minimum number of sources.

        Raises:
            StateError: no syllabus yet.
        """
        progress = self.get_progress()
        questions = progress.questions
        share = sum(min(q.count / q.min_sources, 1.0) for q in questions) / len(questions)
        missing = {q.key: q.min_sources - q.count for q in questions if not q.done}
        if not missing:
            suggestion = "Every question has its minimum sources: finish and write the report."
        else:
            focus = next(q for q in questions if q.key == progress.next_focus)
            suggestion = (
                f"Search for '{focus.label}' ({focus.key}) next: "
                f"{focus.min_sources - focus.count} more source(s) needed."
            )
        return Completion(
            ready=not missing, progress=round(share, 3), missing=missing, suggestion=suggestion
        )

    def finalize_sources(self) -> dict[str, list[SavedSource]]:
        """Every saved source grouped by question (syllabus order, then other keys, then
        :data:`UNASSIGNED`), each group in source-number order; a source of several
        questions appears under each."""
        with self._lock:
            grouped = self.runs.transact(lambda s: sources_by_question(s, self.run_id))
        order = self.syllabus.keys if self.syllabus else []
        keys = [k for k in order if k in grouped] + [k for k in grouped if k not in order]
        return {k: grouped[k] for k in keys}

    # --- by citation ----------------------------------------------------------------------

    def saved_by_citation(self, citation_ids: Sequence[str]) -> dict[str, SavedSource]:
        """The saved sources whose citation id is one of ``citation_ids``: citation id ->
        source (its questions in syllabus order, its excerpts); ids never saved are absent."""
        wanted = list(dict.fromkeys(citation_ids))

        def read(session: Session) -> dict[str, SavedSource]:
            rows = session.scalars(
                select(SourceRow).where(
                    SourceRow.run_id == self.run_id, SourceRow.citation_id.in_(wanted)
                )
            ).all()
            links: dict[int, list[str]] = {}
            for source_id, key in session.execute(
                select(SourceQuestionRow.source_id, SourceQuestionRow.question_key).where(
                    SourceQuestionRow.source_id.in_([r.id for r in rows])
                )
            ).all():
                links.setdefault(int(source_id), []).append(str(key))
            return {r.citation_id: self._saved(r, links.get(r.id, [])) for r in rows}

        if not wanted:
            return {}
        with self._lock:
            return self.runs.transact(read)

    def _saved(self, row: SourceRow, questions: list[str]) -> SavedSource:
        order = {k: i for i, k in enumerate(self.syllabus.keys if self.syllabus else [])}
        return SavedSource.from_row(
            row, sorted(questions, key=lambda k: (order.get(k, len(order)), k))
        )

    def forget_questions(self, citation_ids: Sequence[str]) -> int:
        """Unassign the saved sources of ``citation_ids`` from every question (the sources
        stay saved): undoes the saves of a screening that failed. Returns the number of
        question links removed."""
        wanted = list(dict.fromkeys(citation_ids))

        def work(session: Session) -> int:
            ids = list(
                session.scalars(
                    select(SourceRow.id).where(
                        SourceRow.run_id == self.run_id, SourceRow.citation_id.in_(wanted)
                    )
                )
            )
            links = session.scalars(
                select(SourceQuestionRow).where(SourceQuestionRow.source_id.in_(ids))
            ).all()
            for link in links:
                session.delete(link)
            return len(links)

        if not wanted:
            return 0
        with self._lock:
            return self.runs.transact(work)


def _excerpts(current: list[str], new: Sequence[str]) -> list[str]:
    out = list(current)
    for text in new:
        clean = " ".join(str(text).split())[:MAX_EXCERPT_CHARS]
        if clean and clean not in out and len(out) < MAX_EXCERPTS:
            out.append(clean)
    return out


def _update_row(
    row: SourceRow,
    url: str | None,
    title: str,
    key_excerpts: Sequence[str] | None,
    evidence: dict[str, Any] | None,
) -> None:
    """Merge a source saved again into its row: a URL where there was none, a real title over
    a missing or derived one, new excerpts, the latest evidence item."""
    if not row.url and url:
        row.url = url
    title = title.strip()
    derived = row.title.startswith(DERIVED_TITLE_MARK)  # a real title replaces it
    if title and (not row.title or (derived and not title.startswith(DERIVED_TITLE_MARK))):
        row.title = title
    merged = _excerpts(list(row.key_excerpts or []), key_excerpts or [])
    if merged != list(row.key_excerpts or []):
        row.key_excerpts = merged
    if evidence is not None:
        row.evidence = evidence
