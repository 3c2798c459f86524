"""The one stop-word list (:mod:`deepcritical.text.stopwords`, issue 31): every consumer reads
that list, no module keeps or imports another, and what the list leaves out shows in each
consumer (key terms, the corpus's queries, a full text's passages, citation keys)."""

from __future__ import annotations

import re
from pathlib import Path

from deepcritical.corpus import lexical
from deepcritical.evidence import passages
from deepcritical.formats import record_keys
from deepcritical.formats.citation_records import citation_keys
from deepcritical.models import Citation
from deepcritical.text import terms
from deepcritical.text.stopwords import STOPWORDS

SRC = Path(__file__).resolve().parents[2] / "src" / "deepcritical"
# bm25s's own lists, by name or by language, and a list written out under a stop-word name
OTHER_LISTS = re.compile(
    r"STOPWORDS_EN|stopwords=\"(?:en|english)\"|STOP_?WORD\w*\s*=\s*(?:frozenset|set|[\[{(\"])"
)


def test_every_consumer_reads_the_one_list() -> None:
    for module in (terms, lexical, record_keys):
        assert vars(module)["STOPWORDS"] is STOPWORDS, module.__name__
    assert set(passages._STOPWORDS) == STOPWORDS


def test_no_module_keeps_a_stop_word_list_of_its_own() -> None:
    offenders = {
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if OTHER_LISTS.search(path.read_text(encoding="utf-8"))
    }
    # the list itself, and the test double that plays Europe PMC's own search (a service's
    # matching, not DeepCritical's: its words are the service's, tuned to the stub's fixtures)
    assert offenders == {"text/stopwords.py", "testing/api_stub.py"}


def test_the_list_is_lower_case_function_words() -> None:
    assert all(word == word.lower() and word.isalpha() for word in STOPWORDS)
    assert {"the", "of", "does", "what", "whether", "versus"} <= STOPWORDS
    assert not {"metformin", "cancer", "risk", "effect"} & STOPWORDS


def test_each_consumer_leaves_the_stop_words_out() -> None:
    question = "What does metformin do to the risk of cancer?"
    assert terms.extract_key_terms(question) == ["metformin", "cancer"]
    assert lexical.query_words(question) == ["metformin", "risk", "cancer"]
    assert lexical.fts_query("what were the effects") == '"effects"'
    titled = Citation(source="pubmed", id="1", authors=["Smith J"], year=2020, title=question)
    assert citation_keys([titled]) == ["smith2020metformin"]
    texts = ["what does it do", "metformin and the risk of cancer"]
    assert passages._bm25_ranking(texts, "what does metformin do") == [1]
