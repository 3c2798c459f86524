"""The study record of an evidence item read by rules, and the verbatim check every study
record passes (the rules' and a model's alike).

Offline extraction (:func:`extract_study`) reads the item's abstract (``Evidence.content``,
structured abstracts as ``LABEL: text`` paragraphs, as :mod:`deepcritical.formats.pubmed_xml`
keeps them) and, for a full text, the passages of its Methods and Results sections and its
tables (``Evidence.passages``). It looks for the standard reporting patterns:

- sample size: "a total of 1,024 patients were randomised", "the study population comprised
  196 pregnant women", "we retrospectively analyzed 2770 patients", "248 women", "n = 248",
  numbers written in words ("Sixty-seven patients"). Counts followed by a percentage ("61
  patients (9%)") are subgroups and are not read. The count stated as a whole sample is
  preferred to a bare count, and Methods / Participants / Results sections to the
  background or conclusions;
- effect estimates: "OR 2.4, 95% CI 1.3, 4.6", "hazard ratio, 0.45; 95% confidence interval
  [CI], 0.33 to 0.63", "(RR 0.8; 95% CI 0.6–0.9; p = 0.02)", "AUC of 0.87 (95% CI:
  0.82-0.91)", "sensitivity 92%", and an estimate with a CI but no named measure (measure
  ``estimate``); the measure is normalised to a short code (``OR``, ``HR``, ``RR``, ``IRR``,
  ``MD``, ``SMD``, ``RD``, ``beta``, ``AUC``, ``sensitivity``...);
- population (a PARTICIPANTS / PATIENTS / SUBJECTS / POPULATION section, else the sample-size
  clause), setting (SETTING section, else "at/in ... hospital/centre/clinic"), intervention
  and comparator (INTERVENTION section, "randomised to X or Y", "X versus Y" in the aim),
  outcomes (MAIN OUTCOME MEASURES section, "the primary outcome was ..."), follow-up ("median
  follow-up of 32 months");
- the phrases GRADE-style certainty reads (:mod:`deepcritical.evidence.certainty`):
  randomisation and blinding stated (not negated: "non-randomised", "open-label" do not
  count), single centre or multicentre, a dose-response.

Every value keeps its proof, a :class:`~deepcritical.models.TextSpan` (quote and character
offsets in the abstract or the passage). :func:`checked_record` then verifies each proof
against the item's text exactly (``text[start:end] == quote`` and the value a substring of
the quote) and drops, and counts in ``values_dropped``, every value that fails: the same
check applies to a model's record (:mod:`deepcritical.agents.appraiser`), whose quotes are
first located in the text with :func:`locate_quote`.

Limits: patterns, not understanding. Group counts without a stated total give no sample
size; a CI given before its estimate or in a table's separate columns is usually missed; the
"primary" estimate is the first one reported with a CI, not necessarily the primary
outcome's. ``benchmarks/bench_appraisal.py`` measures recall on hand-labelled abstracts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from deepcritical.evidence.grading import grade_evidence
from deepcritical.models import (
    EffectEstimate,
    Evidence,
    ExtractedValue,
    PassageKind,
    StudyRecord,
    TextSpan,
    parse_number,
)
from deepcritical.models._appraisal import NUMBER_WORDS, SINGLE_VALUE_FIELDS

__all__ = [
    "Section",
    "appraise_items",
    "checked_record",
    "extract_study",
    "find_effects",
    "find_sample_size",
    "locate_quote",
    "proof_text",
    "sections_of",
    "span",
]

MAX_VALUE_CHARS = 240
"""Longest quote kept for a text value (population, setting, outcomes): a longer sentence is
cut to its first 240 characters (still a verbatim span)."""

_LABEL = re.compile(r"([A-Z][A-Z0-9 &/,()'-]{1,60}):\s")

_METHODS_LABELS = (
    "METHOD",
    "PATIENT",
    "PARTICIPANT",
    "SUBJECT",
    "SETTING",
    "DESIGN",
    "POPULATION",
    "MATERIAL",
    "RESULT",
    "FINDING",
    "MEASURE",
    "INTERVENTION",
    "OUTCOME",
    "OBSERVATION",
    "DATA",
)
_LATE_LABELS = ("CONCLUSION", "DISCUSSION", "INTERPRETATION", "IMPLICATION")


@dataclass(frozen=True)
class Section:
    """One paragraph of a text: its label (``"METHODS"``; ``""`` unlabelled) and the
    character offsets of its body (after ``LABEL: ``) in the text."""

    label: str
    start: int
    end: int

    @property
    def rank(self) -> int:
        """0 for methods, participants and results (and unlabelled text), 1 for background
        and aims, 2 for conclusions: where a study's own figures are read first."""
        if not self.label or any(k in self.label for k in _METHODS_LABELS):
            return 0
        return 2 if any(k in self.label for k in _LATE_LABELS) else 1

    def has(self, *keys: str) -> bool:
        """True when the label contains one of ``keys`` (upper case)."""
        return any(k in self.label for k in keys)


