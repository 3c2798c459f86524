"""Appraisal: the study record of one evidence item (sample size, PICO, effect estimates, each
with its proof) and the automated GRADE-style certainty of a body of evidence.

A :class:`StudyRecord` is read from an item's own text by
:mod:`deepcritical.evidence.study_extraction` (rules) or by a model
(:mod:`deepcritical.agents.appraiser`); every value in it carries a :class:`TextSpan`, the
verbatim quote and its character offsets in the text it was read from, checked before it is
kept. A value without such proof is dropped and counted (``StudyRecord.values_dropped``),
never stored. A :class:`Certainty` is computed by :mod:`deepcritical.evidence.certainty`; it
is an automated GRADE-style rating, not a formal GRADE assessment (:data:`CERTAINTY_LABEL`).
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Literal, Self

from pydantic import BaseModel, Field, model_validator

__all__ = [
    "CERTAINTY_LABEL",
    "SINGLE_VALUE_FIELDS",
    "Certainty",
    "CertaintyLevel",
    "EffectEstimate",
    "ExtractedValue",
    "StudyRecord",
    "TextSpan",
    "parse_number",
]

CERTAINTY_LABEL = "automated GRADE-style rating, not a formal GRADE assessment"
"""What every display of a :class:`Certainty` says it is."""

RATIO_MEASURES = frozenset({"OR", "HR", "RR", "IRR", "PR"})
"""Measures whose "no effect" value is 1 (their confidence interval crosses 1 when imprecise);
differences (MD, SMD, RD, beta...) have 0."""

ACCURACY_MEASURES = frozenset({"AUC", "sensitivity", "specificity", "PPV", "NPV", "accuracy"})
"""Measures of diagnostic or prognostic accuracy: no "no effect" value."""


class TextSpan(BaseModel):
    """The proof of an extracted value: ``quote`` is ``text[start:end]`` of the text it was
    read from, where that text is the item's ``content`` (an abstract, ``passage`` is
    ``None``) or the text of its passage number ``passage`` (``Evidence.passages``, 0-based).
    ``where`` names it for readers (``"abstract"``, ``"Results, Table 2"``). Offsets are in
    characters.

    Raises:
        pydantic.ValidationError: negative offsets or ``end - start != len(quote)``.
    """

    quote: str
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    passage: int | None = Field(default=None, ge=0)
    where: str = "abstract"

    @model_validator(mode="after")
    def _offsets_match_quote(self) -> Self:
        if self.end - self.start != len(self.quote):
            raise ValueError(
                f"offsets {self.start}..{self.end} do not span the {len(self.quote)}-character "
                "quote"
            )
        return self


class ExtractedValue(BaseModel):
    """One value as written in the source (``"1,024"``, ``"women with breast cancer"``) and
    the span it occurs in (``value`` is a substring of ``proof.quote``)."""

    value: str
    proof: TextSpan


class EffectEstimate(BaseModel):
    """An effect estimate as written: ``measure`` is a short code (``OR``, ``HR``, ``RR``,
    ``IRR``, ``MD``, ``SMD``, ``RD``, ``beta``, ``AUC``, ``sensitivity``, ``specificity``, or
    ``estimate`` when the text names none), ``value`` the point estimate, ``ci_low`` /
    ``ci_high`` the bounds of its confidence interval (95% unless the text says otherwise),
    ``p_value`` as written (``"<0.001"``, ``"0.02"``). Every one of them is a substring of
    ``proof.quote``; ``None`` when not reported."""

    measure: str
    value: str
    ci_low: str | None = None
    ci_high: str | None = None
    p_value: str | None = None
    proof: TextSpan
    outcome: ExtractedValue | None = None

    @property
    def has_ci(self) -> bool:
        """True when both bounds of a confidence interval are given."""
        return self.ci_low is not None and self.ci_high is not None

    def number(self) -> float | None:
        """The point estimate as a float (a percentage as its number), ``None`` if unreadable."""
        return parse_number(self.value)

    def null_value(self) -> float | None:
        """The value of "no effect" for the measure: 1 for ratios, 0 for differences, ``None``
        for accuracy measures (and estimates whose measure is not known)."""
        if self.measure in RATIO_MEASURES:
            return 1.0
        if self.measure in ACCURACY_MEASURES or self.measure == "estimate":
            return None
        return 0.0

    def crosses_null(self) -> bool | None:
        """Whether the confidence interval includes "no effect" (1 for ratios, 0 for
        differences); ``None`` without a CI or a null value."""
        null = self.null_value()
        low = parse_number(self.ci_low or "")
        high = parse_number(self.ci_high or "")
        if null is None or low is None or high is None:
            return None
        return min(low, high) <= null <= max(low, high)

    def short(self) -> str:
        """``"OR 2.4 (95% CI 1.3 to 4.6)"``, as written, for tables and exports."""
        return self._text(with_outcome=False)

    def describe(self) -> str:
        """The estimate with the outcome it measures: ``"RR 0.80 (95% CI 0.70 to 0.91) for
        all-cause mortality, p = 0.01"``; ``"... (outcome not read)"`` when none was read."""
        return self._text(with_outcome=True)

    def _text(self, *, with_outcome: bool) -> str:
        out = f"{self.measure} {self.value}"
        if self.has_ci:
            out += f" (95% CI {self.ci_low} to {self.ci_high})"
        if with_outcome:
            what = " ".join(self.outcome.value.split()) if self.outcome else ""
            out += f" for {what}" if what else " (outcome not read)"
        if self.p_value:
            out += f", p {self.p_value}" if self.p_value[0] in "<>=≤≥" else f", p = {self.p_value}"
        return out


