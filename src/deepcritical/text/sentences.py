"""Sentence boundaries for biomedical prose and report markdown.

The segmenter is pysbd (rule-based, deterministic) with three corrections that matter for
reports whose claims carry inline citations:

* **Citation markers stay with their sentence.** A marker written after the full stop
  (``"... reduced risk. [E3] Next ..."``) or glued to it (``"risk.[E3]"``) is moved back to the
  sentence it cites; pysbd would otherwise start the next sentence with it (or, after a
  number as in ``"in 2019.[E3] Next"``, not split at all). Markers before the stop
  (``"... reduced risk [E3]."``) already stay. Every form of :data:`CITATION_GROUP` and
  :data:`LOOSE_CITATION_GROUP` counts as a marker (``[E3, E7]``, ``[PMID: 123]``, ``[1-3]``,
  ``[see E3]``...).
* **Abbreviations do not end sentences.** pysbd already handles ``et al.``, ``e.g.``,
  ``i.e.``, ``vs.``, ``Fig.``, ``Dr.``, ``p < 0.05`` and ``95% CI 1.2-3.4``; this module adds
  ``approx.``, ``ca.``, ``cf.``, ``Figs.``, ``Suppl.``, ``Ref.`` and friends (never
  sentence-final), and dotted or unit abbreviations (``i.v.``, ``b.i.d.``, ``spp.``, ``wk.``,
  ``E. coli``) when the text after them starts in lower case or with a digit.
* **Markdown structure is respected.** Blank lines, headings, list items, block quotes, table
  rows, rules and fenced code are hard boundaries; a single newline inside a paragraph is a
  soft wrap, not a sentence end.

Offsets are ``str`` indices into the text given (characters, not bytes). The splitters never
rewrite text: they return substrings or spans of their input. :func:`plain_sentence_spans`
reads plain text (an abstract: every line a paragraph, nothing markdown), the others report
markdown. :func:`rebuild_block` and :func:`rebuild_text` put a markdown text back together
after some of its sentences were replaced or removed. Known limit: an
abbreviation followed by a capitalised word (``"Smith et al. AMPK ..."``) is read as a
sentence end, as pysbd does; that is genuinely ambiguous.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import pysbd  # type: ignore[import-untyped]

from deepcritical.models import DOI_TOKEN, E_ID, EVIDENCE_ID, NCT_ID, PMCID, PMCID_TOKEN, PMID_TOKEN

__all__ = [
    "CITATION_GROUP",
    "CITATION_RUN",
    "LOOSE_CITATION_GROUP",
    "BlockKind",
    "MarkdownBlock",
    "markdown_blocks",
    "plain_sentence_spans",
    "prose_spans",
    "rebuild_block",
    "rebuild_text",
    "sentence_spans",
    "sentence_tiles",
    "split_paragraph_sentences",
    "split_sentences",
]

# --- citation-marker grammar (shared with report.validation) ---------------------------------

# the identifiers' grammar has one home (models._markers); where a DOI ends is said there
_E_ID = E_ID  # E3, or a range E3-E5
_PMID = PMID_TOKEN
_PMCID = PMCID_TOKEN
_NCT = NCT_ID
_DOI = DOI_TOKEN
_NUM = r"\d+(?:\s*[-–]\s*\d+)?"  # 3, or a range 1-3
_ANY_TOKEN = rf"(?:{_E_ID}|{_PMID}|{_PMCID}|{_NCT}|{_DOI}|{_NUM})"
_SEP = r"\s*[,;]\s*"

_BRACKET_NUMERIC = rf"\[\s*{_NUM}(?:{_SEP}{_NUM})*\s*\](?![A-Za-z0-9]|-[A-Za-z])"
_BRACKET_IDS = rf"\[(?=[^\]\n]*[A-Za-z])\s*{_ANY_TOKEN}(?:{_SEP}{_ANY_TOKEN})*\s*\]"
_PAREN_IDS = rf"\(\s*(?:{_PMID}|{_PMCID})(?:{_SEP}(?:{_PMID}|{_PMCID}|{_NUM}))*\s*\)"
_GROUP = rf"(?:{_BRACKET_IDS}|{_BRACKET_NUMERIC}|{_PAREN_IDS})"

CITATION_GROUP = re.compile(_GROUP, re.IGNORECASE)
"""One citation-like group, canonical or not.

