"""Effect estimates read from a study's text by rules, each with the outcome it measures.

Forms read (:func:`find_effects`), every value as written:

- a named measure with its value and CI: "OR 2.4, 95% CI 1.3, 4.6", "hazard ratio, 0.45; 95%
  confidence interval [CI], 0.33 to 0.63", "(RR 0.8; 95% CI 0.6–0.9; p = 0.02)", "AUC of
  0.87 (95% CI: 0.82-0.91)", "odds ratio OR: 1.3; 95% confidence intervals CI: 1.2-1.5",
  "HR 6 (1.2 to 34.2)", "(PR0.90[95% 0.82-0.98])" (a named measure's CI without the words,
  read only when the value lies inside it);
- a CI before its estimate: "(95% confidence interval 0.38, 1.49, odds ratio = 0.75)";
- a measure named further before its value: "the relative risk ... was 1.47 (95% CI
  1.15-1.88)";
- a measure named once for a list of values: "the risk of death (risk ratio [95% CI]) was
  1.12 (0.94-1.34) in the CARD-only group, 1.26 (1.15-1.38) in ...", and in later sentences
  of the paragraph the values in the header's own nested brackets ("(1.25 [1.14-1.37])");
- values continuing an estimate with its CI: listed after it ("(OR 2.3 [95% CI 1.2-4.6]),
  with WG (2.7 [1.2-5.8])"), or later in its paragraph in the bracketed shape it set ("(median
  8.3 U/ml; 95% confidence interval 2.4 to 34.5) ... (2.8 U/ml; 2.1 to 3.6)");
- a change with what it changes before its CI: "an increase of 21 microm in CIMT per S.D. of
  insulin use (95% CI: 8-35 ...)";
- a value with a CI and no named measure ("a median of 20 months (95% CI 15 to 25)", "£1,245
  [95% CI £500 to £2,000]", "12.5% (95% CI 10.1-14.9)"): its measure read from a name
  shortly before it in the sentence, else ``estimate``;
- a named measure without a CI ("sensitivity 92%", "OR = 2.3").

Every form also takes the reporting variants common in journals: the middle-dot decimal point
("0·75 (0·62–0·91)"), Unicode hyphens between the bounds, "95%-CI", "CI95", credible intervals
("95% CrI"), "from a to b", "between a and b", a p value before the CI ("(p = 0.01; 95% CI
..."), a rate's denominator ("3.2 per 1000 person-years (95% CI ..."), "The mean (95% CI) was
3.4 (2.1-4.7)" and bare bounds followed by "; 95% CI".

The measure is normalised to a short code (``OR``, ``HR``, ``RR``, ``IRR``, ``PR``, ``MD``,
``SMD``, ``RD``, ``beta``, ``AUC``, ``sensitivity``, ``specificity``, ``PPV``, ``NPV``,
``accuracy``, ``estimate``). The **outcome** of each estimate is the phrase of its sentence
that says what it measures (:func:`outcome_of`): the words after the measure's name ("hazard
ratio for death"), the noun phrase the estimate's brackets follow ("higher risk for abruptio
placentae (OR: 1.3; ...)"), the subject of "was" ("the risk of death ... was 1.12"), or "for
X" right after it ("-9.1 percentage points for ultrasound (95% CI ...)"), what a change
changes ("in CIMT per S.D. of insulin use"); ``None`` when none of these is there. A table's
CI columns are read by :mod:`deepcritical.evidence.table_estimates`.

Measured against hand labels by ``benchmarks/bench_appraisal.py`` (tuned on the dev half).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import overload

from deepcritical.models import parse_number
from deepcritical.text.abstract_sections import sentence_around

__all__ = ["EffectSpan", "find_effects", "inside_ci", "measure_named_in", "outcome_of"]

_NUM = r"\d{1,3}(?:,\d{3})+(?:[.·]\d+)?|\d+(?:[.·]\d+)?|\.\d+"
_CUR = r"(?:[£$€¥]\s?|US\$\s?)?"
_VAL = rf"[-−–]?{_CUR}(?:{_NUM})%?"
_UNIT = (
    r"(?:(?:mm\s?Hg|mg/dL|mmol/L|kg/m2|kg|g|cm|mm|ml|days?|weeks?|months?|years?|points?"
    r"|percentage\s+points?)\b|%|°)"
)
_TO = r"to|-|‐|‑|–|—"
"""What joins a CI's two bounds: "to" or a dash (hyphen-minus, U+2010, U+2011, en or em dash)."""
_CI_INTRO = (
    r"(?:(?:95|90|99)\s*(?:%|percent|per\s+cent)\s*-?\s*)?"
    r"(?:CI95\b|CIs?\b|CI(?=\s*(?:95|90|99)\s*%|[-−–]?\d)|C\.I\.|CrIs?\b"
    r"|(?i:(?:confidence|credible)\s+(?:intervals?|limits?)))"
    r"(?:\s*[\[(](?:95\s*%\s*)?CI[\])]|\s+CIs?\b|\s*(?:95|90|99)\s*%)?"
)
_CI = (
    rf"{_CI_INTRO}\s*(?:of\s+(?:a?ORs?|a?HRs?|a?RRs?|IRRs?)\s*)?(?:[:=,]|of|was|(?:ranging\s+)?from|between)?\s*[\[(]?\s*"
    rf"(?P<lo>{_VAL})(?:\s*{_UNIT})?\s*(?:{_TO}|,|;|and)\s*"
    rf"(?P<hi>{_VAL})(?:\s*{_UNIT})?\s*[\])]?"
)
_P = r"(?:\s*[;,]\s*(?:[pP]|[pP][\s-]value)\s*(?P<pop>[=<>≤≥])\s*(?P<p>[-−]?\d*\.?\d+))?"
_NAMES = (
    r"(?i:adjusted\s+odds\s+ratios?|odds\s+ratios?|adjusted\s+hazard\s+ratios?|hazard\s+ratios?"
    r"|risk\s+ratios?|relative\s+risks?|incidence\s+rate\s+ratios?|rate\s+ratios?"
    r"|prevalence\s+ratios?|proportion\s+ratios?|standardi[sz]ed\s+mean\s+differences?|weighted\s+mean\s+differences?"
    r"|mean\s+differences?|risk\s+differences?|absolute\s+risk\s+reductions?"
    r"|area\s+under\s+the\s+(?:receiver[\s-]operating[\s-]characteristic\s+|ROC\s+)?curves?"
    r"|sensitivity|specificity|positive\s+predictive\s+values?|negative\s+predictive\s+values?"
    r"|diagnostic\s+accuracy|accuracy|regression\s+coefficients?|kappa)"
)
_ABBRS = (
    r"(?<![A-Za-z])(?:aORs?|AORs?|ORs?|aHRs?|HRs?|aRRs?|IRRs?|RRs?|PRs?|SMDs?|WMDs?|MDs?|RDs?"
    r"|ARRs?|AUROC|AUC|PPV|NPV|β|[Bb]eta|κ)(?![A-Za-z])"
)
_MEASURE = rf"(?P<m>{_NAMES}|{_ABBRS})"
_LINK = (
    r"(?:\s*[\[(][A-Za-z ]{1,12}[\])]|\s+(?:a?ORs?|a?HRs?|a?RRs?|IRR|AUC)(?![A-Za-z]))?"
    r"\s*(?:[,:=]|\bof\b|\bwas\b|\bwere\b|\bis\b)?\s*[=:]?\s*"
)
_PER = r"(?:\s+per\s+(?:\d{1,3}(?:,\d{3})+|\d+)(?:\s+[A-Za-z][\w-]*){0,2})"
"""A rate's denominator after its value: "3.2 per 1000 person-years", "12 per 100 000"."""
_TAIL = (
    rf"(?:\s*{_UNIT})?{_PER}?(?:\s*(?:±|\+/-|\+-)\s*{_VAL})?[^\d;()\[\]\n]{{0,30}}?"
    r"(?:\s*[(\[]|\s*[;,]|\s+(?=(?:(?:95|90|99)\s*%\s*)?CI\b))\s*"
    r"(?:[pP]\s*[=<>≤]\s*0?\.\d+\s*[;,]\s*)?"
)
_EFFECT_NAMED = re.compile(rf"{_MEASURE}{_LINK}(?P<v>{_VAL})(?:{_TAIL}{_CI}{_P})?")
_EFFECT_NAMED_BARE_CI = re.compile(
    rf"{_MEASURE}{_LINK}(?P<v>{_VAL})\s*(?:[(\[](?:\s*(?:95|90|99)\s*%)?|;)\s*(?P<lo>{_VAL})"
    rf"\s*(?:{_TO}|,)\s*(?P<hi>{_VAL})\s*(?:;\s*(?:95|90|99)\s*%\s*CI\s*)?[)\]]"
)
"""A named measure's CI in brackets without the words (or with "; 95% CI" after the bounds),
or with its level only: "HR 6 (1.2 to 34.2)", "(PR0.90[95% 0.82-0.98]p<0.001)", "RR 0.85
(0.76-0.95; 95% CI)"."""
_EFFECT_TIMES = re.compile(
    rf"(?<![\w.,])(?P<v>{_NUM})\s+times\b[^\d;()\[\]\n]{{0,80}}?[(\[]\s*{_CI}{_P}"
)
"""A ratio written "N times": "had 3.12 times the mortality of the highest grade (95% CI 2.4 to
4.1)", "were 15.66 times higher for ... (95% CI: 5.5-44.6)"."""
_EFFECT_FAR = re.compile(
    rf"{_MEASURE}\b[^.;\n]{{0,80}}?(?:\b(?:was|were|of|is)\s+|,\s*)(?P<v>{_VAL})"
    rf"\s*(?:[(\[]|[;,])\s*{_CI}{_P}"
)
_EFFECT_CHANGE = re.compile(
    rf"\b(?:increase|decrease|reduction|rise|fall|decline|change|difference|gain|loss)\s+"
    rf"(?:of|by)\s+(?P<v>{_VAL})(?:\s*[^\s\d;()\[\]]+)??\s+(?:in|of)\s+"
    rf"(?P<o>(?:(?!\.\s+(?-i:[A-Z]))[^\d;()\[\]\n]){{3,60}}?)\s*[(\[]\s*{_CI}{_P}",
    re.I,
)
"""A change stated as such, with what it changes and its CI in the brackets after that: "an
increase of 21 microm in CIMT per S.D. of insulin use (95% CI: 8-35 ...)"; the outcome is
what it changes (group ``o``)."""
_EFFECT_CI_FIRST = re.compile(rf"[(\[]\s*{_CI}\s*,\s*{_MEASURE}\s*[=:]?\s*(?P<v>{_VAL})")
_EFFECT_BARE = re.compile(rf"(?<![\w.,])(?P<v>{_VAL}){_TAIL}{_CI}{_P}")
_HEADER = re.compile(
    rf"(?:{_MEASURE}|\b(?P<g>(?:mean|median|prevalence|incidence|rate|proportion|difference"
    r"|change|estimate)s?))\s*[\[(]\s*(?:95\s*%\s*)?(?:CI|confidence\s+intervals?)\s*[\])]",
    re.I,
)
"""A measure named once with its CI's place: "risk ratio [95% CI]", "OR (95% CI)", or a
summary named so ("The mean (95% CI) was 3.4 (2.1-4.7)")."""
_LISTED = re.compile(
    rf"(?<![\w.,])(?P<v>{_VAL})\s*[(\[]\s*(?P<lo>{_VAL})\s*(?:{_TO}|,)\s*(?P<hi>{_VAL})\s*[)\]]"
)
_MIRRORED = {
    (opener, inner): re.compile(
        rf"{re.escape(opener)}\s*(?P<v>{_VAL})\s*{re.escape(inner)}\s*(?P<lo>{_VAL})\s*"
        rf"(?:{_TO}|,)\s*(?P<hi>{_VAL})\s*{re.escape(close)}\s*{re.escape(outer_close)}"
    )
    for opener, outer_close, inner, close in (("(", ")", "[", "]"), ("[", "]", "(", ")"))
}
"""A value with its CI in the nested brackets of a header "(risk ratio [95% CI])": "(1.25
[1.14-1.37])", keyed by the outer and inner opening brackets."""
_SHAPED = re.compile(
    rf"[(\[](?:[^()\[\]\n]{{0,60}}?:\s*)?(?P<v>{_VAL})[^\d;()\[\]\n]{{0,20}}?\s*;\s*"
    rf"(?P<lo>{_VAL})\s*(?P<sep>{_TO})\s*(?P<hi>{_VAL})\s*[)\]]"
)
"""A bracket holding a value, ";" and its two bounds: "(2.8 U/ml; 2.1 to 3.6)", "(for>or =3
drinks per day: 0.98; 0.49-1.96)"; read only after an estimate written the same way with its CI
named (:data:`_SHAPE_SET`)."""
_SHAPE_SET = re.compile(
    rf"[^\d;()\[\]\n]{{0,30}}?;\s*{_CI_INTRO}\s*[:=]?\s*{_VAL}(?:\s*{_UNIT})?\s*"
    rf"(?P<sep>{_TO})"
)
"""After an estimate's value: ";", its CI named, the low bound and the word or dash that joins
the bounds ("8.3 U/ml; 95% confidence interval 2.4 to ...")."""

