"""A study's sample size read from its abstract or a full-text passage by rules, only when the
text states it with confidence.

A scientist reads the n of a study table as the study's whole sample. A count that is in the
text but is not that sample ("Five" of "Five controls with HCA and five without ...", "two
were excluded", "1,003 examinations ... were screened", a figure from the background) is worse
than no value, so these rules read only what a sentence states as the sample and say "not
stated" (``None``) otherwise:

- **a stated total**: "a total of 1,024 patients were randomised", "In total, 455 patients",
  "248 women were enrolled", "994 were included in our study", "we retrospectively analysed
  2770 patients", "the study population comprised 196 women", "Nine hundred and ninety-three
  adults completed ...", a PARTICIPANTS / PATIENTS / SUBJECTS section that opens with its
  count ("PATIENTS: Eighty-five consecutive emergency surgical patients ..."), "N consecutive
  patients". The count must be the subject of its clause (or follow "a total of", "we
  included", "the sample comprised"), in a Methods, Participants or Results paragraph (or an
  unlabelled one), never in the background, aims or conclusions.
- **the sum of groups**: the same kind of sentence whose subject lists several counts and no
  total ("Five controls with HCA and five age-matched controls without HCA, seven depressed
  subjects ... and 12 without HCA were studied", "The subset consisted of 709 hospice and
  1,326 nonhospice residents", "35 patients and 26 controls were enrolled"): each part is
  kept with its proof and the sample is their sum, marked as such.

Never read as the sample: a count whose clause says it was excluded, refused, lost, withdrew,
died, declined, screened, identified, approached or found eligible (an included count read
later wins over an identified one: "Of 1,003 examinations ... 994 were included"), a count
followed by a percentage ("61 patients (9%)": a subgroup), the numerator of "X of N", counts
inside parentheses (a breakdown), ages, years, durations and doses. When two sentences state
different totals with the same strength (both "enrolled"), the text is ambiguous and no value
is read. The number analysed ("96 were analysed", "available for analysis", "evaluable") is
read apart (:func:`find_analysed`).

Measured against hand labels by ``benchmarks/bench_appraisal.py`` (precision first; tuned on
the labels' dev half only).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from deepcritical.models import parse_number
from deepcritical.text.abstract_sections import Section, sections_of, sentence_spans
from deepcritical.text.numbers import NUMBER

__all__ = [
    "CountSpan",
    "SampleSizeReading",
    "count_cues",
    "find_analysed",
    "find_sample_size",
    "names_other_count",
    "number_spans",
    "reading_value",
    "states_exclusion",
]


@dataclass(frozen=True)
class CountSpan:
    """A count as written: ``text[start:end]`` is the number ("1,024", "Sixty-seven");
    ``clause_end`` ends the phrase naming what it counts ("1,024 patients")."""

    start: int
    end: int
    clause_end: int


@dataclass(frozen=True)
class SampleSizeReading:
    """Where a text states its sample size: ``total`` (one count, the whole sample) or
    ``parts`` (two or more group sizes whose sum is the sample; ``total`` is then ``None``);
    ``strength`` how firmly the sentence says so (3: included, enrolled, randomised; 2:
    studied, analysed, surveyed...; 1: a denominator or an opening "Among N ..."); ``rule``
    names the form that read it ("total before", "subject", "n = N groups"...), for the
    benchmark's per-rule figures."""

    total: CountSpan | None
    parts: tuple[CountSpan, ...]
    strength: int
    rule: str = ""

    @property
    def spans(self) -> tuple[CountSpan, ...]:
        """The total, or the parts."""
        return (self.total,) if self.total is not None else self.parts


_PERSONS = (
    r"(?:patients|participants|subjects|women|men|children|adults|infants|neonates|newborns"
    r"|babies|individuals|persons|people|volunteers|cases|students|residents|mothers|fathers"
    r"|parents|adolescents|girls|boys|youths?|smokers|workers|employees|nurses|midwives"
    r"|physicians|doctors|surgeons|clinicians|practitioners|dentists|pharmacists|respondents"
    r"|pregnancies|deliveries|births|beneficiaries|veterans|members|families|couples|users"
    r"|donors|recipients|survivors|athletes|soldiers|twins|outpatients|inpatients|households"
    r"|rats|mice|animals|dogs|pigs|sheep|goats|rabbits|horses|cattle|cows|monkeys|controls"
    r"|females|males|elderly|pairs|dyads|trios|swine|patrons|clients|customers|inmates"
    r"|prisoners|refugees|migrants|drivers|pilots|attendees|attendants|trainees|interns"
    r"|fellows|applicants|laypersons|laypeople|undergraduates|graduates|learners|caregivers"
    r"|carers|humans|teenagers|toddlers|preschoolers|pupils|elders|pregnant\s+women|cadavers"
    r"|piglets|lambs|calves|ewes|primates|macaques|hamsters|ferrets|zebrafish|cats|chickens)"
)
"""Who a study's sample counts: people (and animals)."""

_UNITS = (
    r"(?:eyes|knees|hips|teeth|examinations|procedures|operations|consultations|admissions"
    r"|hearts|kidneys|livers|specimens|episodes|visits|encounters|reviews|manuscripts"
    r"|articles|records|charts|fractures|lesions|tumou?rs|nodules|biopsies|scans|joints|limbs|feet|hands|isolates)"
)
"""What a sample counts when it counts no people: eyes, examinations, records..."""

_PEOPLE = rf"(?:{_PERSONS}|{_UNITS})"
_UNIT_NOUN = re.compile(rf"\b{_UNITS}\b", re.I)