SINGLE_VALUE_FIELDS = (
    "population",
    "setting",
    "sample_size",
    "analysed",
    "intervention",
    "comparator",
    "follow_up",
    "randomised",
    "blinded",
    "single_centre",
    "multicentre",
    "dose_response",
)
"""The :class:`StudyRecord` fields holding one :class:`ExtractedValue` (or ``None``)."""


class StudyRecord(BaseModel):
    """What one study reports, each value with its proof (a :class:`TextSpan` into the item's
    abstract or a passage of its full text).

    ``design`` is the graded design, a :class:`~deepcritical.models.StudyDesign` value
    (:func:`deepcritical.evidence.grading.grade_evidence`);
    ``sample_size`` the whole sample (included, enrolled or randomised) as written, set only
    when the text states it as such; ``sample_size_parts`` the sizes of the groups that make
    up the sample when no total is written ("Five controls with HCA and five without ...":
    the sample is their sum, :attr:`n`, shown as "48 (sum of groups: 5 + 5 + ...)"), each
    with its own proof; ``analysed`` the number analysed when stated; ``n`` the sample size
    as an integer (the total, else the sum of the groups, else the number analysed).
    ``disagreements`` counts the values a model read that disagreed with the rules' confident
    reading of the same field (:mod:`deepcritical.agents.appraiser`): neither is shown.
    ``randomised``,
    ``blinded``, ``single_centre``, ``multicentre`` and ``dose_response`` hold the phrase that
    states it (risk-of-bias proxies and the dose-response upgrade of
    :mod:`deepcritical.evidence.certainty`), ``None`` when the text does not say.
    ``values_dropped`` counts the values found without a verifiable proof (dropped, never
    shown); ``method`` says who read it (``rules`` or ``model``); ``full_text`` whether the
    passages of a full text were read too.
    """

    design: str | None = None
    population: ExtractedValue | None = None
    setting: ExtractedValue | None = None
    sample_size: ExtractedValue | None = None
    sample_size_parts: list[ExtractedValue] = Field(default_factory=list)
    analysed: ExtractedValue | None = None
    intervention: ExtractedValue | None = None
    comparator: ExtractedValue | None = None
    outcomes: list[ExtractedValue] = Field(default_factory=list)
    effects: list[EffectEstimate] = Field(default_factory=list)
    follow_up: ExtractedValue | None = None
    randomised: ExtractedValue | None = None
    blinded: ExtractedValue | None = None
    single_centre: ExtractedValue | None = None
    multicentre: ExtractedValue | None = None
    dose_response: ExtractedValue | None = None
    values_dropped: int = Field(default=0, ge=0)
    disagreements: int = Field(default=0, ge=0)
    method: Literal["rules", "model"] = "rules"
    full_text: bool = False

    @property
    def n(self) -> int | None:
        """The sample size as an integer: the stated total, else the sum of the group sizes
        (:attr:`sample_size_parts`, two or more), else the number analysed; ``None`` when none
        is stated or readable."""
        total = _count(self.sample_size)
        if total is not None:
            return total
        parts = [_count(v) for v in self.sample_size_parts]
        if len(parts) >= 2 and all(p is not None for p in parts):
            return sum(p for p in parts if p is not None)
        return _count(self.analysed)

    def sample_size_text(self) -> str | None:
        """The sample size as shown: the total as written ("1,024"), ``"48 (sum of groups: 5
        + 5 + 7 + 7 + 12 + 12)"`` when it is the sum of group sizes, ``"96 analysed"`` when
        only the number analysed is stated; ``None`` when the text states none."""
        if self.sample_size is not None:
            return self.sample_size.value
        parts = [_count(v) for v in self.sample_size_parts]
        if len(parts) >= 2 and all(p is not None for p in parts):
            terms = " + ".join(str(p) for p in parts)
            return f"{sum(p for p in parts if p is not None)} (sum of groups: {terms})"
        if self.analysed is not None:
            return f"{self.analysed.value} analysed"
        return None

    def sample_size_proofs(self) -> list[TextSpan]:
        """The proofs behind :meth:`sample_size_text` (one, or one per group)."""
        if self.sample_size is not None:
            return [self.sample_size.proof]
        if self.n is not None and self.sample_size_parts:
            return [v.proof for v in self.sample_size_parts]
        return [self.analysed.proof] if self.analysed is not None else []

    @property
    def primary_effect(self) -> EffectEstimate | None:
        """The first effect estimate given with a confidence interval, else the first one."""
        with_ci = [e for e in self.effects if e.has_ci]
        ranked = with_ci or self.effects
        return ranked[0] if ranked else None

    def values(self) -> list[ExtractedValue | EffectEstimate]:
        """Every value the record shows, in field order (what the verbatim check covers;
        an estimate's outcome is checked with its estimate)."""
        single = [getattr(self, name) for name in SINGLE_VALUE_FIELDS]
        return [
            *(v for v in single if v is not None),
            *self.sample_size_parts,
            *self.outcomes,
            *self.effects,
        ]

    def summary(self) -> str:
        """One line for exports and notes: the sample size and every effect estimate with its
        outcome, ``"n = 248; OR 2.4 (95% CI 1.3 to 4.6) for mortality; ..."`` (those with a
        CI first; ``""`` when nothing was read)."""
        parts = []
        size = self.sample_size_text()
        if size is not None:
            parts.append(f"n = {size}")
        ranked = [e for e in self.effects if e.has_ci] + [e for e in self.effects if not e.has_ci]
        parts += [e.describe() for e in ranked]
        return "; ".join(parts)