_MEASURE_CODES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"standardi[sz]ed\s+mean|^SMD", re.I), "SMD"),
    (re.compile(r"mean\s+diff|^W?MD", re.I), "MD"),
    (re.compile(r"odds|^a?ORs?$", re.I), "OR"),
    (re.compile(r"hazard|^a?HRs?$", re.I), "HR"),
    (re.compile(r"incidence\s+rate|^IRRs?$|^rate\s+ratio", re.I), "IRR"),
    (re.compile(r"prevalence\s+ratio|proportion\s+ratio|^PRs?$", re.I), "PR"),
    (re.compile(r"risk\s+ratio|relative\s+risk|^a?RRs?$", re.I), "RR"),
    (re.compile(r"risk\s+diff|absolute\s+risk|^A?RDs?$|^ARR$", re.I), "RD"),
    (re.compile(r"area\s+under|^AUC|^AUROC", re.I), "AUC"),
    (re.compile(r"sensitivity", re.I), "sensitivity"),
    (re.compile(r"specificity", re.I), "specificity"),
    (re.compile(r"positive\s+predictive|^PPV$", re.I), "PPV"),
    (re.compile(r"negative\s+predictive|^NPV$", re.I), "NPV"),
    (re.compile(r"accuracy", re.I), "accuracy"),
    (re.compile(r"^β$|^beta$|regression\s+coeff", re.I), "beta"),
    (re.compile(r"^κ$|kappa", re.I), "kappa"),
]
_NAMED_BEFORE = re.compile(rf"{_MEASURE}[^.;\n]{{0,60}}$")


