"""Sanitised HTML: source text never becomes markup, links only to http(s)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from deepcritical.models import GroundedClaim, Passage, RunResult, Stance, SupportingQuote
from deepcritical.ui.progress_view import HypothesisView, ProgressView
from deepcritical.ui.render import (
    ALLOWED_TAGS,
    evidence_rows,
    evidence_table_html,
    hypotheses_html,
    markdown_to_safe_html,
    progress_html,
    quoted_passages_html,
    safe_url,
    standalone_html,
)
from tests.unit.ui_fixtures import HOSTILE, run_result

TAG = re.compile(r"<\s*(script|img|iframe|svg|object|style)\b", re.IGNORECASE)
INERT_TAGS = ALLOWED_TAGS | {
    "div",
    "span",
    "em",
    "ul",
    "li",
    "details",
    "summary",
    "section",
    "mark",
    "caption",
}
FRAGMENT_LINK = re.compile(r"#dc-ref-\d+")


class Elements(HTMLParser):
    """Every start tag and its attributes, as a browser's parser would see them."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs)))


def assert_inert(fragment: str) -> None:
    """No tag outside the allowed set, no event-handler attribute, links only http(s) (or
    to a reference of the page, ``#dc-ref-<n>``), ids only ``dc-ref-<n>`` on list items."""
    parser = Elements()
    parser.feed(fragment)
    for tag, attrs in parser.found:
        assert tag in INERT_TAGS, (tag, fragment)
        assert not [a for a in attrs if a.startswith("on") or a == "src"], (tag, attrs)
        href = attrs.get("href")
        if href is not None:
            assert href.startswith(("https://", "http://", "mailto:")) or FRAGMENT_LINK.fullmatch(
                href
            ), href
        if "id" in attrs:
            assert tag == "li", attrs
            assert FRAGMENT_LINK.fullmatch("#" + (attrs["id"] or "")), attrs


@pytest.mark.parametrize(
    "payload",
    [
        HOSTILE,
        '<a href="javascript:alert(1)">x</a>',
        "[click](javascript:alert(1))",
        "<svg onload=alert(1)>",
        "<iframe src=https://evil.example></iframe>",
        '<p style="background:url(x)" onclick="x()">p</p>',
        "![img](https://evil.example/x.png)",
    ],
)
def test_markdown_html_has_no_active_content(payload: str) -> None:
    out = markdown_to_safe_html(f"# T\n\nText {payload} end [1].\n\n1. Ref {payload}\n")
    assert_inert(out)


def test_hostile_html_is_shown_as_text() -> None:
    out = markdown_to_safe_html(f"Quote: {HOSTILE}")
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in out
    assert "&lt;img src=x onerror=alert(1)&gt;" in out


def test_markdown_structure_and_links_survive() -> None:
    out = markdown_to_safe_html(
        "# Title\n\n## Findings\n\n**bold** text [1].\n\n1. Ref. <https://pubmed.example/1>\n"
    )
    assert "<h1>Title</h1>" in out
    assert "<h2>Findings</h2>" in out
    assert "<strong>bold</strong>" in out
    assert '<a href="https://pubmed.example/1" rel="noopener noreferrer nofollow">' in out


def test_standalone_html_has_csp_and_escaped_title() -> None:
    page = standalone_html(f"# R\n\n{HOSTILE}", f"Title {HOSTILE}")
    assert page.startswith("<!DOCTYPE html>")
    assert "Content-Security-Policy" in page
    assert "default-src 'none'" in page
    assert not TAG.search(page.split("<style>")[0] + page.split("</style>")[1])
    assert "&lt;script&gt;" in page


def test_safe_url() -> None:
    assert safe_url("https://x.org/a?b=1") == "https://x.org/a?b=1"
    for bad in ("javascript:alert(1)", "data:text/html,x", "//x.org", "ftp://x.org", "", None):
        assert safe_url(bad) is None


def test_evidence_table_escapes_every_cell_and_drops_unsafe_links() -> None:
    result = run_result()
    rows = evidence_rows(result)
    assert [r.id for r in rows] == ["E2", "E1"]  # most relevant first
    hostile = next(r for r in rows if r.id == "E1")
    assert hostile.url is None  # javascript: dropped
    assert hostile.answers == ["Cancer incidence"]
    table = evidence_table_html(rows)
    assert_inert(table)
    assert "&lt;script&gt;" in table
    assert table.count('<tr class="dc-evidence-row') == 2
    assert 'href="https://example.org/2"' in table
    assert "javascript" not in table