_FUNCTION_WORDS = (
    r"(?:were|was|is|are|had|has|have|been|be|by|of|in|on|at|to|for|from|with|without"
    r"|who|whom|that|which|whose|the|a|an|than|as|into|per|each|after|before|during|underwent"
    r"|received|completed|treated|performed)\b"
)
_MODS = (
    rf"(?:(?!{_FUNCTION_WORDS})(?:[A-Za-z][\w'/.+-]*|\d+(?:st|nd|rd|th)\b[\w-]*"
    r"|\d+(?:\.\d+)?[-–](?:years?|months?|weeks?|days?)[-–]old),?\s+){0,6}?"
)
_COUNT = re.compile(rf"(?<![\w.,/-])(?P<n>{NUMBER})(?![\w.]|\s*(?:%|percent|per\s+cent))", re.I)
_COUNT_PHRASE = re.compile(rf"\s+{_MODS}{_PEOPLE}\b", re.I)
_NOT_A_COUNT_AFTER = re.compile(
    r"\s*(?:[-–]?\s*(?:years?|yrs?|months?|weeks?|days?|hours?|h|min(?:utes?)?|seconds?|mg|g|kg"
    r"|ml|mL|l|cm|mm|m|km|µg|mcg|IU|mmHg|times?|fold|points?|items?|questions?|sessions?"
    r"|cycles?|doses?|steps?|stages?|groups?|arms?|categories|hospitals?\s+days|studies"
    r"|trials|articles|papers|publications|reports|databases|sites|countries|states|cities"
    r"|variables|factors|genes|SNPs|criteria|domains|dimensions|levels|scales|sections"
    r"|dimensional|[-–]\s*(?:year|month|week|day|hour|item|point))\b|\s*[:/×x]\s*\d"
    r"|\s*(?:to|-|–)\s*\d)",
    re.I,
)
_NOT_A_COUNT_BEFORE = re.compile(
    r"(?:\b(?:type|stage|grade|class|phase|level|day|week|month|year|visit|group|arm|version"
    r"|trial|study|model|score|aged?|age|over|under|than|least|most|between"
    r"|within|after|before|during|since|by|per|every|each|top|first|last|No|no|number|cohort)"
    r"|[<>=≤≥±~]|\d\s*(?:to|-|–))\s*$",
    re.I,
)

_VERB_STRENGTH: list[tuple[re.Pattern[str], int]] = [
    (
        re.compile(
            r"\b(?:enrolled|included|recruited|randomi[sz]ed|randomly\s+(?:assigned|allocated)"
            r"|allocated|assigned|entered|participated|participating|took\s+part|studied|registered"
            r"|consented|accepted|agreed\s+to\s+participate)\b",
            re.I,
        ),
        3,
    ),
    (
        re.compile(
            r"\b(?:analy[sz]ed|evaluated|examined|investigated|assessed|followed|surveyed"
            r"|interviewed|treated|operated|underwent|received|tested|observed|compared"
            r"|matched|selected|sampled|completed|responded|met|enrolled|involved|measured"
            r"|scanned|imaged|monitored|performed|recorded|collected|obtained|retrieved"
            r"|reviewed|admitted|seen|hospitali[sz]ed|diagnosed|identified\s+and\s+included"
            r"|used|divided|split|grouped|stratified|undergone)\b",
            re.I,
        ),
        2,
    ),
]
_REJECT_VERBS = re.compile(
    r"\b(?:excluded|exclusion|refused|declined|withdrew|withdrawn|lost|dropped|died|deaths?"
    r"|deceased|discontinued|ineligible|missing|failed|non-?respon\w*|did\s+not|could\s+not"
    r"|were\s+not|was\s+not|had\s+no|screened|identified|approached|invited|contacted"
    r"|eligible|potentially|assessed\s+for\s+eligibility|not\s+included"
    r"|(?<!the\s)remaining|remained|(?<!who\s)(?<!that\s)(?:developed|experienced|had\s+(?:a|an)\b"
    r"|presented\s+with|suffered))\b",
    re.I,
)
"""Verbs and words of a clause that make its count something other than the sample: the
excluded, the screened-only and the counts of events ("12 patients developed sepsis"; not
"patients who developed sepsis", which describes a population)."""

_INTRO = re.compile(
    r"^(?:(?:(?:in|from|between|during|over|since|at|of|among"
    r"|overall|altogether|finally|thus|then|subsequently|eventually|ultimately|in\s+all"
    r"|in\s+total|additionally|in\s+addition|after\s+\w+(?:\s+\w+){0,3})\b"
    r"(?:[^,;]|,(?=\S)){0,100},\s*)?(?:(?:a|the)\s+(?:total|sample|cohort|series|group"
    r"|population)\s+of\s+|all\s+|the\s+|these\s+)?)$",
    re.I,
)
"""What may stand before a count that is the subject of its sentence: an introductory
phrase ending with a comma ("Between 2009 and 2014, 751 patients ..."; "Of these, 300
were included"), "a total of", "all"."""

_TOTAL_BEFORE = re.compile(
    r"(?:(?<!\bfor\s)\b(?:a\s+total\s+of|in\s+total,?|overall,|altogether,?|^\s*in\s+all,)"
    r"|\bwe\s+(?:\w+ly\s+)?(?:enrolled|included|recruited|randomi[sz]ed|studied|analy[sz]ed"
    r"|assigned|allocated|screened\s+and\s+included"
    r"|evaluated|examined|investigated|assessed|followed|surveyed|interviewed|reviewed"
    r"|identified\s+and\s+included|prospectively\s+\w+|retrospectively\s+\w+|report\s+on"
    r"|describe|present)"
    r"(?:\s+(?:data\s+(?:on|from|of)|the\s+(?:medical\s+|clinical\s+|case\s+)?(?:records|charts"
    r"|notes|files|data)\s+of|a\s+(?:total|sample|cohort|series|group)\s+of|all))*"
    r"|\b(?:study|sample|cohort|population|series|subset|trial)\s+(?:size\s+)?"
    r"(?:comprised|consisted\s+of|included|involved|enrolled|was\s+composed\s+of|was|were|of)"
    r"(?:\s+(?:of|a\s+total\s+of|all))*"
    r"|\b(?:(?:the\s+)?(?:medical|clinical|case|hospital|patient)\s+)?(?:records|charts|notes"
    r"|files|case\s+notes|examinations|images|scans|radiographs|questionnaires)\s+(?:of|from|on)"
    r"(?:\s+all)?"
    r"|\b(?:cases|patients|participants|subjects|the\s+sample)\s+(?:were|comprised|included)"
    r"|\b(?:data|information)\s+(?:were|was)\s+(?:\w+\s+){0,2}?(?:collected|obtained|gathered"
    r"|extracted|analy[sz]ed|reviewed|recorded)\s+(?:\w+\s+){0,2}?(?:on|from|for|of|in)"
    r"(?:\s+(?:a\s+total\s+of|all))?"
    r"|\b(?:study|trial|survey|analysis|review|audit|series|investigation)\s+(?:was\s+)?"
    r"(?:\w+\s+){0,3}?(?:of|on|in|among|including|involving|with|comprising)"
    r"(?:\s+(?:a\s+total\s+of|all))?"
    r"|\b(?:collected|obtained|drawn|taken)\s+(?:\w+\s+){0,3}?from(?:\s+all)?"
    r"|\b(?:included|enrolled|recruited|comprised|involved|randomi[sz]ation\s+of)"
    r"(?:\s+(?:a\s+total\s+of|all|the))*"
    r"|\bdata\s+(?:from\s+[^,;]{0,80}?\s+)?(?:on|for|of)(?:\s+all)?"
    r"|\b(?:administered|given)\s+to(?:\s+all)?"
    r"|\b(?:made|obtained|conducted)\s+(?:\w+\s+){0,3}?on(?:\s+all)?)\s*$",
    re.I,
)
"""What before a count states it as the whole sample: "a total of", "we included", "the
study population comprised", "a retrospective study of"."""

