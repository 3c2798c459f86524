"""Safe HTML for everything the web app shows or offers for download.

Text from sources (titles, abstracts, quotes) is data, never markup: the report markdown is
rendered with raw HTML disabled (``<script>`` in an abstract becomes the literal text
``&lt;script&gt;``), then cleaned again with ``nh3`` (the Rust ``ammonia`` sanitiser: allowed
tags and attributes only, ``http``/``https``/``mailto`` links only). Every other fragment built
here escapes each value with :func:`html.escape`.
"""

from __future__ import annotations

import html
from typing import Any
from urllib.parse import urlparse

import nh3
from markdown_it import MarkdownIt
from pydantic import BaseModel, Field

from deepcritical.evidence.certainty import rate_certainty, study_of
from deepcritical.evidence.grading import grade_evidence
from deepcritical.models import (
    CERTAINTY_LABEL,
    SOURCE_LABELS,
    Evidence,
    Passage,
    RunResult,
    Screening,
    SupportingQuote,
    flag_labels,
)
from deepcritical.ui.progress_view import ProgressView

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

    ``number``: the item's ``[n]`` in the report (``None`` when the report does not list it);
    ``cited``: the report cites it inline; ``answers``: descriptions of the checklist items
    the item was assigned to; ``relevance``: the item's 0..1 relevance (calibrated when the
    item was screened); ``screening``: ``relevant``, ``partial``, ``off_topic`` or ``""`` (not
    screened), with its one-line ``reason``. Off-topic rows are shown greyed out. ``stance``:
    ``supports``, ``contradicts``, ``neutral`` or ``""`` (not read), with its
    ``stance_reason``. ``text``: ``"full text"`` when the item's full text was read
    (:attr:`Evidence.full_text`), else ``"abstract"``. ``design``: its study design
    (:func:`~deepcritical.evidence.grading.grade_evidence`). ``flags``: the labels of its
    integrity flags (``"RETRACTED: Retraction in: ..."``, ``"Expression of concern: ..."``);
    ``retracted``: a source marks it as retracted (never cited; shown with a red badge).
    ``cited_by``: OpenAlex's citation count (``None`` when no source said; shown, never used
    to rank).
    """

    source: str
    id: str
    title: str
    year: int | None
    url: str | None
    answers: list[str]
    relevance: float
    search_rank: float | None = None
    """The source's own ranking (0..1), shown apart from the screening score."""
    screening_score: float | None = None
    """The calibrated 0..1 score screening kept or excluded the item with; ``None`` when it
    was not scored (no calibration for the embedder, or not screened)."""
    screening: str = ""
    reason: str = ""
    stance: str = ""
    stance_reason: str = ""
    text: str = "abstract"
    number: int | None = None
    cited: bool = False
    first_author: str = ""
    journal: str = ""
    design: str = ""
    flags: list[str] = Field(default_factory=list)
    retracted: bool = False
    cited_by: int | None = None
    n: int | None = None
    """Sample size from the item's study record (``StudyRecord.n``), ``None`` if not read."""
    n_quote: str = ""
    """The verbatim sentence part the sample size was read from (shown on hover)."""
    effect: str = ""
    """The primary effect estimate as written (``"OR 2.4 (95% CI 1.3 to 4.6)"``), ``""``."""
    effect_quote: str = ""
    """The verbatim text the estimate was read from (shown on hover)."""
    abstract: str = ""
    """The item's text (its abstract), searched by the table's filter, never shown in it."""
    certainty: str = ""
    """The automated GRADE-style certainty of the item alone (``"Low"``), ``""`` if not
    rated; ``certainty_reason`` is its summary."""
    certainty_reason: str = ""

    @property
    def certainty_rank(self) -> int | None:
        """0 (Very low) .. 3 (High); ``None`` when not rated."""
        order = ["Very low", "Low", "Moderate", "High"]
        return order.index(self.certainty) if self.certainty in order else None

    @property
    def off_topic(self) -> bool:
        """Screened off-topic (kept, shown greyed out, never cited)."""
        return self.screening == "off_topic"


