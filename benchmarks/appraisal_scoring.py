"""Scoring study records against hand labels: precision and recall per field.

A value counts as right only when it equals the label, not when its quote is found in the
text (the verbatim check is an invariant, tested in ``tests/unit/test_study_extraction.py``):
"Five" quoted from "Five controls with HCA ..." is verbatim and wrong when the label says 48.

Fields (the labels' rules are in ``benchmarks/appraisal_labels.json``):

- **sample size**: the record's whole sample (the total as written, or the sum of its group
  sizes) against the label's ``sample_size.value``, as numbers ("1,024" = "1024",
  "Sixty-seven" = "67").
- **analysed**: the record's number analysed against the label's ``analysed``.
- **n used by certainty**: :attr:`StudyRecord.n` (total, else sum, else analysed) against the
  label's sample size or number analysed: the figure the certainty rules read.
- **effect with CI**: every estimate the record shows with a CI against the label's
  estimates with a CI; right when value and both bounds are equal as numbers (each label
  matched once). Precision over those shown, recall over those labelled.
- **outcome named**: of the estimates with a CI shown, those that are right and name an
  outcome sharing a content word with the label's outcome
  (:func:`deepcritical.text.terms.content_stems`).
- **effect without CI**: the same for named estimates without a CI (no target).
- **design**: :func:`deepcritical.evidence.grading.grade_evidence` against the label; precision
  over the records with a recognised design, recall over the labels with one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from deepcritical.models import EffectEstimate, StudyDesign, StudyRecord, parse_number
from deepcritical.text.terms import content_stems

__all__ = ["FieldScore", "Scores", "same_number", "score_record"]


def same_number(a: str | None, b: str | None) -> bool:
    """Both are numbers (as written: "1,024", "Sixty-seven", "−0.3") and equal."""
    if a is None or b is None:
        return False
    x, y = parse_number(a.replace("·", ".")), parse_number(b.replace("·", "."))
    return x is not None and y is not None and abs(x - y) < 1e-9


@dataclass
class FieldScore:
    """Counts of one field: values shown, shown and right, labelled, labelled and shown right."""

    shown: int = 0
    right: int = 0
    labelled: int = 0
    found: int = 0

    def add(self, other: FieldScore) -> None:
        """Add ``other``'s counts to these."""
        self.shown += other.shown
        self.right += other.right
        self.labelled += other.labelled
        self.found += other.found

    @property
    def precision(self) -> float | None:
        """Right / shown (``None`` when nothing is shown)."""
        return self.right / self.shown if self.shown else None

    @property
    def recall(self) -> float | None:
        """Labelled values shown right / labelled (``None`` when nothing is labelled)."""
        return self.found / self.labelled if self.labelled else None


FIELDS = (
    "sample size",
    "analysed",
    "n used by certainty",
    "effect with CI",
    "outcome named",
    "effect without CI",
    "design",
)


@dataclass
class Scores:
    """The :class:`FieldScore` of every field over a set of records, and each miss."""

    fields: dict[str, FieldScore] = field(default_factory=lambda: {f: FieldScore() for f in FIELDS})
    measure_agrees: int = 0
    records: int = 0
    misses: list[str] = field(default_factory=list)

    def add(self, other: Scores) -> None:
        """Add ``other``'s counts and misses to these."""
        for name, score in other.fields.items():
            self.fields[name].add(score)
        self.measure_agrees += other.measure_agrees
        self.records += other.records
        self.misses += other.misses


def labelled_sample_size(label: dict[str, Any]) -> str | None:
    """The label's sample size as written (``sample_size.value``), ``None`` when it has none."""
    size = label.get("sample_size")
    return size["value"] if size else None