_POPULATION_SECTION = ("PARTICIPANT", "PATIENT", "SUBJECT", "POPULATION", "SAMPLE")
_SUBGROUP_AFTER = re.compile(r"\s*[(\[]\s*\d+(?:\.\d+)?\s*%\s*(?:[)\],;]|of\b)")
_NUMERATOR_AFTER = re.compile(rf"\s*(?:of|out\s+of|/)\s*(?:the\s+)?{NUMBER}", re.I)
_DENOMINATOR_BEFORE = re.compile(r"[\d%]\s*(?:of|out\s+of|/)\s*(?:the\s+)?(?:all\s+)?$", re.I)
_LIST_JOIN = re.compile(
    r"^\s*(?:,\s*(?:and\s+|as\s+well\s+as\s+|plus\s+)?|and\s+|as\s+well\s+as\s+|plus\s+|versus\s+|vs\.?\s+)$",
    re.I,
)
_CLAUSE_VERB = re.compile(
    r"\b(?:were|was|had\s+been|have\s+been|are|is)\s+(?:\w+\s+){0,3}?"
    r"|\b(?:completed|participated|took\s+part|underwent|responded|met|received|entered"
    r"|consented|agreed)\b",
    re.I,
)


def _plausible(raw: str) -> bool:
    number = parse_number(raw)
    return number is not None and 2 <= number < 100_000_000 and not 1900 <= number <= 2030


def _depth(text: str, start: int, at: int) -> int:
    """How many brackets are open at ``at`` since ``start``."""
    depth = 0
    for ch in text[start:at]:
        if ch in "([":
            depth += 1
        elif ch in ")]" and depth:
            depth -= 1
    return depth


@dataclass(frozen=True)
class _Count:
    span: CountSpan
    has_noun: bool


def _counts(text: str, start: int, end: int) -> list[_Count]:
    """Every whole-number count of ``text[start:end]`` outside brackets that is not an age,
    year, duration, dose or a category number, with the phrase it counts."""
    return [
        _Count(span, span.clause_end > span.end)
        for span in number_spans(text, start, end)
        if not _depth(text, start, span.start)
        and not _NOT_A_COUNT_AFTER.match(text, span.end, end)
        and not _NOT_A_COUNT_BEFORE.search(text, start, span.start)
    ]


_CLAUSE_JOIN = re.compile(
    r"(?:;|,\s+(?:and|but|whereas|while|of\s+whom|of\s+which)\b|\bin\s+which\b|\bwhere\b)\s*", re.I
)
_FINITE = re.compile(r"\b(?:were|was|had|has|have|is|are|did|showed|underwent|received)\b", re.I)


def _clause_start(text: str, start: int, at: int) -> int:
    """Where the clause holding ``at`` starts: after the last "; " or ", and" (", but",
    ", whereas", ", of whom") before it whose preceding words hold a finite verb ("116
    patients were identified, and 77 of them were included"); else ``start``. A list of
    group counts joined by ", and" before its verb stays one clause."""
    out = start
    for m in _CLAUSE_JOIN.finditer(text, start, at):
        if _FINITE.search(text, out, m.start()):
            out = m.end()
    return out


def _verb_strength(clause: str) -> int:
    for pattern, strength in _VERB_STRENGTH:
        if pattern.search(clause):
            return strength
    return 0


_DEPENDANTS = re.compile(
    r"\b(?:children|infants|newborns|neonates|babies|adolescents|students|pupils)\b", re.I
)
_CARERS = re.compile(
    r"\b(?:parents|guardians|mothers|fathers|caregivers|carers|families|teachers|nurses"
    r"|physicians|doctors|practitioners|clinicians)\b",
    re.I,
)


def _levels(text: str, items: list[_Count]) -> bool:
    """Whether a list counts two levels of one sample (children and their parents, patients
    and their physicians) rather than groups that add up."""
    phrases = [text[x.span.end : x.span.clause_end] for x in items]
    return any(_DEPENDANTS.search(p) for p in phrases) and any(_CARERS.search(p) for p in phrases)


def _subject_list(text: str, counts: list[_Count], first: int, verb_at: int) -> list[_Count]:
    """The counts ``counts[first:]`` that head the items of a list ("5 controls with HCA and
    five without, seven ...") in ``text[..verb_at]``: each after the previous one's item,
    joined by a comma or "and"."""
    items = [counts[first]]
    for c in counts[first + 1 :]:
        if c.span.start >= verb_at:
            break
        between = text[items[-1].span.clause_end : c.span.start]
        # the previous item's words, then a join: ", and", "and", ","
        join = re.search(r"(?:,\s*(?:and\s+|as\s+well\s+as\s+)?|\band\s+|\bplus\s+)$", between)
        if join is None or re.search(r"[;:\d]", re.sub(r"\([^()]*\)", "", between)):
            break
        if _SUBGROUP_AFTER.match(text, c.span.end) or _SUBGROUP_AFTER.match(
            text, c.span.clause_end
        ):
            return items[:1]  # "294 women, 21 (7.1%) had": a subgroup, not a group
        items.append(c)
    return items


@dataclass(frozen=True)
class _Candidate:
    reading: SampleSizeReading
    order: int  # position in the text
    ambiguous: bool = False  # the sentence states a sample it does not state whole


