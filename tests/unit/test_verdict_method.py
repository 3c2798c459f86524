"""How a verdict was reached, and how often such verdicts were right on held-out questions
(issue 28): the method sentence, the shipped measurement, and the answer card showing both."""

from __future__ import annotations

import pytest

from deepcritical.report import verdict_method as vm
from deepcritical.report.sections import add_verdict
from deepcritical.ui.answer import answer_card_html
from tests.unit.ui_fixtures import run_result


def test_the_method_names_the_rules_and_the_measured_accuracy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    accuracy = vm.VerdictAccuracy(questions=250, stated=100, right=87, measured="2026-11-27")
    monkeypatch.setattr(vm, "verdict_accuracy", lambda: accuracy)
    text = vm.verdict_method("yes", "none")
    assert text.startswith("How this verdict was reached: read by rules (no model)")
    assert (
        "On 250 held-out PubMedQA questions (never tuned on), 87% of such yes/no verdicts" in text
    )
    assert "(87 of 100); 40% of the questions got one." in text
    with_model = vm.verdict_method("no", "openai:gpt-4o")
    assert "the model listed" in with_model
    assert "measured for runs without a model only" in with_model
    assert "87%" not in with_model
    assert vm.verdict_method(None, "none") == ""


def test_no_figure_is_shown_without_a_measurement(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vm, "verdict_accuracy", lambda: None)
    text = vm.verdict_method("uncertain", "none")
    assert text.startswith("How this verdict was reached:")
    assert "%" not in text


def test_the_report_and_the_answer_card_say_how_the_verdict_was_reached() -> None:
    result = run_result()
    report = add_verdict(result.report, "Does metformin prevent dementia?")
    assert report.metadata.verdict is not None
    assert report.metadata.verdict_method.startswith("How this verdict was reached:")
    card = answer_card_html(result)
    assert '<p class="dc-verdict-method">How this verdict was reached:' in card