Matches ``[E3]``, ``[E3, E7]``, ``[E3; E4]``, ``[E3-E5]``, ``[PMID: 123]``, ``[pmid 123]``,
``[PMID: 123, 456]``, ``[PMC123]``, ``[PMCID: PMC123]``, ``[NCT01234567]``, ``[doi:10.1/x]``,
bare numeric markers ``[1]``, ``[1, 2]``, ``[1-3]`` (not when glued to a following word, as in
the locant of ``[1,2,4]triazole``), and parenthesised PubMed forms ``(PMID: 123)``,
``(PMC123)``. Never matches ``[95% CI]``, ``[n = 3]``, ``[Ca2+]`` or ``(E2)`` (E1/E2/E3 also
name estrone/estradiol/estriol and E3 ligases, so only square brackets mark E ids).
"""

CITATION_RUN = re.compile(rf"{_GROUP}(?:[ \t]*[,;–-]?[ \t]*{_GROUP})*", re.IGNORECASE)
"""Adjacent citation groups read as one marker: ``[E3][E4]``, ``[E3] [E4]``, ``[1]–[3]``."""

_LOOSE = (
    rf"\[(?=[^\[\]\n]*(?:\b{EVIDENCE_ID}\b|(?i:\bPMID\b|\bPMCID\b|\b{PMCID}\b|\b{NCT_ID}\b|\bdoi\s*:)))"
    r"[^\[\]\n]{1,200}\]"
)
LOOSE_CITATION_GROUP = re.compile(_LOOSE)
"""A bracket naming an evidence id or identifier among other words: ``[E3 and E4]``,
``[see E3]``, ``[E3, p. 4]``, ``[PMID 1 and 2]``. Only upper-case ``E`` ids count. Used where
:data:`CITATION_GROUP` does not match, so that no bracketed citation escapes validation."""

_ANY_GROUP = rf"(?:(?i:{_GROUP})|{_LOOSE})"
_ANY_RUN = rf"{_ANY_GROUP}(?:[ \t]*[,;–-]?[ \t]*{_ANY_GROUP})*"
_LEADING_RUN = re.compile(rf"\s*{_ANY_RUN}[ \t]*[.!?]?(?=\s|$)")
# "... in 2019.[E3] Next" / "... 3.5. [E3] Next": pysbd misses some of these boundaries
_AFTER_STOP_RUN = re.compile(rf"[.!?][\"')]?[ \t]*{_ANY_RUN}[ \t]+(?=[A-Z])")

# --- abbreviations ----------------------------------------------------------------------------

# Never sentence-final: the text after them always continues the sentence.
_NEVER_FINAL = frozenset(
    {
        "approx", "ca", "cf", "vs", "viz", "e.g", "i.e", "eg", "ie", "fig", "figs", "eq",
        "eqs", "ref", "refs", "suppl", "dr", "prof", "mr", "mrs", "ms", "sect", "chap",
        "tab", "resp", "incl", "esp", "nr", "pp",
    }
)  # fmt: skip
# Sentence-final only when the next text starts with a capital letter.
_CONTEXT_FINAL = frozenset(
    {
        "al", "et", "etc", "no", "nos", "vol", "sp", "spp", "subsp", "var", "inc", "ltd",
        "co", "corp", "wk", "wks", "h", "hr", "hrs", "min", "mo", "mos", "yr", "yrs", "d",
        "st", "ch", "p", "conc", "max", "mol", "wt", "temp", "dept", "univ", "est",
    }
)  # fmt: skip
# i.v, b.i.d, u.s, single letters (E. coli, non-S. aureus)
_DOTTED = re.compile(r"(?:[\w-]*-)?(?:[a-z]\.)*[a-z]")


def _continues(prev: str, nxt: str) -> bool:
    """True when the boundary between ``prev`` and ``nxt`` falls after an abbreviation."""
    if nxt.lstrip()[:1] in {",", ";", ":", ")"}:  # no sentence starts with these
        return True
    words = prev.rstrip().split()
    if not words or not words[-1].endswith(".") or words[-1].endswith(".."):
        return False  # "vs.." is an abbreviation and a full stop
    core = words[-1].lstrip("([{\"'").rstrip(".").lower()
    if core in _NEVER_FINAL:
        return True
    lead = _LEADING_RUN.match(nxt)
    rest = nxt[lead.end() :] if lead else nxt
    rest = rest.lstrip()
    if not rest or not (rest[0].islower() or rest[0].isdigit()):
        return False
    return core in _CONTEXT_FINAL or _DOTTED.fullmatch(core) is not None


# --- prose segmentation -----------------------------------------------------------------------

_FALLBACK_BOUNDARY = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\[(])")


def _pysbd_starts(chunk: str) -> list[int]:
    """Sentence start offsets pysbd finds in ``chunk`` (a single line of prose)."""
    segmenter = pysbd.Segmenter(language="en", clean=False, char_span=True)
    try:
        spans = segmenter.segment(chunk)
    except Exception:  # noqa: BLE001 - pysbd is regex-heavy; an internal error must not lose text
        return [0, *(m.end() for m in _FALLBACK_BOUNDARY.finditer(chunk))]
    return [int(span.start) for span in spans]


def _boundaries(chunk: str) -> list[int]:
    """Sorted sentence start offsets in ``chunk`` after the citation/abbreviation fixes.

    Offsets between two starts form one sentence, so text pysbd drops (it silently omits a
    sentence it cannot locate again) is kept with the sentence before it.
    """
    starts = {*_pysbd_starts(chunk), *(m.end() for m in _AFTER_STOP_RUN.finditer(chunk))}
    bounds = sorted({0, *(s for s in starts if 0 < s < len(chunk))})
    merged: list[int] = [bounds[0]]
    for i, start in enumerate(bounds[1:], start=1):
        stop = bounds[i + 1] if i + 1 < len(bounds) else len(chunk)
        if _continues(chunk[merged[-1] : start], chunk[start:stop]):
            continue
        merged.append(start)
    fixed: list[int] = [merged[0]]
    for i, start in enumerate(merged[1:], start=1):
        stop = merged[i + 1] if i + 1 < len(merged) else len(chunk)
        lead = _LEADING_RUN.match(chunk, start, stop)
        if lead is not None:
            start = lead.end()
        if chunk[start:stop].strip():
            fixed.append(start)
    return fixed


def prose_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Sentence spans of the prose in ``text[start:end]`` (no markdown handling).

    Newlines inside the range are soft wraps. Returns ``(begin, stop)`` offsets into ``text``,
    in order, non-overlapping, each ``text[begin:stop]`` a sentence without surrounding
    whitespace; together they hold every non-whitespace character of the range.
    """
    stop_at = len(text) if end is None else end
    chunk = text[start:stop_at].replace("\r", " ").replace("\n", " ")
    if not chunk.strip():
        return []
    bounds = _boundaries(chunk)
    spans: list[tuple[int, int]] = []
    for i, b in enumerate(bounds):
        e = bounds[i + 1] if i + 1 < len(bounds) else len(chunk)
        piece = chunk[b:e]
        lead = len(piece) - len(piece.lstrip())
        trail = len(piece.rstrip())
        if trail > lead:
            spans.append((start + b + lead, start + b + trail))
    return spans