def sections_of(text: str) -> list[Section]:
    """The paragraphs of ``text`` (split at blank lines or line feeds) with their labels."""
    out: list[Section] = []
    for m in re.finditer(r"[^\n]+", text):
        start, end = m.start(), m.end()
        label = ""
        lm = _LABEL.match(text, start, end)
        if lm:
            label = lm.group(1).strip().upper()
            start = lm.end()
        if text[start:end].strip():
            out.append(Section(label, start, end))
    return out


# --- numbers and nouns ---------------------------------------------------------------------

_WORD = "|".join(sorted(NUMBER_WORDS, key=len, reverse=True))
_WORDNUM = rf"(?:{_WORD})(?:(?:[\s-]+|\s+and\s+)(?:{_WORD}))*"
_DIGITNUM = r"\d{1,3}(?:[,\u2009\u202f\u00a0 ]\d{3})+(?![\d.])|\d+(?![\d.,]\d)"
_NUM = rf"(?P<n>{_DIGITNUM}|{_WORDNUM})"
_PEOPLE = (
    r"(?:patients|participants|subjects|women|men|children|adults|infants|neonates|newborns"
    r"|individuals|persons|people|volunteers|cases|students|residents|mothers|adolescents"
    r"|girls|boys|youths?|smokers|workers|employees|nurses|physicians|doctors|surgeons"
    r"|respondents|pregnancies|deliveries|births|beneficiaries|veterans|members|eyes|families"
    r"|couples|users|donors|recipients|survivors|athletes|soldiers|twins|outpatients"
    r"|inpatients|households|rats|mice|animals|dogs|pigs|rabbits|controls|females|males"
    r"|elderly|pairs)"
)
_MODS = r"(?:[A-Za-z][\w'/-]*,?\s+){0,4}?"
_VERBS = (
    r"(?:randomi[sz]ed|randomly|enrolled|included|recruited|studied|analy[sz]ed|evaluated"
    r"|assessed|examined|identified|investigated|surveyed|followed|treated|operated|allocated"
    r"|assigned|interviewed|screened|reviewed|selected|eligible|available)"
)