def test_evidence_table_shows_each_source_stance_with_its_reason() -> None:
    result = run_result()
    result.evidence[0].stance = Stance.CONTRADICTS
    result.evidence[0].stance_reason = f'null finding: "did not" {HOSTILE}'
    rows = evidence_rows(result)
    hostile = next(r for r in rows if r.id == result.evidence[0].id)
    assert (hostile.stance, hostile.stance_reason.startswith("null finding")) == (
        "contradicts",
        True,
    )
    assert next(r for r in rows if r.id != hostile.id).stance == ""  # not read
    table = evidence_table_html(rows)
    assert_inert(table)
    assert "<th>Stance</th>" in table
    assert '<td class="dc-stance" title="null finding: &quot;did not&quot;' in table
    assert ">contradicts</td>" in table


def test_progress_and_hypotheses_html_escape() -> None:
    view = ProgressView(
        stage="Searching",
        coverage=0.5,
        queries_per_source={"pubmed": 3},
        hypotheses=[HypothesisView(id="H1", statement=HOSTILE, supporting=2, contradicting=1)],
        log=[HOSTILE],
        error=HOSTILE,
        run_id="run-<b>7",
    )
    out = progress_html(view)
    assert_inert(out)
    assert 'aria-valuenow="50"' in out
    assert "PubMed: 3 queries" in out
    assert "2 supporting, 1 contradicting" in out
    assert "run-&lt;b&gt;7" in out
    hyp = hypotheses_html(run_result())
    assert "2 supporting, 1 contradicting" in hyp


def _with_full_text_quote(quote_text: str, passage_text: str) -> RunResult:
    result = run_result()
    passage = Passage(
        section=["Results", "Safety"], index=1, start=0, end=len(passage_text), text=passage_text
    )
    evidence = [result.evidence[0].model_copy(update={"passages": [passage]}), result.evidence[1]]
    claim = GroundedClaim(
        location="executive summary",
        sentence="Metformin lowers risk [E1].",
        evidence_ids=["E1"],
        quotes=[
            SupportingQuote(
                evidence_id="E1",
                quote=quote_text,
                locator=passage.locator(),
                similarity=0.9,
                supports=True,
            )
        ],
        supported=True,
        kept_ids=["E1"],
    )
    report = result.report.model_copy(update={"grounding": [claim]})
    return result.model_copy(update={"evidence": evidence, "report": report})


def test_evidence_table_says_full_text_or_abstract() -> None:
    result = _with_full_text_quote("Lactic acidosis was rare.", "Lactic acidosis was rare.")
    rows = {r.id: r for r in evidence_rows(result)}
    assert (rows["E1"].text, rows["E2"].text) == ("full text", "abstract")
    table = evidence_table_html(list(rows.values()))
    assert "<th>Text</th>" in table
    assert '<td class="dc-text">full text</td>' in table
    assert '<td class="dc-text">abstract</td>' in table


def test_a_full_text_quote_opens_on_its_section_escaped() -> None:
    passage = f"Before {HOSTILE}. Lactic acidosis was rare in 2 of 900 users. After."
    result = _with_full_text_quote("Lactic acidosis was rare in 2 of 900 users.", passage)
    fragment = quoted_passages_html(result)
    assert_inert(fragment)
    assert "<summary>[1] Results › Safety, paragraph 2: “Lactic acidosis" in fragment
    assert "<mark>Lactic acidosis was rare in 2 of 900 users.</mark>" in fragment
    assert "&lt;script&gt;" in fragment
    assert quoted_passages_html(run_result()) == ""  # no full-text quote: nothing shown


def test_hypotheses_list_their_sources_numbered_with_titles_and_quotes() -> None:
    result = _with_full_text_quote(f"Fewer cancers {HOSTILE}.", f"Fewer cancers {HOSTILE}.")
    result.evidence[1].stance = Stance.CONTRADICTS
    result.evidence[1].stance_reason = f"null result {HOSTILE}"
    out = hypotheses_html(result)
    assert_inert(out)
    assert "<script" not in out
    supporting = out.split('<div class="dc-hyp-supporting">')[1].split("</div>")[0]
    contradicting = out.split('<div class="dc-hyp-contradicting">')[1].split("</div>")[0]
    # E1 is [1] in the report, E2 is [2]; titles escaped; E1's grounding quote with its section
    assert '<span class="dc-hyp-ref">[1]</span> Metformin and cancer &lt;script&gt;' in supporting
    assert "“Fewer cancers &lt;script&gt;" in supporting
    assert "— Results › Safety, paragraph 2" in supporting
    assert '<span class="dc-hyp-ref">[2]</span> AMPK and mTOR' in contradicting
    assert "Stance (contradicts): null result &lt;script&gt;" in contradicting
    # a source with neither quote nor stance: its first sentences
    result.evidence[1].stance_reason = ""
    assert "“AMPK inhibits mTOR.”" in hypotheses_html(result)