@dataclass(frozen=True)
class EffectSpan:
    """One estimate in a text: ``start``/``end`` of the phrase that proves it, its measure
    code, ``value``, ``ci_low``, ``ci_high`` and ``p_value`` as written (substrings of the
    phrase), and ``outcome``: the ``(start, end)`` of the phrase naming what it measures, or
    ``None``."""

    start: int
    end: int
    measure: str
    value: str
    ci_low: str | None
    ci_high: str | None
    p_value: str | None
    outcome: tuple[int, int] | None


def _measure_code(name: str) -> str:
    for pattern, code in _MEASURE_CODES:
        if pattern.search(name.strip()):
            return code
    return "estimate"


def measure_named_in(text: str) -> str:
    """The code of the first measure ``text`` names (a table's column header: "Odds ratio
    (OR)", "HR (95% CI)"), else ``estimate``."""
    m = re.search(_MEASURE, text)
    return _measure_code(m.group("m")) if m else "estimate"


@overload
def _bare(raw: str) -> str: ...
@overload
def _bare(raw: str | None) -> str | None: ...
def _bare(raw: str | None) -> str | None:
    """A value without its currency sign ("£1,245" -> "1,245"; still a substring of it)."""
    return _CURRENCY.sub("", raw).strip() if raw is not None else None


