"""Citations you can check: the report's HTML with each inline ``[n]`` linked to its reference.

Built on the sanitised fragment of :func:`~deepcritical.ui.render.markdown_to_safe_html`:
the fragment is parsed with lxml, the citation numbers in its text become links
(``<a class="dc-cite" href="#dc-ref-3" title="“quote” — section · reference">3</a>``), each item
of the References list gets ``id="dc-ref-3"`` and, under it, its supporting quotes, external
links open in a new tab; every attribute is set through lxml's API (escaped when serialised)
and the result goes through ``nh3`` once more with allow-lists extended only by what is added
here (ids ``dc-ref-<n>`` on list items, fragment links ``#dc-ref-<n>``, ``title``,
``target="_blank"``, the classes below). Numbers inside code, links and headings stay text.
A fragment shown beside the report (a follow-up question's answer, with references of its
own) takes another prefix (``ref_prefix="dc-fu-2-ref-"``), so its links reach its own
references and its ids never repeat the report's.

Which quote a link shows: the supporting quote the grounding check recorded for that reference
and that sentence (the sentence found by the text before the marker), else the reference's
best supporting quote (highest similarity), else none (the tooltip names the reference only).
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import lxml.html
import nh3
from lxml.html import HtmlElement

from deepcritical.models import (
    MARKER_IDS,
    NUMBERED_MARKER_IDS,
    Citation,
    RunResult,
    SupportingQuote,
)
from deepcritical.models._markers import numbered
from deepcritical.ui.render import (
    ALLOWED_ATTRIBUTES,
    ALLOWED_TAGS,
    URL_SCHEMES,
    cited_quotes,
    markdown_to_safe_html,
    quoted_passages_html,
)

__all__ = [
    "CITATION_CSS",
    "MAX_TITLE_QUOTE_CHARS",
    "REF_PREFIX",
    "link_citations",
    "report_html",
    "short_reference",
]

REF_PREFIX = "dc-ref-"
"""The ids of the report's references: ``dc-ref-<n>``."""
PREFIX_SHAPE = re.compile(r"dc-[a-z0-9-]*-")
"""What another prefix must look like (``dc-``, lower-case letters, digits and hyphens, a
final hyphen): an id the allow-list can name exactly."""
NUMBER_MARKER = re.compile(rf"\[({NUMBERED_MARKER_IDS})\]")
E_MARKER = re.compile(rf"\[{MARKER_IDS}\]|\[{NUMBERED_MARKER_IDS}\]")
SKIPPED = {"code", "pre", "a", "h1", "h2", "h3", "h4", "h5", "h6", "script", "style"}
MAX_TITLE_QUOTE_CHARS = 300
MAX_LISTED_QUOTES = 5
ALLOWED_CLASSES = {"a": {"dc-cite"}, "li": {"dc-ref"}, "ul": {"dc-ref-quotes"}}

_CITED = "#dc-report, #dc-history-report, #dc-follow-ups, #dc-history-follow-ups"
CITATION_CSS = f"""
:is({_CITED}) a.dc-cite {{
  text-decoration: none; font-weight: 600; padding: 0; margin: 0;
}}
:is({_CITED}) li.dc-ref {{ scroll-margin-top: 4rem; border-radius: 4px; }}
:is({_CITED}) li.dc-ref:target {{
  background: #fef3c7; outline: 2px solid #f59e0b;
}}
:is({_CITED}) ul.dc-ref-quotes {{
  font-size: 0.9em; color: #374151; margin: 2px 0 6px;
}}
"""
"""The citation links' style in the Report tab, in a report opened from History (the same
report, so the same unpadded "[1]") and in the follow-up answers under either."""


@dataclass(frozen=True)
class _Claim:
    """A kept cited sentence: its text as rendered (markers removed, normalised) and the
    supporting quote of each reference number it cites."""

    core: str
    quotes: dict[int, SupportingQuote]


def _plain(text: str) -> str:
    """``text`` without citation markers and markdown emphasis, white space collapsed."""
    text = E_MARKER.sub(" ", text)
    text = re.sub(r"[*_`]", "", text)
    return " ".join(text.split())


def _trimmed(text: str) -> str:
    return _plain(text).rstrip(" .;,:")


def short_reference(citation: Citation) -> str:
    """``Smith et al. 2021. Title`` (the title cut at 120 characters)."""
    title = citation.display_title()
    title = title if len(title) <= 120 else title[:119].rstrip() + "…"
    first = citation.authors[0] if citation.authors else ""
    who = first + (" et al." if len(citation.authors) > 1 else "") if first else ""
    return ". ".join(p for p in (who.rstrip("."), str(citation.year or ""), title) if p)


def _short_quote(text: str) -> str:
    text = " ".join(text.split())
    if len(text) <= MAX_TITLE_QUOTE_CHARS:
        return text
    return text[: MAX_TITLE_QUOTE_CHARS - 1].rstrip() + "…"


