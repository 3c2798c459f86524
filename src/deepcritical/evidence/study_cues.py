"""What an abstract says of a study besides its numbers, read by rules from its labelled
sections (:mod:`deepcritical.text.abstract_sections`).

- population (a PARTICIPANTS / PATIENTS / SUBJECTS / POPULATION section), setting (SETTING
  section, else "at/in ... hospital/centre/clinic" in the study's own sections), intervention
  and comparator (INTERVENTION section, "randomised to X or Y", "X versus Y" in the aim),
  outcomes (MAIN OUTCOME MEASURES section, "the primary outcome was ..."), follow-up ("median
  follow-up of 32 months", "followed for 2 years");
- the phrases GRADE-style certainty reads (:mod:`deepcritical.evidence.certainty`):
  randomisation and blinding stated (not negated: "non-randomised", "open-label" do not
  count; "randomly selected" is sampling), single centre or multicentre, a dose-response.

Each value is the first sentence of its section or the phrase matched, with its proof
(:class:`~deepcritical.evidence.study_text.StudyText`).
"""

from __future__ import annotations

import re

from deepcritical.evidence.study_text import StudyText
from deepcritical.models import ExtractedValue, StudyRecord
from deepcritical.text.abstract_sections import Section, sections_of
from deepcritical.text.numbers import WORD_NUMBER

__all__ = ["read_cues"]

_POPULATION_LABELS = ("PARTICIPANT", "PATIENTS", "SUBJECTS", "POPULATION")
_OUTCOME_LABELS = ("OUTCOME", "MEASUREMENTS", "END POINT", "ENDPOINT")
_FOLLOW_UP = re.compile(
    r"\b(?:(?:median|mean|minimum|maximum|average)\s+)?follow(?:ed)?[\s-]?up\s+(?:period\s+|time\s+|"
    r"duration\s+)?(?:of|was|lasted|for|at)?\s*(?:(?:a|an)\s+)?(?:(?:median|mean)\s+(?:of\s+)?)?"
    rf"(?P<v>(?:\d+(?:\.\d+)?|{WORD_NUMBER})[\s-]*(?:days?|weeks?|months?|years?))",
    re.I,
)
_FOLLOWED_FOR = re.compile(
    r"\bfollowed(?:\s+up)?\s+for\s+(?:(?:a|an)\s+)?(?:(?:median|mean)\s+(?:of\s+)?)?"
    rf"(?P<v>(?:\d+(?:\.\d+)?|{WORD_NUMBER})[\s-]*(?:days?|weeks?|months?|years?))",
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


def _first_sentence(src: StudyText, section: Section) -> ExtractedValue:
    body = src.text[section.start : section.end]
    stop = re.search(r"\.\s", body)
    end = section.start + (stop.start() + 1 if stop else len(body.rstrip()))
    return src.value(section.start, end)


def _cue(src: StudyText, sections: list[Section], name: str) -> ExtractedValue | None:
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
    src: StudyText, sections: list[Section], labels: tuple[str, ...]
) -> ExtractedValue | None:
    for section in sections:
        if section.has(*labels):
            return _first_sentence(src, section)
    return None


def _search_value(
    src: StudyText, sections: list[Section], pattern: re.Pattern[str], group: str = "v"
) -> ExtractedValue | None:
    for section in sorted(sections, key=lambda s: s.rank):
        m = pattern.search(src.text, section.start, section.end)
        if m:
            return src.value(m.start(group), m.end(group))
    return None


def _comparison(
    src: StudyText, sections: list[Section]
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


def read_cues(record: StudyRecord, src: StudyText) -> None:
    """Fill ``record``'s population (when a section names it), setting, intervention and
    comparator, outcomes, follow-up and the certainty cues from the abstract ``src``."""
    sections = sections_of(src.text)
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
