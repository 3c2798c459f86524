"""What changed between two versions of a report, section by section (no Gradio: a pure
function of two markdown texts, and its HTML).

:func:`section_changes` splits each version's markdown at its headings (the title, the
executive summary, methodology, each finding, limitations, conclusion, references...) and
pairs the sections by heading: each is ``"unchanged"``, ``"changed"``, ``"added"`` (only in
the newer version) or ``"removed"`` (only in the older), in the newer version's order with a
removed section where it stood in the older one. :func:`diff_html` renders them: a changed
section as a word-level diff (:mod:`difflib`), an added one all inserted, a removed one all
deleted, an unchanged one by its heading only.

Report text comes from sources: it is data. Every piece of it is escaped before the diff
marks it with ``<ins>`` and ``<del>``, and the result goes through the sanitiser once more
with an allow-list of the few tags and attributes this HTML uses.
"""

from __future__ import annotations

import difflib
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import nh3

__all__ = [
    "DIFF_CSS",
    "SectionChange",
    "diff_html",
    "section_changes",
    "split_sections",
    "word_diff_html",
]

Status = Literal["unchanged", "changed", "added", "removed"]

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_TOKEN = re.compile(r"\s+|[^\s]+")
_DIFF_TAGS = {"section", "h4", "p", "ins", "del", "span", "div"}
_DIFF_ATTRIBUTES = {
    "section": {"class", "data-section", "data-status"},
    "span": {"class"},
    "p": {"class"},
    "div": {"class"},
}
_LABELS: dict[str, str] = {
    "unchanged": "unchanged",
    "changed": "changed",
    "added": "added",
    "removed": "removed",
}
DIFF_CSS = """
#dc-version-diff .dc-diff-section { border-left: 3px solid #d1d5db; padding: 2px 8px; margin: 6px 0; }
#dc-version-diff .dc-diff-section[data-status="changed"] { border-left-color: #d97706; }
#dc-version-diff .dc-diff-section[data-status="added"] { border-left-color: #059669; }
#dc-version-diff .dc-diff-section[data-status="removed"] { border-left-color: #dc2626; }
#dc-version-diff .dc-diff-status { font-size: 0.8em; font-weight: 600; margin-left: 6px; }
#dc-version-diff .dc-diff-text { white-space: pre-wrap; font-size: 0.9em; }
#dc-version-diff ins { background: #d1fae5; color: #064e3b; text-decoration: none; }
#dc-version-diff del { background: #fee2e2; color: #7f1d1d; }
"""  # noqa: E501
"""The diff's styles (the app adds them to its own)."""


@dataclass(frozen=True)
class Section:
    """One section of a report's markdown: its heading (``""`` for text before the first
    heading), its occurrence among sections of that heading, and its body."""

    heading: str
    occurrence: int
    body: str

    @property
    def key(self) -> tuple[str, int]:
        """What pairs it with the same section of another version."""
        return self.heading, self.occurrence


@dataclass(frozen=True)
class SectionChange:
    """A section of either version and what happened to it; ``old`` / ``new`` its body in
    the older / newer version (``""`` where it is absent)."""

    heading: str
    status: Status
    old: str
    new: str


def _normal(text: str) -> str:
    return " ".join(text.split())


def split_sections(markdown: str) -> list[Section]:
    """``markdown`` cut at each heading line (``#`` to ``######``): the sections in order,
    each heading's text without its ``#`` marks; text before the first heading is a section
    of heading ``""`` when it is not blank."""
    sections: list[Section] = []
    seen: dict[str, int] = {}
    heading: str | None = None
    body: list[str] = []

    def close() -> None:
        text = "\n".join(body).strip()
        if heading is None and not text:
            return
        name = heading or ""
        seen[name] = seen.get(name, 0) + 1
        sections.append(Section(name, seen[name], text))

    for line in markdown.splitlines():
        match = _HEADING.match(line)
        if match is None:
            body.append(line)
            continue
        close()
        heading, body = match.group(2), []
    close()
    return sections