def evidence_rows(result: RunResult) -> list[EvidenceRow]:
    """Rows for every evidence item of ``result``, most relevant first (off-topic last), each
    numbered as in the report."""
    described = {c.key: c.description for c in result.plan.checklist} if result.plan else {}
    numbers = result.report.reference_numbers()
    cited = set(result.report.cited_ids())
    designs = {r.evidence_id: r.study_design for r in result.report.references if r.study_design}
    rows = [
        EvidenceRow(
            source=", ".join(SOURCE_LABELS.get(s, s) for s in (e.sources or [e.citation.source])),
            id=e.id,
            title=e.citation.display_title(),
            year=e.citation.year,
            url=safe_url(e.citation.url),
            answers=[described.get(k, k) for k in e.checklist_keys],
            relevance=e.relevance,
            # once screening scored the item, relevance is that score and the source's rank
            # is kept apart; before (or screened without a score), relevance is the rank
            search_rank=e.search_rank if e.search_rank is not None else e.relevance,
            screening_score=e.relevance if e.search_rank is not None else None,
            screening=e.screening.value if e.screening else "",
            reason=e.screening_reason,
            stance=e.stance.value if e.stance else "",
            stance_reason=e.stance_reason,
            text="full text" if e.full_text else "abstract",
            number=numbers.get(e.id),
            cited=e.id in cited and e.id in numbers,
            first_author=e.citation.authors[0] if e.citation.authors else "",
            journal=e.citation.journal or "",
            design=(designs.get(e.id) or grade_evidence(e)).value,
            flags=flag_labels(e.citation.integrity_flags),
            retracted=e.citation.retracted,
            cited_by=e.citation.cited_by_count,
            abstract=e.content,
            **_appraisal_cells(e),
        )
        for e in result.evidence
    ]
    return sorted(rows, key=lambda r: (r.off_topic, -r.relevance))


def _n_quote(size: str | None, quotes: list[str]) -> str:
    """The hover text of an n: its sentence, or, for a sum of groups, the sum and the
    sentences of its parts."""
    text = " … ".join(dict.fromkeys(quotes))
    return f"{size}: {text}" if size and "sum of groups" in size else text


def _appraisal_cells(e: Evidence) -> dict[str, Any]:
    """The n, effect and certainty cells of an item (its study record read when missing;
    off-topic items are not rated)."""
    study = study_of(e)
    proofs = study.sample_size_proofs()
    effect = study.primary_effect
    certainty = rate_certainty([e]) if e.screening != Screening.OFF_TOPIC else None
    size = study.sample_size_text()
    return {
        "n": study.n,
        "n_quote": _n_quote(size, [p.quote for p in proofs]),
        "effect": effect.describe() if effect is not None else "",
        "effect_quote": effect.proof.quote if effect is not None else "",
        "certainty": certainty.level.value if certainty is not None else "",
        "certainty_reason": (
            f"{certainty.summary()} ({CERTAINTY_LABEL})" if certainty is not None else ""
        ),
    }


EVIDENCE_COLUMNS = (
    "Cited",
    "Title",
    "Flags",
    "First author",
    "Journal",
    "Cited by",
    "Year",
    "Study design",
    "Screening",
    "Search rank",
    "Answers",
    "Text",
    "Stance",
    "n",
    "Effect",
    "Certainty",
    "Link",
)
"""The evidence table's columns, in order (``Cited``: ``[n]`` and the evidence id;
``Flags``: integrity flags, a red RETRACTED badge for a retracted record; ``Cited by``:
OpenAlex's citation count)."""


def _flags_html(r: EvidenceRow) -> str:
    """The Flags cell: a red RETRACTED badge for a retracted record, an amber badge per other
    flag; each badge's notice on hover (escaped)."""
    e = html.escape
    badges = []
    for label in r.flags:
        head = label.split(":", 1)[0]
        kind = "dc-flag-retracted" if head == "RETRACTED" else "dc-flag-other"
        badges.append(
            f'<span class="dc-flag {kind}" title="{e(label, quote=True)}">{e(head)}</span>'
        )
    return f'<td class="dc-flags">{" ".join(badges)}</td>'


