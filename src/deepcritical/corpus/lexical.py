"""BM25 keyword index of the corpus: an SQLite FTS5 table in the corpus database itself.

The index grows with each import batch and commits in the same transaction as the documents
it indexes (no rebuild, no second store to keep in step). Layout:

- ``lexical_rows(rowid INTEGER PRIMARY KEY, id TEXT UNIQUE)``: one row per indexed text, ``id``
  a PMID (a document's title + abstract) or ``"<pmid>#<n>"`` (a full text's passage).
- ``lexical``: a contentless FTS5 table (``content=''``: the text is stored once, in
  ``documents`` / ``passages``) whose rowid is ``lexical_rows.rowid``; tokenizer ``porter
  unicode61`` (Unicode word characters, case-folded, diacritics removed, Porter stemmer).
  A row is removed with FTS5's ``'delete'`` command given the text it was indexed with.

Ranking is FTS5's ``bm25()`` (Okapi BM25, k1 = 1.2, b = 0.75). A query is reduced to its
words (``\\b\\w\\w+\\b``, lower-cased, as bm25s tokenised it before), the stop words of
:mod:`deepcritical.text.stopwords` removed (on the query side only: the index holds every
word, so the list never enters a stored corpus), each word quoted as an FTS5 string (so
``"``, ``AND``, ``OR``, ``NOT``, ``NEAR``, ``*``, ``^``, ``:``, parentheses in a user's query
are plain words or dropped, never syntax) and the words joined by ``OR``: a document matching
any word is ranked.

FTS5 scores every row that matches (about 3-5 µs a row here), so the cost of a query grows
with the rows its words occur in. When they occur in more than :data:`POSTINGS_BUDGET` rows
together, the most frequent words (the lowest IDF: "patients", "study") are left out of the
query, rarest first kept, until the rest fit: exact BM25 on a corpus of up to ~10^4
abstracts, a bounded query time beyond. When every word alone occurs in more rows than that
(common on 10^7 abstracts: "hippocampal", "atrophy"), the first word of the query is ranked
alone over its newest :data:`POSTINGS_BUDGET` rows (the highest rowids: the records imported
last), since FTS5 scores every row it matches and an ``AND`` of such words costs more still
(it merges their whole posting lists): BM25 is then approximate, and the dense index carries
the rest of the question. Each word's rows are counted by FTS5 itself, up to the budget and
no further (``SELECT count(*) FROM (... MATCH ... LIMIT budget + 1)``), so the counting, too,
costs the same on 10^4 and 10^7 documents (an ``fts5vocab`` table counts a word by reading
its whole posting list: 170 ms a question at 10^7).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from typing import NamedTuple

from deepcritical.text.stopwords import STOPWORDS

LEXICAL_VERSION = "fts5-porter-unicode61-v1"
"""Names the lexical index; a corpus whose ``meta.lexical`` differs has it (re)built once."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS lexical_rows (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE);
CREATE VIRTUAL TABLE IF NOT EXISTS lexical USING fts5(
    text, content='', tokenize='porter unicode61 remove_diacritics 2'
);
"""

POSTINGS_BUDGET = 40_000
"""Rows a query's words may occur in together before its most frequent words are left out
(about 50 ms of FTS5 scoring on a loaded 2-core machine)."""

_WORD = re.compile(r"\b\w\w+\b")
_MAX_TERMS = 64  # distinct query words kept (a pasted abstract as a query stays fast)


def query_words(query: str) -> list[str]:
    """The distinct non-stopword words of a user's query, lower-cased, in order (at most 64)."""
    words = [w for w in _WORD.findall(query.lower()) if w not in STOPWORDS]
    return list(dict.fromkeys(words))[:_MAX_TERMS]


def fts_query(query: str | list[str]) -> str | None:
    """The FTS5 MATCH expression for a user's query (or its :func:`query_words`): the words,
    each quoted, joined by ``OR`` (``"aspirin" OR "adenoma"``); ``None`` when no word is left.

    >>> fts_query('NEAR("a" AND b*) OR (aspirin)')
    '"near" OR "aspirin"'
    """
    words = query_words(query) if isinstance(query, str) else query
    if not words:
        return None
    return " OR ".join(_phrase(w) for w in words)


def _phrase(word: str) -> str:
    """``word`` as an FTS5 string (a ``\\w+`` word holds no quote to escape)."""
    return f'"{word}"'


def word_rows(conn: sqlite3.Connection, expression: str, cap: int) -> int:
    """Rows matching the FTS5 ``expression``, counted up to ``cap + 1`` (a count of ``cap +
    1`` means "more than ``cap``"); costs at most ``cap`` rows of the posting lists read."""
    (n,) = conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM lexical WHERE lexical MATCH ? LIMIT ?)",
        (expression, cap + 1),
    ).fetchone()
    return int(n)


