"""Plain text from the small HTML fragments that search APIs put in abstracts and titles.

Europe PMC (``abstractText``), OpenAlex and web snippets carry abstracts as HTML fragments:
structured abstracts as ``<h4>Background</h4>text<h4>Methods</h4>text``, inline markup such as
``H<sub>2</sub>S`` or ``<i>n</i> = 10``, entities, and bare ``<`` in the science itself
(``p < .001``, ``<1 year``, ``P<0.05``). :func:`html_to_text` turns such a fragment into the
text form :class:`~deepcritical.models.Evidence` uses for content: one paragraph per section,
``"LABEL: text"`` for sections under a heading (the heading upper-cased, as PubMed spells
structured-abstract labels), paragraphs separated by a blank line.

Nothing here does I/O or knows about a particular API; none of the functions raises.
"""

from __future__ import annotations

import re

import lxml.html
from lxml import etree

__all__ = ["collapse_whitespace", "html_to_text", "strip_tags"]

_HEADING_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
# Elements whose start and end break the text into paragraphs.
_BLOCK_TAGS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "caption", "dd", "details",
        "div", "dl", "dt", "figcaption", "figure", "footer", "form", "header", "hr", "html",
        "li", "main", "nav", "ol", "p", "pre", "section", "summary", "table", "tbody", "td",
        "tfoot", "th", "thead", "tr", "ul",
    }
)  # fmt: skip
# Elements whose text is never shown.
_SKIPPED_TAGS = frozenset(
    {"head", "script", "style", "template", "noscript", "iframe", "object", "svg", "title"}
)
# A "<" that does not open something shaped like a tag (``<i>``, ``</h4>``, ``<br/>``,
# ``<a href="x">``, ``<!-- -->``) is text: ``p < .001``, ``<1 year``, ``b<c and <b>x</b>``.
_STRAY_LT = re.compile(r"<(?!/?[A-Za-z][\w:.-]*(?:\s[^<>]*)?/?>|!--|!\[CDATA\[|\?)")
# Characters libxml2 refuses (NUL and C0 controls other than tab, newline, carriage return).
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_FALLBACK_TAG = re.compile(r"<[^<>]*>")


def collapse_whitespace(text: str) -> str:
    """``text`` with every run of whitespace (Unicode spaces and line breaks included, so
    ``&nbsp;`` too) replaced by one space, and no leading or trailing whitespace."""
    return " ".join(text.split())


def html_to_text(html: str | None) -> str:
    """Plain text of an HTML fragment (or document), keeping section headings as labels.

    * ``<h1>``...``<h6>`` start a new paragraph labelled with the heading's text upper-cased,
      without a trailing colon: ``<h4>Background</h4>Metformin...`` ->
      ``"BACKGROUND: Metformin..."``. A heading with no text after it (before the next heading
      or the end) stays a paragraph of its own, as written.
    * Block elements (``p``, ``div``, ``li``, ``br``, table cells, ...) end a paragraph;
      paragraphs are separated by ``"\\n\\n"``; whitespace inside a paragraph is collapsed.
    * Inline markup is dropped without adding spaces (``H<sub>2</sub>S`` -> ``"H2S"``);
      entities are decoded (``&amp;`` -> ``"&"``); comments, ``<head>``, ``<script>`` and
      ``<style>`` are dropped.
    * A ``<`` that cannot start a tag stays text (``p < .001``, ``<1 year``, ``b<c``); a ``<``
      followed by a letter and a later ``>`` is read as a tag, as a browser would.

    Args:
        html: the fragment; ``None`` or ``""`` give ``""``. Plain text passes through with its
            whitespace collapsed (line breaks in plain text are whitespace, as in HTML).

    Returns:
        The text, ``""`` when there is none. Never raises: input lxml cannot parse falls back to
        removing anything shaped like a tag.
    """
    if not html:
        return ""
    cleaned = _CONTROL_CHARS.sub(" ", html)
    if "<" not in cleaned and "&" not in cleaned:
        return collapse_whitespace(cleaned)
    try:
        root = lxml.html.fragment_fromstring(_STRAY_LT.sub("&lt;", cleaned), create_parent="div")
    except (etree.LxmlError, ValueError):
        return collapse_whitespace(_FALLBACK_TAG.sub(" ", cleaned))
    builder = _TextBuilder()
    builder.walk(root, top=True)
    return builder.finish()


def strip_tags(html: str | None) -> str:
    """One line of plain text from an HTML fragment, for titles and names.

    Same rules as :func:`html_to_text` (inline markup dropped without spaces, entities decoded,
    bare ``<`` kept), but paragraphs are joined with one space: ``"Effect of <i>H. pylori</i>
    on <b>X</b>"`` -> ``"Effect of H. pylori on X"``.
    """
    return collapse_whitespace(html_to_text(html))


class _TextBuilder:
    """Collects paragraphs while walking an lxml tree (see :func:`html_to_text`)."""

    def __init__(self) -> None:
        self.paragraphs: list[str] = []
        self.buffer: list[str] = []
        self.heading_text: str | None = None  # the pending heading, as written

    def flush(self) -> None:
        text = collapse_whitespace("".join(self.buffer))
        self.buffer = []
        if text:
            label = self.heading_text.rstrip(":").strip().upper() if self.heading_text else ""
            self.paragraphs.append(f"{label}: {text}" if label else text)
            self.heading_text = None

    def close_heading(self) -> None:
        """Keep a heading that no text followed as a paragraph of its own."""
        if self.heading_text:
            self.paragraphs.append(self.heading_text)
        self.heading_text = None

    def heading(self, el: etree._Element) -> None:
        self.flush()
        self.close_heading()
        self.heading_text = collapse_whitespace(_inline_text(el)) or None

    def walk(self, el: etree._Element, *, top: bool = False) -> None:
        tag = el.tag.lower() if isinstance(el.tag, str) else ""
        if not tag or tag in _SKIPPED_TAGS:
            pass  # a comment, processing instruction or hidden element: only its tail is text
        elif tag in _HEADING_TAGS:
            self.heading(el)
        elif tag == "br":
            self.flush()
        else:
            block = tag in _BLOCK_TAGS and not top
            if block:
                self.flush()
            self.buffer.append(el.text or "")
            for child in el:
                self.walk(child)
            if block:
                self.flush()
        if not top:
            self.buffer.append(el.tail or "")

    def finish(self) -> str:
        self.flush()
        self.close_heading()
        return "\n\n".join(self.paragraphs)


def _inline_text(el: etree._Element) -> str:
    """All text below ``el`` (its children's tails included), skipping comments' own text."""
    parts: list[str] = [el.text or ""] if isinstance(el.tag, str) else []
    for child in el:
        if isinstance(child.tag, str) and child.tag.lower() not in _SKIPPED_TAGS:
            parts.append(_inline_text(child))
        parts.append(child.tail or "")
    return "".join(parts)
