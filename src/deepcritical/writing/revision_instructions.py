"""A user's instruction for revising a finished report ("shorter", "for patients", "only
randomised trials", "add a section on harms"), read by rules, without a model.

:func:`parse_instruction` maps an instruction to a :class:`RevisionRequest`: the report
preferences it changes (length, audience, focus; :class:`~deepcritical.models.ReportPreferences`)
and the study designs it keeps. Several parts combine ("shorter, for patients, only RCTs").
An instruction with words no rule reads is refused with :class:`RevisionError`, whose message
lists what works offline (:data:`OFFLINE_INSTRUCTIONS`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypeVar

from deepcritical.evidence.design import DesignGroup
from deepcritical.models import ReportLength, ReportPreferences
from deepcritical.text.control import strip_control_chars

__all__ = [
    "MAX_INSTRUCTION_CHARS",
    "OFFLINE_INSTRUCTIONS",
    "PATIENTS",
    "RevisionError",
    "RevisionRequest",
    "check_instruction",
    "parse_instruction",
]

MAX_INSTRUCTION_CHARS = 300
"""The longest instruction accepted (characters, after white space is collapsed)."""

PATIENTS = "patients and the public"
"""The audience of "for patients", "for the public", "lay", "plain language"."""

OFFLINE_INSTRUCTIONS = (
    '"shorter" (also brief, concise) or "longer" (also more detail)',
    '"for patients" (also for the public, lay, plain language), "for clinicians", "for scientists"',
    '"focus on X", "add a section on X" or "more on X"',
    '"only randomised trials" (also only RCTs), "only systematic reviews", "only clinical '
    'trials" or "only observational studies"',
)
"""What :func:`parse_instruction` reads, for error messages and help texts."""


class RevisionError(ValueError):
    """A revision cannot be made: the instruction is empty, too long or not understood, or it
    leaves nothing to write from (no source of the designs asked for). Nothing is stored."""


@dataclass(frozen=True)
class RevisionRequest:
    """What an instruction asks for; ``None`` (or ``()``) leaves that part as it was.

    Attributes:
        length: the report length (``brief``, ``standard``, ``detailed``).
        audience: who reads it (``""`` = scientists, the default).
        focus: an aspect to give a section of its own.
        designs: the study-design groups a report may cite (``()``: every design).
    """

    length: ReportLength | None = None
    audience: str | None = None
    focus: str | None = None
    designs: tuple[DesignGroup, ...] = ()

    def apply(self, preferences: ReportPreferences) -> ReportPreferences:
        """``preferences`` with the parts this request sets replaced."""
        update: dict[str, str] = {}
        if self.length is not None:
            update["length"] = self.length
        if self.audience is not None:
            update["audience"] = self.audience
        if self.focus is not None:
            update["focus"] = self.focus
        return preferences.model_copy(update=update)


_LENGTHS: tuple[tuple[ReportLength, re.Pattern[str]], ...] = (
    ("brief", re.compile(r"\b(?:shorter|shorten|brief(?:er)?|(?:more )?concise|short)\b")),
    (
        "detailed",
        re.compile(r"\b(?:longer|lengthen|(?:in )?more detail(?:ed)?|detailed|expand(?:ed)?)\b"),
    ),
)
_AUDIENCES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        PATIENTS,
        re.compile(
            r"\b(?:for (?:the )?(?:patients?|(?:general )?public|lay (?:readers|people|audience)"
            r"|laypeople|non-?specialists)|(?:in )?plain (?:language|english)|lay)\b"
        ),
    ),
    ("clinicians", re.compile(r"\bfor (?:the )?(?:clinicians|doctors|physicians|nurses)\b")),
    ("", re.compile(r"\bfor (?:the )?(?:scientists|researchers)\b")),
)
_ONLY = r"(?:(?:keep |cite |use )?only (?:the )?{0}|{0} only)"
_DESIGNS: tuple[tuple[tuple[DesignGroup, ...], re.Pattern[str]], ...] = (
    (
        (DesignGroup.RCT,),
        re.compile(_ONLY.format(r"(?:randomi[sz]ed (?:controlled )?trials?|rcts?)\b")),
    ),
    (
        (DesignGroup.SYSTEMATIC,),
        re.compile(
            _ONLY.format(r"(?:systematic reviews?|meta-?analys[ie]s)(?: and meta-?analys[ie]s)?\b")
        ),
    ),
    ((DesignGroup.RCT, DesignGroup.TRIAL), re.compile(_ONLY.format(r"(?:clinical )?trials\b"))),
    ((DesignGroup.OBSERVATIONAL,), re.compile(_ONLY.format(r"observational studies\b"))),
)
_FOCUS = re.compile(
    r"\b(?:focus(?:ed|sing|ing)? (?:more )?on|add (?:a )?(?:short )?section (?:on|about)|"
    r"more (?:on|about)|emphasi[sz]e)\s+(?P<topic>[^,;.!?]+)"
)
_FILLER = frozenset(
    [
        "and",
        "also",
        "please",
        "make",
        "it",
        "the",
        "report",
        "a",
        "an",
        "bit",
        "much",
        "be",
        "write",
        "rewrite",
        "revise",
        "keep",
        "this",
        "version",
        "to",
        "that",
        "is",
        "more",
        "with",
        "but",
    ]
)
"""Words that may stand around the parts of an instruction without meaning anything."""


def check_instruction(instruction: str) -> str:
    """``instruction`` with control characters out and white space collapsed.

    Raises:
        RevisionError: it is empty, or longer than :data:`MAX_INSTRUCTION_CHARS`.
    """
    text = " ".join(strip_control_chars(instruction).split())
    if not text:
        raise RevisionError("the instruction is empty; say how to revise the report")
    if len(text) > MAX_INSTRUCTION_CHARS:
        raise RevisionError(
            f"the instruction has {len(text)} characters; the limit is {MAX_INSTRUCTION_CHARS}"
        )
    return text


def _take(pattern: re.Pattern[str], text: str) -> tuple[bool, str]:
    """Whether ``pattern`` occurs in ``text``, and ``text`` with every match cut to ``,``."""
    cut = pattern.sub(",", text)
    return cut != text, cut


_T = TypeVar("_T")


def _one(kind: str, found: list[_T]) -> _T | None:
    """The one value an instruction gave for ``kind``; ``None`` for none.

    Raises:
        RevisionError: it gave two that contradict each other.
    """
    distinct = list(dict.fromkeys(found))
    if len(distinct) > 1:
        raise RevisionError(f"the instruction asks for two {kind}s at once; choose one")
    return distinct[0] if distinct else None


def parse_instruction(instruction: str, *, llm: str = "none") -> RevisionRequest:
    """The :class:`RevisionRequest` of ``instruction`` (see the module docstring).

    Args:
        instruction: the user's words, checked by :func:`check_instruction`.
        llm: the model spec the run was written with; when it names a model, the refusal
            says that free-form instructions would need one.

    Raises:
        RevisionError: empty or too long; no part understood, or words left that no rule
            reads (the message names them and lists :data:`OFFLINE_INSTRUCTIONS`); or two
            lengths, audiences or design filters that contradict each other.
    """
    text = check_instruction(instruction).lower()
    lengths: list[ReportLength] = []
    audiences: list[str] = []
    designs: list[tuple[DesignGroup, ...]] = []
    for length, pattern in _LENGTHS:
        if (found := _take(pattern, text))[0]:
            lengths.append(length)
            text = found[1]
    for audience, pattern in _AUDIENCES:
        if (found := _take(pattern, text))[0]:
            audiences.append(audience)
            text = found[1]
    for groups, pattern in _DESIGNS:
        if (found := _take(pattern, text))[0]:
            designs.append(groups)
            text = found[1]
    focus = _focus(text)
    if focus is not None:
        text = _FOCUS.sub(",", text)
    left = [w for w in re.findall(r"[\w'-]+", text) if w not in _FILLER]
    request = RevisionRequest(
        length=_one("length", lengths),
        audience=_one("audience", audiences),
        focus=focus,
        designs=_one("design filter", designs) or (),
    )
    if left or request == RevisionRequest():
        raise RevisionError(_not_understood(instruction, left, llm))
    return request


def _focus(text: str) -> str | None:
    """The topic of a "focus on X" part, its trailing filler words cut; ``None`` for none."""
    found = _FOCUS.search(text)
    if found is None:
        return None
    words = found.group("topic").split()
    while words and words[-1] in _FILLER:
        words.pop()
    return " ".join(words) or None


def _not_understood(instruction: str, left: list[str], llm: str) -> str:
    """The refusal: what was not understood, and what works offline."""
    what = f"the words {' '.join(left)!r} are not" if left else "it is not"
    message = (
        f"cannot revise the report as {' '.join(instruction.split())!r}: {what} understood. "
        "A revision is written without a model, from the run's evidence, and understands "
        "(several may be combined): " + "; ".join(OFFLINE_INSTRUCTIONS) + "."
    )
    if llm.strip().lower() not in {"", "none"}:
        message += (
            f" This run was written with a model ({llm}), but free-form instructions need "
            "that model to rewrite the report, which revisions do not do yet."
        )
    return message
