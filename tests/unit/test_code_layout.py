"""The code's layout rules that a newcomer relies on (issue 31): a module's name says what it
holds, so no two modules of ``src/deepcritical`` share a name (``__init__`` and
``__main__`` apart); a function fits on a screen or two (80 lines at most, the named debt
apart)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "deepcritical"


def test_no_two_modules_share_a_name() -> None:
    homes: dict[str, list[str]] = defaultdict(list)
    for path in SRC.rglob("*.py"):
        if path.stem not in {"__init__", "__main__"}:
            homes[path.name].append(str(path.relative_to(SRC)))
    assert len(homes) > 100  # the whole package was read
    shared = {name: sorted(paths) for name, paths in homes.items() if len(paths) > 1}
    assert shared == {}


MAX_FUNCTION_LINES = 80
STILL_LONGER = {
    # a migration is history: it stays as it was applied
    "state/migrations/versions/0001_initial.py:upgrade",
}


def test_no_function_is_longer_than_80_lines_but_the_named_debt() -> None:
    longer = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    longer.add(f"{path.relative_to(SRC)}:{node.name}")
    assert longer == STILL_LONGER


def test_the_run_module_keeps_the_state_and_the_sequence_of_steps_only() -> None:
    """``orchestrators/run.py`` holds a run's state and the sequence of its steps; the larger
    steps live in modules named after them (``search_step``, ``screening_step``, ...), so the
    run module stays under 450 lines (issue 31)."""
    text = (SRC / "orchestrators" / "run.py").read_text(encoding="utf-8")
    assert "class ResearchRun" in text
    assert text.count("\n") < 450


CITATION_GRAMMAR = ("E\\d+", "PMC\\d", "NCT\\d", "10\\.\\d", "PMID\\s")
"""Regular-expression fragments of the citation-marker and identifier grammar."""


def test_the_citation_grammar_has_one_home() -> None:
    """Citation markers and the identifiers a citation names are written as regular
    expressions in ``models/_markers.py`` only; every other module builds on its pieces, so
    two modules cannot disagree on where a marker or a DOI ends (the test doubles of
    ``testing/`` apart: they read prompts, not citations)."""
    home = SRC / "models" / "_markers.py"
    assert all(fragment in home.read_text(encoding="utf-8") for fragment in CITATION_GRAMMAR[:2])
    elsewhere = {
        f"{path.relative_to(SRC)}: {fragment}"
        for path in SRC.rglob("*.py")
        if path != home and "testing" not in path.parts
        for fragment in CITATION_GRAMMAR
        if fragment in path.read_text(encoding="utf-8")
    }
    assert elsewhere == set()
