"""Cutting a long text at a sentence or word boundary (corpus records over the size limit)."""

from __future__ import annotations

import pytest

from deepcritical.text.truncation import cut_at_boundary


def test_a_text_within_the_limit_is_kept_whole() -> None:
    assert cut_at_boundary("Short. Text.", 12) == "Short. Text."
    assert cut_at_boundary("", 5) == ""


def test_the_cut_falls_after_the_last_sentence_that_fits() -> None:
    text = "Metformin lowers glucose. It is cheap (usually). Trials agree! More text follows."
    cut = cut_at_boundary(text, 62)
    assert cut == "Metformin lowers glucose. It is cheap (usually). Trials agree!"
    assert text.startswith(cut)


def test_a_sentence_ending_right_at_the_limit_is_kept() -> None:
    assert cut_at_boundary("First one. Second one. Third.", 22) == "First one. Second one."


def test_a_closing_quote_or_bracket_stays_with_its_sentence() -> None:
    text = 'He said "it works." Then more words came after it.'
    assert cut_at_boundary(text, 25) == 'He said "it works."'


def test_without_a_late_sentence_end_the_cut_falls_between_words() -> None:
    text = "Short. " + "word " * 40
    cut = cut_at_boundary(text, 60)
    assert len(cut) <= 60
    assert cut.endswith("word")
    assert len(cut) > 30  # the early sentence end is too early: a word boundary wins


def test_decimals_and_abbreviated_numbers_are_not_sentence_ends() -> None:
    text = "Doses of 2.5 mg and 10.0 mg were given to all patients in every arm of the trial"
    cut = cut_at_boundary(text, 40)
    assert cut == "Doses of 2.5 mg and 10.0 mg were given"


def test_one_unbroken_run_is_cut_at_the_limit() -> None:
    assert cut_at_boundary("x" * 100, 30) == "x" * 30


@pytest.mark.parametrize("limit", [0, -1])
def test_no_room_gives_nothing(limit: int) -> None:
    assert cut_at_boundary("text", limit) == ""


def test_a_huge_text_is_cut_quickly_to_a_prefix() -> None:
    sentence = "Metformin was associated with a lower incidence of cancer in the cohort. "
    text = sentence * 700_000  # about 50 MB
    cut = cut_at_boundary(text, 200_000)
    assert len(cut) <= 200_000
    assert cut.endswith("cohort.")
    assert text.startswith(cut)