def section_changes(old_markdown: str, new_markdown: str) -> list[SectionChange]:
    """The sections of two versions of a report paired by heading, in the newer version's
    order, each removed section after the section it followed in the older version (module
    docstring); a body differing only in whitespace is unchanged."""
    old, new = split_sections(old_markdown), split_sections(new_markdown)
    old_by_key = {s.key: s for s in old}
    new_keys = {s.key for s in new}
    after: dict[tuple[str, int] | None, list[Section]] = {}
    previous: tuple[str, int] | None = None
    for section in old:
        if section.key not in new_keys:
            after.setdefault(previous, []).append(section)
        else:
            previous = section.key
    removed = [SectionChange(s.heading, "removed", s.body, "") for s in after.get(None, [])]
    out = list(removed)
    for section in new:
        before = old_by_key.get(section.key)
        if before is None:
            out.append(SectionChange(section.heading, "added", "", section.body))
        else:
            same = _normal(before.body) == _normal(section.body)
            status: Status = "unchanged" if same else "changed"
            out.append(SectionChange(section.heading, status, before.body, section.body))
        out += [SectionChange(s.heading, "removed", s.body, "") for s in after.get(section.key, [])]
    return out


def _chunks(a: Sequence[str], b: Sequence[str]) -> list[tuple[bool, str, str]]:
    """``(same, old text, new text)`` pieces of the token lists ``a`` -> ``b``; a run of
    whitespace alone between two changes joins them (one change, not two)."""
    chunks: list[tuple[bool, str, str]] = []
    opcodes = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    for k, (op, i1, i2, j1, j2) in enumerate(opcodes):
        old, new = "".join(a[i1:i2]), "".join(b[j1:j2])
        inner = 0 < k < len(opcodes) - 1
        same = op == "equal" and not (inner and not old.strip())
        if chunks and not same and not chunks[-1][0]:
            _, was_old, was_new = chunks.pop()
            old, new = was_old + old, was_new + new
        chunks.append((same, old, new))
    return chunks


def word_diff_html(old: str, new: str) -> str:
    """``old`` -> ``new`` word by word: each piece escaped, deleted words in ``<del>``,
    inserted ones in ``<ins>`` (whitespace kept as it is)."""
    parts: list[str] = []
    for same, before, after in _chunks(_TOKEN.findall(old), _TOKEN.findall(new)):
        if same:
            parts.append(html.escape(before))
            continue
        if before:
            parts.append(f"<del>{html.escape(before)}</del>")
        if after:
            parts.append(f"<ins>{html.escape(after)}</ins>")
    return "".join(parts)


def _section_html(change: SectionChange) -> str:
    heading = html.escape(change.heading or "(before the first heading)")
    status = html.escape(change.status)
    head = (
        f'<h4>{heading}<span class="dc-diff-status">{html.escape(_LABELS[change.status])}'
        "</span></h4>"
    )
    if change.status == "unchanged":
        body = ""
    elif change.status == "added":
        body = f"<ins>{html.escape(change.new)}</ins>" if change.new else ""
    elif change.status == "removed":
        body = f"<del>{html.escape(change.old)}</del>" if change.old else ""
    else:
        body = word_diff_html(change.old, change.new)
    text = f'<div class="dc-diff-text">{body}</div>' if body else ""
    return (
        f'<section class="dc-diff-section" data-section="{heading}" data-status="{status}">'
        f"{head}{text}</section>"
    )


def diff_html(changes: Sequence[SectionChange], caption: str = "") -> str:
    """``changes`` as sanitised HTML: a line counting them by status (after ``caption``,
    escaped), then one ``<section data-status=...>`` per section."""
    counts = {s: sum(c.status == s for c in changes) for s in _LABELS}
    summary = ", ".join(f"{n} {label}" for label, n in counts.items() if n)
    head = f"{caption}: {summary}" if caption else summary
    fragment = f'<p class="dc-diff-summary">{html.escape(head)}</p>' + "".join(
        _section_html(c) for c in changes
    )
    return nh3.clean(fragment, tags=_DIFF_TAGS, attributes=_DIFF_ATTRIBUTES, url_schemes=set())
