"""The one set of hardened lxml settings every XML reader of :mod:`deepcritical.formats` uses.

XML from a search API or a file a user imports is untrusted: no DTD is loaded, no entity is
expanded (XXE), nothing is fetched over the network. Only ``huge_tree`` differs between
readers: PubMed baseline files are large, a JATS article is not (lxml's default limits then
refuse an oversized text node or a deep tree).
"""

from __future__ import annotations

from typing import IO, Any

from lxml import etree

__all__ = ["safe_iterparse", "safe_parser"]


def safe_parser(*, huge_tree: bool) -> etree.XMLParser:
    """A strict (``recover=False``) parser for a document held in memory: no entity
    expansion, no network access, no DTD loading."""
    return etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, huge_tree=huge_tree, recover=False
    )


def safe_iterparse(stream: IO[bytes], *, huge_tree: bool, **options: Any) -> etree.iterparse:
    """:func:`lxml.etree.iterparse` over ``stream`` with the settings of :func:`safe_parser`
    (no entities, network or DTD); ``options`` are iterparse's own (``events``, ``tag``)."""
    return etree.iterparse(
        stream,
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        huge_tree=huge_tree,
        **options,
    )