_LIST_NOUN = re.compile(
    rf"(?:\s+[A-Za-z][\w'/-]*){{0,3}}(?:,\s*|\s+)(?:and|or)\s+{NUMBER}\s+{_MODS}{_PEOPLE}\b", re.I
)
_VERB_NEXT = re.compile(
    r"\s+(?:of\s+(?:them|these|those)\s+)?(?:\([^)]*\)\s+)?(?:were|was|had|have)\b", re.I
)
_RESULTS_SAFE = re.compile(
    r"\b(?:included|enrolled|recruited|randomi[sz]ed|studied|analy[sz]ed|evaluated|examined"
    r"|participated|took\s+part|completed|responded|surveyed|interviewed|consented)\b",
    re.I,
)
"""What a count that opens a Results sentence must have done to be the sample: results
sentences mostly count subgroups ("Four cases underwent emergency surgery")."""
_METHODS_SECTION = ("METHOD", "PATIENT", "PARTICIPANT", "SUBJECT", "DESIGN", "MATERIAL", "SAMPLE")
_PASSIVE = re.compile(r"[^.;]{0,120}?\b(?:were|was)\s+(?:\w+ly\s+)?[a-z]+(?:ed|en|wn)\b", re.I)
_ONE_GROUP = re.compile(
    r"\b(?:group|arm|cohort)\s+(?:\d|[A-D]\b|I{1,3}\b|one|two|three)|\b(?:considered|served\s+as"
    r"|formed|constituted)\s+(?:the\s+)?(?:\w+\s+)?(?:group|arm|controls?)\b",
    re.I,
)
_WHOLE = re.compile(r"\b(?:total|overall|altogether|in\s+all)\b", re.I)
_POOL_BEFORE = re.compile(
    r"\b(?:of|from|out\s+of|has|have|had|with|contains?|containing)\s+(?:a\s+total\s+of|all\s+the)\s*$"
    r"|\bfrom\s+(?:a|the)\s+(?:\w+\s+)?(?:sample|pool|population|cohort|database|register|registry)\s+of\s*$",
    re.I,
)
_CONSECUTIVE = re.compile(r"\bconsecutive\b", re.I)
_WE_STUDIED = re.compile(
    r"^\s*(?:[^,;]{0,140},\s*)?we\s+(?:\w+ly\s+)?(?:examined|studied|investigated|analy[sz]ed"
    r"|evaluated|assessed|compared|reviewed|followed|measured|performed|conducted|determined"
    r"|explored|describe|report)\b[^;]{0,160}?\b(?:in|among|on|of|from|for)\s+(?:all\s+)?$",
    re.I,
)
"""A Methods sentence whose subject is "we" and whose count closes a phrase of what was studied
("we examined the association between X and survival in 11,661 patients")."""


_BRACKETS = re.compile(r"\([^()]*\)|\[[^\[\]]*\]")


def _clause_after(text: str, count: CountSpan, end: int) -> str:
    """The words after a count up to the end of its clause (at most 200 characters)."""
    limit = min(end, count.clause_end + 200)
    after = _BRACKETS.sub(lambda m: " " * len(m.group(0)), text[count.end : limit])
    stop = re.search(
        r";|\.\s|,\s+\d|,\s+(?:(?:none|all|most|some|each|many|\w+)\s+of\s+whom|of\s+whom|and\s+\d"
        r"|whereas|while|but)\b",
        after,
    )
    return after[: stop.start() if stop else len(after)]


def _strength(
    text: str, c: _Count, before: str, clause: str, section: Section
) -> tuple[int, re.Match[str] | None, str]:
    """How firmly the sentence states ``c`` as its sample (0: it does not), the phrase
    before it that states it as the whole sample, if any, and the rule that read it."""
    total_before = _TOTAL_BEFORE.search(before)
    subject = _INTRO.match(before) is not None
    opens_section = (
        section.has(*_POPULATION_SECTION) and subject and c.span.start - section.start < 25
    )
    consecutive = _CONSECUTIVE.search(text, c.span.end, c.span.clause_end) is not None
    we_studied = _WE_STUDIED.search(before) is not None and section.has("METHOD", "DESIGN")
    if not (total_before or subject or consecutive or we_studied) or _POOL_BEFORE.search(before):
        return 0, None, ""
    if _REJECT_VERBS.search(clause) or _REJECT_VERBS.search(before[-40:]):
        return 0, None, ""
    strength = _verb_strength(clause)
    if not c.has_noun and _LIST_NOUN.match(text, c.span.end):
        c = _Count(c.span, True)  # "709 hospice and 1,326 nonhospice residents"
    if not c.has_noun:  # "994 were included": only with an inclusion verb right after it
        verb_next = _VERB_NEXT.match(text, c.span.end)
        return (strength if strength == 3 and subject and verb_next else 0), None, "no noun"
    if total_before:
        whole = 3 if _WHOLE.search(total_before.group(0)) else 2
        strength = max(strength, whole, _verb_strength(total_before.group(0)))
        return strength, total_before, "total before"
    if opens_section:
        return max(strength, 3), None, "opens section"
    if strength and section.has("RESULT") and not _RESULTS_SAFE.search(clause):
        return 0, None, ""  # "Four cases ... underwent surgery": a subgroup of the results
    if strength:
        return max(strength, 2), None, f"subject, verb {strength}"
    if subject and section.has(*_METHODS_SECTION) and _PASSIVE.match(clause):
        return 2, None, "passive in methods"  # "30 rats were fed ..."
    if consecutive:
        return 2, None, "consecutive"
    return (2, None, "we studied") if we_studied else (0, None, "")


_PARALLEL_BEFORE = re.compile(
    r"^.*(?P<join>,|;|\bwhile|\bwhereas|\band|\bbut|\bto)\s+(?:[\w-]+\s+){0,2}$", re.I | re.S
)
_N_EQUALS = re.compile(r"\b[nN]\s*=\s*\d")
_SECOND_SAMPLE = re.compile(
    r"\balso\b|\bin\s+addition\b|\badditionally\b|\bfurthermore\b"
    r"|\b(?:second|validation|replication|another)\s+(?:sample|cohort|data\s*set|population)"
    r"|\b(?:study|experiment|cohort|sample|part)\s+(?:\d|I{1,3}\b|one|two)",
    re.I,
)