class LexicalQuery(NamedTuple):
    """An FTS5 MATCH expression and how many of its rows to score: ``None``: every row
    (exact BM25 over its words); else only the newest ``scan`` rows (highest rowid)."""

    expression: str
    scan: int | None


def selective_query(conn: sqlite3.Connection, words: list[str], budget: int) -> LexicalQuery:
    """The query for ``words`` (non-empty) that scores at most ``budget`` rows (see the module
    docs): all the words joined by ``OR`` when their rows fit; else the rarest that fit
    together; else the first word alone, its newest ``budget`` rows. The order of ``words``
    is kept within the expression.

    Raises:
        ValueError: ``words`` is empty.
    """
    counts = [word_rows(conn, _phrase(w), budget) for w in words]
    kept: set[int] = set()
    total = 0
    for i in sorted(range(len(words)), key=lambda i: counts[i]):
        if total + counts[i] > budget:
            break
        kept.add(i)
        total += counts[i]
    chosen = [w for i, w in enumerate(words) if i in kept]
    expression = fts_query(chosen or words[:1])
    if expression is None:
        raise ValueError("no query words")
    return LexicalQuery(expression, None if chosen else budget)


def add_rows(conn: sqlite3.Connection, rows: Iterable[tuple[str, str]]) -> None:
    """Index ``(id, text)`` pairs (ids not yet indexed), inside the caller's transaction."""
    for index_id, text in rows:
        cursor = conn.execute("INSERT INTO lexical_rows(id) VALUES (?)", (index_id,))
        conn.execute("INSERT INTO lexical(rowid, text) VALUES (?, ?)", (cursor.lastrowid, text))


def remove_rows(conn: sqlite3.Connection, rows: Iterable[tuple[str, str]]) -> None:
    """Unindex ``(id, text)`` pairs, ``text`` being exactly the text the id was indexed with;
    ids not indexed are ignored. Inside the caller's transaction."""
    for index_id, text in rows:
        found = conn.execute("SELECT rowid FROM lexical_rows WHERE id = ?", (index_id,)).fetchone()
        if found is None:
            continue
        conn.execute(
            "INSERT INTO lexical(lexical, rowid, text) VALUES ('delete', ?, ?)", (found[0], text)
        )
        conn.execute("DELETE FROM lexical_rows WHERE rowid = ?", (found[0],))


def rebuild(conn: sqlite3.Connection, rows: Iterable[tuple[str, str]]) -> None:
    """Empty the index and index ``rows`` (``(id, text)``), inside the caller's transaction."""
    conn.execute("INSERT INTO lexical(lexical) VALUES ('delete-all')")
    conn.execute("DELETE FROM lexical_rows")
    add_rows(conn, rows)


def search(
    conn: sqlite3.Connection, query: str, k: int, *, budget: int = POSTINGS_BUDGET
) -> list[tuple[str, float]]:
    """Up to ``k`` ``(id, BM25 score)`` pairs for ``query``, best first (score > 0: FTS5's
    ``bm25()`` negated); only rows sharing at least one (stemmed, non-stopword) word with it,
    its most frequent words left out past ``budget`` rows, or its first word's newest
    ``budget`` rows ranked (module docs). Ties keep index order."""
    words = query_words(query)
    if k <= 0 or not words:
        return []
    selected = selective_query(conn, words, budget)
    matched = "SELECT rowid, bm25(lexical) AS score FROM lexical WHERE lexical MATCH ?"
    if selected.scan is None:
        ranked = f"{matched} ORDER BY score, rowid LIMIT ?"
        parameters: tuple[str | int, ...] = (selected.expression, k)
    else:  # FTS5 reads a posting list from either end: the newest rows first
        newest = f"{matched} ORDER BY rowid DESC LIMIT ?"
        ranked = f"SELECT * FROM ({newest}) ORDER BY score, rowid LIMIT ?"
        parameters = (selected.expression, selected.scan, k)
    rows = conn.execute(
        f"SELECT r.id, -m.score FROM ({ranked}) AS m "  # no user text in the SQL
        "JOIN lexical_rows AS r ON r.rowid = m.rowid ORDER BY m.score, m.rowid",
        parameters,
    )
    return [(str(i), float(s)) for i, s in rows]


def indexed_count(conn: sqlite3.Connection) -> int:
    """Number of indexed rows (documents plus passages)."""
    return int(conn.execute("SELECT COUNT(*) FROM lexical_rows").fetchone()[0])