_N_TIER1 = [
    re.compile(rf"\b(?:a\s+total\s+of|in\s+total,?|overall,?)\s+{_NUM}\s+{_MODS}{_PEOPLE}\b", re.I),
    re.compile(
        rf"(?<![\d.])\b{_NUM}\s+{_MODS}{_PEOPLE}\b[^.;]{{0,60}}?\b(?:were|was|had\s+been)\s+"
        rf"(?:\w+\s+)?{_VERBS}",
        re.I,
    ),
    re.compile(
        r"\b(?:study\s+(?:population|sample|group|cohort)|sample|cohort|population)\s+"
        rf"(?:size\s+)?(?:comprised|consisted\s+of|included|involved|of|was|were)\s+(?:of\s+)?"
        rf"{_NUM}\b",
        re.I,
    ),
    re.compile(
        rf"\b(?:we|this\s+study|the\s+study|study)\s+(?:\w+\s+){{0,2}}?{_VERBS}\s+"
        r"(?:a\s+total\s+of\s+|data\s+(?:on|from)\s+|the\s+(?:medical\s+)?records\s+of\s+)?"
        rf"{_NUM}\s+{_MODS}{_PEOPLE}\b",
        re.I,
    ),
]
_N_TIER2 = [
    re.compile(
        rf"\b(?:of|among|in)\s+(?:the\s+|all\s+|these\s+)?(?:remaining\s+)?{_NUM}\s+{_MODS}"
        rf"{_PEOPLE}\b",
        re.I,
    ),
    re.compile(rf"(?<![\d.,])\b{_NUM}\s+{_MODS}{_PEOPLE}\b", re.I),
]
_N_TIER3 = [re.compile(r"\b[nN]\s*=\s*(?P<n>\d{1,3}(?:,\d{3})+|\d+)\b")]
_AFTER_COUNT = re.compile(rf"\s+{_MODS}{_PEOPLE}\b", re.I)
_SUBGROUP_AFTER = re.compile(r"\s*\(\s*\d+(?:\.\d+)?\s*%")
_SUBGROUP_BEFORE = re.compile(r"\d\s*(?:of|out\s+of)\s*$", re.I)
_ANALYSED = re.compile(
    rf"(?<![\d.,])\b{_NUM}\s+{_MODS}(?:{_PEOPLE}\s+)?(?:were|was)\s+(?:\w+\s+)?"
    r"(?:analy[sz]ed|included\s+in\s+the\s+(?:final\s+)?analys[ie]s|available\s+for\s+analysis"
    r"|evaluable)",
    re.I,
)
_CLAUSE_END = re.compile(
    r"[.;:()\[\]]|,\s|\s(?:were|was|underwent|to\s+receive|and\s+\d)\s|\s(?:to|into)\s+(?:a|an|the|one|two|either|receive)\b"
)


def _span(text: str, start: int, end: int, passage: int | None, where: str) -> TextSpan:
    return TextSpan(quote=text[start:end], start=start, end=end, passage=passage, where=where)


def span(text: str, start: int, end: int, passage: int | None = None) -> TextSpan:
    """A :class:`TextSpan` of ``text[start:end]`` (``passage`` ``None``: the abstract)."""
    return _span(text, start, end, passage, "abstract" if passage is None else "full text")


@dataclass(frozen=True)
class _Source:
    """One text the rules read: the abstract (``passage`` None) or one passage."""

    text: str
    passage: int | None
    where: str

    def value(self, start: int, end: int, value: str | None = None) -> ExtractedValue:
        quote_end = min(end, start + MAX_VALUE_CHARS)
        proof = _span(self.text, start, quote_end, self.passage, self.where)
        return ExtractedValue(value=value if value is not None else proof.quote, proof=proof)


def _plausible_count(raw: str) -> bool:
    number = parse_number(raw)
    return number is not None and 2 <= number < 100_000_000 and not 1900 <= number <= 2030


def find_sample_size(text: str) -> tuple[int, int, int, int] | None:
    """Where ``text`` states its sample size: ``(value_start, value_end, clause_start,
    clause_end)`` character offsets of the count as written and of the clause it names
    (``"2770 patients"``), or ``None``. Tiers, best first: a count stated as the whole
    sample ("a total of", "N patients were enrolled", "the study population comprised N",
    "we included N patients"), then a count of people ("among 196 women", "248 women"), then
    ``n = N``; within a tier, Methods / Participants / Results before background and
    conclusions, then reading order."""
    best: tuple[tuple[int, int, int], tuple[int, int, int, int]] | None = None
    for section in sections_of(text):
        for tier, patterns in enumerate((_N_TIER1, _N_TIER2, _N_TIER3)):
            for pattern in patterns:
                for m in pattern.finditer(text, section.start, section.end):
                    found = _count_match(text, m, section.end)
                    if found is None:
                        continue
                    key = (tier, section.rank, found[0])
                    if best is None or key < best[0]:
                        best = (key, found)
    return best[1] if best else None


def _count_match(text: str, m: re.Match[str], limit: int) -> tuple[int, int, int, int] | None:
    start, end = m.start("n"), m.end("n")
    raw = text[start:end]
    if not _plausible_count(raw):
        return None
    noun = _AFTER_COUNT.match(text, end, limit)
    after = noun.end() if noun else end
    if _SUBGROUP_AFTER.match(text, after, limit) or _SUBGROUP_BEFORE.search(text, 0, start):
        return None
    if m.re in _N_TIER3 and len(re.findall(r"\b[nN]\s*=", _sentence_at(text, start))) > 1:
        return None  # group sizes ("TERPT, n = 20; ABD, n = 21"), not the whole sample
    stop = _CLAUSE_END.search(text, end, min(limit, end + 160))
    clause_end = stop.start() if stop else min(limit, end + 160)
    clause_end = start + len(text[start:clause_end].rstrip())
    return start, end, start, max(clause_end, end)


