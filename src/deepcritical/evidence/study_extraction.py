"""The study record of an evidence item read by rules, and the verbatim check every study
record passes (the rules' and a model's alike).

Offline extraction (:func:`extract_study`) reads the item's abstract (``Evidence.content``,
structured abstracts as ``LABEL: text`` paragraphs, as :mod:`deepcritical.formats.pubmed_xml`
keeps them) and, for a full text, the passages of its Methods and Results sections and its
tables (``Evidence.passages``). It looks for the standard reporting patterns:

- sample size: "a total of 1,024 patients were randomised", "the study population comprised
  196 pregnant women", "we retrospectively analyzed 2770 patients", "248 women", "n = 248",
  numbers written in words ("Sixty-seven patients"), or the sum of the group sizes when only
  groups are given. The rules (:mod:`deepcritical.evidence.sample_size`) read what a sentence
  states as the sample; a model fitted on hand labels
  (:mod:`deepcritical.evidence.sample_size_model`) weighs every count against them and shows
  a sample size only when it is sure enough, else "not stated";
- effect estimates: "OR 2.4, 95% CI 1.3, 4.6", "hazard ratio, 0.45; 95% confidence interval
  [CI], 0.33 to 0.63", "(RR 0.8; 95% CI 0.6–0.9; p = 0.02)", "AUC of 0.87 (95% CI:
  0.82-0.91)", "sensitivity 92%", and an estimate with a CI but no named measure (measure
  ``estimate``); the measure is normalised to a short code (``OR``, ``HR``, ``RR``, ``IRR``,
  ``MD``, ``SMD``, ``RD``, ``beta``, ``AUC``, ``sensitivity``...); a table's CI columns
  (:mod:`deepcritical.evidence.table_estimates`);
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

Limits: patterns, not understanding. About half of the labelled sample sizes are shown (the
model abstains on the rest); a CI given apart from its estimate without the words "CI" or
"confidence" is missed; the "primary" estimate is the first one reported with a CI, not
necessarily the primary outcome's. ``benchmarks/bench_appraisal.py`` measures precision and
recall on hand-labelled abstracts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from deepcritical.evidence.effect_estimates import EffectSpan, find_effects
from deepcritical.evidence.grading import grade_evidence
from deepcritical.evidence.sample_size import CountSpan, SampleSizeReading, find_analysed
from deepcritical.evidence.sample_size_model import read_sample_size
from deepcritical.evidence.table_estimates import effects_of_table
from deepcritical.models import (
    EffectEstimate,
    Evidence,
    ExtractedValue,
    PassageKind,
    StudyRecord,
    TextSpan,
)
from deepcritical.models._appraisal import SINGLE_VALUE_FIELDS
from deepcritical.text.abstract_sections import Section, sections_of, sentence_around
from deepcritical.text.numbers import WORD_NUMBER

__all__ = [
    "appraise_items",
    "checked_record",
    "extract_study",
    "locate_quote",
    "proof_text",
    "span",
]

MAX_VALUE_CHARS = 240
"""Longest quote kept for a text value (population, setting, outcomes): a longer sentence is
cut to its first 240 characters (still a verbatim span)."""

_WORDNUM = WORD_NUMBER


def _span(text: str, start: int, end: int, passage: int | None, where: str) -> TextSpan:
    return TextSpan(quote=text[start:end], start=start, end=end, passage=passage, where=where)


def span(text: str, start: int, end: int, passage: int | None = None) -> TextSpan:
    """A :class:`TextSpan` of ``text[start:end]`` (``passage`` ``None``: the abstract)."""
    return _span(text, start, end, passage, "abstract" if passage is None else "full text")


@dataclass(frozen=True)
class _Source:
    """One text the rules read: the abstract (``passage`` None) or one passage (``table``:
    a table's caption and rows)."""

    text: str
    passage: int | None
    where: str
    table: bool = False

    def value(self, start: int, end: int, value: str | None = None) -> ExtractedValue:
        quote_end = min(end, start + MAX_VALUE_CHARS)
        proof = _span(self.text, start, quote_end, self.passage, self.where)
        return ExtractedValue(value=value if value is not None else proof.quote, proof=proof)

    def count(self, count: CountSpan) -> ExtractedValue:
        """A count as written, proven by its sentence (at most :data:`MAX_VALUE_CHARS`
        characters of it around the count), so a reader sees what it counts."""
        start, end = sentence_around(self.text, count.start)
        start = max(start, min(count.start, end - MAX_VALUE_CHARS))
        end = max(min(end, start + MAX_VALUE_CHARS), count.clause_end, count.end)
        proof = _span(self.text, start, end, self.passage, self.where)
        return ExtractedValue(value=self.text[count.start : count.end], proof=proof)


# --- effect estimates ----------------------------------------------------------------------


def _effect(src: _Source, found: EffectSpan) -> EffectEstimate:
    outcome = src.value(*found.outcome) if found.outcome is not None else None
    return EffectEstimate(
        measure=found.measure,
        value=found.value,
        ci_low=found.ci_low,
        ci_high=found.ci_high,
        p_value=found.p_value,
        proof=_span(src.text, found.start, found.end, src.passage, src.where),
        outcome=outcome,
    )


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
            yield _Source(p.text, i, p.locator(), p.kind is PassageKind.TABLE)


SizeReader = Callable[[str], SampleSizeReading | None]
"""Where a text states its sample size: the rules weighed by the shipped model (the default,
:func:`~deepcritical.evidence.sample_size_model.read_sample_size`) or the rules alone
(:func:`~deepcritical.evidence.sample_size.find_sample_size`)."""


def _read_sample_size(record: StudyRecord, src: _Source, read_size: SizeReader) -> None:
    """Fill the record's sample size (a stated total, or its group sizes) and number analysed
    from ``src`` when they are still empty."""
    if record.sample_size is None and not record.sample_size_parts:
        found = read_size(src.text)
        if found is not None and found.total is not None:
            record.sample_size = src.count(found.total)
            if record.population is None and found.total.clause_end > found.total.end:
                record.population = src.value(found.total.start, found.total.clause_end)
        elif found is not None:
            record.sample_size_parts = [src.count(part) for part in found.parts]
    if record.analysed is None:
        analysed = find_analysed(src.text)
        if analysed is not None:
            record.analysed = src.count(analysed)


def _read_source(record: StudyRecord, src: _Source, read_size: SizeReader) -> None:
    """Fill the record's empty fields from ``src`` (effects are appended)."""
    sections = sections_of(src.text)
    _read_sample_size(record, src, read_size)
    effects = effects_of_table(src.text) if src.table else find_effects(src.text)
    record.effects += [_effect(src, found) for found in effects]
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


def extract_study(evidence: Evidence, *, read_size: SizeReader = read_sample_size) -> StudyRecord:
    """The study record of ``evidence`` read by rules from its abstract and, for a full text,
    its Methods / Results passages and tables (see the module docstring), verified with
    :func:`checked_record`; ``read_size`` reads the sample size (default: the rules weighed by
    the shipped model). Pure and fast (regular expressions and a linear model; ~5 ms per
    abstract)."""
    record = StudyRecord(
        design=grade_evidence(evidence).value, method="rules", full_text=evidence.full_text
    )
    for src in _sources(evidence):
        _read_source(record, src, read_size)
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
