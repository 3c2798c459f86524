"""The Evidence tab: the escaped evidence table with server-side sorting and filtering.

The run handler's ``evidence`` output is the table's HTML (:func:`evidence_view`), which
carries the run's rows (:func:`~deepcritical.ui.render.evidence_rows`) as JSON in an escaped
attribute of a hidden ``div``; every change of a control sends the table back and re-renders
it on the server from those rows (:func:`rerender_table`): sorted by any column, filtered by text,
study design, year range and cited / not cited. (Rows in a ``gr.State`` re-rendered by its
``change`` event were tried first: in the browser test with two concurrent sessions, one
session's table never appeared.) Off-topic records stay in
the table, greyed out. Plain functions (:func:`filter_rows`, :func:`sort_rows`) do the work;
:func:`evidence_panel` only builds and wires the components.

Why not ``gr.Dataframe``: its cells must be plain text here (its ``html``/``markdown`` cell
types would render source text as markup), so it could neither link to the source in a new
tab, nor show the screening reason on hover, nor grey out off-topic rows; the escaped table
keeps all three, and is what the XSS tests already cover.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr
from pydantic import TypeAdapter, ValidationError

from deepcritical.models import RunResult, StudyDesign
from deepcritical.ui.render import EVIDENCE_COLUMNS, EvidenceRow, evidence_rows, evidence_table_html

__all__ = [
    "ALL_DESIGNS",
    "SCOPES",
    "EvidenceFilter",
    "EvidencePanel",
    "embedded_rows",
    "evidence_panel",
    "evidence_view",
    "filter_rows",
    "rerender_table",
    "rows_json",
    "sort_rows",
    "table_html",
]

ALL_DESIGNS = "all designs"
SCOPES = ("all", "cited", "not cited")
_ROWS = TypeAdapter(list[EvidenceRow])


def _id_number(r: EvidenceRow) -> tuple[int, str]:
    m = re.fullmatch(r"[A-Za-z]*(\d+)", r.id)
    return (int(m.group(1)), r.id) if m else (10**9, r.id)


_SortKey = Callable[[EvidenceRow], Any]
SORT_KEYS: dict[str, _SortKey] = {
    "Cited": lambda r: (r.number if r.cited else None, _id_number(r)),
    "Title": lambda r: r.title.casefold() or None,
    "Flags": lambda r: (r.retracted, len(r.flags)) if r.flags else None,
    "First author": lambda r: r.first_author.casefold() or None,
    "Journal": lambda r: r.journal.casefold() or None,
    "Cited by": lambda r: r.cited_by,
    "Year": lambda r: r.year,
    "Study design": lambda r: r.design or None,
    "Screening": lambda r: (not r.off_topic, r.relevance),
    "Search rank": lambda r: r.search_rank,
    "Answers": lambda r: "; ".join(r.answers).casefold() or None,
    "Text": lambda r: r.text,
    "Stance": lambda r: r.stance or None,
    "n": lambda r: r.n,
    "Effect": lambda r: r.effect.casefold() or None,
    "Certainty": lambda r: r.certainty_rank,
    "Link": lambda r: r.source.casefold() if r.url else None,
}
"""Column -> sort key; a key of ``None`` (or a tuple starting with ``None``) is a missing
value, listed last whatever the direction."""


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, tuple) and bool(value) and value[0] is None)


def sort_rows(
    rows: list[EvidenceRow], column: str, *, descending: bool = False
) -> list[EvidenceRow]:
    """``rows`` sorted by ``column`` (one of :data:`EVIDENCE_COLUMNS`; any other leaves the
    order as it is); rows without a value in that column come last either way; ties keep
    their order."""
    key = SORT_KEYS.get(column)
    if key is None:
        return list(rows)
    present = [r for r in rows if not _missing(key(r))]
    missing = [r for r in rows if _missing(key(r))]
    return sorted(present, key=key, reverse=descending) + missing


@dataclass(frozen=True)
class EvidenceFilter:
    """What the table shows: rows containing ``text`` (any column, case-insensitive), of
    ``design`` (:data:`ALL_DESIGNS` for any), published from ``year_from`` to ``year_to``
    (inclusive; ``None``: open; a row without a year is hidden by a year bound), and of
    ``scope``: ``all``, ``cited`` or ``not cited``."""

    text: str = ""
    design: str = ALL_DESIGNS
    year_from: int | None = None
    year_to: int | None = None
    scope: str = "all"

    def keeps(self, r: EvidenceRow) -> bool:
        """Whether row ``r`` passes every filter."""
        if self.scope == "cited" and not r.cited:
            return False
        if self.scope == "not cited" and r.cited:
            return False
        if self.design not in ("", ALL_DESIGNS) and r.design != self.design:
            return False
        if self.year_from is not None and (r.year is None or r.year < self.year_from):
            return False
        if self.year_to is not None and (r.year is None or r.year > self.year_to):
            return False
        needle = self.text.strip().casefold()
        if needle:
            number = f"[{r.number}]" if r.number is not None and r.cited else ""
            fields = [number, r.id, r.title, r.first_author, r.journal, str(r.year or "")]
            fields += [r.design, r.screening, r.reason, r.stance, r.stance_reason, r.text]
            fields += r.flags
            fields += [r.effect, r.certainty]
            hay = " ".join([*fields, r.source, *r.answers, r.abstract])
            return needle in hay.casefold()
        return True


def filter_rows(rows: list[EvidenceRow], rule: EvidenceFilter) -> list[EvidenceRow]:
    """The rows ``rule`` keeps, in their order."""
    return [r for r in rows if rule.keeps(r)]


def rows_json(result: RunResult) -> str:
    """The evidence rows of a :class:`~deepcritical.models.RunResult` as JSON (the state the
    run handler outputs)."""
    return _ROWS.dump_json(evidence_rows(result)).decode()


def _rows(data: str | None) -> list[EvidenceRow]:
    if not data:
        return []
    try:
        return _ROWS.validate_json(data)
    except (ValidationError, ValueError):
        return []


def _year(value: float | str | None) -> int | None:
    if value is None or value == "":
        return None
    try:
        year = int(float(value))
    except (TypeError, ValueError):
        return None
    return year if year > 0 else None  # an empty gr.Number reads 0: no bound


_DATA = re.compile(r'<div class="dc-evidence-data" hidden data-rows="([^"]*)"></div>')


def table_html(
    data: str | None,
    sort: str | None = "Screening",
    descending: bool | None = True,
    text: str | None = "",
    design: str | None = ALL_DESIGNS,
    year_from: float | str | None = None,
    year_to: float | str | None = None,
    scope: str | None = "all",
) -> str:
    """The evidence table of the rows ``data`` (:func:`rows_json`), filtered then sorted as
    the controls say, followed by ``data`` itself in an escaped attribute of a hidden
    ``div`` (what the next sort or filter starts from: :func:`rerender_table`)."""
    rows = _rows(data)
    if not rows:
        return evidence_table_html([])
    rule = EvidenceFilter(
        text=text or "",
        design=design or ALL_DESIGNS,
        year_from=_year(year_from),
        year_to=_year(year_to),
        scope=scope if scope in SCOPES else "all",
    )
    shown = sort_rows(filter_rows(rows, rule), sort or "", descending=bool(descending))
    carried = html.escape(data or "", quote=True)
    return (
        evidence_table_html(shown, shown_of=len(rows))
        + f'<div class="dc-evidence-data" hidden data-rows="{carried}"></div>'
    )


def embedded_rows(shown: str | None) -> str:
    """The rows JSON a table from :func:`table_html` carries (``""`` when none)."""
    m = _DATA.search(shown or "")
    return html.unescape(m.group(1)) if m else ""


def evidence_view(result: RunResult) -> str:
    """The Evidence tab's HTML for a finished run (default order: most relevant first)."""
    return table_html(rows_json(result))