# --- markdown blocks --------------------------------------------------------------------------

BlockKind = Literal["paragraph", "bullet", "quote", "heading", "table", "rule", "code"]

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^\s{0,3}#{1,6}(?:\s|$)")
_TABLE = re.compile(r"^\s*\|")
_RULE = re.compile(r"^\s{0,3}(?:(?:-\s*){3,}|(?:\*\s*){3,}|(?:_\s*){3,})$")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")
_QUOTE = re.compile(r"^\s*>\s?")


@dataclass(frozen=True)
class MarkdownBlock:
    """One markdown block of a text.

    ``kind`` is what the block is; ``start``/``end`` are offsets of its first character and
    one past its last character excluding the final newline (``text[start:end]`` is the
    block); ``body_start`` is where the prose begins after the line prefix (``- ``, ``1. ``,
    ``> ``), equal to ``start`` for paragraphs and for the kinds that are never split into
    sentences (heading, table, rule, code).
    """

    kind: BlockKind
    start: int
    body_start: int
    end: int

    @property
    def is_prose(self) -> bool:
        """True for paragraphs, list items and quotes, whose body is split into sentences."""
        return self.kind in ("paragraph", "bullet", "quote")


def markdown_blocks(text: str) -> list[MarkdownBlock]:
    """The blocks of a markdown text, in order.

    Blank lines separate blocks; a heading, table row, rule or quote line is a block of one
    line; a list item (``- ``, ``* ``, ``+ ``, ``1. ``, ``1) ``) starts a block that takes the
    following non-blank, non-marker lines as its continuation; other lines join the open
    paragraph, list item or quote (lazy continuation); a fenced code block is one block up to
    its closing fence. Whitespace between blocks belongs to no block.
    """
    blocks: list[MarkdownBlock] = []
    open_block: MarkdownBlock | None = None  # may take continuation lines
    fence: str | None = None
    offset = 0
    for line in text.split("\n"):
        line_offset = offset
        line_end = offset + len(line.rstrip())  # trailing blanks and "\r" are not block text
        line_start = offset + len(line) - len(line.lstrip())  # nor is indentation
        offset += len(line) + 1
        if fence is not None:
            last = blocks[-1]
            blocks[-1] = MarkdownBlock(last.kind, last.start, last.body_start, line_end)
            if line.strip().startswith(fence):
                fence = None
            continue
        if not line.strip():
            open_block = None
            continue
        if (m := _FENCE.match(line)) is not None:
            fence = m.group(1)[0] * 3
            blocks.append(MarkdownBlock("code", line_start, line_start, line_end))
            open_block = None
            continue
        single: BlockKind | None = None
        if _HEADING.match(line):
            single = "heading"
        elif _TABLE.match(line):
            single = "table"
        elif _RULE.match(line):
            single = "rule"
        if single is not None:
            blocks.append(MarkdownBlock(single, line_start, line_start, line_end))
            open_block = None
            continue
        if (m := _BULLET.match(line)) is not None:
            open_block = MarkdownBlock("bullet", line_start, line_offset + m.end(), line_end)
            blocks.append(open_block)
            continue
        if (m := _QUOTE.match(line)) is not None:
            blocks.append(MarkdownBlock("quote", line_start, line_offset + m.end(), line_end))
            open_block = None
            continue
        if open_block is not None:
            open_block = MarkdownBlock(
                open_block.kind, open_block.start, open_block.body_start, line_end
            )
            blocks[-1] = open_block
            continue
        open_block = MarkdownBlock("paragraph", line_start, line_start, line_end)
        blocks.append(open_block)
    return blocks