def _sentence_at(text: str, index: int) -> str:
    start = max(text.rfind(". ", 0, index), text.rfind("\n", 0, index)) + 1
    stop = text.find(". ", index)
    return text[start : stop if stop >= 0 else len(text)]


# --- effect estimates ----------------------------------------------------------------------

_VAL = r"[-−–]?\d+(?:\.\d+)?%?"
_UNIT = r"(?:mm\s?Hg|mg/dL|mmol/L|kg/m2|kg|cm|mm|days?|weeks?|months?|years?|points?)\b"
_CI_INTRO = (
    r"(?:(?:95|90|99)\s*(?:%|percent|per\s+cent)\s*)?"
    r"(?:CIs?\b|C\.I\.|(?i:confidence\s+(?:intervals?|limits?)))"
    r"(?:\s*[\[(](?:95\s*%\s*)?CI[\])])?"
)
_CI = (
    rf"{_CI_INTRO}\s*(?:[:=,]|of|was)?\s*[\[(]?\s*(?P<lo>{_VAL})\s*(?:to|-|–|—|,|;|and)\s*"
    rf"(?P<hi>{_VAL})(?:\s*{_UNIT})?\s*[\])]?"
)
_P = r"(?:\s*[;,]\s*(?:[pP]|[pP][\s-]value)\s*(?P<pop>[=<>≤≥])\s*(?P<p>[-−]?\d*\.?\d+))?"
_NAMES = (
    r"(?i:adjusted\s+odds\s+ratios?|odds\s+ratios?|adjusted\s+hazard\s+ratios?|hazard\s+ratios?"
    r"|risk\s+ratios?|relative\s+risks?|incidence\s+rate\s+ratios?|rate\s+ratios?"
    r"|prevalence\s+ratios?|standardi[sz]ed\s+mean\s+differences?|weighted\s+mean\s+differences?"
    r"|mean\s+differences?|risk\s+differences?|absolute\s+risk\s+reductions?"
    r"|area\s+under\s+the\s+(?:receiver[\s-]operating[\s-]characteristic\s+|ROC\s+)?curves?"
    r"|sensitivity|specificity|positive\s+predictive\s+values?|negative\s+predictive\s+values?"
    r"|diagnostic\s+accuracy|accuracy)"
)
_ABBRS = (
    r"(?<![A-Za-z])(?:aORs?|AORs?|ORs?|aHRs?|HRs?|aRRs?|IRRs?|RRs?|PRs?|SMDs?|WMDs?|MDs?|RDs?"
    r"|ARRs?|AUROC|AUC|PPV|NPV|β|[Bb]eta)(?![A-Za-z])"
)
_MEASURE = rf"(?P<m>{_NAMES}|{_ABBRS})"
_LINK = r"(?:\s*[\[(][A-Za-z ]{1,12}[\])])?\s*(?:[,:=]|\bof\b|\bwas\b|\bwere\b|\bis\b)?\s*[=:]?\s*"
_TAIL = rf"(?:\s*±\s*{_VAL})?[^\d;()\[\]\n]{{0,30}}?(?:\s*[(\[]|\s*[;,])\s*"
_EFFECT_NAMED = re.compile(rf"{_MEASURE}{_LINK}(?P<v>{_VAL})(?:{_TAIL}{_CI}{_P})?")
_EFFECT_FAR = re.compile(
    rf"{_MEASURE}\b[^.;\n]{{0,80}}?(?:\b(?:was|were|of|is)\s+|,\s*)(?P<v>{_VAL})"
    rf"\s*(?:[(\[]|[;,])\s*{_CI}{_P}"
)
_EFFECT_CI_FIRST = re.compile(rf"[(\[]\s*{_CI}\s*,\s*{_MEASURE}\s*[=:]?\s*(?P<v>{_VAL})")
_EFFECT_BARE = re.compile(rf"(?<![\w.])(?P<v>{_VAL}){_TAIL}{_CI}{_P}")