def _parallel_group(
    text: str, later: list[_Count], verb_at: int, end: int, total_before: re.Match[str] | None
) -> list[_Count]:
    """The later counts of people in the sentence that head clauses of their own ("...,
    ten patients were treated by drainage"; "while 96 patients were 30 or older"; "matched
    ... to 135 patients"): the sentence describes groups, and its first count is one of them
    (``[]`` when it does not). After "a total of", only a contrast ("while", "whereas") or a
    match ("to") counts."""
    out = []
    for x in later:
        if not x.has_noun or x.span.start < verb_at:
            continue
        m = _PARALLEL_BEFORE.search(text[max(0, x.span.start - 40) : x.span.start])
        if m is None:
            continue
        join = m.group("join").lower()
        if join == "to" and not re.search(r"\bmatched\b", text[verb_at : x.span.start], re.I):
            continue
        finite = _FINITE.search(text, x.span.clause_end, min(end, x.span.clause_end + 60))
        if join != "to" and finite is None:
            continue
        whole = total_before is not None and _WHOLE.search(total_before.group(0))
        if not whole or join in ("while", "whereas", "to"):
            out.append(x)
    return out


_CASES_CONTROLS = re.compile(
    rf"\bcases\s+(?:were|comprised|included)\s+(?P<a>{NUMBER})\s+{_MODS}{_PEOPLE}\b[^.;]*?"
    rf"\bcontrols\s+(?:were|comprised|included)\s+(?P<b>{NUMBER})\s+{_MODS}{_PEOPLE}\b",
    re.I,
)
_CONTROLS = re.compile(
    r"\bcontrols\b|\bcontrol\s+(?:group|subjects?|patients|participants|individuals|women|men"
    r"|children|cases)\b",
    re.I,
)
"""A sentence naming a control group: counted apart, its count belongs to the sample."""


_LISTED_BEFORE = re.compile(
    r"(?:,|\band|\bplus|\bamong\s+(?:them|these|whom))\s+(?:\w+\s+)?$", re.I
)
_IN_OUR_STUDY = re.compile(
    r"\s+(?:in|of)\s+(?:our|the|this)\s+(?:study|cohort|sample|population|series|trial|survey)\b"
    r"(?!\s+(?:group|arm))",
    re.I,
)
_AMONG_BEFORE = re.compile(r"^\s*(?:among|in|of|out\s+of)\s+(?:all\s+|the\s+)?$", re.I)
_WHOLE_GROUP_VERB = re.compile(
    r"\s*(?:,\s*(?:there\s+(?:were|was)\s+)?\d|(?:had|have|were|was|showed|developed|received"
    r"|underwent|reported)\b|(?:who\s+|undergoing\s+|treated\s+|admitted\s+|with\s+)[^,;]{0,100},)",
    re.I,
)
"""After a denominator of people in the Results ("169 of 321 patients had ...", "58% of 455
patients were ...", "Among 20,499 deliveries, 419 ..."), what shows the group is the whole
described, not one arm of it ("2 of 7 animals in the placebo group"): read at the weakest
strength, and only when every such statement agrees."""
_PERSONS_AFTER = re.compile(
    rf"[^.;]{{0,80}}?\b(?:on|in|of|from|among)\s+(?:a\s+total\s+of\s+)?(?P<n>{NUMBER})\s+{_MODS}"
    rf"{_PERSONS}\b",
    re.I,
)
"""The people a count of units was taken from: "88 procedures were performed on 66 patients"
(the sample counts the people)."""
_INTRO_PHRASE = re.compile(r"[^,;.()]{0,100},")
"""The rest of an opening "Of the 559 cases analysed," / "Among 20,499 deliveries," up to its
comma: the count it opens with is the whole the sentence goes on to describe."""
_SELECTED = re.compile(
    rf"(?<![\w.,])(?:{NUMBER})\s+(?:{_MODS}{_PEOPLE}\s+)?(?:were|was)\s+(?:\w+\s+)?"
    r"(?:included|enrolled|randomi[sz]ed|recruited|studied|analy[sz]ed)\b",
    re.I,
)
"""A selection from the pool an opening phrase names: "Of 967 children admitted, 55 were
included" (the sample is the 55)."""
_DIVIDED = re.compile(
    r"\b(?:divided|allocated|assigned|randomi[sz]ed|split|categori[sz]ed|stratified|classified"
    r"|separated)\s+(?:\w+\s+){0,3}?(?:into|to)\s+(?:two|three|four|2|3|4)\s+(?:\w+\s+)?groups\b",
    re.I,
)
_DIVIDED_GROUP = re.compile(
    r"[(\[][^()\[\]]{0,40}?\bgroups?\s*[,;:]?\s*[nN]\s*=\s*(?P<n>\d{1,3}(?:,\d{3})+|\d+)\s*[)\]]"
)
"""The groups a sentence divides its patients into, each named with its size: "divided into
two groups: those with statins (Statin group, n = 77) and those without (Non-statin group,
n = 126)" (the sample is their sum)."""
_N_GROUP = re.compile(
    rf"(?P<who>\b(?:[A-Za-z][\w-]*\s+){{0,3}}?{_PERSONS})\s*[(\[]\s*[nN]\s*=\s*"
    r"(?P<n>\d{1,3}(?:,\d{3})+|\d+)\s*[)\]]",
    re.I,
)
"""A group and its size: "schizophrenia patients (n = 38)"; several joined by "and" in one
sentence are the groups of the sample ("Men (n = 680) and women (n = 356)")."""
_N_TOTAL = re.compile(
    r"\b(?:overall|in\s+total|total|all\s+(?:patients|participants|subjects|women|men|children)"
    r"|(?:the\s+)?(?:study|whole|entire|total)\s+(?:subjects|participants|patients|population"
    r"|sample|cohort|group)|\b(?:our|all)\s+(?:\w+\s+)?(?:patients|participants|subjects)"
    r"(?:\s+(?:collectively|together|combined|overall))?)\s*[(\[]\s*[nN]\s*=\s*"
    r"(?P<n>\d{1,3}(?:,\d{3})+|\d+)\s*[;,)\]]",
    re.I,
)
"""A total given as "n = N" after a word naming the whole: "Overall (n=96)", "the study
subjects (n = 84)"."""