# --- public splitters -------------------------------------------------------------------------


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Sentence spans of ``text``, markdown-aware; see :func:`split_sentences`.

    Returns ``(begin, stop)`` offsets into ``text``, in order and non-overlapping. Together the
    spans hold every non-whitespace character of ``text`` exactly once: a list item's or
    quote's prefix belongs to its first sentence, and headings, table rows, rules and code
    blocks are one span each.
    """
    spans: list[tuple[int, int]] = []
    for block in markdown_blocks(text):
        if not block.is_prose:
            spans.append((block.start, block.end))
            continue
        inner = prose_spans(text, block.body_start, block.end)
        if not inner:  # a bare list marker ("- ")
            spans.append((block.start, block.start + len(text[block.start : block.end].rstrip())))
            continue
        first_begin, first_stop = inner[0]
        inner[0] = (block.start, first_stop) if first_begin > block.start else inner[0]
        spans.extend(inner)
    return spans


def split_sentences(text: str) -> list[str]:
    """Split biomedical prose (plain or markdown) into sentences.

    Each sentence is a substring of ``text`` without surrounding whitespace, in order; no text
    is lost or rewritten. Citation markers stay with the sentence they follow (``"risk [E3]."``
    and ``"risk. [E3]"`` alike); abbreviations such as ``et al.``, ``e.g.``, ``i.e.``, ``vs.``,
    ``Fig.``, ``approx.`` and statistics such as ``p < 0.05`` or ``95% CI 1.2-3.4`` do not split;
    blank lines and markdown block starts (headings, list items, quotes, tables) always do,
    single newlines inside a paragraph do not. Empty or whitespace-only text gives ``[]``.
    Deterministic: the same text always gives the same sentences.
    """
    return [text[b:e] for b, e in sentence_spans(text)]


def split_paragraph_sentences(text: str) -> list[str]:
    """Split report markdown into units: sentences of paragraphs, whole structural lines.

    Like :func:`split_sentences`, except that a list item (with its continuation lines), a
    heading, a table row, a rule and a fenced code block are each one unit, never split and
    never merged with neighbours (a markdown line starting with ``- `` or ``#`` is its own
    unit). Paragraphs and quotes are split into sentences. Units are stripped substrings of
    ``text``, in order.
    """
    units: list[str] = []
    for block in markdown_blocks(text):
        if block.kind in ("paragraph", "quote"):
            inner = prose_spans(text, block.body_start, block.end)
            if inner:
                inner[0] = (block.start, inner[0][1])
            units.extend(text[b:e] for b, e in inner)
        else:
            units.append(text[block.start : block.end].strip())
    return units


def plain_sentence_spans(text: str) -> list[tuple[int, int]]:
    """Sentence spans of plain text (an abstract, a title): nothing is read as markdown.

    Every line is a paragraph of its own (a newline always ends a sentence), split as
    :func:`prose_spans` splits it; a line starting with ``- `` or ``1. `` is prose like any
    other. Returns ``(begin, stop)`` offsets into ``text``, in order, each ``text[begin:stop]``
    a sentence without surrounding whitespace.
    """
    spans: list[tuple[int, int]] = []
    offset = 0
    for line in text.split("\n"):
        spans.extend(prose_spans(text, offset, offset + len(line)))
        offset += len(line) + 1
    return spans


def sentence_tiles(text: str) -> list[str]:
    """The sentences of plain text (:func:`plain_sentence_spans`) as pieces that tile it.

    Each piece is a sentence with the whitespace after it (the first also with the whitespace
    before it), so ``"".join(sentence_tiles(text)) == text``. Whitespace-only text is one
    piece; empty text gives ``[]``.
    """
    starts = [begin for begin, _ in plain_sentence_spans(text)]
    if not starts:
        return [text] if text else []
    bounds = [0, *starts[1:], len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


# --- rebuilding markdown ----------------------------------------------------------------------


def rebuild_block(
    text: str,
    block: MarkdownBlock,
    units: Sequence[tuple[int, int]],
    kept: Sequence[tuple[int, str]],
) -> str:
    """The text of ``block`` with its units (sentence spans, in order) rewritten.

    ``kept`` holds ``(stop, new text)`` of the units that stay, in order (``stop`` the end of
    the unit's span); the others are removed. The block's text before its first unit (a list
    marker) and after its last unit stays; between two kept units stands the whitespace that
    followed the first of them in ``text``, so soft wraps are kept. ``units`` must not be
    empty.
    """
    starts = [begin for begin, _ in units]
    out = text[block.start : units[0][0]]
    for i, (stop, new) in enumerate(kept):
        out += new
        if i + 1 < len(kept):  # the next unit may begin exactly where this one stops
            out += text[stop : next((b for b in starts if b >= stop), stop)]
    return out + text[units[-1][1] : block.end]


def _join_separator(separators: list[str]) -> str:
    """Whitespace to put where blocks were removed, from the separators around them.

    The most line breaks of any (a blank line before the next paragraph stays), then the
    indentation the next kept block had (a nested list item stays nested).
    """
    widest = max(separators, key=lambda s: s.count("\n"))
    last = separators[-1]
    if "\n" not in widest or "\n" not in last:
        return widest
    return widest[: widest.rfind("\n") + 1] + last[last.rfind("\n") + 1 :]


def rebuild_text(
    text: str,
    blocks: Sequence[MarkdownBlock],
    pieces: Sequence[str | None],
    *,
    keep_tail: bool,
) -> str:
    """``text`` put back together from new texts of its blocks.

    ``blocks`` are :func:`markdown_blocks` of ``text`` (at least one); ``pieces[i]`` replaces
    ``blocks[i]``, ``None`` removes it. Between two kept blocks stands the whitespace that
    separated them, or over removed blocks the widest of those separators (so a blank line
    before the next paragraph stays) with the indentation the next kept block had. The text
    before the first block stays when the first block is kept; the text after the last block
    stays when the last block is kept, or, with ``keep_tail``, whenever any block is. All
    blocks removed: ``""``.
    """
    kept_blocks = [(i, piece) for i, piece in enumerate(pieces) if piece is not None]
    if not kept_blocks:
        return ""
    result = text[: blocks[0].start] if kept_blocks[0][0] == 0 else ""
    previous: int | None = None
    for i, piece in kept_blocks:
        if previous is not None:
            result += _join_separator(
                [text[blocks[j].end : blocks[j + 1].start] for j in range(previous, i)]
            )
        result += piece
        previous = i
    if keep_tail or kept_blocks[-1][0] == len(blocks) - 1:
        result += text[blocks[-1].end :]
    return result
