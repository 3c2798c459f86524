"""The local corpus as a search source (``--sources local``), offline.

Wraps a :class:`~deepcritical.corpus.index.LocalCorpus` (records imported with
``deepcritical corpus add FILE``) behind the :class:`~deepcritical.sources.base.SearchSource`
protocol. The corpus search is synchronous (SQLite, BM25, Chroma, the embedding model) and runs
in a worker thread so the event loop keeps serving other sources.
"""

from __future__ import annotations

import asyncio

from deepcritical.config import MAX_EVIDENCE_CHARS
from deepcritical.corpus.hybrid import ScoredDocument
from deepcritical.corpus.index import LocalCorpus
from deepcritical.corpus.records import check_record
from deepcritical.evidence.titles import with_derived_title
from deepcritical.formats.pubmed_xml import article_to_evidence
from deepcritical.models import Evidence, SearchFilters, SourceName
from deepcritical.sources.base import SourceError

FILTER_OVERFETCH = 5
"""With search filters, the corpus is asked for this many times ``limit`` documents, so that
those left out by the filters still leave ``limit``."""


def hits_to_evidence(
    hits: list[ScoredDocument], query: str, max_chars: int = MAX_EVIDENCE_CHARS
) -> list[Evidence]:
    """Evidence items in hit order; ``relevance`` = RRF score / best RRF score (best = 1.0).

    Each record is first cleaned and bounded to ``max_chars`` characters of text
    (:func:`~deepcritical.corpus.records.check_record`; ``Settings.max_evidence_chars``: a
    corpus keeps records of up to ``max_record_chars``, and one imported before the import
    had a size limit may hold more). A record without a title
    (every PubMedQA record) gets the title derived from its abstract
    (``citation.derived_title``, see :mod:`deepcritical.evidence.titles`). A full-text
    article (JATS) keeps its passages (``Evidence.passages``; ``full_text`` is then True).
    """
    if not hits:
        return []
    best = max(h.score for h in hits)
    return [
        with_derived_title(
            article_to_evidence(
                check_record(h.article, max_chars).article,
                source=SourceName.LOCAL.value,
                query=query,
                relevance=min(1.0, max(0.0, h.score / best)) if best > 0 else 0.0,
            ).model_copy(update={"passages": list(h.passages)})
        )
        for h in hits
    ]


class LocalCorpusSource:
    """Hybrid (BM25 + dense, RRF) search over a local corpus, returning PubMed evidence.

    Citations have ``source="local"``, ``id`` = ``pmid`` = the PMID and the PubMed URL.
    Records hold at most ``max_chars`` characters of text (see :func:`hits_to_evidence`).
    Queries to one source run one at a time (the corpus serialises them).
    """

    name = SourceName.LOCAL.value

    def __init__(self, corpus: LocalCorpus, max_chars: int = MAX_EVIDENCE_CHARS) -> None:
        self.corpus = corpus
        self.max_chars = max_chars

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        """Up to ``limit`` evidence items for ``query``, best first; ``[]`` for an empty query.

        ``filters``: the corpus is searched for ``5 * limit`` documents, and those outside
        the publication range by their own date (unknown dates kept) or written into the
        corpus before ``added_since`` (``documents.added_at``) are left out, as an API's
        filter would; designs are screened by the run after retrieval, and languages are not
        applied (corpus records rarely state one).

        Raises:
            SourceError: the corpus is empty or cannot be searched (database, index or
                embedding model failure); the message says why.
        """
        if limit <= 0 or not query.strip():
            return []
        filtered = filters is not None and not filters.is_empty()
        try:
            hits = await asyncio.to_thread(
                self.corpus.search, query, limit * FILTER_OVERFETCH if filtered else limit
            )
            if filters is not None and filters.added_since is not None:
                added = await asyncio.to_thread(
                    self.corpus.added_times, [h.article.pmid for h in hits]
                )
                since = filters.added_since
                hits = [h for h in hits if (t := added.get(h.article.pmid)) and t >= since]
        except Exception as exc:  # the protocol allows only SourceError out of a source
            raise SourceError(self.name, str(exc) or type(exc).__name__) from exc
        items = hits_to_evidence(hits, query, self.max_chars)
        if filters is not None and filtered:
            items = [e for e in items if filters.excludes(e.citation) is None][:limit]
        return items