_N_ENROLLED = re.compile(
    r"\b[nN]\s*=\s*(?P<n>\d{1,3}(?:,\d{3})+|\d+)\s+(?:were|was)\s+(?:\w+\s+)?"
    r"(?:included|enrolled|randomi[sz]ed|recruited|studied)\b"
)
_CONSENTED = re.compile(
    rf"(?P<n>{NUMBER})\s+(?:\(\s*\d+(?:\.\d+)?\s*%\s*\)\s+)?(?:of|out\s+of)\s+(?:the\s+)?"
    rf"{NUMBER}\s+{_MODS}{_PEOPLE}\s+(?:\w+\s+)?(?:consented|agreed|participated|took\s+part"
    r"|were\s+(?:included|enrolled|recruited|randomi[sz]ed)|completed|responded)\b",
    re.I,
)
"""The numerator that is the sample: "118 of 122 patients consented", "77 of 90 eligible
women were enrolled"."""


def _stated_forms(text: str, s: int, e: int) -> list[_Candidate]:
    """A sample stated in one of the set forms: "118 of 122 patients consented", "n = 248
    were enrolled", "Overall (n = 96)"."""
    consented = _CONSENTED.search(text, s, e)
    if consented is not None and _INTRO.match(
        text[_clause_start(text, s, consented.start()) : consented.start()]
    ):
        n = consented.start("n"), consented.end("n")
        reading = SampleSizeReading(CountSpan(*n, consented.end()), (), 3, "consented")
        return [_Candidate(reading, n[0])]
    n_enrolled = _N_ENROLLED.search(text, s, e)
    if n_enrolled is not None:
        n = n_enrolled.start("n"), n_enrolled.end("n")
        return [_Candidate(SampleSizeReading(CountSpan(*n, n[1]), (), 3, "n = N enrolled"), n[0])]
    divided = list(_DIVIDED_GROUP.finditer(text, s, e))
    if len(divided) >= 2 and _DIVIDED.search(text, s, e):
        parts = tuple(CountSpan(g.start("n"), g.end("n"), g.end()) for g in divided)
        return [_Candidate(SampleSizeReading(None, parts, 2, "groups divided"), divided[0].start())]
    groups = list(_N_GROUP.finditer(text, s, e))
    if len(groups) >= 2 and all(
        re.fullmatch(r"\s*(?:,\s*)?(?:and|or|versus|vs\.?|,)\s*", text[a.end() : b.start("who")])
        for a, b in itertools.pairwise(groups)
    ):
        parts = tuple(CountSpan(g.start("n"), g.end("n"), g.end()) for g in groups)
        return [_Candidate(SampleSizeReading(None, parts, 1, "n = N groups"), groups[0].start())]
    if len(groups) >= 2:
        return []
    n_total = _N_TOTAL.search(text[s:e])
    if n_total is not None:
        n = s + n_total.start("n"), s + n_total.end("n")
        return [_Candidate(SampleSizeReading(CountSpan(*n, n[1]), (), 2, "n = N total"), n[0])]
    return []


_SUBSET_AFTER = re.compile(
    r"[^.;]*?,\s*(?:of\s+(?:which|whom|these|them)|among\s+(?:which|whom|them|these))\s*,?\s*"
    rf"(?:{NUMBER})\b",
    re.I,
)
_GROUP_JOIN = re.compile(
    r"(?:\band|,|\bcompared\s+(?:with|to)|\bversus|\bvs\.?|\bthan|\bplus|\bagainst"
    r"|\bgroup\s+of|\bwith)\s+(?:the\s+|a\s+|an\s+)?$",
    re.I,
)


_COMPARED = re.compile(r"compared|versus|\bvs\b|than|against", re.I)


def _other_groups(text: str, counts: list[_Count], i: int, verb_at: int, whole: bool) -> bool:
    """Whether the sentence counts another group beside ``counts[i]`` (a count of people, or
    one joined to it by "and", "compared with", "versus", "a group of"): the count read is then
    one group, not the sample. After "a total of", the counts after its verb are its
    subgroups."""
    at = counts[i].span.start
    for j, x in enumerate(counts):
        if j == i or (whole and x.span.start >= verb_at):
            continue
        if ";" in text[min(at, x.span.start) : max(at, x.span.start)]:
            continue  # another clause
        if _SUBGROUP_AFTER.match(text, x.span.end) or _SUBGROUP_AFTER.match(
            text, x.span.clause_end
        ):
            continue  # "61 patients (9%)": a subgroup
        joined = _GROUP_JOIN.search(text[max(0, x.span.start - 30) : x.span.start])
        if x.has_noun and (joined or x.span.start > counts[i].span.start):
            return True
        if joined and _COMPARED.search(joined.group(0)):
            return True  # "were compared with 25 C"
    return False


@dataclass(frozen=True)
class _Sentence:
    """One sentence being read: the text, its bounds, its section and its counts."""

    text: str
    start: int
    end: int
    section: Section
    counts: list[_Count]


def _pooled(sent: _Sentence, c: _Count, before: str) -> list[_Candidate] | None:
    """A count read as the whole a sentence goes on to describe ("... in our study", "Of the
    559 cases analysed, ...", "169 of 321 patients had"): its candidate, ``[]`` when the
    count is a denominator that is not the whole, ``None`` when neither form applies."""
    text, cs, e = sent.text, c.span, sent.end
    if _IN_OUR_STUDY.match(text, cs.clause_end, e) and c.has_noun:
        return [_Candidate(SampleSizeReading(cs, (), 2, "in our study"), cs.start)]
    if c.has_noun and _AMONG_BEFORE.search(before):
        intro = _INTRO_PHRASE.match(text, cs.clause_end, e)
        selected = intro is not None and _SELECTED.search(text, intro.end(), e)
        if intro is not None and not selected and not _REJECT_VERBS.search(intro.group(0)):
            strength = 2 if _verb_strength(intro.group(0)) else 1
            return [_Candidate(SampleSizeReading(cs, (), strength, "opening pool"), cs.start)]
    if _DENOMINATOR_BEFORE.search(before) or _AMONG_BEFORE.search(before):
        whole = _WHOLE_GROUP_VERB.match(text, cs.clause_end, e)
        opens = whole is not None and whole.group(0).lstrip()[:1] == ","
        if c.has_noun and whole and (sent.section.has("RESULT") or opens):
            return [_Candidate(SampleSizeReading(cs, (), 1, "denominator"), cs.start)]
        return []
    return None