def _screening_cell(r: EvidenceRow) -> str:
    """The screening result in the row: "relevant · 0.81" (the score it was kept with, when
    it was scored), an off-topic record's reason (which names the similarity it was judged
    by), or nothing before screening; the reason is on hover either way."""
    if r.off_topic:
        return r.reason or "off topic"
    if not r.screening:
        return ""
    status = r.screening.replace("_", " ")
    return status if r.screening_score is None else f"{status} · {r.screening_score:.2f}"


def _evidence_row_html(r: EvidenceRow) -> str:
    e = html.escape
    link = (
        f'<a href="{e(r.url, quote=True)}" target="_blank" '
        f'rel="noopener noreferrer nofollow">{e(r.source or "open")}</a>'
        if r.url
        else e(r.source)
    )
    number = f"[{r.number}] " if r.number is not None and r.cited else ""
    cited = f'<td class="dc-cited">{number}<span class="dc-id">{e(r.id)}</span></td>'
    classes = "dc-evidence-row" + (" dc-off-topic" if r.off_topic else "")
    classes += " dc-is-cited" if r.cited else ""
    classes += " dc-retracted" if r.retracted else ""
    style = ' style="opacity:0.5"' if r.off_topic else ""
    return (
        f'<tr class="{classes}"{style} data-id="{e(r.id, quote=True)}">{cited}'
        f"<td>{e(r.title)}</td>"
        f"{_flags_html(r)}"
        f'<td class="dc-author">{e(r.first_author)}</td>'
        f'<td class="dc-journal">{e(r.journal)}</td>'
        f'<td class="dc-cited-by">{r.cited_by if r.cited_by is not None else ""}</td>'
        f'<td class="dc-year">{r.year if r.year is not None else ""}</td>'
        f'<td class="dc-design">{e(r.design)}</td>'
        f'<td class="dc-screening" title="{e(r.reason, quote=True)}">{e(_screening_cell(r))}</td>'
        f'<td class="dc-search-rank">{"" if r.search_rank is None else f"{r.search_rank:.2f}"}</td>'
        f'<td class="dc-answers">{e("; ".join(r.answers))}</td>'
        f'<td class="dc-text">{e(r.text)}</td>'
        f'<td class="dc-stance" title="{e(r.stance_reason, quote=True)}">{e(r.stance)}</td>'
        f'<td class="dc-n" title="{e(r.n_quote, quote=True)}">{r.n if r.n is not None else ""}</td>'
        f'<td class="dc-effect" title="{e(r.effect_quote, quote=True)}">{e(r.effect)}</td>'
        f'<td class="dc-certainty" title="{e(r.certainty_reason, quote=True)}">'
        f"{e(r.certainty)}</td>"
        f'<td class="dc-link">{link}</td></tr>'
    )