def _count(value: ExtractedValue | None) -> int | None:
    """A count as an integer, ``None`` when absent or not a whole number."""
    number = parse_number(value.value) if value is not None else None
    return int(number) if number is not None and number == int(number) else None


class CertaintyLevel(StrEnum):
    """The four GRADE levels, as shown."""

    HIGH = "High"
    MODERATE = "Moderate"
    LOW = "Low"
    VERY_LOW = "Very low"


class Certainty(BaseModel):
    """An automated GRADE-style certainty rating of the evidence behind one finding,
    hypothesis or verdict (not a formal GRADE assessment; see
    :mod:`deepcritical.evidence.certainty` for the rules).

    ``start`` is the level its best study design starts from (``basis`` names it:
    "randomised trials", "observational"...); ``downgrades`` and ``upgrades`` are the reasons
    that moved it, one level each, each naming the values and studies it rests on;
    ``notes`` what could not be judged ("total n not stated for PMID 3: no size-based
    downgrade"); ``evidence_ids`` the items rated; ``total_n`` the summed sample size of the
    items rated, ``None`` unless every one of them states its n.
    """

    level: CertaintyLevel
    start: CertaintyLevel
    basis: str
    downgrades: list[str] = Field(default_factory=list)
    upgrades: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    evidence_ids: list[str] = Field(default_factory=list)
    total_n: int | None = None

    def summary(self) -> str:
        """``"Low: observational; imprecision, total n = 84 (84 in PMID 1)"`` (the reasons
        after the basis, then the notes)."""
        reasons = [
            *self.downgrades,
            *(f"upgraded: {u}" for u in self.upgrades),
            *self.notes,
        ]
        tail = f"; {', '.join(reasons)}" if reasons else ""
        return f"{self.level.value}: {self.basis}{tail}"

    def line(self) -> str:
        """The summary with what it is: ``"Certainty (automated GRADE-style rating, not a
        formal GRADE assessment): Low: observational; ..."``."""
        return f"Certainty ({CERTAINTY_LABEL}): {self.summary()}"


_WORDS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
NUMBER_WORDS = frozenset({*_WORDS, *_SCALES})
"""Words of an English cardinal number (with "and" between them)."""

_DIGITS = re.compile(r"^[-−–]?\d{1,3}(?:[,\s ]\d{3})+(?:\.\d+)?$|^[-−–]?\d*\.?\d+$")


def _words_number(text: str) -> int | None:
    total, current, seen = 0, 0, False
    for word in re.split(r"[\s-]+", text.lower()):
        if word in ("", "and"):
            continue
        if word in _WORDS:
            current += _WORDS[word]
        elif word in _SCALES:
            scale = _SCALES[word]
            if scale == 100:
                current = max(current, 1) * 100
            else:
                total += max(current, 1) * scale
                current = 0
        else:
            return None
        seen = True
    return total + current if seen else None


def parse_number(text: str) -> float | None:
    """A number as written in a paper as a float: ``"1,024"`` and ``"12 537"`` (thousands
    separators), ``"0.45"``, ``"0·45"`` (a middle dot as the decimal point), ``"92%"``
    (92.0), ``"−0.3"`` (Unicode minus), ``"One hundred and twenty-two"`` (122.0); ``None``
    when it is not one."""
    clean = text.strip().rstrip("%").strip()
    if re.fullmatch(r"[-−–]?\d*·\d+", clean):
        clean = clean.replace("·", ".")  # the Lancet's decimal point: "0·62"
    if not clean:
        return None
    if _DIGITS.match(clean):
        digits = re.sub(r"[,\s ]", "", clean).replace("−", "-").replace("–", "-")
        try:
            return float(digits)
        except ValueError:
            return None
    words = _words_number(clean)
    return float(words) if words is not None else None