_MEASURE_CODES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"standardi[sz]ed\s+mean|^SMD", re.I), "SMD"),
    (re.compile(r"mean\s+diff|^W?MD", re.I), "MD"),
    (re.compile(r"odds|^a?ORs?$", re.I), "OR"),
    (re.compile(r"hazard|^a?HRs?$", re.I), "HR"),
    (re.compile(r"incidence\s+rate|^IRRs?$|^rate\s+ratio", re.I), "IRR"),
    (re.compile(r"prevalence\s+ratio|^PRs?$", re.I), "PR"),
    (re.compile(r"risk\s+ratio|relative\s+risk|^a?RRs?$", re.I), "RR"),
    (re.compile(r"risk\s+diff|absolute\s+risk|^A?RDs?$|^ARR$", re.I), "RD"),
    (re.compile(r"area\s+under|^AUC|^AUROC", re.I), "AUC"),
    (re.compile(r"sensitivity", re.I), "sensitivity"),
    (re.compile(r"specificity", re.I), "specificity"),
    (re.compile(r"positive\s+predictive|^PPV$", re.I), "PPV"),
    (re.compile(r"negative\s+predictive|^NPV$", re.I), "NPV"),
    (re.compile(r"accuracy", re.I), "accuracy"),
    (re.compile(r"^β$|^beta$", re.I), "beta"),
]
_NAMED_BEFORE = re.compile(rf"{_MEASURE}[^.;\n]{{0,60}}$")


def _measure_code(name: str) -> str:
    for pattern, code in _MEASURE_CODES:
        if pattern.search(name.strip()):
            return code
    return "estimate"


def _effect(src: _Source, m: re.Match[str], measure: str) -> EffectEstimate:
    groups = m.groupdict()
    p_value: str | None = None
    if groups.get("p") is not None:
        op = groups.get("pop") or "="
        p_value = groups["p"] if op == "=" else src.text[m.start("pop") : m.end("p")]
    return EffectEstimate(
        measure=measure,
        value=groups["v"],
        ci_low=groups.get("lo"),
        ci_high=groups.get("hi"),
        p_value=p_value,
        proof=_span(src.text, m.start(), m.end(), src.passage, src.where),
    )


def find_effects(text: str) -> list[tuple[int, int, re.Match[str], str]]:
    """The effect estimates written in ``text``, in reading order, without overlaps:
    ``(start, end, match, measure code)``. A named measure with its value and optional CI
    ("OR = 1.44, 95% CI: 1.06-1.96"), a CI before its estimate ("(95% confidence interval
    0.38, 1.49, odds ratio = 0.75)"), a measure named further before its value ("the relative
    risk ... was 1.47 (95% CI 1.15-1.88)"), a named measure without a CI ("sensitivity 92%"),
    then a value with a CI and no named measure (its measure read from a name shortly before
    it in the sentence, else ``estimate``); an estimate with a CI is preferred to an
    overlapping one without."""
    found: list[tuple[int, int, re.Match[str], str]] = []

    def free(start: int, end: int) -> bool:
        return all(end <= s or start >= e for s, e, _, _ in found)

    for pattern, with_ci in (
        (_EFFECT_NAMED, True),
        (_EFFECT_CI_FIRST, True),
        (_EFFECT_FAR, True),
        (_EFFECT_NAMED, False),
    ):
        for m in pattern.finditer(text):
            if m.groupdict().get("lo") is None and with_ci:
                continue
            if free(m.start(), m.end()) and _plausible_effect(m):
                found.append((m.start(), m.end(), m, _measure_code(m.group("m"))))
    for m in _EFFECT_BARE.finditer(text):
        if free(m.start(), m.end()) and _plausible_effect(m):
            before = _NAMED_BEFORE.search(text, max(0, m.start() - 70), m.start())
            code = _measure_code(before.group("m")) if before else "estimate"
            found.append((m.start(), m.end(), m, code))
    return sorted(found, key=lambda f: f[0])


def _plausible_effect(m: re.Match[str]) -> bool:
    """Not a year, a bare "95" of "95% CI", or a CI whose bounds are not numbers."""
    value = parse_number(m.group("v"))
    if value is None or (1900 <= abs(value) <= 2030 and "." not in m.group("v")):
        return False
    lo = m.groupdict().get("lo")
    return lo is None or parse_number(lo) is not None


