"""Safe HTML for everything the web app shows or offers for download.

Text from sources (titles, abstracts, quotes) is data, never markup: the report markdown is
rendered with raw HTML disabled (``<script>`` in an abstract becomes the literal text
``&lt;script&gt;``), then cleaned again with ``nh3`` (the Rust ``ammonia`` sanitiser: allowed
tags and attributes only, ``http``/``https``/``mailto`` links only). Every other fragment built
here escapes each value with :func:`html.escape`.
"""

from __future__ import annotations

import html
from urllib.parse import urlparse

import nh3
from markdown_it import MarkdownIt
from pydantic import BaseModel

from deepcritical.models import SOURCE_LABELS, Passage, RunResult, SupportingQuote
from deepcritical.ui.progress import ProgressView

ALLOWED_TAGS = {
    "h1", "h2", "h3", "h4", "h5", "h6", "p", "br", "hr", "strong", "em", "code", "pre",
    "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "th": {"align"}, "td": {"align"}}
URL_SCHEMES = {"http", "https", "mailto"}

_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")

STANDALONE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'"
"""Content-Security-Policy of the downloaded report: no script, no remote resource."""


def markdown_to_safe_html(markdown: str) -> str:
    """Report markdown -> an HTML fragment safe to insert into a page.

    Raw HTML in ``markdown`` is escaped (shown as text), links keep only ``http``, ``https``
    and ``mailto`` URLs and get ``rel="noopener noreferrer nofollow"``; no attribute that can
    run script (``on*``, ``style``, ``src``) survives.
    """
    rendered = _MARKDOWN.render(markdown)
    return nh3.clean(
        rendered,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
    )


def standalone_html(markdown: str, title: str) -> str:
    """A self-contained HTML document of the report (the ``.html`` download): the sanitised
    report, inline CSS and a Content-Security-Policy forbidding scripts and remote loads."""
    body = markdown_to_safe_html(markdown)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{STANDALONE_CSP}">\n'
        f"<title>{html.escape(title)}</title>\n"
        "<style>body{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;"
        "padding:0 1rem;line-height:1.5}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:.25rem .5rem}</style>\n</head>\n<body>\n"
        f"{body}\n</body>\n</html>\n"
    )


def safe_url(url: str | None) -> str | None:
    """``url`` when it is an absolute ``http``/``https`` URL, else ``None`` (a source could
    carry ``javascript:`` or ``data:`` URLs)."""
    if not url:
        return None
    parsed = urlparse(url.strip())
    if parsed.scheme.lower() in {"http", "https"} and parsed.netloc:
        return url.strip()
    return None


class EvidenceRow(BaseModel):
    """One row of the evidence table (plain text; escaped when rendered).

    ``answers``: descriptions of the checklist items the item was assigned to;
    ``relevance``: the item's 0..1 relevance (calibrated when the item was screened);
    ``screening``: ``relevant``, ``partial``, ``off_topic`` or ``""`` (not screened), with its
    one-line ``reason``. Off-topic rows are shown greyed out. ``stance``: ``supports``,
    ``contradicts``, ``neutral`` or ``""`` (not read), with its ``stance_reason``. ``text``:
    ``"full text"`` when the item's full text was read (:attr:`Evidence.full_text`), else
    ``"abstract"``.
    """

    source: str
    id: str
    title: str
    year: int | None
    url: str | None
    answers: list[str]
    relevance: float
    screening: str = ""
    reason: str = ""
    stance: str = ""
    stance_reason: str = ""
    text: str = "abstract"


def evidence_rows(result: RunResult) -> list[EvidenceRow]:
    """Rows for every evidence item of ``result``, most relevant first."""
    described = {c.key: c.description for c in result.plan.checklist} if result.plan else {}
    rows = [
        EvidenceRow(
            source=", ".join(SOURCE_LABELS.get(s, s) for s in (e.sources or [e.citation.source])),
            id=e.id,
            title=e.citation.display_title(),
            year=e.citation.year,
            url=safe_url(e.citation.url),
            answers=[described.get(k, k) for k in e.checklist_keys],
            relevance=e.relevance,
            screening=e.screening.value if e.screening else "",
            reason=e.screening_reason,
            stance=e.stance.value if e.stance else "",
            stance_reason=e.stance_reason,
            text="full text" if e.full_text else "abstract",
        )
        for e in result.evidence
    ]
    return sorted(rows, key=lambda r: (r.screening == "off_topic", -r.relevance))