def _claims(result: RunResult, numbers: dict[str, int]) -> list[_Claim]:
    claims: list[_Claim] = []
    for claim in result.report.grounding:
        if claim.removed:
            continue
        quotes = {
            numbers[q.evidence_id]: q
            for q in claim.quotes
            if q.supports and q.evidence_id in numbers and q.quote.strip()
        }
        if quotes:
            sentence = numbered(claim.grounded_sentence or claim.sentence, numbers)
            claims.append(_Claim(_trimmed(sentence), quotes))
    return claims


def _sentence_quote(claims: list[_Claim], number: int, before: str) -> SupportingQuote | None:
    """The quote for ``number`` of the claim whose sentence ends with (else contains the end
    of) ``before``, the block's text before the marker."""
    context = _trimmed(before)
    if not context:
        return None
    candidates = [c for c in claims if number in c.quotes and c.core]
    for claim in candidates:
        if context.endswith(claim.core):
            return claim.quotes[number]
    tail = context[-40:]
    for claim in candidates:
        if tail in claim.core:
            return claim.quotes[number]
    return None


def _tooltip(quote: SupportingQuote | None, citation: Citation | None) -> str:
    parts: list[str] = []
    if quote is not None:
        where = f" — {quote.locator}" if quote.locator else ""
        parts.append(f"“{_short_quote(quote.quote)}”{where}")
    if citation is not None:
        parts.append(short_reference(citation))
    return " · ".join(parts)


def _text_slots(el: HtmlElement) -> Iterator[tuple[HtmlElement, str, str]]:
    """(element, ``"text"`` or ``"tail"``, string) for every text node under ``el``, in
    document order, skipping the contents of code, links and headings (their tails count)."""
    if el.text and el.tag not in SKIPPED:
        yield el, "text", el.text
    if el.tag not in SKIPPED:
        for child in el:
            if not isinstance(child.tag, str):  # comments
                if child.tail:
                    yield child, "tail", child.tail
                continue
            yield from _text_slots(child)
            if child.tail:
                yield child, "tail", child.tail


def _block_of(el: HtmlElement, root: HtmlElement) -> HtmlElement:
    node = el
    while node is not root and node.tag not in {"p", "li", "td", "th", "blockquote"}:
        parent = node.getparent()
        if parent is None:
            break
        node = parent
    return node


class _Linker:
    def __init__(self, result: RunResult, prefix: str) -> None:
        self.prefix = prefix
        self.numbers = result.report.reference_numbers()
        self.valid = set(self.numbers.values())
        by_id = {r.evidence_id: r.citation for r in reversed(result.report.references)}
        self.citations = {n: by_id.get(eid) for eid, n in self.numbers.items()}
        best = cited_quotes(result)
        self.best = {n: best[eid][0] for eid, n in self.numbers.items() if best.get(eid)}
        self.quotes = {n: best.get(eid, []) for eid, n in self.numbers.items()}
        self.claims = _claims(result, self.numbers)

    def link(self, number: int, before: str) -> HtmlElement:
        quote = _sentence_quote(self.claims, number, before) or self.best.get(number)
        a: HtmlElement = lxml.html.Element("a")
        a.set("class", "dc-cite")
        a.set("href", f"#{self.prefix}{number}")
        title = _tooltip(quote, self.citations.get(number))
        if title:
            a.set("title", title)
        a.text = str(number)
        return a

    def pieces(self, text: str, before: str) -> tuple[str, list[HtmlElement]]:
        """``text`` split at its markers: the leading string and the links, each carrying
        the text after it as its tail."""
        lead: str | None = None
        links: list[HtmlElement] = []
        pos = 0

        def add_text(s: str) -> None:
            nonlocal lead
            if links:
                links[-1].tail = (links[-1].tail or "") + s
            else:
                lead = (lead or "") + s

        for m in NUMBER_MARKER.finditer(text):
            nums = [int(n) for n in re.split(r"\s*,\s*", m.group(1))]
            if not all(n in self.valid for n in nums):
                continue
            add_text(text[pos : m.start()] + "[")
            prefix = before + text[: m.start()]
            for i, n in enumerate(nums):
                if i:
                    add_text(", ")
                links.append(self.link(n, prefix))
            add_text("]")
            pos = m.end()
        add_text(text[pos:])
        return lead or "", links

    def run(self, root: HtmlElement) -> None:
        slots = list(_text_slots(root))
        context: dict[tuple[int, str], str] = {}  # slot -> its block's text before it
        for block in {
            id(b): b for b in (_block_of(_owner(e, w), root) for e, w, _ in slots)
        }.values():
            offset = ""
            for e, w, s in _block_text(block):
                context[(id(e), w)] = offset
                offset += s
        for el, where, text in slots:
            if not NUMBER_MARKER.search(text):
                continue
            lead, links = self.pieces(text, context.get((id(el), where), ""))
            if not links:
                continue
            if where == "text":
                el.text = lead
                for i, a in enumerate(links):
                    el.insert(i, a)
                continue
            parent = el.getparent()
            if parent is None:
                continue
            el.tail = lead
            index = parent.index(el)
            for i, a in enumerate(links, start=1):
                parent.insert(index + i, a)


