"""The text of a corpus record, and of a full text's passage, that search indexes (both BM25
and the dense embeddings)."""

from __future__ import annotations

from deepcritical.formats.pubmed_xml import PubmedArticle
from deepcritical.models import Passage


def index_text(article: PubmedArticle) -> str:
    """Title, then the abstract sections' texts, joined by single spaces.

    Section labels (``OBJECTIVE``, ``RESULTS``...) are left out: they carry no topic and would
    spend the embedding model's 256 word-piece window. ``""`` when the record has neither a
    title nor an abstract.
    """
    parts = [article.title.strip(), *(s.text.strip() for s in article.abstract_sections)]
    return " ".join(p for p in parts if p)


def passage_index_text(passage: Passage) -> str:
    """A full-text passage as search indexes it: its section path, its label (``Table 2``) and
    its text, joined by single spaces (``"Results Adverse events Nausea was ..."``)."""
    parts = [*passage.section, passage.label, passage.text]
    return " ".join(p.strip() for p in parts if p.strip())