def _score_sizes(pmid: str, record: StudyRecord, label: dict[str, Any], out: Scores) -> None:
    gold, gold_analysed = labelled_sample_size(label), label.get("analysed")
    shown = record.sample_size_text() if record.sample_size or record.sample_size_parts else None
    total = str(record.n) if shown is not None and record.n is not None else None
    _score_value(out, "sample size", pmid, total, gold, shown)
    analysed = record.analysed.value if record.analysed else None
    _score_value(out, "analysed", pmid, analysed, gold_analysed, analysed)
    n = str(record.n) if record.n is not None else None
    score = out.fields["n used by certainty"]
    score.labelled += gold is not None or gold_analysed is not None
    if n is not None:
        score.shown += 1
        right = same_number(n, gold) or same_number(n, gold_analysed)
        score.right += right
        score.found += right
        if not right:
            out.misses.append(f"{pmid} n used by certainty: {n}, label {gold} / {gold_analysed}")


def _score_value(
    out: Scores, name: str, pmid: str, value: str | None, gold: str | None, shown: str | None
) -> None:
    score = out.fields[name]
    score.labelled += gold is not None
    if value is None:
        if gold is not None:
            out.misses.append(f"{pmid} {name}: not shown, label {gold}")
        return
    score.shown += 1
    if same_number(value, gold):
        score.right += 1
        score.found += 1
    else:
        out.misses.append(f"{pmid} {name}: shown {shown!r}, label {gold}")


def _matches(e: EffectEstimate, gold: dict[str, Any]) -> bool:
    return (
        same_number(e.value, gold["value"])
        and (same_number(e.ci_low, gold["ci_low"]) or e.ci_low == gold["ci_low"] is None)
        and (same_number(e.ci_high, gold["ci_high"]) or e.ci_high == gold["ci_high"] is None)
    )


def _outcome_agrees(e: EffectEstimate, gold: dict[str, Any]) -> bool:
    if e.outcome is None:
        return False
    return bool(content_stems(e.outcome.value) & content_stems(gold.get("outcome") or ""))


def _score_effects(
    pmid: str, effects: Sequence[EffectEstimate], golds: Sequence[dict[str, Any]], out: Scores
) -> None:
    for with_ci, name in ((True, "effect with CI"), (False, "effect without CI")):
        shown = [e for e in effects if e.has_ci == with_ci]
        labelled = [g for g in golds if (g["ci_low"] is not None) == with_ci]
        score = out.fields[name]
        score.shown += len(shown)
        score.labelled += len(labelled)
        unmatched = list(labelled)
        for e in shown:
            gold = next((g for g in unmatched if _matches(e, g)), None)
            if gold is None:
                out.misses.append(f"{pmid} {name}: shown {e.describe()!r} is not labelled")
                continue
            unmatched.remove(gold)
            score.right += 1
            score.found += 1
            out.measure_agrees += e.measure.lower() == gold["measure"].lower()
            if with_ci:
                named = out.fields["outcome named"]
                if _outcome_agrees(e, gold):
                    named.right += 1
                    named.found += 1
                else:
                    what = e.outcome.value if e.outcome else None
                    out.misses.append(
                        f"{pmid} outcome: {e.short()} for {what!r}, label {gold['outcome']!r}"
                    )
        for gold in unmatched:
            ci = f" ({gold['ci_low']} to {gold['ci_high']})" if with_ci else ""
            out.misses.append(
                f"{pmid} {name}: missed {gold['measure']} {gold['value']}{ci} "
                f"for {gold['outcome']!r}"
            )
        if with_ci:
            out.fields["outcome named"].shown += len(shown)
            out.fields["outcome named"].labelled += len(labelled)


def _score_design(pmid: str, design: str | None, gold: str, out: Scores) -> None:
    score = out.fields["design"]
    other = StudyDesign.OTHER.value
    score.labelled += gold != other
    if design is None or design == other:
        return
    score.shown += 1
    if design == gold:
        score.right += 1
        score.found += 1
    else:
        out.misses.append(f"{pmid} design: shown {design!r}, label {gold!r}")


def score_record(record: StudyRecord, label: dict[str, Any]) -> Scores:
    """The scores of one record against its label (one abstract or full text)."""
    out = Scores(records=1)
    pmid = label["pmid"]
    _score_sizes(pmid, record, label, out)
    _score_effects(pmid, record.effects, label["effects"], out)
    _score_design(pmid, record.design, label["design"], out)
    return out


def total(scores: Iterable[Scores]) -> Scores:
    """The sum of ``scores``."""
    out = Scores()
    for s in scores:
        out.add(s)
    return out