# --- text values ---------------------------------------------------------------------------

_POPULATION_LABELS = ("PARTICIPANT", "PATIENTS", "SUBJECTS", "POPULATION")
_OUTCOME_LABELS = ("OUTCOME", "MEASUREMENTS", "END POINT", "ENDPOINT")
_FOLLOW_UP = re.compile(
    r"\b(?:(?:median|mean|minimum|maximum|average)\s+)?follow(?:ed)?[\s-]?up\s+(?:period\s+|time\s+|"
    r"duration\s+)?(?:of|was|lasted|for|at)?\s*(?:(?:a|an)\s+)?(?:(?:median|mean)\s+(?:of\s+)?)?"
    rf"(?P<v>(?:\d+(?:\.\d+)?|{_WORDNUM})[\s-]*(?:days?|weeks?|months?|years?))",
    re.I,
)
_FOLLOWED_FOR = re.compile(
    r"\bfollowed(?:\s+up)?\s+for\s+(?:(?:a|an)\s+)?(?:(?:median|mean)\s+(?:of\s+)?)?"
    rf"(?P<v>(?:\d+(?:\.\d+)?|{_WORDNUM})[\s-]*(?:days?|weeks?|months?|years?))",
    re.I,
)
_SETTING = re.compile(
    r"\b(?:at|in)\s+(?:the\s+|a\s+|an\s+|two\s+|three\s+|four\s+|our\s+)?(?P<v>[^,.;()\n]{0,60}?"
    r"\b(?:[Hh]ospitals?|[Cc]ent(?:er|re)s?|[Cc]linics?|[Uu]niversity|[Ii]nstitut(?:e|ion)s?"
    r"|[Pp]ractices?|[Nn]ursing\s+homes?|[Ww]ards?|[Uu]nits?)\b[^,.;()\n]{0,60})"
)
_RANDOMISED_TO = re.compile(
    r"\brandom(?:i[sz]ed|ly\s+(?:assigned|allocated))\s+(?:\w+\s+){0,3}?(?:to|into)\s+"
    r"(?:receive\s+|either\s+)?(?P<i>[^,;.()\n]{3,100}?)\s+(?:or|versus|vs\.?|compared\s+with)\s+"
    r"(?P<c>[^,;.()\n]{3,100})",
    re.I,
)
_VERSUS = re.compile(
    r"(?P<i>[A-Za-z][\w/+-]*(?:\s+[A-Za-z][\w/+-]*){0,5})\s+(?:versus|vs\.?|compared\s+with)\s+"
    r"(?P<c>[A-Za-z][\w/+-]*(?:\s+[A-Za-z(][\w/+)-]*){0,5})"
)
_PRIMARY_OUTCOME = re.compile(
    r"\b(?:primary|main)\s+(?:outcomes?|end\s?points?)(?:\s+measures?)?\s+(?:was|were|is|included)"
    r"\s+(?P<v>[^.;\n]{3,150})",
    re.I,
)
_NEGATION = re.compile(r"\b(?:no|not|non|without|lack\w*|absence|neither|nor|un)[\s-]*$", re.I)
_CUES: dict[str, re.Pattern[str]] = {
    "randomised": re.compile(
        r"\brandomi[sz](?:ed|ation)\b|\brandomly\s+(?:assigned|allocated)\b"
        r"|\brandom\s+(?:allocation|assignment)\b",
        re.I,
    ),
    "blinded": re.compile(
        r"\b(?:double|single|triple|quadruple)[\s-]+(?:blind(?:ed)?|mask(?:ed)?)\b"
        r"|\b(?:blinded|masked)\b",
        re.I,
    ),
    "single_centre": re.compile(
        r"\bsingle[\s-](?:cent(?:er|re)|institution|site|hospital)\b|\b(?:at|in)\s+our\s+"
        r"(?:institution|hospital|cent(?:er|re)|clinic|department|unit)\b",
        re.I,
    ),
    "multicentre": re.compile(r"\bmulti-?(?:cent(?:er|re|ric)|institutional|site)\b", re.I),
    "dose_response": re.compile(r"\bdose[\s–-]*(?:response|dependen\w+|related)\b", re.I),
}


def _negated(text: str, start: int) -> bool:
    return bool(_NEGATION.search(text, max(0, start - 24), start))


