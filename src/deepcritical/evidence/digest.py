"""Compressed findings: the evidence a model sees when it must survey many items at once
(reflection, the writer's outline and summary) in a couple of lines per item."""

from __future__ import annotations

from collections.abc import Sequence

from deepcritical.evidence.grading import grade_evidence
from deepcritical.llm.fencing import Fence
from deepcritical.models import Evidence

__all__ = ["FINDING_CHARS", "compressed_findings"]

FINDING_CHARS = 200
"""Characters of an item's text in its compressed form."""


def compressed_findings(
    evidence: Sequence[Evidence], fence: Fence, chars: int = FINDING_CHARS
) -> list[str]:
    """Two lines per item: the id, design and checklist items in the clear
    (``E3 (cohort study; items: mechanism):``), then the title and the first ``chars``
    characters of its text inside the item's fence (source text is data)."""
    lines = []
    for e in evidence:
        keys = ", ".join(e.checklist_keys) or "none"
        title = " ".join(e.citation.display_title().split())
        lines.append(f"{e.id} ({grade_evidence(e).value}; items: {keys}):")
        stop = "" if title.endswith("…") else "."  # a shortened derived title
        lines.append(fence.wrap(e.id, f"{title}{stop} {e.snippet(chars)}"))
    return lines
