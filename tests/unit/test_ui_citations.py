"""Checkable citations: each ``[n]`` of the report links to its reference, with the supporting
quote as its tooltip; references carry ids and their quotes; hostile text stays inert."""

from __future__ import annotations

from lxml import html as lhtml

from deepcritical.models import Citation, GroundedClaim, RunResult, SupportingQuote
from deepcritical.ui.citation_links import link_citations, report_html, short_reference
from deepcritical.ui.render import markdown_to_safe_html
from tests.unit.test_ui_render import assert_inert
from tests.unit.ui_fixtures import HOSTILE, run_result


def quote(eid: str, text: str, locator: str = "", similarity: float = 0.8) -> SupportingQuote:
    return SupportingQuote(
        evidence_id=eid, quote=text, locator=locator, similarity=similarity, supports=True
    )


def grounded(sentence: str, *quotes: SupportingQuote) -> GroundedClaim:
    ids = [q.evidence_id for q in quotes]
    return GroundedClaim(
        location="executive summary",
        sentence=sentence,
        evidence_ids=ids,
        quotes=list(quotes),
        supported=True,
        kept_ids=ids,
        grounded_sentence=sentence,
    )


def cited_run() -> RunResult:
    """E1 cited by two sentences (each with its own quote), E2 by one; hostile quote text."""
    result = run_result()
    report = result.report.model_copy(
        update={
            "executive_summary": "Metformin lowers risk [E1]. Cancer deaths fell [E1, E2].",
            "grounding": [
                grounded(
                    "Metformin lowers risk [E1].",
                    quote("E1", f"Users had fewer cancers {HOSTILE}", "Results, paragraph 2"),
                ),
                grounded(
                    "Cancer deaths fell [E1, E2].",
                    quote("E1", "Deaths from cancer fell by a third.", similarity=0.6),
                    quote("E2", "AMPK inhibits mTOR."),
                ),
            ],
        }
    )
    return result.model_copy(update={"report": report})


def page(fragment: str) -> lhtml.HtmlElement:
    return lhtml.fragment_fromstring(fragment, create_parent="div")


def test_each_citation_links_to_its_reference_with_the_quote_of_its_sentence() -> None:
    out = report_html(cited_run())
    assert_inert(out)
    doc = page(out)
    summary = doc.xpath("//h2[.='Executive summary']/following-sibling::p[1]")[0]
    links = summary.xpath(".//a[@class='dc-cite']")
    assert [(a.text, a.get("href")) for a in links] == [
        ("1", "#dc-ref-1"),
        ("1", "#dc-ref-1"),
        ("2", "#dc-ref-2"),
    ]
    # the first [1]: its sentence's quote with its section, then the short reference
    assert links[0].get("title").startswith("“Users had fewer cancers <script>")
    assert "” — Results, paragraph 2 · 2020. Metformin and cancer" in links[0].get("title")
    # the second [1] belongs to the other sentence: that sentence's quote
    assert links[1].get("title").startswith("“Deaths from cancer fell by a third.”")
    assert links[2].get("title").startswith("“AMPK inhibits mTOR.”")
    assert "[1, 2]" in summary.text_content()  # [n, m] keeps its brackets and comma


def test_references_get_ids_and_their_quotes() -> None:
    out = report_html(cited_run())
    doc = page(out)
    first = doc.get_element_by_id("dc-ref-1")
    assert first.tag == "li"
    assert "dc-ref" in first.get("class")
    quotes = [li.text_content() for li in first.xpath(".//ul[@class='dc-ref-quotes']/li")]
    assert quotes[0].startswith("“Users had fewer cancers <script>")  # shown as text
    assert quotes[0].endswith("” — Results, paragraph 2")
    assert "“Deaths from cancer fell by a third.”" in quotes
    assert doc.get_element_by_id("dc-ref-2").tag == "li"
    assert "&lt;script&gt;" in out
    assert "<script" not in out


def test_external_links_open_in_a_new_tab() -> None:
    out = report_html(cited_run())
    external = [a for a in page(out).iter("a") if a.get("href", "").startswith("http")]
    assert external
    for a in external:
        assert a.get("target") == "_blank"
        assert set(a.get("rel").split()) == {"noopener", "noreferrer", "nofollow"}
    assert not [
        a for a in page(out).iter("a") if a.get("href", "").startswith("#") and a.get("target")
    ]


def test_without_grounding_the_tooltip_names_the_reference() -> None:
    out = report_html(run_result())
    links = page(out).xpath("//a[@class='dc-cite']")
    assert links
    assert links[0].get("title").startswith("2020. Metformin and cancer <script>")
    assert_inert(out)


def test_markers_in_code_links_and_headings_stay_text() -> None:
    markdown = (
        "# Title [1]\n\n### Heading [2]\n\nSee `code [1]` and [link [1]](https://x.org/a) "
        "but [1] here.\n\n## References\n\n1. First.\n2. Second.\n"
    )
    doc = page(link_citations(markdown_to_safe_html(markdown), run_result()))
    cites = doc.xpath("//a[@class='dc-cite']")
    assert [a.text for a in cites] == ["1"]
    assert doc.xpath("//h1")[0].text_content() == "Title [1]"
    assert doc.xpath("//code")[0].text_content() == "code [1]"
    assert doc.get_element_by_id("dc-ref-2") is not None


def test_unknown_numbers_and_hostile_markup_stay_inert() -> None:
    markdown = (
        f"Claim [7] and [1] {HOSTILE}.\n\n"
        '<a id="dc-ref-1" href="#evil" onclick="x()">x</a> <p id="other">p</p>\n\n'
        "[fake](#dc-ref-3) [js](javascript:alert(1))\n\n## References\n\n1. Only.\n"
    )
    out = link_citations(markdown_to_safe_html(markdown), run_result())
    assert_inert(out)
    doc = page(out)
    assert [a.text for a in doc.xpath("//a[@class='dc-cite']")] == ["1"]
    assert [e.get("id") for e in doc.xpath("//*[@id]")] == ["dc-ref-1"]  # raw HTML is text
    assert not doc.xpath("//a[starts-with(@href, 'javascript')]")


def test_short_reference() -> None:
    citation = Citation(
        source="pubmed", id="1", title="A" * 200, authors=["Smith J", "Lee K"], year=2021
    )
    ref = short_reference(citation)
    assert ref.startswith("Smith J et al. 2021. AAA")
    assert ref.endswith("…")
    assert len(ref) < 160
