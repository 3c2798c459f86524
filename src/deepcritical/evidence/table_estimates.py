"""Effect estimates read from a table's columns, each with its CI.

A full text's table passage (:meth:`deepcritical.formats.jats.JatsTable.text`: the caption on
its first line, then one line per row with its cells joined by ``" | "``) states estimates by
column: a header cell names the CI ("95% C.I.", "95% confidence interval (OR)", "OR (95%
CI)"), and each row below it with as many cells gives

- the bounds alone in that column ("29.7, 49.5", "[10.0,16.8]", "0.10–1.20"), the estimate in
  the column just before it (not a count or p-value column), its superscript letters or marks
  dropped ("39.1c" reads 39.1);
- or the estimate and its bounds in the one cell ("2.30 (1.20–4.50)").

The measure is the one the estimate's or the CI's header names (:func:`measure_named_in`), else
``estimate``; the outcome is the caption's first sentence ("RVF seroprevalence in 2007"). A
value outside its bounds, a reference row ("1* | – | –") or a row of another width is not read.
"""

from __future__ import annotations

import re

from deepcritical.evidence.effect_estimates import (
    OUTCOME_CHARS,
    EffectSpan,
    find_effects,
    inside_ci,
    measure_named_in,
)

__all__ = ["CELL_SEPARATOR", "effects_of_table", "find_column_effects"]

CELL_SEPARATOR = " | "
"""What joins a row's cells in a table passage's text."""

_N = r"[-−–]?\d+(?:\.\d+)?"
_MARKS = r"[A-Za-z*†‡§]{0,3}"
_BOUNDS = rf"(?P<lo>{_N})\s*(?:,|;|to|–|—|-)\s*(?P<hi>{_N})"
_CI_HEADER = re.compile(
    r"(?:\b(?:95|90|99)\s*%\s*)?(?:\bC\.?I\b\.?|(?i:confidence\s+(?:intervals?|limits?)))"
)
_VALUE_CELL = re.compile(rf"\s*(?P<v>{_N}){_MARKS}\s*")
_BOUNDS_CELL = re.compile(rf"\s*[\[(]?\s*{_BOUNDS}\s*[\])]?\s*")
_ESTIMATE_CELL = re.compile(rf"\s*(?P<v>{_N}){_MARKS}\s*[\[(]\s*{_BOUNDS}\s*[\])]\s*{_MARKS}\s*")
_NOT_ESTIMATE = re.compile(r"\s*(?:n|no\.?|number(?:\s+of\s+\w+)?|p(?:[\s-]*values?)?)\s*", re.I)
"""A column header of counts or p-values: never an estimate's column."""

_Cell = tuple[int, str]
"""A cell: its offset in the table's text and its text."""


def _cells(text: str, start: int) -> list[_Cell]:
    out, at = [], start
    for cell in text.split(CELL_SEPARATOR):
        out.append((at, cell))
        at += len(cell) + len(CELL_SEPARATOR)
    return out


def _rows(text: str) -> list[list[_Cell]]:
    """The table's rows (lines holding :data:`CELL_SEPARATOR`), each as its cells."""
    rows, at = [], 0
    for line in text.split("\n"):
        if CELL_SEPARATOR in line:
            rows.append(_cells(line, at))
        at += len(line) + 1
    return rows


def _caption(text: str) -> tuple[int, int] | None:
    """The caption's first sentence (the table's first line when it is not a row), at most
    :data:`~deepcritical.evidence.effect_estimates.OUTCOME_CHARS` characters."""
    line = text.split("\n", 1)[0]
    if CELL_SEPARATOR in line or not line.strip():
        return None
    stop = re.search(r"\.(?:\s|$)", line)
    end = stop.start() if stop else len(line.rstrip())
    if end > OUTCOME_CHARS:
        end = line.rfind(" ", 0, OUTCOME_CHARS)
    start = len(line) - len(line.lstrip())
    return (start, end) if end > start else None


def _estimate(
    header: list[_Cell], row: list[_Cell], column: int
) -> tuple[re.Match[str], re.Match[str], str] | None:
    """The value's and the bounds' matches of ``row`` under the CI header ``column``, with
    the measure code; ``None`` when the row states none there."""
    cell = row[column][1]
    both = _ESTIMATE_CELL.fullmatch(cell)
    if both is not None:
        return both, both, measure_named_in(header[column][1])
    bounds = _BOUNDS_CELL.fullmatch(cell)
    if bounds is None or column == 0:
        return None
    name = header[column - 1][1]
    value = _VALUE_CELL.fullmatch(row[column - 1][1])
    if value is None or _NOT_ESTIMATE.fullmatch(name) or _CI_HEADER.search(name):
        return None
    code = measure_named_in(name)
    return value, bounds, code if code != "estimate" else measure_named_in(header[column][1])


def find_column_effects(text: str) -> list[EffectSpan]:
    """The estimates of a table passage's CI columns (see the module docstring), in reading
    order; each one's span runs from its value to the end of its bounds' cell (offsets in
    ``text``)."""
    outcome = _caption(text)
    found: list[EffectSpan] = []
    header: list[_Cell] = []
    columns: list[int] = []
    for row in _rows(text):
        ci_columns = [i for i, (_, cell) in enumerate(row) if _CI_HEADER.search(cell)]
        if ci_columns and not any(_BOUNDS_CELL.fullmatch(row[i][1]) for i in ci_columns):
            header, columns = row, ci_columns
            continue
        if len(row) != len(header):
            continue
        for column in columns:
            read = _estimate(header, row, column)
            if read is None:
                continue
            value, bounds, code = read
            v_at = row[column if value is bounds else column - 1][0]
            v, lo, hi = value.group("v"), bounds.group("lo"), bounds.group("hi")
            if inside_ci(v, lo, hi):
                b_at, b_cell = row[column]
                span = (v_at + value.start("v"), b_at + len(b_cell.rstrip()))
                found.append(EffectSpan(*span, code, v, lo, hi, None, outcome))
    return found


def effects_of_table(text: str) -> list[EffectSpan]:
    """The estimates of a table passage: those written out in its cells
    (:func:`~deepcritical.evidence.effect_estimates.find_effects`), then those of its CI
    columns (:func:`find_column_effects`) that overlap none of them, in reading order."""
    found = find_effects(text)
    for e in find_column_effects(text):
        if all(e.end <= f.start or e.start >= f.end for f in found):
            found.append(e)
    return sorted(found, key=lambda f: f.start)
