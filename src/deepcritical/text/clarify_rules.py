"""Whether a research question lacks what its type needs, by rules (no model).

:func:`missing_elements` reads the question's type and PICO elements
(:func:`~deepcritical.text.question_type.frame_question`) and the words of the whole question,
and names the elements its type needs that it does not state:

- intervention / therapy (a question with an intervention cue: "improve", "reduce",
  "effective", "treat" ...): a population, unless the question names one (``in`` / ``among``
  a group, people words such as patients, adults, children, women, an age, a care setting) or
  a condition (disease words: diabetes, cancer, stroke, "-itis", "-emia", "-pathy" ...); an
  outcome, unless the question names one or a condition;
- diagnosis / prognosis: a prognosis question (prognostic, survival, mortality, recurrence,
  progression, outcome ...) needs a time frame ("5-year", "30 days", "long-term",
  "in-hospital", "postoperative" ...); a diagnostic question needs its target condition or
  the patients the test is for (a population or a condition);
- aetiology / risk: an outcome (not a generic "risk" or "outcome") or a condition;
- prevalence / epidemiology: a population or a setting (a condition is what is counted, not
  where); one with an intervention cue ("Do statins reduce dementia incidence?") is read as
  an intervention question;
- drug repurposing: the disease (an outcome or a condition);
- mechanism: nothing (how a thing works needs no population).

A question with no type cue at all (the default intervention type) is never asked about:
the rules ask only where they can say why. :func:`clarify_by_rules` turns the missing
elements into a :class:`~deepcritical.models.Clarification` with fixed suggested answers per
element and type; ``None`` when nothing essential is missing. Pure regular expressions: tens
of microseconds a question; never raises.
"""

from __future__ import annotations

import re

from deepcritical.models import (
    MAX_CLARIFYING_QUESTIONS,
    Clarification,
    ClarifyElement,
    ClarifyingQuestion,
    QuestionType,
)
from deepcritical.text.question_type import QuestionFrame, frame_question

__all__ = ["clarify_by_rules", "missing_elements"]

_T = QuestionType

_PEOPLE = re.compile(
    r"\b(?:patients?|adults?|child(?:ren|hood)?|kids|adolescen\w*|teen\w*|youths?|infan\w*"
    r"|neonat\w*|newborns?|bab(?:y|ies)|elderly|older|aged?|ageing|aging|women|men|woman|man"
    r"|mothers?|fathers?|parents?|girls?|boys?|students?|workers?|employees?|smokers?"
    r"|drinkers?|users?|veterans?|soldiers?|athletes?|runners?|survivors?|residents?|nurses?"
    r"|physicians?|doctors?|surgeons?|dentists?|practitioners?|clinicians?|volunteers?"
    r"|subjects?|individuals?|participants?|beneficiaries|enrollees|members|trainees|people|persons?|populations?|cohorts?|communit(?:y|ies)"
    r"|recipients?|donors?|carriers?|inpatients?|outpatients?|geriatric|p(?:a)?ediatric\w*"
    r"|preterm|premature|(?:pre|post|peri)?menopausal|healthy|humans?|rats?|mice|murine"
    r"|animals?|famil(?:y|ies)|households?|schools?|hospitals?|hospitali[sz]ed|nursing homes?"
    r"|primary care|intensive care|[PN]?ICUs?|emergency (?:department|room)s?|clinics?"
    r"|countr(?:y|ies)|nations?|national|rural|urban)\b"
    r"|\b(?:aged|over|under|older than|younger than|above|below)\s+\d+"
    r"|\b\d+\s*(?:years?|yrs?)\s*(?:old|of age)\b",
    re.IGNORECASE,
)
"""Words that name who the question is about: people, ages, care settings, places."""

_NAMED_GROUP = re.compile(r"\b(?:in|among|across)\s+(?:the\s+)?[A-Z][A-Za-z]+")
"""A capitalised name after "in" / "among" (case-sensitive): a place or a named group ("in
Barcelona", "among Medicare beneficiaries")."""