def evidence_table_html(rows: list[EvidenceRow], *, shown_of: int | None = None) -> str:
    """An HTML table of ``rows``; every cell escaped, links only to ``http(s)`` URLs (opening
    in a new tab). ``shown_of``: the number of rows before filtering, for the caption."""
    if not rows:
        if shown_of:
            return f'<p class="dc-empty">No evidence matches the filters (of {shown_of}).</p>'
        return '<p class="dc-empty">No evidence yet.</p>'
    head = "".join(f"<th>{h}</th>" for h in EVIDENCE_COLUMNS)
    caption = (
        f'<caption class="dc-count">{len(rows)} of {shown_of} records</caption>'
        if shown_of is not None
        else ""
    )
    body = "".join(_evidence_row_html(r) for r in rows)
    return (
        f'<table class="dc-evidence">{caption}<thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


def cited_quotes(result: RunResult) -> dict[str, list[SupportingQuote]]:
    """Evidence id -> its distinct supporting quotes over the report's kept cited sentences,
    best (entailment, else similarity) first."""
    found: dict[str, dict[tuple[str, str], SupportingQuote]] = {}
    for claim in result.report.grounding:
        if claim.removed:
            continue
        for q in claim.quotes:
            if q.supports and q.quote.strip():
                found.setdefault(q.evidence_id, {}).setdefault((q.quote, q.locator), q)
    return {
        eid: sorted(qs.values(), key=lambda q: -(q.entailment or q.similarity))
        for eid, qs in found.items()
    }


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


def _records_line(view: ProgressView) -> str:
    """What the counters count: "Records: 80 found → 14 unique → 1 on topic" (results the
    sources returned, the records kept once each, those screening kept)."""
    found = sum(view.hits_per_source.values())
    return (
        '<p class="dc-records"><strong>Records:</strong> '
        f'<span class="dc-found-raw">{found}</span> found by the searches → '
        f'<span class="dc-found">{view.sources_found}</span> unique → '
        f'<span class="dc-on-topic">{view.on_topic}</span> on topic</p>'
    )


def progress_html(view: ProgressView) -> str:
    """The progress panel: stage, round, run id, and what was done (record counts, coverage
    bar, per-source counts, checklist, hypotheses, the latest messages); all escaped. Once
    the report is ready, what was done folds into a closed "How this was found" panel, so
    the answer below comes first; a run waiting for a review says so."""
    e = html.escape
    rounds = f"{view.round}" + (f" / {view.max_rounds}" if view.max_rounds else "")
    head = [
        f'<div class="dc-progress" data-stage="{e(view.stage, quote=True)}" '
        f'data-events="{view.events}">',
        f'<p><strong>Stage:</strong> <span class="dc-stage">{e(view.stage)}</span>'
        f" · <strong>Round:</strong> {e(rounds)}"
        "</p>",
    ]
    if view.run_id:
        head.append(f'<p class="dc-run-id">Run id: <code>{e(view.run_id)}</code></p>')
    if view.error:
        head.append(f'<p class="dc-error"><strong>Error:</strong> {e(view.error)}</p>')
    if view.awaiting:
        what = "plan" if view.awaiting == "plan" else "screened evidence"
        head.append(
            f'<p class="dc-awaiting" role="status">The run waits for your review of the '
            f"{what}: decide below the progress panel.</p>"
        )
    body = _progress_body(view)
    if view.finished and not view.failed and not view.stopped and not view.awaiting:
        body = [
            '<details class="dc-how"><summary>How this was found</summary>',
            *body,
            "</details>",
        ]
    return "".join([*head, *body, "</div>"])


def _progress_body(view: ProgressView) -> list[str]:
    """The panel's account of the run so far (escaped HTML pieces)."""
    e = html.escape
    pct = round(view.coverage * 100)
    parts = [
        _records_line(view),
        f"<p><strong>Checklist coverage:</strong> {pct}%</p>"
        f'<div class="dc-bar" role="progressbar" aria-valuenow="{pct}" aria-valuemin="0" '
        f'aria-valuemax="100" style="background:#e5e7eb;border-radius:4px;height:10px">'
        f'<div style="width:{pct}%;background:#2563eb;height:10px;border-radius:4px"></div></div>',
    ]
    judge = _judge_line(view)
    if judge:
        parts.append(judge)
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
            f"<li>{e(h.statement)} <em>({h.supporting} supporting, "
            f"{h.contradicting} contradicting)</em></li>"
            for h in view.hypotheses
        )
        parts.append(f'<p><strong>Hypotheses</strong></p><ul class="dc-hypotheses">{items}</ul>')
    if view.log:
        lines = "".join(f"<li>{e(m)}</li>" for m in view.log[-6:])
        parts.append(f'<ul class="dc-log">{lines}</ul>')
    return parts


COVERAGE_VS_JUDGE = (
    "Why the two differ: checklist coverage counts the plan's questions that some evidence "
    "addresses; the judge also weighs how strong, direct and on-topic that evidence is."
)
"""Said under the judge's verdict when it and the checklist coverage point different ways."""


