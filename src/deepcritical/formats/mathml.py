"""MathML reduced to plain text, shared by the PubMed XML and JATS readers.

Both formats embed MathML (``<mml:math>`` in JATS, ``<math>`` in PubMed abstracts). A formula
becomes the concatenation of its token elements, the spelling an author would type without
markup: ``<msub><mi>O</mi><mn>2</mn></msub>`` -> ``O2``.
"""

from __future__ import annotations

import re

from lxml import etree

_Element = etree._Element

# MathML over-script accents that only decorate their base (V with a dot = rate of V): the
# plain-text spelling drops them ("VO2max"), as authors do when they write without markup.
_DROPPED_ACCENTS = frozenset({".", "\u02d9", "\u0307", "\u00b7"})
_MATHML_TOKENS = frozenset({"mi", "mn", "mo", "ms", "mtext"})
_MATHML_SKIPPED = frozenset({"annotation", "annotation-xml"})


def local_name(el: _Element) -> str:
    """Tag name without namespace (``mml:math`` -> ``math``); ``""`` for comments, processing
    instructions and entity references."""
    tag = el.tag
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1]


def _token_text(el: _Element) -> str:
    return "".join(t for t in el.itertext() if isinstance(t, str))


def math_text(el: _Element) -> str:
    """MathML flattened to text: token elements (``mi``, ``mn``, ``mo``, ``mtext``) in document
    order, stripped of the indentation around them, concatenated without separators
    (``<msub><mi>O</mi><mn>2</mn></msub>`` -> ``O2``). Dot accents over a base (``mover`` with
    ``.``) are dropped; ``mtext`` keeps its inner spaces; annotations are skipped.

    Args:
        el: a ``math`` element (any namespace) or one of its descendants.

    Returns:
        The text, ``""`` for an element with no tokens. Raises nothing.
    """
    name = local_name(el)
    if not name or name in _MATHML_SKIPPED:
        return ""
    if name in _MATHML_TOKENS:
        raw = _token_text(el)
        if name == "mtext":
            return re.sub(r"\s+", " ", raw)
        return raw.strip()
    children = [c for c in el if local_name(c)]
    if name == "mover" and len(children) == 2:
        accent = _token_text(children[1]).strip()
        if accent in _DROPPED_ACCENTS:
            return math_text(children[0])
    if name == "semantics" and children:
        return math_text(children[0])
    return "".join(math_text(c) for c in children)
