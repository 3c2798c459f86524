"""PubMed query syntax: building field-tagged queries, recognising them, and stripping them to
plain keywords for the sources that do not understand them.

PubMed understands field tags (``metformin[tiab]``, ``"Alzheimer Disease"[MeSH Terms]``),
boolean operators and date ranges (``("2015"[dp] : "3000"[dp])``). Sent to OpenAlex, the web
or the local corpus, those tags are noise (or an error), so :func:`query_for_source` gives
PubMed the query as written (plus the run's date filter) and every other source the query
stripped to its words (:func:`plain_query`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from deepcritical.models import ResearchPlan

__all__ = [
    "PUBMED_SYNTAX_SOURCES",
    "date_filter",
    "is_pubmed_syntax",
    "mesh_query",
    "plain_query",
    "query_for_source",
    "source_queries",
]

PUBMED_SYNTAX_SOURCES = frozenset({"pubmed"})
"""Sources that receive PubMed-syntax queries as written."""

_FIELD_TAG = re.compile(r"\[(?:[A-Za-z][A-Za-z /:-]{0,30})\]")
_DATE = r'"?\d{4}(?:/\d{2}){0,2}"?\s*\[\w+\]'
_DATE_RANGE = re.compile(rf"\(?\s*{_DATE}\s*:\s*{_DATE}\s*\)?")
_OPERATOR = re.compile(r"\b(?:AND|OR|NOT)\b")
_PUNCT = re.compile(r'[()"*]')


def is_pubmed_syntax(query: str) -> bool:
    """True when ``query`` uses PubMed field tags (``[tiab]``, ``[MeSH Terms]``, ``[dp]``)."""
    return _FIELD_TAG.search(query) is not None


def plain_query(query: str) -> str:
    """``query`` as plain keywords: date ranges, field tags, boolean operators, parentheses,
    quotes and truncation stars removed, repeated words dropped, white space collapsed. A
    query without field tags comes back unchanged but for white space (plain boolean queries
    such as ``metformin AND dementia`` are understood by most sources)."""
    if not is_pubmed_syntax(query):
        return " ".join(query.split())
    text = _DATE_RANGE.sub(" ", query)
    text = _FIELD_TAG.sub(" ", text)
    text = _OPERATOR.sub(" ", text)
    text = _PUNCT.sub(" ", text)
    words: dict[str, str] = {}
    for word in text.split():
        words.setdefault(word.lower(), word)
    return " ".join(words.values())


def date_filter(year_from: int) -> str:
    """PubMed's publication-date range from ``year_from`` on: ``("2015"[dp] : "3000"[dp])``."""
    return f'("{year_from}"[dp] : "3000"[dp])'


def mesh_query(mesh_terms: Sequence[str], free_terms: Sequence[str] = ()) -> str:
    """A PubMed query requiring every concept: each MeSH descriptor as
    ``("X"[MeSH Terms] OR X[tiab])``, each free term as ``"y"[tiab]``, joined by AND
    (``""`` when both lists are empty)."""
    parts = [f'("{m}"[MeSH Terms] OR "{m}"[tiab])' for m in mesh_terms if m.strip()]
    parts += [f'"{t}"[tiab]' for t in free_terms if t.strip()]
    return " AND ".join(parts)


def query_for_source(query: str, source: str, year_from: int | None = None) -> str:
    """What ``source`` is sent for ``query``: PubMed gets it as written, with
    :func:`date_filter` ANDed when ``year_from`` is set; every other source gets
    :func:`plain_query`."""
    if source in PUBMED_SYNTAX_SOURCES:
        if year_from is None or "[dp]" in query:
            return query
        return f"({query}) AND {date_filter(year_from)}"
    return plain_query(query)


def source_queries(
    plan: ResearchPlan, sources: Sequence[str], year_from: int | None = None
) -> dict[str, list[str]]:
    """The plan's round-1 queries as each of ``sources`` receives them: source name -> its
    queries, in ``sources`` order. A source named in ``plan.source_queries`` gets those,
    verbatim; every other source the plan's ``queries`` translated for it
    (:func:`query_for_source`, with ``year_from``, ``Settings.pubmed_date_from``), blanks
    and repeats dropped. This is what the plan review shows and lets the user edit (the
    edited lists go back into ``plan.source_queries``). The plan's ``filters`` are not
    written into the queries here: each source adds them to its own request
    (:mod:`deepcritical.sources.filter_syntax`)."""
    out: dict[str, list[str]] = {}
    for source in dict.fromkeys(sources):
        if source in plan.source_queries:
            out[source] = list(plan.source_queries[source])
            continue
        sent = (query_for_source(q, source, year_from) for q in plan.queries)
        out[source] = list(dict.fromkeys(q for q in sent if q.strip()))
    return out
