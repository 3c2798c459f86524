"""The flow of records of a run (:class:`~deepcritical.models.RecordFlow`) as a small
PRISMA-style diagram: escaped HTML boxes joined by arrows, laid out by CSS (``CARD_CSS`` of
:mod:`deepcritical.ui.answer`), no script.

Each box carries ``data-stage`` and ``data-count`` so that a test can check that the counts
add up.
"""

from __future__ import annotations

import html

from deepcritical.models import SOURCE_LABELS, RecordFlow

__all__ = ["flow_html"]

NO_FLOW = '<p class="dc-empty">No flow of records was recorded for this run.</p>'


def _box(stage: str, count: int, label: str, detail: str = "", side: bool = False) -> str:
    e = html.escape
    extra = f"<br><small>{e(detail)}</small>" if detail else ""
    kind = "dc-flow-box dc-flow-side" if side else "dc-flow-box"
    return (
        f'<div class="{kind}" data-stage="{e(stage)}" data-count="{count}">'
        f"{e(label)}: <strong>{count}</strong>{extra}</div>"
    )


def _row(main: str, side: str = "") -> str:
    arrow = '<div class="dc-flow-arrow">→</div>' if side else "<div></div>"
    return f"{main}{arrow}{side or '<div></div>'}"


def _down() -> str:
    return '<div class="dc-flow-arrow">↓</div><div></div><div></div>'


def flow_html(flow: RecordFlow | None) -> str:
    """The diagram of ``flow`` (a note when the run recorded none)."""
    if flow is None:
        return NO_FLOW
    per_source = ", ".join(
        f"{SOURCE_LABELS.get(s, s)} {n}" for s, n in flow.identified_per_source.items()
    )
    tracked = flow.identified_by_citation_tracking
    if tracked:  # records found through citation tracking join the searches' count
        per_source += ("; " if per_source else "") + f"citation tracking {tracked}"
    removed = flow.identifier_duplicates + flow.near_duplicates + flow.beyond_limit
    removed_detail = (
        f"{flow.identifier_duplicates} by identifier, {flow.near_duplicates} near-duplicate"
        + (f", {flow.beyond_limit} beyond the source limit" if flow.beyond_limit else "")
    )
    removed_label = "Duplicates and over the limit" if flow.beyond_limit else "Duplicates removed"
    reasons = "; ".join(f"{cause} {n}" for cause, n in flow.exclusion_reasons.items())
    included = f"{flow.relevant} relevant, {flow.partial} partly relevant" + (
        f", {flow.not_screened} not screened" if flow.not_screened else ""
    )
    screened = f"not screened: {flow.not_screened}" if flow.not_screened else ""
    if flow.retracted:
        included += f"; less {flow.retracted} excluded as retracted"
    rows = [
        _row(
            _box("identified", flow.identified + tracked, "Records identified", per_source),
            _box("removed", removed, removed_label, removed_detail, side=True),
        ),
        _down(),
        _row(_box("unique", flow.unique, "Unique records")),
        _down(),
        _row(
            _box("screened", flow.screened, "Screened for relevance", screened),
            _box("excluded", flow.excluded, "Excluded as off-topic", reasons, side=True),
        ),
        _down(),
        _row(_box("included", flow.included, "Included (on-topic)", included)),
        _down(),
        _row(_box("cited", flow.cited, "Cited in the report")),
    ]
    return (
        '<div class="dc-flow-wrap"><p><strong>Flow of records</strong></p>'
        f'<div class="dc-flow" id="dc-flow-diagram" data-not-screened="{flow.not_screened}">'
        f"{''.join(rows)}</div></div>"
    )
