"""What every record goes through on its way into the local corpus: control characters out of
its text, and the size limit.

One 50 MB "abstract" once imported without complaint; a research run that retrieved it took
minutes instead of seconds, peaked at 7 GB of memory and wrote its copies into the run
database. :func:`check_record` bounds a record to ``max_chars`` characters of text
(``Settings.max_record_chars``, default :data:`~deepcritical.config.MAX_RECORD_CHARS`) before
it is embedded or stored.
"""

from __future__ import annotations

from dataclasses import dataclass

from deepcritical.formats.pubmed_xml import AbstractSection, PubmedArticle
from deepcritical.models import Passage
from deepcritical.text.control import strip_control_chars
from deepcritical.text.truncation import cut_at_boundary

__all__ = ["CheckedRecord", "bound_passages", "check_record"]

_LIST_FIELDS = ("authors", "mesh_terms", "keywords", "publication_types")
_OPTIONAL_FIELDS = ("journal", "date", "doi", "pmcid")


@dataclass(frozen=True)
class CheckedRecord:
    """A record ready for the corpus; ``truncated`` is True when the size limit cut it."""

    article: PubmedArticle
    truncated: bool


class _Budget:
    """Characters left to a record, spent field by field in reading order; once a field is
    cut or dropped, nothing after it is kept."""

    def __init__(self, max_chars: int) -> None:
        self.left = max_chars
        self.cut = False

    def text(self, value: str) -> str:
        """``value`` whole, or cut at a sentence or word boundary to what is left."""
        if len(value) <= self.left:
            self.left -= len(value)
            return value
        kept = cut_at_boundary(value, self.left)
        self.cut, self.left = True, 0
        return kept

    def whole(self, value: str) -> str | None:
        """``value`` when it fits whole (names, identifiers are never cut), else ``None``."""
        if len(value) <= self.left:
            self.left -= len(value)
            return value
        self.cut, self.left = True, 0
        return None


def check_record(article: PubmedArticle, max_chars: int) -> CheckedRecord:
    """``article`` cleaned and bounded for the corpus.

    1. Control characters are removed from every text field
       (:func:`~deepcritical.text.control.strip_control_chars`: NUL, escape sequences...;
       tabs and line breaks kept).
    2. The record keeps at most ``max_chars`` characters of text, counted over the title,
       the abstract sections (labels and texts) and then the metadata (authors, MeSH terms,
       keywords, publication types, journal, date, DOI, PMCID), in that order. The title and
       the section where the limit falls are cut at a sentence or word boundary
       (:func:`~deepcritical.text.truncation.cut_at_boundary`; a verbatim prefix, nothing
       added); a label or metadata entry is kept whole or dropped; once something is cut or
       dropped, every field after it is dropped. The PMID and the year are always kept.

    Returns the record (the same object when nothing changed) and whether step 2 cut it.
    Never raises for a valid :class:`PubmedArticle`.
    """
    strings = _strings(article)
    if sum(len(s) for s in strings) <= max_chars and all(_is_clean(s) for s in strings):
        return CheckedRecord(article, truncated=False)
    budget = _Budget(max_chars)
    title = budget.text(strip_control_chars(article.title))
    sections: list[AbstractSection] = []
    for section in article.abstract_sections:
        label = strip_control_chars(section.label) if section.label is not None else None
        kept_label = budget.whole(label) if label else label
        text = budget.text(strip_control_chars(section.text))
        if text:
            sections.append(AbstractSection(label=kept_label, text=text))
    update: dict[str, object] = {"title": title, "abstract_sections": sections}
    for name in _LIST_FIELDS:
        values = (budget.whole(strip_control_chars(v)) for v in getattr(article, name))
        update[name] = [v for v in values if v]
    for name in _OPTIONAL_FIELDS:
        value = getattr(article, name)
        if value:
            update[name] = budget.whole(strip_control_chars(value)) or None
    return CheckedRecord(article.model_copy(update=update), truncated=budget.cut)


def _strings(article: PubmedArticle) -> list[str]:
    """Every text field of ``article``, in the order :func:`check_record` counts them."""
    values = [article.title]
    for section in article.abstract_sections:
        values.extend(v for v in (section.label, section.text) if v)
    for name in _LIST_FIELDS:
        values.extend(getattr(article, name))
    values.extend(v for v in (getattr(article, n) for n in _OPTIONAL_FIELDS) if v)
    return values


def _is_clean(value: str) -> bool:
    return value.isprintable() or strip_control_chars(value) == value


def bound_passages(passages: list[Passage], max_chars: int) -> tuple[list[Passage], bool]:
    """The passages of a full text that fit ``max_chars`` characters of text together, in
    document order (the first that does not fit and every one after it are dropped, so the
    kept ones keep their offsets), and whether any was dropped. A full text is bounded apart
    from its record (title and abstract, :func:`check_record`), by the same limit.
    XML text holds no control characters (the JATS parser refuses them), so none are
    stripped here."""
    kept: list[Passage] = []
    left = max_chars
    for passage in passages:
        if len(passage.text) > left:
            return kept, True
        kept.append(passage)
        left -= len(passage.text)
    return kept, False