def rerender_table(
    shown: str | None,
    sort: str | None,
    descending: bool | None,
    text: str | None,
    design: str | None,
    year_from: float | str | None,
    year_to: float | str | None,
    scope: str | None,
) -> str:
    """The handler of every control: the table now shown, re-rendered from the rows it
    carries, sorted and filtered as the controls say."""
    return table_html(
        embedded_rows(shown), sort, descending, text, design, year_from, year_to, scope
    )


@dataclass(frozen=True)
class EvidencePanel:
    """The Evidence tab's components: ``table`` (the HTML: the run handler's ``evidence``
    output) and the sort and filter controls."""

    table: gr.HTML
    controls: list[Any]


def evidence_panel() -> EvidencePanel:
    """Builds the Evidence tab's controls and table (inside the current ``gr.Tab``) and wires
    every control to re-render the table."""
    with gr.Row():
        text = gr.Textbox(
            label="Filter", placeholder="title, author, journal, id…", elem_id="dc-ev-text"
        )
        design = gr.Dropdown(
            [ALL_DESIGNS, *(d.value for d in StudyDesign)],
            value=ALL_DESIGNS,
            label="Study design",
            elem_id="dc-ev-design",
        )
        year_from = gr.Number(
            label="From year (0: any)", precision=0, minimum=0, elem_id="dc-ev-year-from"
        )
        year_to = gr.Number(
            label="To year (0: any)", precision=0, minimum=0, elem_id="dc-ev-year-to"
        )
        scope = gr.Radio(list(SCOPES), value="all", label="Show", elem_id="dc-ev-scope")
    with gr.Row():
        sort = gr.Dropdown(
            list(EVIDENCE_COLUMNS), value="Screening", label="Sort by", elem_id="dc-ev-sort"
        )
        descending = gr.Checkbox(value=True, label="Descending", elem_id="dc-ev-desc")
    table = gr.HTML(evidence_table_html([]), elem_id="dc-evidence")
    controls: list[Any] = [sort, descending, text, design, year_from, year_to, scope]
    for control in controls:
        control.change(
            rerender_table,
            [table, *controls],
            table,
            api_visibility="private",
            trigger_mode="always_last",
        )
    return EvidencePanel(table, controls)