def _first_sentence(src: _Source, section: Section) -> ExtractedValue:
    body = src.text[section.start : section.end]
    stop = re.search(r"\.\s", body)
    end = section.start + (stop.start() + 1 if stop else len(body.rstrip()))
    return src.value(section.start, end)


def _cue(src: _Source, sections: list[Section], name: str) -> ExtractedValue | None:
    pattern = _CUES[name]
    for section in sections:
        for m in pattern.finditer(src.text, section.start, section.end):
            if name != "multicentre" and _negated(src.text, m.start()):
                continue
            if name == "randomised" and re.search(
                r"\b(?:selected|sampled|chosen)\b", src.text[m.end() : m.end() + 12]
            ):
                continue  # "randomly selected": sampling, not allocation
            return src.value(m.start(), m.end())
    return None


def _sections_value(
    src: _Source, sections: list[Section], labels: tuple[str, ...]
) -> ExtractedValue | None:
    for section in sections:
        if section.has(*labels):
            return _first_sentence(src, section)
    return None


def _search_value(
    src: _Source, sections: list[Section], pattern: re.Pattern[str], group: str = "v"
) -> ExtractedValue | None:
    for section in sorted(sections, key=lambda s: s.rank):
        m = pattern.search(src.text, section.start, section.end)
        if m:
            return src.value(m.start(group), m.end(group))
    return None


def _comparison(
    src: _Source, sections: list[Section]
) -> tuple[ExtractedValue | None, ExtractedValue | None]:
    intervention = _sections_value(src, sections, ("INTERVENTION",))
    for section in sections:
        m = _RANDOMISED_TO.search(src.text, section.start, section.end)
        if m:
            return (
                intervention or src.value(m.start("i"), m.end("i")),
                src.value(m.start("c"), m.end("c")),
            )
    for section in sections:
        if section.has("OBJECTIVE", "AIM", "PURPOSE") or not section.label:
            first = _first_sentence(src, section)
            m = _VERSUS.search(src.text, first.proof.start, first.proof.end)
            if m and not re.search(r"\d", m.group("i") + m.group("c")):
                return (
                    intervention or src.value(m.start("i"), m.end("i")),
                    src.value(m.start("c"), m.end("c")),
                )
            break
    return intervention, None


# --- the record ----------------------------------------------------------------------------


def _sources(evidence: Evidence) -> Iterator[_Source]:
    """The abstract, then the full text's Methods and Results passages and its tables."""
    yield _Source(evidence.content, None, "abstract")
    for i, p in enumerate(evidence.passages):
        path = " ".join(p.section).lower()
        if p.kind is PassageKind.TABLE or any(
            k in path for k in ("result", "method", "patient", "participant", "finding")
        ):
            yield _Source(p.text, i, p.locator())


def _read_source(record: StudyRecord, src: _Source) -> None:
    """Fill the record's empty fields from ``src`` (effects are appended)."""
    sections = sections_of(src.text)
    if record.sample_size is None:
        found = find_sample_size(src.text)
        if found is not None:
            clause = src.value(found[2], found[3])
            record.sample_size = ExtractedValue(
                value=src.text[found[0] : found[1]], proof=clause.proof
            )
            if record.population is None and found[3] > found[1]:
                record.population = clause
    if record.analysed is None:
        record.analysed = _search_value(src, sections, _ANALYSED, "n")
    record.effects += [_effect(src, m, code) for _, _, m, code in find_effects(src.text)]
    if src.passage is not None:
        return
    population = _sections_value(src, sections, _POPULATION_LABELS)
    record.population = population or record.population
    record.setting = _sections_value(src, sections, ("SETTING",)) or _search_value(
        src, [s for s in sections if s.rank == 0], _SETTING
    )
    record.intervention, record.comparator = _comparison(src, sections)
    outcome = _sections_value(src, sections, _OUTCOME_LABELS) or _search_value(
        src, sections, _PRIMARY_OUTCOME
    )
    record.outcomes = [outcome] if outcome is not None else []
    record.follow_up = _search_value(src, sections, _FOLLOW_UP) or _search_value(
        src, sections, _FOLLOWED_FOR
    )
    own = [s for s in sections if s.rank < 2]
    record.randomised = _cue(src, own, "randomised")
    record.blinded = _cue(src, own, "blinded")
    record.single_centre = _cue(src, own, "single_centre")
    record.multicentre = _cue(src, own, "multicentre")
    record.dose_response = _cue(src, sections, "dose_response")