def _stated(
    sent: _Sentence, i: int, strength: int, total_before: re.Match[str] | None, rule: str
) -> list[_Candidate]:
    """The candidate of ``sent.counts[i]``, which the sentence states as its sample: the
    count, the sum of a list of groups, the people a count of units was taken from, or an
    ambiguous candidate when the sentence describes groups, levels or one of two samples."""
    text, s, e, counts = sent.text, sent.start, sent.end, sent.counts
    cs = counts[i].span
    unsure = [_Candidate(SampleSizeReading(cs, (), strength, rule), cs.start, ambiguous=True)]
    if _SECOND_SAMPLE.search(text, s, cs.start):
        return unsure  # one of two samples
    whole = total_before is not None and _WHOLE.search(total_before.group(0)) is not None
    verb = _CLAUSE_VERB.search(text, cs.clause_end, e)
    verb_at = verb.start() if verb else e
    items = _subject_list(text, counts, i, verb_at)
    others = [
        x
        for x in counts[i + len(items) :]
        if x.span.start < verb_at and x.has_noun and _LISTED_BEFORE.search(text, s, x.span.start)
    ]
    if (others and not whole) or (len(items) > 1 and _levels(text, items)):
        return unsure  # a breakdown; or "90,157 children and 37,732 parents": two levels
    if len(items) > 1:
        reading = SampleSizeReading(None, tuple(x.span for x in items), strength, f"list, {rule}")
        return [_Candidate(reading, cs.start)]
    persons = _PERSONS_AFTER.match(text, cs.clause_end, e)
    if persons is not None and _UNIT_NOUN.search(text, cs.end, cs.clause_end):
        n = CountSpan(
            persons.start("n"), persons.end("n"), persons.end()
        )  # procedures on N patients
        return [_Candidate(SampleSizeReading(n, (), strength, "units on people"), n.start)]
    parallel = _parallel_group(text, counts[i + 1 :], verb_at, e, total_before)
    if parallel:  # "Six patients were treated conservatively, ten patients were ...": groups
        spans = (cs, *(x.span for x in parallel))
        groups = SampleSizeReading(None, spans, strength, "parallel groups")
        return [_Candidate(groups, cs.start, ambiguous=True)]
    if (_ONE_GROUP.search(text, s, e) and not whole) or _SUBSET_AFTER.match(text, cs.end, e):
        return unsure  # "Ten dogs ... (group 1)"; "179 patients ..., of which 45 had ..."
    if _other_groups(text, counts, i, verb_at, whole):
        return unsure  # "... were compared with 25 controls": groups of the sample
    return [_Candidate(SampleSizeReading(cs, (), strength, rule), cs.start)]


def _sentence_candidates(text: str, s: int, e: int, section: Section) -> list[_Candidate]:
    """The sample a sentence states, if it states one (its first stated sample)."""
    special = _stated_forms(text, s, e)
    if special:
        return special
    sent = _Sentence(text, s, e, section, _counts(text, s, e))
    for i, c in enumerate(sent.counts):
        cs = c.span
        before = text[_clause_start(text, s, cs.start) : cs.start]
        if _SUBGROUP_AFTER.match(text, cs.clause_end, e) or _SUBGROUP_AFTER.match(text, cs.end, e):
            continue
        if _NUMERATOR_AFTER.match(text, cs.end, e):
            continue
        pooled = _pooled(sent, c, before)
        if pooled is not None:
            if pooled:
                return pooled
            continue
        clause = _clause_after(text, cs, e)
        strength, total_before, rule = _strength(text, c, before, clause, section)
        if strength:
            return _stated(sent, i, strength, total_before, rule)
    return []


_EXCLUSION = re.compile(
    rf"(?:(?<![\w.,])(?:{NUMBER})\s+(?:[\w-]+\s+){{0,8}}?(?:were|was)\s+(?:\w+\s+)?"
    r"(?:excluded|lost|withdrawn|not\s+included|ineligible)"
    rf"|\bexcluding\s+(?:{NUMBER})|\bexclusion\s+of\s+(?:{NUMBER})"
    rf"|(?<![\w.,])(?:{NUMBER})\s+(?:[\w-]+\s+){{0,3}}?(?:declined|refused|withdrew|dropped\s+out))",
    re.I,
)
"""A statement that some of a pool were excluded, lost or declined: a count before it is
the pool, not the sample, unless it says it was included."""


def _counts_units(text: str, reading: SampleSizeReading) -> bool:
    """Whether a reading counts units (joints, examinations, records), not people."""
    return any(_UNIT_NOUN.search(text, x.end, x.clause_end) for x in reading.spans)


def _beside(text: str, reading: SampleSizeReading, start: int, end: int) -> bool:
    """Whether the sentence ``text[start:end]`` counts controls outside the reading."""
    spans = {x.start for x in reading.spans}
    for c in _counts(text, start, end):
        if c.span.start not in spans and _CONTROLS.search(text, c.span.end, c.span.clause_end + 12):
            return True
    return False


def find_sample_size(text: str) -> SampleSizeReading | None:
    """Where ``text`` (an abstract as ``LABEL: text`` lines, or a passage) states its whole
    sample (see the module docstring), or ``None`` when it does not state it with
    confidence. Among several statements, the strongest (included / enrolled / randomised
    over studied / analysed over reviewed) in the Methods / Participants / Results wins; two
    different values of the same strength are ambiguous (``None``), and so is a statement of
    groups (or of one of two samples) as strong as the others whose sum is another value."""
    found: list[_Candidate] = []
    controls: list[tuple[int, int]] = []
    for section in sections_of(text):
        if section.rank != 0:
            continue
        for s, e in sentence_spans(text, section.start, section.end):
            pair = _CASES_CONTROLS.search(text, s, e)
            if pair is not None:
                parts = tuple(CountSpan(pair.start(g), pair.end(g), pair.end(g)) for g in "ab")
                found.append(_Candidate(SampleSizeReading(None, parts, 3, "cases and controls"), s))
                continue
            found += _sentence_candidates(text, s, e, section)
            with_noun = any(c.has_noun for c in _counts(text, s, e))
            if _CONTROLS.search(text, s, e) and (with_noun or _N_EQUALS.search(text, s, e)):
                controls.append((s, e))
    if not found:
        return None
    people = [c for c in found if not c.ambiguous and not _counts_units(text, c.reading)]
    if people:  # "40 patients and 20 volunteers ... 120 joints were examined": the people
        found = [c for c in found if c in people or not _counts_units(text, c.reading)]
    best = max(c.reading.strength for c in found)
    top = [c for c in found if c.reading.strength == best]
    sure = [c for c in top if not c.ambiguous]
    values = {reading_value(text, c.reading) for c in top}
    if not sure or len(values) != 1:
        return None  # the firmest statements disagree, or describe groups that may not add up
    if any(not s <= sure[0].order < e or _beside(text, sure[0].reading, s, e) for s, e in controls):
        return None  # controls counted apart from the sample read: not its whole
    exclusion = _EXCLUSION.search(text)
    if exclusion is not None and sure[0].order < exclusion.start() and best < 3:
        return None  # a pool before exclusions: the included total is not stated
    return sure[0].reading