_CONDITION = re.compile(
    r"\b(?:diseases?|disorders?|syndromes?|cancers?|carcinom\w*|tumou?rs?|neoplas\w*"
    r"|malignan\w*|metasta\w*|leuka?emi\w*|lymphom\w*|diabet\w*|asthma\w*|strokes?|obes\w*"
    r"|overweight|hypertensi\w*|hypotensi\w*|infect\w*|seps\w*|septic|covid\w*|sars\w*|hiv"
    r"|aids|influenza|pneumoni\w*|dementia|alzheimer\w*|parkinson\w*|depress\w*|anxiety"
    r"|schizophreni\w*|psychos\w*|psychotic|bipolar|autis\w*|adhd|fractur\w*|injur\w*"
    r"|trauma\w*|burns?|failure|arrest|infarct\w*|isch(?:a)?emi\w*|embol\w*|thromb\w*"
    r"|attacks?|angina|arrhythmi\w*|fibrillation|epilep\w*|seizures?|migraines?|pain\w*"
    r"|insufficienc\w*|deficienc\w*|atresia|stenos[ie]s|palsy|pregnan\w*|deliver(?:y|ies)"
    r"|labou?r|birth|caesarean|cesarean|surg\w*|operat\w*|\w+ectom(?:y|ies)|\w+otom(?:y|ies)"
    r"|\w+ostom(?:y|ies)|\w+plast(?:y|ies)|transplant\w*|dialysis|ill(?:ness\w*)?|conditions?"
    r"|disabilit\w*|addict\w*|abuse|dependence|alcoholism|smoking|malaria|tuberculosis"
    r"|hepatitis|cirrhosis|psoriasis|eczema|acne|glaucoma|cataracts?|copd|ckd|lesions?"
    r"|ulcers?|wounds?|hernia\w*|bleed\w*|ha?emorrhag\w*|shock|coma|delirium|frailty"
    r"|incontinence|infertil\w*|sclerosis|fibrosis|symptom\w*|toxicit\w*|patholog\w*"
    r"|replacements?|irritable bowel|\w*troph\w*|\w+(?:itis|emia|aemia|pathy|pathies|algia"
    r"|penia|plasia|uria|iasis|omas?|oses|lysis|stomia|phagia|oxia|plegia|paresis|kinesia"
    r"|tonia|rrh(?:o)?ea|pn(?:o)?ea|emesis))\b",
    re.IGNORECASE,
)
"""Words that name a condition, disease or procedure (the people it concerns are implied)."""

_NOT_CONDITIONS = frozenset(
    {
        "diagnoses",
        "prognoses",
        "homeostasis",
        "apoptosis",
        "diploma",
        "genoma",
        "stoma",
        "analysis",
        "hydrolysis",
        "electrolysis",
        "dialysis",
    }
)

_INTERVENTION_CUE = re.compile(
    r"\btreat|\btherap|\befficac|\beffective|\bbenefi|\bintervention|\bimprove|\breduc"
    r"|\bprevent|\blower|\bdecreas|\bshorten|\bdelay|\bslow|\bprotect|\brelieve|\balleviat"
    r"|\bamelior|\brestore|\bcounteract|\bsupplement|\bvaccin|\bhelp",
    re.IGNORECASE,
)

_PROGNOSIS = re.compile(
    r"\bprognos\w*|\bsurviv\w*|\bmortality\b|\bdeaths?\b|\brecurren\w*|\brelaps\w*"
    r"|\bprogression\b|\bprogress\b|\boutcomes?\b|\bdecline\b|\blife expectancy\b",
    re.IGNORECASE,
)

_NUMBER_WORDS = (
    r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty"
    r"|forty|fifty|sixty|ninety|hundred"
)
_TIME_FRAME = re.compile(
    rf"\b(?:\d+|{_NUMBER_WORDS})(?:[- ]|\s*)(?:hours?|h|days?|d|weeks?|wks?|months?|mo|years?"
    r"|yrs?|y|decades?)\b"
    r"|\b(?:long|short|medium|mid|near)[- ]term\b|\bin[- ]hospital\b|\bperi-?operative\w*"
    r"|\bpost-?operative\w*|\bintra-?operative\w*|\bpost-?discharge\b|\bat discharge\b"
    r"|\bfollow-?up\b|\blifetime\b|\blife-?long\b|\bearly\b|\blate\b|\bwithin\b|\bannual\w*"
    r"|\bdecades?\b|\bneonatal\b|\bperinatal\b|\bimmediate\w*|\bsubsequent\b|\bfuture\b"
    r"|\binhospital\b",
    re.IGNORECASE,
)
"""A time frame: a number of hours to decades, "long-term", "in-hospital", "postoperative",
and the like (an index event, "after stroke", is not a horizon)."""


def _condition_named(text: str) -> bool:
    """Whether ``text`` names a condition, disease or procedure."""
    return any(m.group(0).lower() not in _NOT_CONDITIONS for m in _CONDITION.finditer(text))


def _people_named(frame: QuestionFrame, text: str) -> bool:
    """Whether the question names a population, people, an age, a setting or a place."""
    return bool(frame.pico.population or _PEOPLE.search(text) or _NAMED_GROUP.search(text))


def _population_named(frame: QuestionFrame, text: str) -> bool:
    """Whether the question says whom it is about: a population element, people words, an
    age, a setting, or a condition (its patients are implied)."""
    return _people_named(frame, text) or _condition_named(text)


_GENERIC_OUTCOMES = frozenset(
    {
        "risk",
        "outcome",
        "outcomes",
        "health",
        "effect",
        "effects",
        "results",
        "benefit",
        "incidence",
    }
)
"""Outcome elements that name no outcome ("Is coffee associated with risk?")."""


