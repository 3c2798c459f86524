"""How a report's verdict was reached, and how often such verdicts were right.

A yes/no verdict is read by rules from the relevant sources' stated conclusions
(:mod:`deepcritical.evidence.stance`, :func:`deepcritical.report.sections.decide_verdict`).
How often that reading was right is measured by ``benchmarks/bench_pubmedqa.py`` on the test
half of the PubMedQA dev questions (``benchmarks/verdict_split.json``: never tuned on), and
shipped in ``verdict_accuracy.json`` beside this module (the benchmark writes it with
``--write-accuracy``). :func:`verdict_method` is the sentence the answer card and the report's
metadata give: the method, and the measured figure when it applies (runs without a model,
whose verdicts the benchmark measured).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

__all__ = ["ACCURACY_FILE", "VerdictAccuracy", "verdict_accuracy", "verdict_method"]

ACCURACY_FILE = "verdict_accuracy.json"


@dataclass(frozen=True)
class VerdictAccuracy:
    """The measured accuracy of stated yes/no verdicts: of ``questions`` held-out questions,
    ``stated`` got a yes or no, ``right`` of them matched the gold answer; ``measured`` says
    when and with which command."""

    questions: int
    stated: int
    right: int
    measured: str

    @property
    def precision(self) -> float:
        """Right / stated (0 when none was stated)."""
        return self.right / self.stated if self.stated else 0.0

    @property
    def coverage(self) -> float:
        """Stated / questions (0 with no question)."""
        return self.stated / self.questions if self.questions else 0.0


@cache
def verdict_accuracy() -> VerdictAccuracy | None:
    """The shipped measurement (``verdict_accuracy.json``), ``None`` when it is missing or
    malformed (then no figure is shown, never an invented one)."""
    try:
        text = resources.files("deepcritical.report").joinpath(ACCURACY_FILE).read_text("utf-8")
        data = json.loads(text)
        return VerdictAccuracy(
            questions=int(data["questions"]),
            stated=int(data["stated"]),
            right=int(data["right"]),
            measured=str(data["measured"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


RULES = (
    "read by rules (no model) from the wording of each relevant source's stated conclusion "
    "(cue words of a finding, a null finding or a hedge, checked against the p-values of its "
    "results); yes or no only when that reading is confident and the sources agree"
)
MODEL = (
    "read from the sources the model listed as supporting or contradicting the question's "
    "hypothesis, relevant sources only; yes or no only when they agree"
)


def verdict_method(verdict: str | None, llm: str) -> str:
    """How a verdict was reached, with the measured accuracy of such verdicts when it
    applies: "How this verdict was reached: read by rules ... On 250 held-out PubMedQA
    questions (never tuned on), 87% of such yes/no verdicts were right (95 of 109); 44% of
    the questions got one." ``""`` for no verdict."""
    if verdict is None:
        return ""
    method = RULES if llm == "none" else MODEL
    text = f"How this verdict was reached: {method}."
    accuracy = verdict_accuracy()
    if llm != "none":
        return text + " Its accuracy was measured for runs without a model only."
    if accuracy is None or not accuracy.stated:
        return text
    return (
        f"{text} On {accuracy.questions} held-out PubMedQA questions (never tuned on), "
        f"{accuracy.precision:.0%} of such yes/no verdicts were right ({accuracy.right} of "
        f"{accuracy.stated}); {accuracy.coverage:.0%} of the questions got one."
    )
