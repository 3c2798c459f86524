"""Pure helpers of the PubMedQA benchmark (benchmarks.bench_pubmedqa and the modules it is
split into): issue-12 figures."""

from __future__ import annotations

import argparse
import json
from typing import Any

import pytest

from benchmarks.bench_pubmedqa import ARMS, parse_arms
from benchmarks.pubmedqa_data import corpus_lines_without
from benchmarks.pubmedqa_figures import abstains, target_figures
from benchmarks.pubmedqa_outcomes import Outcome, states_no_evidence


def _outcome(**changes: Any) -> Outcome:
    fields: dict[str, Any] = {
        "gold_retrieved": True,
        "gold_cited": True,
        "gold_cited_grounded": True,
        "references": 1,
        "references_grounded": 1,
        "grounding_score": 1.0,
        "sentences_removed": 0,
        "citations_removed": 0,
        "proxy_verdict": "yes",
        "verdict": "yes",
        "answer": "yes",
        "seconds": 1.0,
        "grounding_seconds": 0.1,
        "prompt_tokens": 0,
    }
    fields.update(changes)
    return Outcome(**fields)


@pytest.mark.parametrize(
    "text",
    [
        "No evidence could be collected for this question from the sources searched, so no "
        "answer can be given.",
        "The sources searched (local corpus: 980 abstracts) hold no evidence that addresses "
        "whether statins prevent dementia.",
        "THE SOURCES SEARCHED (PubMed, Europe PMC)\nhold no evidence that addresses it.",
    ],
)
def test_states_no_evidence_accepts_both_phrasings(text: str) -> None:
    assert states_no_evidence(text)


@pytest.mark.parametrize(
    "text",
    [
        "No evidence was found for the checklist item: Mechanisms behind statins.",
        "The sources searched hold strong evidence that addresses the question [E1].",
        "Statins reduced mortality [E2].",
    ],
)
def test_states_no_evidence_rejects_other_text(text: str) -> None:
    assert not states_no_evidence(text)


def test_abstains_needs_all_three_conditions() -> None:
    assert abstains(True, 0, None)
    assert abstains(True, 1, "uncertain")
    assert not abstains(False, 0, None)
    assert not abstains(True, 2, None)
    assert not abstains(True, 0, "no")


def test_parse_arms() -> None:
    assert parse_arms("withheld, full") == ARMS
    assert parse_arms("withheld") == ("withheld",)
    for bad in ("", "full,gold", ","):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_arms(bad)


def test_corpus_lines_without_keeps_other_lines_unchanged() -> None:
    rows = [{"pmid": "1", "t": "a\u2028b"}, {"pmid": 2}, {"pmid": "3"}]
    text = "\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n\n"
    kept = corpus_lines_without(text, {"2"})
    assert [json.loads(line) for line in kept] == [rows[0], rows[2]]
    assert kept[0] == text.split("\n")[0]


def test_target_figures() -> None:
    outcomes = [
        _outcome(off_topic=0, verdict="yes", answer="yes", seconds=2.0),
        _outcome(off_topic=0, verdict="no", answer="maybe", seconds=4.0),  # stated: wrong
        _outcome(off_topic=3, verdict="uncertain", answer="no", gold_cited_grounded=False),
        _outcome(
            off_topic=1, verdict=None, states_no_evidence=True, references_grounded=0, seconds=9
        ),
    ]
    f = target_figures(outcomes)
    assert (f.runs, f.gold_cited, f.stated, f.right) == (4, 3, 2, 1)
    assert (f.off_topic_mean, f.off_topic_median) == (1.0, 0.5)
    assert (f.precision, f.coverage) == (0.5, 0.5)
    assert (f.abstained, f.says_no_evidence, f.no_yes_no_verdict) == (1, 1, 2)
    assert f.abstention == 0.25
    assert f.cites_at_most_one == 4
    assert f.seconds_median == 3.0


def test_target_figures_without_a_stated_verdict() -> None:
    f = target_figures([_outcome(verdict=None)])
    assert (f.stated, f.coverage) == (0, 0.0)
    assert f.precision != f.precision  # NaN