def evidence_table_html(rows: list[EvidenceRow]) -> str:
    """An HTML table of ``rows``; every cell escaped, links only to ``http(s)`` URLs."""
    if not rows:
        return '<p class="dc-empty">No evidence yet.</p>'
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "Source",
            "Id",
            "Title",
            "Year",
            "Link",
            "Text",
            "Answers",
            "Relevance",
            "Screening",
            "Stance",
        )
    )
    body: list[str] = []
    for r in rows:
        link = (
            f'<a href="{html.escape(r.url, quote=True)}" target="_blank" '
            f'rel="noopener noreferrer nofollow">open</a>'
            if r.url
            else ""
        )
        answers = "; ".join(r.answers)
        off = r.screening == "off_topic"
        style = ' style="opacity:0.5"' if off else ""
        screening = r.screening.replace("_", "-")
        body.append(
            f'<tr class="dc-evidence-row{" dc-off-topic" if off else ""}"{style}>'
            f"<td>{html.escape(r.source)}</td>"
            f"<td>{html.escape(r.id)}</td><td>{html.escape(r.title)}</td>"
            f"<td>{r.year if r.year is not None else ''}</td><td>{link}</td>"
            f'<td class="dc-text">{html.escape(r.text)}</td>'
            f"<td>{html.escape(answers)}</td><td>{r.relevance:.2f}</td>"
            f'<td title="{html.escape(r.reason, quote=True)}">'
            f"{html.escape(r.reason if off else screening)}</td>"
            f'<td class="dc-stance" title="{html.escape(r.stance_reason, quote=True)}">'
            f"{html.escape(r.stance)}</td></tr>"
        )
    return (
        f'<table class="dc-evidence"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _passage_block(number: int, quote: SupportingQuote, passage: Passage) -> str:
    before, _, after = passage.text.partition(quote.quote)
    body = f"{html.escape(before)}<mark>{html.escape(quote.quote)}</mark>{html.escape(after)}"
    short = quote.quote if len(quote.quote) <= 160 else quote.quote[:159] + "…"
    return (
        f'<details class="dc-passage"><summary>[{number}] {html.escape(quote.locator)}: '
        f"“{html.escape(short)}”</summary><p>{body}</p></details>"
    )


def quoted_passages_html(result: RunResult) -> str:
    """The full-text passages the report's supporting quotes come from, each a collapsed
    ``<details>`` whose summary names the reference and the passage's section
    (``[3] Results › Adverse events, paragraph 4``) and which opens on the whole passage with
    the quoted text marked; ``""`` when no quote comes from a full text. Every text escaped."""
    numbers = result.report.reference_numbers()
    items = {e.id: e for e in result.evidence}
    shown: set[tuple[str, str]] = set()
    blocks: list[str] = []
    quotes = [q for c in result.report.grounding if not c.removed for q in c.quotes]
    for quote in quotes:
        key = (quote.evidence_id, quote.locator)
        item = items.get(quote.evidence_id)
        if not quote.supports or not quote.locator or item is None or key in shown:
            continue
        passage = next(
            (p for p in item.passages if p.locator() == quote.locator and quote.quote in p.text),
            None,
        )
        if passage is not None and quote.evidence_id in numbers:
            shown.add(key)
            blocks.append(_passage_block(numbers[quote.evidence_id], quote, passage))
    if not blocks:
        return ""
    return (
        '<section class="dc-passages"><h2>Quoted full-text passages</h2>'
        "<p>Each supporting quote taken from a full text, opening on its section's passage.</p>"
        f"{''.join(blocks)}</section>"
    )


def progress_html(view: ProgressView) -> str:
    """The progress panel: stage, round, coverage bar, per-source counts, hypotheses and the
    latest messages (all escaped)."""
    e = html.escape
    pct = round(view.coverage * 100)
    rounds = f"{view.round}" + (f" / {view.max_rounds}" if view.max_rounds else "")
    parts = [
        f'<div class="dc-progress" data-stage="{e(view.stage, quote=True)}" '
        f'data-events="{view.events}">',
        f'<p><strong>Stage:</strong> <span class="dc-stage">{e(view.stage)}</span>'
        f" · <strong>Round:</strong> {e(rounds)}"
        f' · <strong>Sources found:</strong> <span class="dc-found">{view.sources_found}</span>'
        "</p>",
        f"<p><strong>Checklist coverage:</strong> {pct}%</p>"
        f'<div class="dc-bar" role="progressbar" aria-valuenow="{pct}" aria-valuemin="0" '
        f'aria-valuemax="100" style="background:#e5e7eb;border-radius:4px;height:10px">'
        f'<div style="width:{pct}%;background:#2563eb;height:10px;border-radius:4px"></div></div>',
    ]
    if view.queries_per_source:
        cells = "".join(
            f"<li>{e(SOURCE_LABELS.get(s, s))}: {n} queries, "
            f"{view.hits_per_source.get(s, 0)} results</li>"
            for s, n in view.queries_per_source.items()
        )
        parts.append(f'<ul class="dc-sources">{cells}</ul>')
    if view.checklist:
        items = "".join(f"<li>{e(k)}: {e(s)}</li>" for k, s in view.checklist.items())
        parts.append(f"<details><summary>Checklist</summary><ul>{items}</ul></details>")
    if view.hypotheses:
        items = "".join(
            f"<li>{e(h.statement)} <em>(confidence {h.confidence:.2f}; "
            f"{h.supporting} supporting, {h.contradicting} contradicting)</em></li>"
            for h in view.hypotheses
        )
        parts.append(f'<p><strong>Hypotheses</strong></p><ul class="dc-hypotheses">{items}</ul>')
    if view.run_id:
        parts.append(f'<p class="dc-run-id">Run id: <code>{e(view.run_id)}</code></p>')
    if view.error:
        parts.append(f'<p class="dc-error"><strong>Error:</strong> {e(view.error)}</p>')
    if view.log:
        lines = "".join(f"<li>{e(m)}</li>" for m in view.log[-6:])
        parts.append(f'<ul class="dc-log">{lines}</ul>')
    parts.append("</div>")
    return "".join(parts)


def hypotheses_html(result: RunResult) -> str:
    """The report's hypotheses with their supporting and contradicting evidence counts."""
    hs = result.report.hypotheses_tested
    if not hs:
        return '<p class="dc-empty">No hypothesis was formed.</p>'
    items = "".join(
        f"<li>{html.escape(h.statement)} <em>(confidence {h.confidence:.2f}; "
        f"{len(h.supporting_evidence_ids)} supporting, "
        f"{len(h.contradicting_evidence_ids)} contradicting)</em></li>"
        for h in hs
    )
    return f'<ul class="dc-hypotheses">{items}</ul>'