_CURRENCY = re.compile(r"US\$|[£$€¥]")
_DECIMAL = re.compile(r"[.·]")


def _number(raw: str | None) -> float | None:
    return parse_number(re.sub(r"[£$€¥]|US\$", "", raw).strip()) if raw else None


def _plausible(m: re.Match[str]) -> bool:
    """Not a year, a bare "95" of "95% CI", or a CI whose bounds are not numbers; a value
    with a CI must lie within it (one outside was misread, or is a typo in the source: not
    shown either way)."""
    value = _number(m.group("v"))
    if value is None or (1900 <= abs(value) <= 2030 and not _DECIMAL.search(m.group("v"))):
        return False
    lo, hi = m.groupdict().get("lo"), m.groupdict().get("hi")
    if lo is None:
        return True
    low, high = _number(lo), _number(hi)
    if low is None or high is None:
        return False
    return min(low, high) <= value <= max(low, high)


def inside_ci(value: str, low: str | None, high: str | None) -> bool:
    """Whether ``value`` lies within its CI ``low``..``high`` (numbers as written); ``True``
    without a CI, ``False`` when a bound or the value is not a number."""
    if low is None and high is None:
        return True
    v, lo, hi = _number(value), _number(low), _number(high)
    return v is not None and lo is not None and hi is not None and min(lo, hi) <= v <= max(lo, hi)


