"""The one English stop-word list (:data:`STOPWORDS`): function words that carry no topic.

153 lower-case words: articles, pronouns, auxiliaries and modals, prepositions, conjunctions
and a few connectives (``whereas``, ``therefore``, ``versus``/``vs``, ``etc``). Every part of
DeepCritical that leaves stop words out imports this list; none keeps its own. What reads it,
and what a change to it changes:

* :mod:`deepcritical.text.terms`: a stop word breaks a question into candidate key terms and
  never counts as a content word (:func:`~deepcritical.text.terms.content_stems`), so it
  shapes the planner's terms, the queries built from them, screening and the judge's coverage.
* :mod:`deepcritical.corpus.lexical`: the words of a user's query that are dropped before the
  FTS5 ``MATCH`` of the local corpus. Query side only: the FTS5 index (``porter unicode61``)
  indexes every word, so the list never enters a stored corpus and a change to it re-ranks
  searches without rebuilding an index (``LEXICAL_VERSION`` is unaffected).
* :mod:`deepcritical.evidence.passages`: the words bm25s leaves out of a full text's passages
  and the query when it ranks the passages of one paper (an index built in memory per call,
  never stored).
* :mod:`deepcritical.formats.record_keys`: the first title word of a citation key is the
  first that is not a stop word (``smith2020metformin`` for "What does metformin ...?"), so a
  change to the list can change the keys of exported references.

Before issue 31 the corpus's queries and the passages left out bm25s's 33 English stop words
and citation keys 22 words of their own, all of them in this list. With this list the
corpus's retrieval on the PubMedQA dev questions (``benchmarks.retrieval``) and the ranking
of the full-text benchmark's answer passages kept or improved their figures
(docs/benchmarks.md); a change to the list should be measured the same way.
"""

from __future__ import annotations

__all__ = ["STOPWORDS"]

_STOPWORD_TEXT = """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing done down during each either else
    ever few for from further had has have having he her here hers him his how however i if in
    into is it its itself just may me might more most must my neither no nor not now of off on
    once only or other ought our ours out over own per same shall she should so some such than
    that the their theirs them then there these they this those through to too under until up
    upon us very via was we were what when where whether which while who whom whose why will
    with within without would yet you your versus vs etc also among amongst across toward
    towards whereas thus hence therefore unless rather
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
"""English function words, lower case (see the module docstring for who reads them)."""