def extract_study(evidence: Evidence) -> StudyRecord:
    """The study record of ``evidence`` read by rules from its abstract and, for a full text,
    its Methods / Results passages and tables (see the module docstring), verified with
    :func:`checked_record`. Pure and fast (regular expressions; ~1 ms per abstract)."""
    record = StudyRecord(
        design=grade_evidence(evidence).value, method="rules", full_text=evidence.full_text
    )
    for src in _sources(evidence):
        _read_source(record, src)
    return checked_record(record, evidence)


def appraise_items(items: Iterable[Evidence]) -> int:
    """Give every item without a study record one read by rules (:func:`extract_study`), and
    read again the items whose full text arrived since (a record read from the abstract
    only); a model's record (``method == "model"``) is kept unless the full text is new.
    Items are changed in place. Returns how many were (re)read."""
    done = 0
    for item in items:
        if item.study is None or item.study.full_text != item.full_text:
            item.study = extract_study(item)
            done += 1
    return done


# --- the verbatim check --------------------------------------------------------------------


def proof_text(evidence: Evidence, proof: TextSpan) -> str | None:
    """The text a proof points into: the item's content, or its passage ``proof.passage``;
    ``None`` when that passage does not exist."""
    if proof.passage is None:
        return evidence.content
    if proof.passage < len(evidence.passages):
        return evidence.passages[proof.passage].text
    return None


def _proven(evidence: Evidence, proof: TextSpan, values: list[str | None]) -> bool:
    text = proof_text(evidence, proof)
    if text is None or text[proof.start : proof.end] != proof.quote:
        return False
    return all(v is None or (v.strip() != "" and v in proof.quote) for v in values)


def _keep(evidence: Evidence, value: ExtractedValue | None) -> tuple[ExtractedValue | None, int]:
    if value is None:
        return None, 0
    return (value, 0) if _proven(evidence, value.proof, [value.value]) else (None, 1)


def checked_record(record: StudyRecord, evidence: Evidence) -> StudyRecord:
    """``record`` with every value whose proof does not hold dropped, and counted in
    ``values_dropped`` (added to what it already counts). A proof holds when its quote is
    exactly ``text[start:end]`` of the text it names (:func:`proof_text`) and every value it
    proves (a text value; an estimate's value, CI bounds and p) is a non-empty substring of
    the quote. Returns a new record; ``record`` is not changed."""
    dropped = 0
    fields: dict[str, object] = {}
    for name in SINGLE_VALUE_FIELDS:
        kept, lost = _keep(evidence, getattr(record, name))
        fields[name] = kept
        dropped += lost
    outcomes = [o for o in record.outcomes if _proven(evidence, o.proof, [o.value])]
    effects = [
        e
        for e in record.effects
        if _proven(evidence, e.proof, [e.value, e.ci_low, e.ci_high, e.p_value])
    ]
    dropped += len(record.outcomes) - len(outcomes) + len(record.effects) - len(effects)
    fields |= {
        "outcomes": outcomes,
        "effects": effects,
        "values_dropped": record.values_dropped + dropped,
    }
    return record.model_copy(update=fields)


def locate_quote(evidence: Evidence, quote: str) -> TextSpan | None:
    """Where ``quote`` (a model's excerpt) occurs in the item's abstract or one of its
    passages: exactly, else with white space collapsed (the span then covers the text as
    written there). Case-sensitive: a paraphrase is not found. ``None`` when it is nowhere."""
    needle = quote.strip().strip("\"'“”‘’")
    if not needle:
        return None
    texts: list[tuple[str, int | None, str]] = [(evidence.content, None, "abstract")]
    texts += [(p.text, i, p.locator()) for i, p in enumerate(evidence.passages)]
    for text, passage, where in texts:
        at = text.find(needle)
        if at >= 0:
            return _span(text, at, at + len(needle), passage, where)
        flexible = r"\s+".join(re.escape(w) for w in needle.split())
        m = re.search(flexible, text)
        if m:
            return _span(text, m.start(), m.end(), passage, where)
    return None
