"""Retrieval within one full text: the writer's sentences, grounding and the supporting
quotes read the passages that answer the query, each with its section."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from deepcritical.evidence.keysentences import (
    mentioning_terms,
    passage_sentences,
    rank_sentences,
    top_per_item,
)
from deepcritical.evidence.passages import PASSAGES_PER_QUERY, passage_vectors, rank_passages
from deepcritical.models import (
    Citation,
    Evidence,
    GroundedClaim,
    Passage,
    ResearchReport,
    SupportingQuote,
)
from deepcritical.models._markdown import grounding_appendix
from deepcritical.report.claims import Unit, check_units, claim_text
from deepcritical.testing.embedders import HashingEmbedder

_TEXTS = [
    (["Introduction"], "Heart failure is common and costly in older adults worldwide today."),
    (["Methods"], "Patients received 40 mg of furosemide twice daily for twelve weeks."),
    (["Results", "Adverse events"], "Hypokalaemia occurred in 7 of 120 patients given the drug."),
    (["Results", "Adverse events"], "No patient stopped treatment because of renal impairment."),
    (["Discussion"], "Our trial was small, and longer follow-up is needed in this group."),
]


def _full_text(eid: str = "E1") -> Evidence:
    passages: list[Passage] = []
    offset = 0
    counts: dict[tuple[str, ...], int] = {}
    for section, text in _TEXTS:
        index = counts.get(tuple(section), 0)
        counts[tuple(section)] = index + 1
        passages.append(
            Passage(section=section, index=index, start=offset, end=offset + len(text), text=text)
        )
        offset += len(text) + 2
    return Evidence(
        id=eid,
        content="Diuretics in heart failure: a randomised trial of furosemide dosing.",
        citation=Citation(source="pmc", id="PMC1", title="Furosemide in heart failure"),
        passages=passages,
    )


def _vector(embedder: HashingEmbedder, text: str) -> NDArray[np.float32]:
    vector: NDArray[np.float32] = embedder.embed([text])[0]
    return vector


def test_rank_passages_finds_the_answering_paragraph_and_names_its_section() -> None:
    embedder = HashingEmbedder()
    item = _full_text()
    query = "How many patients had hypokalaemia on the drug?"
    ranked = rank_passages(item, query, _vector(embedder, query), embedder)
    assert ranked[0].position == 2
    assert ranked[0].passage.locator() == "Results › Adverse events, paragraph 1"
    assert len(ranked) == PASSAGES_PER_QUERY
    assert [r.score for r in ranked] == sorted((r.score for r in ranked), reverse=True)


def test_rank_passages_is_empty_for_an_abstract_and_for_k_zero() -> None:
    embedder = HashingEmbedder()
    abstract = _full_text().model_copy(update={"passages": []})
    assert rank_passages(abstract, "drug", _vector(embedder, "drug"), embedder) == []
    assert rank_passages(_full_text(), "drug", _vector(embedder, "drug"), embedder, k=0) == []


class _CountingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts = 0

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.texts += len(texts)
        return super().embed(texts)


def test_passage_vectors_are_computed_once_per_text() -> None:
    embedder = _CountingEmbedder()
    item = _full_text()
    first = passage_vectors(item, embedder)
    assert first.shape == (len(_TEXTS), embedder.dimension)
    assert embedder.texts == len(_TEXTS)
    again = passage_vectors(item.model_copy(update={"id": "E9"}), embedder)
    assert embedder.texts == len(_TEXTS)  # the cache is keyed by text, not by item
    assert np.array_equal(first, again)


def test_passage_sentences_are_verbatim_and_carry_their_locator() -> None:
    item = _full_text()
    sentences = passage_sentences(item, [2, 1], first_position=4)
    assert [s.passage for s in sentences] == [2, 1]
    assert [s.position for s in sentences] == [4, 5]
    for s in sentences:
        assert s.passage is not None
        text = item.passages[s.passage].text
        assert text[s.start : s.start + len(s.text)] == s.text
    assert sentences[0].locator == "Results › Adverse events, paragraph 1"
    assert sentences[1].locator == "Methods, paragraph 1"
    assert all(s.label is None for s in sentences)


def test_the_writer_ranks_a_body_sentence_that_the_abstract_lacks() -> None:
    embedder = HashingEmbedder()
    item = _full_text()
    ranked = rank_sentences([item], "What dose of furosemide did patients receive daily?", embedder)
    best = top_per_item(ranked, 1)["E1"][0]
    assert best.text == _TEXTS[1][1]
    assert best.locator == "Methods, paragraph 1"


def test_grounding_quotes_a_body_passage_with_its_section() -> None:
    embedder = HashingEmbedder()
    item = _full_text()
    sentence = "Hypokalaemia occurred in 7 of 120 patients given the drug [E1]."
    unit = Unit(0, "findings: Harms", 0, len(sentence), sentence, ["E1"], claim_text(sentence))
    claims, changes = check_units([unit], {"E1": item}, embedder, 0.65, None, 0.5)
    assert changes == {}
    (claim,) = claims
    assert claim.supported
    (quote,) = claim.quotes
    assert quote.quote == _TEXTS[2][1]
    assert quote.locator == "Results › Adverse events, paragraph 1"
    assert quote.similarity > 0.99


def test_grounding_of_an_abstract_quote_has_no_locator() -> None:
    embedder = HashingEmbedder()
    item = _full_text()
    sentence = "Diuretics in heart failure: a randomised trial of furosemide dosing [E1]."
    unit = Unit(0, "conclusion", 0, len(sentence), sentence, ["E1"], claim_text(sentence))
    (claim,), _ = check_units([unit], {"E1": item}, embedder, 0.65, None, 0.5)
    assert claim.quotes[0].locator == ""


def test_the_appendix_shows_the_section_of_a_body_quote() -> None:
    claim = GroundedClaim(
        location="findings: Harms",
        sentence="Hypokalaemia occurred in 7 of 120 patients [E1].",
        evidence_ids=["E1"],
        quotes=[
            SupportingQuote(
                evidence_id="E1",
                quote=_TEXTS[2][1],
                locator="Results › Adverse events, paragraph 1",
                similarity=0.91,
                supports=True,
            )
        ],
        supported=True,
        kept_ids=["E1"],
    )
    report = ResearchReport(title="t", research_question="q", grounding=[claim])
    lines = grounding_appendix(report, {"E1": 3})
    assert (
        f"  - [3] Results › Adverse events, paragraph 1: “{_TEXTS[2][1]}” (similarity 0.91)"
        in lines
    )


def test_key_terms_named_only_in_the_body_count_for_a_full_text() -> None:
    item = _full_text()
    abstract_only = item.model_copy(update={"passages": []})
    terms = ["hypokalaemia", "renal impairment"]
    assert mentioning_terms([abstract_only], terms, 2) == []
    assert mentioning_terms([item], terms, 2) == [item]
