"""The diff by section between two versions of a report (issue 32): sections paired by
heading, each unchanged, changed, added or removed, in the newer version's order; a changed
one as a word-level diff; every piece of report text escaped, only ``<ins>``/``<del>`` and
the diff's own few tags surviving."""

from __future__ import annotations

import lxml.html

from deepcritical.ui.section_diff import (
    diff_html,
    section_changes,
    split_sections,
    word_diff_html,
)
from tests.unit.ui_fixtures import HOSTILE

OLD = """# Metformin and cancer

**Research question:** Does metformin lower cancer risk?

## Executive summary

Metformin lowered cancer risk in two cohorts [1].

## Findings

### Cancer incidence

Incidence was lower with metformin [1].

### Harms

Diarrhoea was common [2].

## Conclusion

Metformin may lower cancer risk.
"""

NEW = """# Metformin and cancer

**Research question:** Does metformin lower cancer risk?

## Executive summary

Metformin lowered cancer risk in one cohort [1].

## Findings

### Cancer incidence

Incidence was  lower with metformin [1].

### For patients

Ask your doctor.

## Conclusion

Metformin may lower cancer risk.
"""


def statuses(old: str, new: str) -> list[tuple[str, str]]:
    return [(c.heading, c.status) for c in section_changes(old, new)]


def test_sections_are_paired_by_heading_in_the_newer_order() -> None:
    assert statuses(OLD, NEW) == [
        ("Metformin and cancer", "unchanged"),
        ("Executive summary", "changed"),
        ("Findings", "unchanged"),
        ("Cancer incidence", "unchanged"),  # whitespace only
        ("Harms", "removed"),  # where it stood in the older version
        ("For patients", "added"),
        ("Conclusion", "unchanged"),
    ]
    assert all(c.status == "unchanged" for c in section_changes(OLD, OLD))


def test_a_section_removed_before_the_first_kept_one_comes_first() -> None:
    old = "Intro text.\n\n## A\n\nx\n\n## B\n\ny\n"
    assert statuses(old, "## B\n\ny\n") == [("", "removed"), ("A", "removed"), ("B", "unchanged")]


def test_repeated_headings_are_told_apart_by_their_order() -> None:
    sections = split_sections("## Note\n\none\n\n## Note\n\ntwo\n")
    assert [(s.heading, s.occurrence, s.body) for s in sections] == [
        ("Note", 1, "one"),
        ("Note", 2, "two"),
    ]
    assert statuses("## Note\n\none\n\n## Note\n\ntwo\n", "## Note\n\none\n") == [
        ("Note", "unchanged"),
        ("Note", "removed"),
    ]


def test_word_diff_marks_deleted_and_inserted_words() -> None:
    assert word_diff_html("in two cohorts [1].", "in one cohort [1].") == (
        "in <del>two cohorts</del><ins>one cohort</ins> [1]."
    )
    assert word_diff_html("same", "same") == "same"


def test_diff_html_marks_each_section_and_counts_them() -> None:
    shown = diff_html(section_changes(OLD, NEW), "Version 1 → version 2")
    root = lxml.html.fragment_fromstring(shown, create_parent="div")
    marked = {s.get("data-section"): s.get("data-status") for s in root.iter("section")}
    assert marked["Executive summary"] == "changed"
    assert marked["Harms"] == "removed"
    assert marked["For patients"] == "added"
    assert "1 changed, 1 added, 1 removed" in root.findtext("p") or ""
    summary = next(s for s in root.iter("section") if s.get("data-section") == "Executive summary")
    assert [d.text for d in summary.iter("del")] == ["two cohorts"]
    assert [i.text for i in summary.iter("ins")] == ["one cohort"]
    unchanged = next(s for s in root.iter("section") if s.get("data-section") == "Conclusion")
    assert not list(unchanged.iter("div"))  # an unchanged section shows its heading only


def test_report_text_is_escaped_in_every_part() -> None:
    old = f"## Findings {HOSTILE}\n\nSafe text.\n\n## Gone {HOSTILE}\n\n{HOSTILE}\n"
    new = f"## Findings {HOSTILE}\n\nSafe {HOSTILE} text.\n\n## New\n\n{HOSTILE}\n"
    shown = diff_html(section_changes(old, new), f"caption {HOSTILE}")
    root = lxml.html.fragment_fromstring(shown, create_parent="div")
    assert not [el.tag for el in root.iter() if el.tag in {"script", "img"}]
    assert not [a for el in root.iter() for a in el.attrib if a.startswith("on")]
    assert shown.count("&lt;script&gt;") >= 4
    tags = {el.tag for el in root.iter()} - {"div"}
    assert tags <= {"p", "section", "h4", "span", "ins", "del"}