def _judge_line(view: ProgressView) -> str:
    """The judge's last verdict in words, with its reason; when it disagrees with the
    checklist coverage (most items covered but "not enough", or few covered but "enough"),
    :data:`COVERAGE_VS_JUDGE` says why. Empty before the judge's first verdict."""
    if view.judge_sufficient is None:
        return ""
    e = html.escape
    verdict = "the evidence is enough" if view.judge_sufficient else "not enough evidence yet"
    reason = view.judge_reason.strip().rstrip(".")
    text = f"<strong>Judge:</strong> {verdict}" + (f": {e(reason)}." if reason else ".")
    disagree = (view.coverage >= 0.75 and not view.judge_sufficient) or (
        view.coverage < 0.5 and view.judge_sufficient
    )
    if disagree:
        text += f' <span class="dc-judge-why">{e(COVERAGE_VS_JUDGE)}</span>'
    return f'<p class="dc-judge">{text}</p>'


def _source_item(
    eid: str, numbers: dict[str, int], items: dict[str, Evidence], quotes: list[SupportingQuote]
) -> str:
    """One source of a hypothesis: ``[n] title`` (or its id) and its quotes: the report's
    supporting quotes for it, its stance reason, else its first sentences."""
    e = html.escape
    item = items.get(eid)
    label = f"[{numbers[eid]}]" if eid in numbers else eid
    title = item.citation.display_title() if item is not None else "(not in the evidence)"
    said: list[str] = [
        f"“{e(q.quote)}”" + (f" — {e(q.locator)}" if q.locator else "") for q in quotes[:2]
    ]
    if item is not None and item.stance_reason:
        said.append(
            f"Stance ({e(item.stance.value if item.stance else '')}): {e(item.stance_reason)}"
        )
    if not said and item is not None and item.content.strip():
        said.append(f"“{e(item.snippet(240))}”")
    extra = "".join(f'<li class="dc-hyp-quote">{q}</li>' for q in said)
    return (
        f'<li class="dc-hyp-source" data-id="{e(eid, quote=True)}">'
        f'<span class="dc-hyp-ref">{e(label)}</span> {e(title)}'
        + (f"<ul>{extra}</ul>" if extra else "")
        + "</li>"
    )


def hypotheses_html(result: RunResult) -> str:
    """The report's hypotheses, each with its supporting and contradicting sources (numbered
    as in the report, titled) and their quotes; every text escaped."""
    hs = result.report.hypotheses_tested
    if not hs:
        return '<p class="dc-empty">No hypothesis was formed.</p>'
    numbers = result.report.reference_numbers()
    items = {ev.id: ev for ev in result.evidence}
    quotes = cited_quotes(result)
    e = html.escape
    blocks: list[str] = []
    for h in hs:
        chain = " → ".join(p for p in [h.drug, h.target, h.pathway, h.effect] if p)
        certainty = f"; certainty {h.certainty.summary()}" if h.certainty is not None else ""
        parts = [
            f'<li class="dc-hypothesis"><p><strong>{e(h.statement)}</strong> '
            f"<em>({len(h.supporting_evidence_ids)} supporting, "
            f"{len(h.contradicting_evidence_ids)} contradicting{e(certainty)})</em></p>"
        ]
        if chain:
            parts.append(f'<p class="dc-chain">Chain: {e(chain)}</p>')
        for kind, ids in (
            ("Supporting", h.supporting_evidence_ids),
            ("Contradicting", h.contradicting_evidence_ids),
        ):
            listed = "".join(
                _source_item(eid, numbers, items, quotes.get(eid, [])) for eid in dict.fromkeys(ids)
            )
            parts.append(
                f'<div class="dc-hyp-{kind.lower()}"><p><strong>{kind} sources</strong></p>'
                + (f"<ul>{listed}</ul>" if listed else "<p>none</p>")
                + "</div>"
            )
        parts.append("</li>")
        blocks.append("".join(parts))
    return f'<ul class="dc-hypotheses">{"".join(blocks)}</ul>'
