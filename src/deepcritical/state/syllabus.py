"""The questions a run collects sources for: a syllabus of :class:`QuestionSpec`.

A syllabus comes either from the research checklist the planner made for the question
(:meth:`Syllabus.from_checklist`) or from a fixed YAML/JSON file (:meth:`Syllabus.from_file`),
e.g. ``syllabi/drug_profile.yaml``::

    name: drug_profile
    questions:
      - key: mechanism.moa
        label: Mechanism of action
        description: How the drug acts on its molecular target(s)
        min_sources: 3

A fixed syllabus replaces the planner's checklist
(:class:`deepcritical.agents.planner.SyllabusPlanner`), so the run gathers evidence for exactly
those questions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationError, model_validator

from deepcritical.models import ChecklistItem
from deepcritical.state.errors import SyllabusError, UnknownQuestionError

__all__ = ["QuestionSpec", "Syllabus"]

_KEY = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,99}$")


class QuestionSpec(BaseModel):
    """One question sources are collected for.

    ``key`` is 1-100 characters of letters, digits, ``_ . -`` (e.g. ``clinical.efficacy``);
    ``min_sources`` is the number of sources that makes the question complete.
    """

    key: str
    label: str
    description: str = ""
    min_sources: int = Field(default=2, ge=1, le=1000)

    @model_validator(mode="after")
    def _check_key(self) -> QuestionSpec:
        if not _KEY.match(self.key):
            raise ValueError(
                f"question key {self.key!r} must be 1-100 characters of letters, digits, "
                "'_', '.', '-'"
            )
        return self


class Syllabus(BaseModel):
    """An ordered set of questions with unique keys (at least one)."""

    name: str = "checklist"
    questions: list[QuestionSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_keys(self) -> Syllabus:
        seen: set[str] = set()
        for q in self.questions:
            if q.key in seen:
                raise ValueError(f"question key {q.key!r} appears twice")
            seen.add(q.key)
        return self

    @property
    def keys(self) -> list[str]:
        """Question keys in syllabus order."""
        return [q.key for q in self.questions]

    def get(self, key: str) -> QuestionSpec:
        """The question with ``key``.

        Raises:
            UnknownQuestionError: no such key (the message lists the valid keys).
        """
        for q in self.questions:
            if q.key == key:
                return q
        raise UnknownQuestionError(
            f"unknown question key {key!r}; valid keys: {', '.join(self.keys)}"
        )

    def require(self, keys: Iterable[str]) -> list[str]:
        """``keys`` without repeats, in the given order, each checked with :meth:`get`.

        Raises:
            UnknownQuestionError: a key is not in the syllabus.
        """
        unique = list(dict.fromkeys(keys))
        unknown = [k for k in unique if k not in set(self.keys)]
        if unknown:
            raise UnknownQuestionError(
                f"unknown question key(s) {', '.join(repr(k) for k in unknown)}; "
                f"valid keys: {', '.join(self.keys)}"
            )
        return unique

    @classmethod
    def from_checklist(cls, items: Sequence[ChecklistItem], name: str = "checklist") -> Syllabus:
        """The syllabus of a research plan's checklist (key, description, ``min_evidence``)."""
        return cls(
            name=name,
            questions=[
                QuestionSpec(
                    key=i.key,
                    label=i.description[:80],
                    description=i.description,
                    min_sources=i.min_evidence,
                )
                for i in items
            ],
        )

    @classmethod
    def from_data(cls, data: Any, origin: str = "syllabus") -> Syllabus:
        """Validate parsed YAML/JSON (``{"name": ..., "questions": [...]}``).

        Raises:
            SyllabusError: the data does not describe a valid syllabus (says where).
        """
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'syllabus'}: {e['msg']}"
                for e in exc.errors()
            )
            raise SyllabusError(f"{origin}: invalid syllabus: {problems}") from exc

    @classmethod
    def from_file(cls, path: Path) -> Syllabus:
        """Read a ``.yaml``/``.yml`` or ``.json`` syllabus file.

        Raises:
            SyllabusError: unreadable file, unparsable text or an invalid syllabus.
        """
        try:
            text = path.read_text(encoding="utf-8")
            data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
        except (OSError, ValueError, yaml.YAMLError) as exc:
            raise SyllabusError(f"{path}: cannot read the syllabus: {exc}") from exc
        return cls.from_data(data, str(path))

    def checklist(self) -> list[ChecklistItem]:
        """The syllabus as research checklist items (description = label: description)."""
        return [
            ChecklistItem(
                key=q.key,
                description=f"{q.label}: {q.description}" if q.description else q.label,
                min_evidence=q.min_sources,
            )
            for q in self.questions
        ]