def _outcome_named(frame: QuestionFrame, text: str) -> bool:
    """Whether the question names an outcome (not a generic word such as "risk") or a
    condition it is about."""
    outcome = frame.pico.outcome.lower()
    return bool(outcome and outcome not in _GENERIC_OUTCOMES) or _condition_named(text)


def _intervention_needs(frame: QuestionFrame, text: str) -> list[ClarifyElement]:
    if not _INTERVENTION_CUE.search(text):
        return []
    missing: list[ClarifyElement] = []
    if not _population_named(frame, text):
        missing.append("population")
    if not _outcome_named(frame, text):
        missing.append("outcome")
    return missing


def _diagnosis_needs(frame: QuestionFrame, text: str) -> list[ClarifyElement]:
    if _PROGNOSIS.search(text):
        return [] if _TIME_FRAME.search(text) else ["time_frame"]
    # a diagnostic question names its target condition or whom the test is for
    return [] if frame.pico.outcome or _population_named(frame, text) else ["population"]


def _needs(frame: QuestionFrame, text: str) -> list[ClarifyElement]:
    """The elements ``frame``'s type needs that ``text`` does not state, most important
    first."""
    kind = frame.question_type
    if kind is _T.INTERVENTION:
        return _intervention_needs(frame, text)
    if kind is _T.DIAGNOSIS_PROGNOSIS:
        return _diagnosis_needs(frame, text)
    if kind is _T.AETIOLOGY_RISK or kind is _T.REPURPOSING:
        return [] if _outcome_named(frame, text) else ["outcome"]
    if kind is _T.PREVALENCE and _INTERVENTION_CUE.search(text):
        return _intervention_needs(frame, text)  # "statins reduce dementia incidence"
    if kind is _T.PREVALENCE:  # a condition does not say in whom its frequency is asked
        return [] if _people_named(frame, text) else ["population"]
    return []


def missing_elements(question: str) -> list[ClarifyElement]:
    """The elements ``question``'s type needs and it does not state (see the module
    docstring), most important first, at most three; ``[]`` when nothing essential is
    missing or the question has no type cue. Never raises."""
    text = " ".join(question.split())
    frame = frame_question(text)
    if not frame.cues:
        return []
    return _needs(frame, text)[:MAX_CLARIFYING_QUESTIONS]


_QUESTIONS: dict[tuple[QuestionType | None, ClarifyElement], tuple[str, tuple[str, ...]]] = {
    (None, "population"): (
        "Which population is the question about?",
        ("Adults (18 and over)", "Older adults (65 and over)", "Children and adolescents"),
    ),
    (_T.DIAGNOSIS_PROGNOSIS, "population"): (
        "In whom would the test be used?",
        (
            "People with symptoms (diagnosis)",
            "People without symptoms (screening)",
            "People with a known condition (monitoring or staging)",
        ),
    ),
    (_T.PREVALENCE, "population"): (
        "In which population or setting?",
        ("General population", "Adults", "Children and adolescents", "Older adults (65 and over)"),
    ),
    (None, "outcome"): (
        "Which outcome matters most?",
        (
            "Mortality",
            "Disease incidence or progression",
            "Symptoms and quality of life",
            "Adverse effects",
        ),
    ),
    (_T.AETIOLOGY_RISK, "outcome"): (
        "Which outcome or disease is the question about?",
        ("Disease incidence", "Mortality", "Disease severity or progression"),
    ),
    (_T.REPURPOSING, "outcome"): (
        "For which disease?",
        (
            "Cancer",
            "Neurodegenerative disease (e.g. Alzheimer's)",
            "Infectious disease",
            "Cardiovascular disease",
        ),
    ),
    (None, "time_frame"): (
        "Over what time frame?",
        ("Short term (in hospital or 30 days)", "About 1 year", "5 years or more"),
    ),
}


def _question(kind: QuestionType, element: ClarifyElement) -> ClarifyingQuestion:
    prompt, choices = _QUESTIONS.get((kind, element)) or _QUESTIONS[(None, element)]
    return ClarifyingQuestion(element=element, prompt=prompt, choices=list(choices))


def clarify_by_rules(question: str) -> Clarification | None:
    """The clarification ``question`` needs by the rules (one question per missing element,
    with the rules' suggested answers), or ``None`` when it states what its type needs.

    >>> clarify_by_rules("Does metformin reduce mortality?").questions[0].element
    'population'
    >>> clarify_by_rules("Does statin therapy in adults over 75 prevent cardiovascular events?")
    """
    missing = missing_elements(question)
    if not missing:
        return None
    kind = frame_question(question).question_type
    return Clarification(
        question=" ".join(question.split()),
        questions=[_question(kind, element) for element in missing],
        by="rules",
    )