_SUBSCRIPT_AFTER = re.compile(r"\s*[-–]\s*\d|\s*(?:h|hr|hours?)\b", re.I)


def _clear_without_ci(text: str, m: re.Match[str]) -> bool:
    """Whether a named estimate without a CI is clearly one: its value has a decimal point or
    is a percentage ("OR = 2.3", "sensitivity 92%"; not "OR 3" of a score, "β1" or "AUC0-24"),
    and no range or time follows it."""
    value = m.group("v")
    if not _DECIMAL.search(value) and "%" not in value and "%" not in text[m.end() : m.end() + 2]:
        return False
    return _SUBSCRIPT_AFTER.match(text, m.end("v")) is None


def _p_value(text: str, m: re.Match[str]) -> str | None:
    groups = m.groupdict()
    if groups.get("p") is None:
        return None
    op = groups.get("pop") or "="
    return str(groups["p"]) if op == "=" else text[m.start("pop") : m.end("p")]


def _span_of(text: str, m: re.Match[str], measure: str, start: int | None = None) -> EffectSpan:
    groups = m.groupdict()
    at = m.start() if start is None else start
    return EffectSpan(
        start=at,
        end=m.end(),
        measure=measure,
        value=_bare(groups["v"]),
        ci_low=_bare(groups.get("lo")),
        ci_high=_bare(groups.get("hi")),
        p_value=_p_value(text, m),
        outcome=_trim(text, m.start("o"), m.end("o"))
        if groups.get("o") is not None
        else outcome_of(text, at, m.start("v"), m.end(), groups.get("m")),
    )


def _paragraph_end(text: str, at: int) -> int:
    stop = text.find("\n", at)
    return len(text) if stop < 0 else stop


def _listed_under_headers(text: str) -> list[tuple[re.Match[str], str]]:
    """Values listed after a measure named once with "[95% CI]" ("risk ratio [95% CI]) was
    1.12 (0.94-1.34) in ..., 1.26 (1.15-1.38) in ..."): ``(match, code)``. A header in nested
    brackets ("(risk ratio [95% CI])") also gives the values written in the same nested
    brackets later in its paragraph ("... between GM-only and the MIXED group (1.25
    [1.14-1.37])")."""
    out = []
    for header in _HEADER.finditer(text):
        name = header.group("m") or header.group("g")
        code = _measure_code(name)
        _, stop = sentence_around(text, header.start())
        stop = stop if stop > header.end() else len(text)
        found = list(_LISTED.finditer(text, header.end(), stop))
        inner = header.group(0)[len(name) :].lstrip()[:1]
        mirrored = _MIRRORED.get((text[header.start() - 1 : header.start()], inner))
        if mirrored is not None:
            found += mirrored.finditer(text, stop, _paragraph_end(text, stop))
        out += [(m, code) for m in found if _plausible(m)]
    return out


def find_effects(text: str) -> list[EffectSpan]:
    """The effect estimates written in ``text``, in reading order, without overlaps (see the
    module docstring); an estimate with a CI is preferred to an overlapping one without."""
    found: list[EffectSpan] = []

    def add(m: re.Match[str], code: str, start: int | None = None) -> None:
        s = m.start() if start is None else start
        if all(m.end() <= f.start or s >= f.end for f in found):
            found.append(_span_of(text, m, code, start))

    for m, code in _listed_under_headers(text):
        add(m, code, m.start())
    for pattern, with_ci in (
        (_EFFECT_NAMED, True),
        (_EFFECT_CI_FIRST, True),
        (_EFFECT_FAR, True),
        (_EFFECT_NAMED_BARE_CI, True),
        (_EFFECT_TIMES, True),
        (_EFFECT_NAMED, False),
    ):
        for m in pattern.finditer(text):
            if (m.groupdict().get("lo") is None) == with_ci or not _plausible(m):
                continue
            if not with_ci and not _clear_without_ci(text, m):
                continue
            add(
                m, _measure_code(m.group("m")) if "m" in m.re.groupindex else _named_before(text, m)
            )
    for m in _EFFECT_CHANGE.finditer(text):
        if _plausible(m):
            add(m, _named_before(text, m), m.start("v"))
    for m in _EFFECT_BARE.finditer(text):
        if _plausible(m):
            add(m, _named_before(text, m))
    for f in [f for f in found if f.ci_low is not None]:
        for m in _continued(text, f):
            add(m, f.measure)
        for m in _same_shape(text, f):
            add(m, f.measure, m.start("v"))
    return sorted(found, key=lambda f: f.start)


