"""The full-text question set (deepcritical.testing.fulltext_questions) checked against the six PMC
articles of ../shared/fixtures/fulltext/pmc_oa_jats: each answer lies in exactly one body
passage of its article, in the section it names, and not in the abstract."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from deepcritical.formats.jats import JatsArticle, read_jats
from deepcritical.testing.fulltext_questions import (
    FULLTEXT_DIR,
    FulltextQuestion,
    answer_passage,
    load_questions,
)
from tests.conftest import JATS_FIXTURES

QUESTIONS = load_questions()
PER_ARTICLE = 4
ARTICLES = 6


@pytest.fixture(scope="module")
def articles(jats_dir: Path) -> dict[str, JatsArticle]:
    """The shared articles by PMCID (read from each .nxml), or skip when they are absent."""
    read = [read_jats(path) for path in sorted(jats_dir.glob("*.nxml"))]
    return {article.pmcid: article for article in read if article.pmcid}


def test_the_benchmark_reads_the_articles_the_tests_read() -> None:
    assert FULLTEXT_DIR == JATS_FIXTURES


def test_four_distinct_questions_for_each_of_six_articles() -> None:
    assert len(QUESTIONS) == PER_ARTICLE * ARTICLES
    assert set(Counter(q.pmcid for q in QUESTIONS).values()) == {PER_ARTICLE}
    assert len({q.pmcid for q in QUESTIONS}) == ARTICLES
    assert len({q.question.casefold() for q in QUESTIONS}) == len(QUESTIONS)


@pytest.mark.parametrize("question", QUESTIONS, ids=lambda q: q.answer_phrase[:40])
def test_answer_phrase_is_short(question: FulltextQuestion) -> None:
    assert 4 <= len(question.answer_phrase.split()) <= 15


def test_every_question_has_its_article(articles: dict[str, JatsArticle]) -> None:
    assert len(articles) == ARTICLES
    assert {q.pmcid for q in QUESTIONS} == set(articles)


@pytest.mark.parametrize("question", QUESTIONS, ids=lambda q: q.answer_phrase[:40])
def test_answer_lies_in_one_body_passage_only(
    question: FulltextQuestion, articles: dict[str, JatsArticle]
) -> None:
    article = articles[question.pmcid]
    passage = answer_passage(article, question)
    assert passage.section == question.section
    assert question.answer_phrase.casefold() not in article.abstract.casefold()


def test_answer_passage_refuses_a_phrase_in_no_passage_or_several(
    articles: dict[str, JatsArticle],
) -> None:
    article = articles["PMC3166277"]
    absent = FulltextQuestion(
        pmcid="PMC3166277", question="?", answer_phrase="not in this article", section=[]
    )
    everywhere = absent.model_copy(update={"answer_phrase": "the"})
    for question in (absent, everywhere):
        with pytest.raises(ValueError, match="expected exactly one"):
            answer_passage(article, question)