def _owner(el: HtmlElement, where: str) -> HtmlElement:
    """The element whose content a text node is part of (a tail belongs to the parent)."""
    if where == "text":
        return el
    parent = el.getparent()
    return el if parent is None else parent


def _block_text(block: HtmlElement) -> Iterator[tuple[HtmlElement, str, str]]:
    """Every text node of ``block`` in document order (skipped ones included), for offsets."""
    if block.text:
        yield block, "text", block.text
    for child in block:
        if isinstance(child.tag, str):
            yield from _block_text(child)
        if child.tail:
            yield child, "tail", child.tail


def _references_list(root: HtmlElement) -> HtmlElement | None:
    for h in root.iter("h2"):
        if (h.text_content() or "").strip() == "References":
            nxt = h.getnext()
            if nxt is not None and nxt.tag == "ol":
                return nxt
    return None


def _mark_references(root: HtmlElement, linker: _Linker) -> None:
    ol = _references_list(root)
    if ol is None:
        return
    try:
        start = int(ol.get("start") or "1")
    except ValueError:
        start = 1
    for i, li in enumerate(c for c in ol if c.tag == "li"):
        n = start + i
        if n not in linker.valid:
            continue
        li.set("id", f"{linker.prefix}{n}")
        li.set("class", "dc-ref")
        quotes = linker.quotes.get(n, [])[:MAX_LISTED_QUOTES]
        if not quotes:
            continue
        ul = lxml.html.Element("ul")
        ul.set("class", "dc-ref-quotes")
        for q in quotes:
            item = lxml.html.Element("li")
            item.text = f"“{_short_quote(q.quote)}”" + (f" — {q.locator}" if q.locator else "")
            ul.append(item)
        li.append(ul)


def _external_links(root: HtmlElement) -> None:
    for a in root.iter("a"):
        href = (a.get("href") or "").strip().lower()
        if href.startswith(("http://", "https://")):
            a.set("target", "_blank")
            a.set("rel", "noopener noreferrer nofollow")


def _attribute_filter(prefix: str) -> Callable[[str, str, str], str | None]:
    """nh3's attribute filter: ids only ``<prefix><n>`` on list items, fragment links only
    to such an id."""
    ref_id = re.compile(re.escape(prefix) + r"\d+")

    def keep(tag: str, attribute: str, value: str) -> str | None:
        if attribute == "id":
            return value if tag == "li" and ref_id.fullmatch(value) else None
        external = value.startswith(("http:", "https:", "mailto:"))
        if tag == "a" and attribute == "href" and not external:
            return value if value.startswith("#") and ref_id.fullmatch(value[1:]) else None
        return value

    return keep


def _clean(fragment: str, prefix: str) -> str:
    attributes = {k: set(v) for k, v in ALLOWED_ATTRIBUTES.items()}
    attributes["a"] = attributes.get("a", set()) | {"title"}
    attributes["li"] = {"id"}
    return nh3.clean(
        fragment,
        tags=ALLOWED_TAGS,
        attributes=attributes,
        attribute_filter=_attribute_filter(prefix),
        tag_attribute_values={"a": {"target": {"_blank"}}},
        allowed_classes=ALLOWED_CLASSES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
    )


def link_citations(fragment: str, result: RunResult, *, ref_prefix: str = REF_PREFIX) -> str:
    """The sanitised report ``fragment`` with its citations linked to its references (see the
    module's docstring), cleaned again; the references' ids are ``<ref_prefix><n>``.

    Raises:
        ValueError: ``ref_prefix`` is not ``dc-`` and lower-case letters, digits and hyphens
            ending with a hyphen.
    """
    if not PREFIX_SHAPE.fullmatch(ref_prefix):
        raise ValueError(f"not a reference id prefix: {ref_prefix!r}")
    if not fragment.strip():
        return fragment
    root = lxml.html.fragment_fromstring(fragment, create_parent="div")
    linker = _Linker(result, ref_prefix)
    linker.run(root)
    _mark_references(root, linker)
    _external_links(root)
    inner = html.escape(root.text or "", quote=False)
    body = "".join(lxml.html.tostring(child, encoding="unicode") for child in root)
    return _clean(inner + body, ref_prefix)


def report_html(result: RunResult) -> str:
    """The Report tab's HTML: the report with checkable citations, then the quoted full-text
    passages (:func:`~deepcritical.ui.render.quoted_passages_html`)."""
    fragment = markdown_to_safe_html(result.report.to_markdown())
    return link_citations(fragment, result) + quoted_passages_html(result)
