"""html_to_text / strip_tags: headings kept as labels, markup dropped, bare "<" kept as text."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from deepcritical.sources.html_text import collapse_whitespace, html_to_text, strip_tags


def test_headings_become_upper_case_labels_of_their_paragraph() -> None:
    text = html_to_text(
        "<h4>Background</h4>Metformin activates AMPK.<h4>Methods:</h4> We  enrolled\n120."
        "<h4>Conclusions and relevance</h4>It helps."
    )
    assert text == (
        "BACKGROUND: Metformin activates AMPK.\n\n"
        "METHODS: We enrolled 120.\n\n"
        "CONCLUSIONS AND RELEVANCE: It helps."
    )


def test_text_before_the_first_heading_has_no_label() -> None:
    assert html_to_text("Intro.<h3>Results</h3>Done.") == "Intro.\n\nRESULTS: Done."


def test_heading_followed_by_paragraphs_labels_only_the_first() -> None:
    text = html_to_text("<h4>Background</h4><p>one</p><p>two</p>")
    assert text == "BACKGROUND: one\n\ntwo"


def test_heading_without_text_after_it_is_kept_as_written() -> None:
    assert html_to_text("<h4>Trial registration</h4>") == "Trial registration"
    assert html_to_text("<h4>A</h4><h4>B</h4>text") == "A\n\nB: text"


def test_inline_markup_is_dropped_without_adding_spaces() -> None:
    text = html_to_text("Hydrogen sulfide (H<sub>2</sub>S) in <i>n</i> = 10 <b>mice</b>.")
    assert text == "Hydrogen sulfide (H2S) in n = 10 mice."


@pytest.mark.parametrize(
    ("fragment", "expected"),
    [
        ("significant (p < .001) in all", "significant (p < .001) in all"),
        ("lasted <1 year.<h4>Conclusion</h4>ok", "lasted <1 year.\n\nCONCLUSION: ok"),
        ("P<0.05 and <i>n</i><30", "P<0.05 and n<30"),
        ("IL-6<TNF and <b>bold</b>", "IL-6<TNF and bold"),
        ("dose <\u2009.001 mg", "dose <\u2009.001 mg".replace("\u2009", " ")),
    ],
)
def test_bare_less_than_signs_are_text_not_tags(fragment: str, expected: str) -> None:
    assert html_to_text(fragment) == expected


def test_entities_are_decoded_and_nbsp_collapsed() -> None:
    assert html_to_text("A &amp; B&nbsp;&nbsp;&lt;C&gt; &#945;") == "A & B <C> α"


def test_block_elements_and_br_split_paragraphs() -> None:
    text = html_to_text("<div><p>one</p><p>two<br>three</p><ul><li>x</li><li>y</li></ul></div>")
    assert text.split("\n\n") == ["one", "two", "three", "x", "y"]


def test_comments_scripts_styles_and_head_are_dropped() -> None:
    doc = (
        "<html><head><title>Page</title><style>p{}</style></head><body>"
        "<script>var x = 1;</script>a<!-- hidden -->b</body></html>"
    )
    assert html_to_text(doc) == "ab"


def test_control_characters_do_not_break_parsing() -> None:
    assert html_to_text("a\x00b<i>c</i>\x0bd") == "a bc d"


def test_empty_and_plain_inputs() -> None:
    assert html_to_text(None) == ""
    assert html_to_text("") == ""
    assert html_to_text("   \n ") == ""
    assert html_to_text("plain\n\n  text ") == "plain text"


def test_strip_tags_gives_one_line() -> None:
    assert strip_tags("Effect of <i>H. pylori</i>\n on <p>gastric</p> cancer") == (
        "Effect of H. pylori on gastric cancer"
    )
    assert strip_tags(None) == ""


def test_collapse_whitespace() -> None:
    assert collapse_whitespace(" a\t\n b\u00a0 c ") == "a b c"


def _oracle(fragment: str) -> str:
    """The abstract's characters without tags, whitespace, colons and case (independent of
    lxml): what html_to_text must keep, whatever it does with labels and paragraphs."""
    no_tags = re.sub(r"</?(?:h[1-6]|i|b|u|sub|sup|p|br|em|strong)\b[^>]*>", "", fragment)
    return re.sub(r"[\s:]", "", html.unescape(no_tags)).lower()


def test_every_real_europepmc_abstract_keeps_its_text_and_loses_its_tags(
    api_fixtures: Path,
) -> None:
    payload = json.loads((api_fixtures / "europepmc" / "search_cancer_core_25.json").read_text())
    abstracts = {
        r["id"]: r["abstractText"] for r in payload["resultList"]["result"] if r.get("abstractText")
    }
    assert len(abstracts) == 21
    for pmid, fragment in abstracts.items():
        text = html_to_text(fragment)
        assert not re.search(r"</?(?:h4|i|b|sub|sup)>", text), pmid
        assert re.sub(r"[\s:]", "", text).lower() == _oracle(fragment), pmid
        headings = re.findall(r"<h4>(.*?)</h4>", fragment)
        for heading in headings:
            assert f"{heading.upper()}: " in text, (pmid, heading)
        assert len(text.split("\n\n")) == max(1, len(headings)), pmid

    assert "p < .001) predicted anxiety" in html_to_text(abstracts["40468710"])
    survival = html_to_text(abstracts["40245290"])
    assert "median overall survival of <1 year.\n\nCONCLUSION" in survival
    cough = html_to_text(abstracts["39038316"])
    assert "was a protective factor (P < .05).\n\nCONCLUSION" in cough
    assert html_to_text(abstracts["40511629"]).startswith(
        "BACKGROUND: Paclitaxel is a potent agent against ovarian cancer. Hydrogen sulfide (H2S)"
    )
    assert "(n = 10)" in html_to_text(abstracts["40518973"])