def _named_before(text: str, m: re.Match[str]) -> str:
    """The code of a measure named just before an estimate that does not name its own ("odds
    ratio ... 2.3 (95% CI ...)"), else ``estimate``."""
    before = _NAMED_BEFORE.search(text, max(0, m.start() - 70), m.start())
    return _measure_code(before.group("m")) if before else "estimate"


def _continued(text: str, first: EffectSpan) -> list[re.Match[str]]:
    """The values that continue an estimate with its CI, each with its bracketed CI and no
    number between them: "(OR 2.3 [95% CI 1.2-4.6]), with WG (2.7 [1.2-5.8]), with MPA (6.3
    [1.9-21.6])", "were 70% (95% CI 53-83%), 90% (76-97%) and 72% (55-85%)". They share its
    measure. Later sentences of the paragraph continue it only in the same brackets ("... was
    associated with PSV (2.2 [1.2-3.8])")."""
    stop = _paragraph_end(text, first.end)
    bracket = "[" if re.search(r"\[[^\]]*$", text[first.start : first.end - 1]) else "("
    out = []
    at = first.end
    for m in _LISTED.finditer(text, first.end, stop):
        gap = text[at : m.start()]
        same = bracket in text[m.end("v") : m.start("lo")]
        if len(gap) > 160 or re.search(r"\d", gap) or not _plausible(m):
            break
        if re.search(r"[.;]\s", gap) and not same:
            break
        out.append(m)
        at = m.end()
    return out


def _same_shape(text: str, first: EffectSpan) -> list[re.Match[str]]:
    """The values written later in the paragraph in the bracketed shape ``value; low to high``
    that ``first`` set with its CI named ("(median 8.3 U/ml; 95% confidence interval 2.4 to
    34.5) ... than in 21 normal women (2.8 U/ml; 2.1 to 3.6)"): the same ";" and the same word
    or dash between the bounds, each value within its bounds. They share its measure."""
    at = text.find(first.value, first.start, first.end)
    shape = _SHAPE_SET.match(text, at + len(first.value)) if at >= 0 else None
    if shape is None or text.rfind("(", 0, at) <= text.rfind(")", 0, at):
        return []
    found = _SHAPED.finditer(text, first.end, _paragraph_end(text, first.end))
    return [m for m in found if m.group("sep") == shape.group("sep") and _plausible(m)]


# --- outcomes ------------------------------------------------------------------------------

_AFTER_NAME = re.compile(
    r"\s*(?:\([^)]{0,20}\)\s*)?(?:for|of)\s+(?P<o>(?:(?!\b(?:was|were|is|in\s+the\s+\w+\s+group)"
    r"\b)[^,;:()\[\]=\d])+?)\s*(?=[,;:(\[=]|\b(?:was|were|is)\b|\d|in\s+the\s+\w+\s+group)",
    re.I,
)
_ANY_ESTIMATE = re.compile(
    rf"(?<![\w.,]){_VAL}\s*[(\[;,]\s*(?:(?:95|90|99)\s*%\s*)?(?:CI|C\.I\.|confidence)"
    rf"|{_MEASURE}{_LINK}{_VAL}",
    re.I,
)
_LINK_WORDS = (
    r"(?:with|of|was|were|is|are|by|at|a|an|the|and|or|as|to|in|from|ranging|respectively"
    r"|adjusted|unadjusted|crude|overall|estimated|an?\s+increase|a\s+decrease|odds|ratios?"
    r"|risk|hazard|relative|mean|difference|95%|CIs?|confidence|intervals?|[(\[]?M-?H-?)"
)
_TRAILING = re.compile(rf"(?:[\s,(\[]+|\b{_LINK_WORDS}\b|{_MEASURE})+\s*$", re.I)
_ONLY_LINKS = re.compile(rf"(?:\s*(?:\b{_LINK_WORDS}\b|{_MEASURE}|[(\[\]),]))*\s*", re.I)
_FOR_AFTER = re.compile(r"\s*(?:times\s+\w+\s+)?for\s+(?P<o>[^,;()\[\]\d]{3,80}?)\s*(?=[,;(\[]|$)")
_VALUE_AT = re.compile(rf"{_VAL}(?:\s*{_UNIT})?")
_LEADING = re.compile(
    r"^(?:(?:and|but|while|whereas|or)\s+)?(?:(?:the|a|an|this|that|these|those|its|their|our)\s+)?",
    re.I,
)
_CONTENT = re.compile(r"[A-Za-z]{3,}|[A-Z]{2,}")