def reading_value(text: str, reading: SampleSizeReading) -> float:
    """The sample size ``reading`` states in ``text``: its total, or the sum of its parts."""
    return sum(parse_number(text[s.start : s.end]) or 0.0 for s in reading.spans)


def number_spans(text: str, start: int, end: int) -> list[CountSpan]:
    """Every whole number of ``text[start:end]`` that could count a sample (2 to 10^8, not a
    year, not followed by "%"), inside brackets or not, each with the phrase of people or
    units it counts when one follows ("1,024 patients"; ``clause_end == end`` otherwise)."""
    out = []
    for m in _COUNT.finditer(text, start, end):
        s, e = m.start("n"), m.end("n")
        if _plausible(text[s:e]):
            noun = _COUNT_PHRASE.match(text, e, end)
            out.append(CountSpan(s, e, noun.end() if noun else e))
    return out


def count_cues(text: str, sentence: tuple[int, int]) -> list[tuple[CountSpan, dict[str, float]]]:
    """Every number of the sentence ``text[sentence[0]:sentence[1]]`` (:func:`number_spans`)
    with what the rules see around it, as named cues (1.0 present, 0.0 absent, except
    ``verb``: 0 to 3 and ``depth``: 0 to 2): ``counted`` (a count of people or units, not an
    age, year, dose or category number), ``noun`` (a phrase of people or units follows),
    ``depth`` (brackets open before it), ``subgroup`` ("61 (9%)"), ``numerator`` ("16 of
    198"), ``denominator`` ("of 198"), ``subject`` (the subject of its clause),
    ``total_before`` ("a total of", "we included"), ``verb`` (the strength of the verb of the
    clause after it: 3 included/enrolled/randomised, 2 studied, analysed...), ``reject``
    (that clause says excluded, refused, lost, screened...)."""
    s, e = sentence
    counted = {c.span.start: c for c in _counts(text, s, e)}
    out = []
    for count in number_spans(text, s, e):
        a, b = count.start, count.end
        before = text[_clause_start(text, s, a) : a]
        clause = _clause_after(text, count, e)
        cues = {
            "counted": float(a in counted),
            "noun": float(a in counted and counted[a].has_noun),
            "depth": float(min(_depth(text, s, a), 2)),
            "subgroup": float(
                _SUBGROUP_AFTER.match(text, b, e) is not None
                or _SUBGROUP_AFTER.match(text, count.clause_end, e) is not None
            ),
            "numerator": float(_NUMERATOR_AFTER.match(text, b, e) is not None),
            "denominator": float(_DENOMINATOR_BEFORE.search(text[max(s, a - 30) : a]) is not None),
            "subject": float(_INTRO.match(before) is not None),
            "total_before": float(_TOTAL_BEFORE.search(before) is not None),
            "verb": float(_verb_strength(clause)),
            "reject": float(_REJECT_VERBS.search(clause) is not None),
        }
        out.append((count, cues))
    return out


def states_exclusion(text: str, start: int) -> bool:
    """Whether ``text[start:]`` says some of a pool were excluded, lost or declined."""
    return _EXCLUSION.search(text, start) is not None


_ANALYSED_AFTER = re.compile(
    r"(?:\s*[(\[][^()\[\]]*[)\]])?\s+(?:were|was)\s+(?:\w+\s+)?(?:analy[sz]ed|evaluable"
    r"|included\s+in\s+(?:the\s+)?(?:final\s+)?analys[ie]s|available\s+for\s+(?:the\s+)?(?:final\s+)?"
    r"(?:analys[ie]s|follow[\s-]?up))\b"
    r"|(?:\s*[(\[][^()\[\]]*[)\]])?\s+completed\s+(?:the\s+)?(?:study|trial|follow[\s-]?up|protocol"
    r"|programme|program|intervention|treatment)\b",
    re.I,
)


def find_analysed(text: str) -> CountSpan | None:
    """Where ``text`` states the number analysed ("96 patients were analysed", "were
    available for analysis", "evaluable", "completed the study"), the count being the subject
    of its sentence in a Methods / Results paragraph, alone (not one of several groups);
    ``None`` otherwise."""
    for section in sections_of(text):
        if section.rank != 0:
            continue
        for s, e in sentence_spans(text, section.start, section.end):
            counts = _counts(text, s, e)
            for i, c in enumerate(counts):
                before = text[_clause_start(text, s, c.span.start) : c.span.start]
                after = _ANALYSED_AFTER.match(text, c.span.clause_end)
                if after is None or _INTRO.match(before) is None:
                    continue
                if len(counts) > 1 and _other_groups(text, counts, i, after.end(), False):
                    break  # "five were analysed at 1 year and five at 2 years": groups
                if not _NOT_ANALYSED.search(text, c.span.start, after.end()):
                    return CountSpan(c.span.start, c.span.end, after.end())
    return None


_NOT_ANALYSED = re.compile(r"\b(?:months?|weeks?|years?|days?|hours?|data|samples)\b", re.I)


def names_other_count(phrase: str) -> bool:
    """Whether ``phrase`` (a quote a model gives for a sample size) says its count is not the
    sample: excluded, refused, lost, screened, identified, eligible, a subgroup's event."""
    return _REJECT_VERBS.search(phrase) is not None
