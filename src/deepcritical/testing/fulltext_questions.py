"""Questions answered only in the body of the six PMC open-access full texts (issue 15).

Data: ``src/deepcritical/testing/fulltext_questions.json``, 24 questions, 4 for each article of
``../shared/fixtures/fulltext/pmc_oa_jats`` (:data:`FULLTEXT_DIR`; see its ``SOURCES.md``).
Each question asks for a result or methods detail (a number, dose, sample size, method,
finding) that one body passage states (a paragraph, or a table or figure caption) and the
article's abstract does not. ``answer_phrase`` is a short verbatim substring of that passage's
text as :func:`deepcritical.formats.jats.read_jats` returns it, found in no other passage and
not in the abstract; ``section`` is that passage's section path. A run reading only abstracts
cannot answer these questions; one that reads the full text can cite the passage
(:func:`answer_passage`). ``tests/unit/test_fulltext_questions.py`` checks the set against the
articles.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field, TypeAdapter

from deepcritical.formats.jats import JatsArticle
from deepcritical.models import Passage
from deepcritical.models._markers import PMCID
from deepcritical.testing.shared import SHARED_DIR

DEFAULT_PATH = Path(__file__).resolve().with_suffix(".json")
FULLTEXT_DIR = SHARED_DIR / "fixtures" / "fulltext" / "pmc_oa_jats"


class FulltextQuestion(BaseModel):
    """One question, the article that answers it and where in its body the answer lies."""

    pmcid: str = Field(pattern=rf"^{PMCID}$")
    question: str = Field(min_length=1)
    answer_phrase: str = Field(min_length=1)
    """Verbatim substring of the answering passage's text (4 to 15 words)."""
    section: list[str]
    """The answering passage's section path, as the JATS reader gives it."""


_QUESTIONS = TypeAdapter(list[FulltextQuestion])


def load_questions(path: Path = DEFAULT_PATH) -> list[FulltextQuestion]:
    """The questions of the JSON list at ``path`` (by default the benchmark's own file)."""
    return _QUESTIONS.validate_json(path.read_bytes())


def answer_passage(article: JatsArticle, question: FulltextQuestion) -> Passage:
    """The one passage of ``article`` whose text contains the question's answer phrase.

    Raises :class:`ValueError` when no passage or more than one contains it.
    """
    hits = [p for p in article.passages() if question.answer_phrase in p.text]
    if len(hits) != 1:
        raise ValueError(
            f"{len(hits)} passages of {article.pmcid} contain {question.answer_phrase!r}"
            " (expected exactly one)"
        )
    return hits[0]