def _trim(text: str, start: int, end: int) -> tuple[int, int] | None:
    """``(start, end)`` of ``text[start:end]`` without white space, articles and punctuation
    at its ends, cut to its last :data:`CLAUSE_WORDS` words and :data:`OUTCOME_CHARS`
    characters; ``None`` when no word of three letters (or an abbreviation) is left."""
    while start < end and not text[start].isalnum():
        start += 1
    while end > start and not (text[end - 1].isalnum() or text[end - 1] in ")%"):
        end -= 1
    lead = _LEADING.match(text[start:end])
    if lead:
        start += lead.end()
    words = list(re.finditer(r"\S+", text[start:end]))
    while words and (len(words) > CLAUSE_WORDS or end - (start + words[0].start()) > OUTCOME_CHARS):
        words.pop(0)
    if not words or not _CONTENT.search(text[start + words[0].start() : end]):
        return None
    return start + words[0].start(), end


def _phrase_before(text: str, sentence_start: int, at: int) -> tuple[int, int] | None:
    """The phrase right before the bracket at ``at``: its clause (back to the last comma,
    ";", ":" or the sentence start), or, when that is the measure's name or links only, the
    clause words before it (:func:`_clause_before`)."""
    start = max(sentence_start, *(text.rfind(c, sentence_start, at) + 1 for c in ",;:)]"))
    found = _trim(text, start, at)
    if found is not None and not _ONLY_LINKS.fullmatch(text[found[0] : found[1]]):
        return found
    return _clause_before(text, sentence_start, start)


def _clause_before(text: str, sentence_start: int, at: int) -> tuple[int, int] | None:
    """The words of the estimate's clause before it: from the sentence start (or the last
    ";" / ":") to the first estimate of the clause (a list "0.33 (...), 0.37 (...)" shares its
    words), without the measure's name and linking words at its end, at most
    :data:`CLAUSE_WORDS` words (the last ones)."""
    start = max(sentence_start, *(text.rfind(c, sentence_start, at) + 1 for c in ";:"))
    first = _ANY_ESTIMATE.search(text, start, at)
    end = first.start() if first is not None else at
    while True:
        tail = _TRAILING.search(text, start, end)
        if tail is None or tail.start() == end:
            break
        end = tail.start()
    return _trim(text, start, end)


CLAUSE_WORDS = 16
"""Most words of a clause shown as an estimate's outcome (the last ones)."""

OUTCOME_CHARS = 140
"""Most characters of an outcome phrase."""


def outcome_of(
    text: str, start: int, value_start: int, end: int, measure_name: str | None
) -> tuple[int, int] | None:
    """Where the sentence around an estimate (``text[start:end]``, its value at
    ``value_start``) names what it measures (see the module docstring), as ``(start,
    end)`` offsets; ``None`` when it does not."""
    s, e = sentence_around(text, start)
    if e <= s:
        s, e = 0, len(text)
    if measure_name:
        after = _AFTER_NAME.match(text, start + len(measure_name), value_start + 1)
        if after is not None:
            found = _trim(text, after.start("o"), after.end("o"))
            if found:
                return found
    opener = text.rfind("(", s, start + 1)
    if opener >= s and text.rfind(")", opener, start) < 0:  # the estimate is in brackets
        found = _phrase_before(text, s, opener)
        if found:
            return found
    value = _VALUE_AT.match(text, value_start)
    after_value = _FOR_AFTER.match(text, value.end() if value else end, e)
    if after_value is not None:
        found = _trim(text, after_value.start("o"), after_value.end("o"))
        if found:
            return found
    return _clause_before(text, s, start)
