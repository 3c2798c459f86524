"""Atom feeds (RFC 4287) of living reviews: :func:`watches_feed` (one watch, or every watch
of a user), each update an entry.

Built with lxml (the XML library of the PubMed and JATS readers): the feed's ``id`` is a tag
URI of the watch or owner, its ``updated`` the newest entry's; each entry is one update of a
watch: ``id`` ``urn:deepcritical:watch:<watch id>:update:<n>``, ``title`` its one-line
summary, ``updated`` when it ended, ``content`` (``type="text"``) its "What's new" section
(the summary alone for an update with nothing new), ``category`` its outcome. Failed updates
are left out (their error is for the owner's ``watch show``, not a reader). Every text is
cleaned of control characters XML cannot hold.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime

from lxml import etree

from deepcritical.models import Watch, WatchUpdate, utc_now
from deepcritical.text.control import strip_control_chars

__all__ = ["ATOM_MEDIA_TYPE", "ATOM_NS", "watches_feed"]

ATOM_NS = "http://www.w3.org/2005/Atom"
ATOM_MEDIA_TYPE = "application/atom+xml; charset=utf-8"
MAX_ENTRIES = 100
"""The newest updates a feed lists."""


def _text(value: str) -> str:
    return strip_control_chars(value)


def _add(parent: etree._Element, tag: str, text: str | None = None, **attrs: str) -> None:
    element = etree.SubElement(parent, f"{{{ATOM_NS}}}{tag}", attrib=attrs)
    if text is not None:
        element.text = _text(text)


def _stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")


def watches_feed(
    items: Sequence[tuple[Watch, Sequence[WatchUpdate]]],
    *,
    title: str,
    feed_key: str,
    self_url: str | None = None,
) -> bytes:
    """The Atom feed of ``items`` (each watch with its updates), newest entries first, at
    most :data:`MAX_ENTRIES`; UTF-8 bytes with an XML declaration.

    Args:
        items: the watches and their updates (their owner already checked).
        title: the feed's title.
        feed_key: what the feed is of (a watch id, or an owner's name), hashed into its id
            (an owner's name is not shown).
        self_url: the feed's own URL (its ``rel="self"`` link), when known.
    """
    entries = [
        (watch, update)
        for watch, updates in items
        for update in updates
        if update.outcome != "failed"
    ]
    entries.sort(key=lambda pair: pair[1].finished_at, reverse=True)
    entries = entries[:MAX_ENTRIES]
    feed = etree.fromstring(f'<feed xmlns="{ATOM_NS}"/>')
    digest = hashlib.sha256(feed_key.encode("utf-8")).hexdigest()[:32]
    _add(feed, "id", f"urn:deepcritical:feed:{digest}")
    _add(feed, "title", title)
    newest = entries[0][1].finished_at if entries else utc_now()
    _add(feed, "updated", _stamp(newest))
    author = etree.SubElement(feed, f"{{{ATOM_NS}}}author")
    _add(author, "name", "DeepCritical")
    _add(feed, "generator", "DeepCritical")
    if self_url:
        _add(feed, "link", rel="self", href=self_url, type="application/atom+xml")
    for watch, update in entries:
        entry = etree.SubElement(feed, f"{{{ATOM_NS}}}entry")
        _add(entry, "id", f"urn:deepcritical:watch:{watch.id}:update:{update.number}")
        _add(entry, "title", update.summary or update.outcome)
        _add(entry, "updated", _stamp(update.finished_at))
        _add(entry, "category", term=update.outcome)
        body = [f"Question: {watch.question}", ""]
        if update.change is not None and update.outcome == "new_version":
            body += [
                f"Report version {update.version}.",
                "",
                update.change.heading(),
                "",
                update.change.markdown(),
            ]
        else:
            body.append(update.summary)
        _add(entry, "content", "\n".join(body), type="text")
    return bytes(etree.tostring(feed, xml_declaration=True, encoding="utf-8", pretty_print=True))
