"""The type of a clinical question and its PICO elements, by rules (no model).

:func:`classify_question` scores cue patterns of each :class:`~deepcritical.models.QuestionType`
(intervention / therapy, diagnosis / prognosis, aetiology / risk, mechanism, prevalence /
epidemiology, drug repurposing) and keeps the best; ties go to the more specific type
(repurposing, mechanism, prevalence, diagnosis, aetiology, intervention in that order), and a
question with no cue is an intervention question (the usual yes/no therapy question).

:func:`extract_pico` reads the question's own words: the subject before the question's verb
(``improve``, ``predict``, ``associated with``, ``be repurposed for`` ...) is the
intervention, exposure, index test or drug; what follows is the outcome or target condition,
cut before a population phrase (``in``, ``among``, ``after`` ...); the comparator follows
``versus``, ``vs``, ``compared with``, ``than``, ``superior to``, ``instead of`` ...; "Is there
an association between A and B" gives A and B; "the prevalence of X in Y" gives X and Y.
Elements it cannot find stay ``""`` (the key terms fill in later:
:func:`deepcritical.agents.planner.extractive_checklist`). Pure regular expressions: tens of
microseconds a question.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from deepcritical.models import PICO, QuestionType
from deepcritical.text.terms import extract_key_terms

__all__ = ["QuestionFrame", "classify_question", "extract_pico", "frame_question"]

_T = QuestionType

_CUES: dict[QuestionType, tuple[tuple[str, int], ...]] = {
    _T.REPURPOSING: (
        (r"\brepurpos|\bre-purpos|\breposition", 4),
        (r"\b(?:existing|approved|licensed|marketed|old|generic) drugs?\b", 3),
        (r"\boff-label\b|\bnew indications?\b|\bdrug candidates?\b", 3),
    ),
    _T.MECHANISM: (
        (r"\bmechanis|\bpathways?\b|\bmode of action\b|\bpathogenesis\b|\bpathophysiolog", 3),
        (r"^(?:[^:]*:\s*)?how (?:does|do|did|can|could|might|may|is|are)\b", 3),
        (r"\bmolecular\b|\bsignall?ing\b|\bmediat(?:e|es|ed|ing|ion|ors?)\b", 2),
        (r"\bin vitro\b|\bin vivo\b|\bcell lines?\b|\b(?:rats?|mice|murine)\b|\bexpression\b", 1),
    ),
    _T.PREVALENCE: (
        (r"\bprevalen|\bincidence\b|\bepidemiolog|\bhow (?:common|frequent|often|many)\b", 3),
        (r"\b(?:rates?|frequency|proportion|burden|number) of\b", 2),
        (r"\b(?:occur|exist)s? in\b|\bunderrecogni[sz]ed\b|\bunder-?diagnosed\b", 1),
    ),
    _T.DIAGNOSIS_PROGNOSIS: (
        (r"\bdiagnos|\bprognos|\bpredict|\baccura(?:cy|te)\b|\bsensitiv|\bspecificity\b", 3),
        (r"\b(?:bio)?markers?\b|\bAUC\b|\bROC\b|\bdiscriminat", 3),
        (r"\bscreening\b|\bdetect|\bstaging\b|\breliab|\bvalid(?:ity|ated)?\b", 2),
        (r"\b(?:tests?|scores?|imaging|MRI|CT|ultraso\w+|sonograph\w*)\b", 1),
    ),
    _T.AETIOLOGY_RISK: (
        (r"\brisk factors?\b|\bassociat|\bcaus(?:e|es|ed|al|ing|ation)\b|\bexpos", 3),
        (r"\baetiolog|\betiolog|\bpredispos|\bconsequence of\b|\bdeterminants? of\b", 3),
        (r"\brisk\b|\blink(?:ed|s)?\b|\brelat(?:ed|ionship|ion)\b|\bcorrelat", 2),
        (r"\bcontribut", 1),
    ),
    _T.INTERVENTION: (
        (r"\btreat|\btherap|\befficacy\b|\beffective(?:ness)?\b|\bintervention", 3),
        (
            r"\b(?:does|do|did|can|could|will|would|may|might|should)\b.{1,80}?\b(?P<cue>improve"
            r"|reduce|prevent|lower|decrease|shorten|delay|slow|protect|benefit|relieve|alleviate"
            r"|ameliorate|restore|counteract)\w*\b",
            3,
        ),
        (r"\b(?P<cue>(?:reduc|lower|prevent|decreas)\w*)\b.{0,40}\brisk\b", 3),
        (r"\bsurg(?:ery|ical)\b|\w+ectomy\b|\w+plasty\b|\brepair\b|\bsupplement", 2),
        (r"\btrials?\b|\brandomi[sz]ed\b|\bsafe(?:ty)?\b|\bsuperior\b|\binferior\b", 2),
        (r"\bversus\b|\bvs\b|\balternative to\b|\bdrugs?\b|\bdos(?:e|es|ing)\b|\bvaccin", 1),
    ),
}

_PRIORITY = (
    _T.REPURPOSING,
    _T.MECHANISM,
    _T.PREVALENCE,
    _T.DIAGNOSIS_PROGNOSIS,
    _T.AETIOLOGY_RISK,
    _T.INTERVENTION,
)

_COMPILED = {
    kind: tuple((re.compile(p, re.IGNORECASE), w) for p, w in cues) for kind, cues in _CUES.items()
}


@dataclass(frozen=True)
class QuestionFrame:
    """A question's type, its PICO elements and the cue words that decided the type."""

    question_type: QuestionType
    pico: PICO
    cues: tuple[str, ...] = ()


def _scores(text: str) -> tuple[dict[QuestionType, int], list[str]]:
    scores = dict.fromkeys(_PRIORITY, 0)
    cues: list[str] = []
    for kind, patterns in _COMPILED.items():
        for pattern, weight in patterns:
            m = pattern.search(text)
            if m:
                scores[kind] += weight
                cue = m.group("cue") if "cue" in pattern.groupindex else m.group(0)
                cues.append(cue.strip().lower())
    return scores, cues


def classify_question(question: str) -> tuple[QuestionType, tuple[str, ...]]:
    """The type of ``question`` and the cues that matched (any type's), in cue order.

    The highest total cue weight wins, ties go to the earlier type of the priority order;
    with no cue at all the type is ``INTERVENTION`` and the cues are ``()``. Never raises.

    >>> classify_question("Can metformin be repurposed for Alzheimer's disease?")[0].value
    'repurposing'
    """
    scores, cues = _scores(" ".join(question.split()))
    best = max(_PRIORITY, key=lambda k: (scores[k], -_PRIORITY.index(k)))
    if scores[best] == 0:
        return _T.INTERVENTION, ()
    return best, tuple(dict.fromkeys(cues))


# --------------------------------------------------------------------------- PICO
_COMPARATOR = re.compile(
    r"\s*,?\s*\b(?:versus|vs\.?|compared (?:with|to)|in comparison (?:with|to)|rather than|"
    r"instead of|as opposed to|(?:better|worse|safer|more \w+|less \w+) than|"
    r"(?:superior|inferior|non-?inferior|equivalent|preferable|similar) to|"
    r"(?:an? )?(?:\w+ )?alternative to)\s+(?P<c>.+?)"
    r"(?=\s+(?:in|among|for|on|at|after|during|following|with regard to|to)\s|[,;:]|$"
    r"|\s+(?:safer|better|worse|superior|inferior|more|less|as|similarly|equally)\b)",
    re.IGNORECASE,
)
_LEAD = re.compile(
    r"^(?:(?:what|which|how|why|whether|does|do|did|can|could|will|would|should|may|might|"
    r"must|is|are|was|were|has|have|had|and|or|so|then)\s+)+",
    re.IGNORECASE,
)
_BETWEEN = re.compile(
    r"^(?:there\s+)?(?:(?:an?|any|the|some)\s+)?(?:\w+\s+)?(?:relationship|relation|"
    r"association|link|correlation|connection|difference)s?\s+between\s+(?P<a>.+?)\s+and\s+"
    r"(?P<b>.+)$"
    r"|^(?:there\s+)?(?:(?:an?|any|the|some)\s+)?(?:\w+\s+)?role\s+(?:for|of)\s+(?P<c>.+?)"
    r"\s+in\s+(?P<d>.+)$",
    re.IGNORECASE,
)
_FREQUENCY = re.compile(
    r"\b(?:prevalence|incidence|frequency|rates?|proportion|burden|number|epidemiology)\s+of\s+"
    r"(?P<x>.+)$|^(?:common|frequent)\s+(?:is|are)\s+(?P<y>.+)$",
    re.IGNORECASE,
)
_MECHANISM_OF = re.compile(
    r"^(?:the\s+)?(?:molecular\s+)?(?:mechanisms?|pathways?|mode of action)\s+"
    r"(?:(?:by|through|via)\s+which\s+(?P<rest>.+)|of\s+(?P<of>.+))$",
    re.IGNORECASE,
)
_VERB_WORDS = (
    r"improve|reduce|prevent|increase|decrease|lower|raise|cause|predict|affect|influence|alter"
    r"|modulate|inhibit|promote|enhance|worsen|protect|slow|delay|shorten|prolong|treat|benefit"
    r"|help|change|induce|trigger|mediate|impair|restore|reverse|diagnose|detect|identify"
    r"|replace|act|work|relieve|alleviate|counteract|correlate|reflect|determine|lead|contribute"
    r"|play|have|add|stimulate|suppress|regulate|activate|block|target|confer|become|impact"
    r"|offer|provide|require|need|matter"
    r"|serve\s+as"
)
_NOUNS = (
    r"risk\s+factor|risk\s+indicator|marker|biomarker|predictor|cause|determinant|indicator"
    r"|consequence|feature|sign|tool|parameter|test|procedure|method|treatment|therapy|option"
    r"|alternative|contraindication|target|candidate|factor|index|score"
)
_ADJECTIVES = (
    r"effective|safe|useful|accurate|reliable|sensitive|specific|beneficial|predictive|valuable"
    r"|helpful|feasible|necessary|needed|required|justified|worthwhile|indicated|appropriate"
    r"|sufficient|superior|harmful|protective|safer|better|worse"
)
_PREDICATE = re.compile(
    r"\s(?:"
    r"(?:be|being)\s+(?:repurposed|repositioned|used|useful|effective|given|added)"
    r"(?:\s+(?:to\s+(?:treat|prevent)|for|in|against|as\s+\w+(?:\s+\w+)?\s+(?:for|in|of)))?"
    rf"|(?:as\s+)?(?:an?|the)\s+(?:[\w-]+\s+){{0,3}}(?:{_NOUNS})s?\s+(?:of|for|in|to)"
    rf"|(?:{_NOUNS})s?\s+(?:of|for|in|to)"
    r"|(?:associated|related|linked|correlated|involved|implicated|responsible)\s+(?:with|to|in"
    r"|for)"
    r"|at\s+(?:increased\s+|higher\s+|greater\s+)?risk\s+(?:of|for)"
    rf"|(?:more\s+|less\s+)?(?:{_ADJECTIVES})(?:\s+and\s+\w+)?(?:\s+(?:for|in)\s+(?:the\s+)?"
    r"(?:diagnosis|detection|prediction|staging|treatment)\s+of|\s+(?:for|to|as|of))?"
    rf"|(?:\w+ly\s+)?(?:{_VERB_WORDS})(?:s|es|ing)?(?:\s+(?:to|on|in|with|against|for"
    r"|a\s+role\s+in|the\s+risk\s+of|risk\s+of))?"
    r")\s+",
    re.IGNORECASE,
)
_TARGET_LEAD = re.compile(
    rf"^(?:an?|the)\s+(?:[\w-]+\s+){{0,3}}(?:{_NOUNS})s?\s+(?:of|for|in|to)\s+|"
    r"^(?:to\s+)?(?:diagnose|detect|predict|stage|treat|prevent|identify)\s+|"
    r"^(?:the\s+)?(?:early\s+)?(?:diagnosis|detection|prediction|staging|assessment|treatment|"
    r"management|development|onset|progression|risk|incidence|severity)\s+of\s+|"
    r"^(?:diagnosing|detecting|predicting|staging|treating|preventing)\s+",
    re.IGNORECASE,
)
_HOW_ADJECTIVE = re.compile(
    rf"^how\s+(?P<adj>{_ADJECTIVES}|common|frequent)\s+(?:is|are|was|were)\s+(?P<x>.+?)"
    r"(?P<rest>\s+(?:for|in|to|as|at|among)\s+.+)?$",
    re.IGNORECASE,
)
_FOR = re.compile(r"\s(?:for|against|to\s+treat|to\s+prevent)\s", re.IGNORECASE)
_POPULATION = re.compile(r"\s(?:in|among|amongst)\s+(?P<p>.+)$", re.IGNORECASE)
_CONDITION = re.compile(r"\s(?:after|following|during)\s+(?P<p>.+)$", re.IGNORECASE)
_THERE = re.compile(r"^there\s+(?:is\s+|are\s+)?(?:still\s+)?", re.IGNORECASE)
_ARTICLE = re.compile(r"^(?:the|a|an|any|all|its|their|this|these)\s+", re.IGNORECASE)
_PRONOUNS = {"it", "they", "this", "these", "them", "we", "you", "there"}
_MAX_WORDS = 10


def _clean(question: str) -> tuple[str, str]:
    """(topic, tail): the question without its final ``?``, split at a title part ("Topic:
    question" or "Topic. Question"); topic is ``""`` when there is none."""
    text = " ".join(question.split()).rstrip("?!. ").strip()
    for sep in (": ", ". ", "--", " - "):
        head, found, tail = text.rpartition(sep)
        if found and len(tail.split()) >= 2 and head:
            return head.strip(), tail.strip()
    return "", text


def _phrase(text: str) -> str:
    """A trimmed element: articles dropped, punctuation stripped, at most ten words."""
    text = text.strip(" ,;:.-")
    text = _ARTICLE.sub("", _THERE.sub("", text)).strip()
    if text.lower() in _PRONOUNS or _ARTICLE.match(text + " "):
        return ""
    words = text.split()
    return " ".join(words[:_MAX_WORDS])


def _split_population(text: str, *, after: bool = True) -> tuple[str, str]:
    """(text before a population phrase, the population; ``""`` if none).

    The population follows the first ``in`` / ``among``; with ``after`` (objects, not
    subjects) a condition after ``after`` / ``following`` / ``during`` counts too.
    """
    padded = " " + text
    m = _POPULATION.search(padded) or (_CONDITION.search(padded) if after else None)
    if not m:
        return text, ""
    return padded[: m.start()].strip(), _phrase(m.group("p"))


def _split_comparator(text: str) -> tuple[str, str]:
    """(text without the comparator phrase, the comparator) (comparator ``""`` if none)."""
    m = _COMPARATOR.search(text)
    if not m:
        return text, ""
    return (text[: m.start()] + " " + text[m.end() :]).strip(), _phrase(m.group("c"))


def _subject_object(text: str) -> tuple[str, str] | None:
    """(subject, object) around the first predicate of ``text`` (subject may be ``""``), or
    ``None`` when ``text`` has no predicate."""
    padded = " " + text + " "
    m = _PREDICATE.search(padded)
    if not m:
        return None
    return padded[: m.start()].strip(), padded[m.end() :].strip()


def _special(body: str) -> tuple[str, str, str] | None:
    """(intervention, outcome, population) of "between A and B", "role of A in B" and "the
    prevalence of X in Y" questions, or ``None``."""
    between = _BETWEEN.match(body)
    if between:
        a = between.group("a") or between.group("c")
        outcome, population = _split_population(
            _TARGET_LEAD.sub("", between.group("b") or between.group("d"))
        )
        return a, outcome, population
    frequency = _FREQUENCY.search(body)
    if frequency:
        outcome, population = _split_population(frequency.group("x") or frequency.group("y"))
        return "", outcome, population
    return None


def _fallback(body: str, topic: str) -> tuple[str, str, str]:
    """(intervention, outcome, population) of a clause with no predicate: its key terms, or
    the title part ("A and B: is there an association?" gives A and B)."""
    rest, population = _split_population(body)
    terms = extract_key_terms(rest, max_terms=2)
    if topic and not terms:
        first, _, second = topic.partition(" and ")
        return first, second, population
    if topic and not body.lower().startswith("there "):
        return topic, " ".join(terms), population
    return (terms[0] if terms else ""), (terms[1] if len(terms) > 1 else ""), population


def _elements(tail: str, topic: str) -> tuple[str, str, str]:
    """(intervention, outcome, population) of the question's main clause; a missing or
    pronoun subject is the ``topic`` (the question's title part)."""
    how = _HOW_ADJECTIVE.match(tail)
    if how and how.group("adj").lower() not in {"common", "frequent"}:
        tail = f"{how.group('x')} {how.group('adj')}{how.group('rest') or ''}"
    body = _LEAD.sub("", tail).strip()
    special = _special(body)
    if special is not None:
        return special
    mechanism = _MECHANISM_OF.match(body)
    if mechanism:
        body = mechanism.group("rest") or mechanism.group("of")
    pair = _subject_object(body)
    parts = _FOR.split(body, maxsplit=1)
    if pair is None and len(parts) == 2:
        pair = (parts[0], parts[1])
    if pair is None:
        return _fallback(body, topic)
    subject, obj = pair
    outcome, population = _split_population(_TARGET_LEAD.sub("", obj))
    subject, subject_population = _split_population(subject, after=False)
    if not _phrase(subject) and topic:
        subject = topic
    return subject, outcome, population or subject_population


def extract_pico(question: str) -> PICO:
    """The PICO elements of ``question`` in its own words (see the module docstring).

    A pronoun subject ("Biliary atresia: should all patients undergo ...?", "X: does it
    ...?") takes the title part of the question. Never raises; elements not found are ``""``.

    >>> extract_pico("Does tocilizumab improve survival in COVID-19?").intervention
    'tocilizumab'
    """
    topic, tail = _clean(question)
    tail, comparator = _split_comparator(tail)
    topic, topic_comparator = _split_comparator(topic)
    comparator = comparator or topic_comparator
    topic = _split_population(topic, after=False)[0]
    intervention, outcome, population = (_phrase(x) for x in _elements(tail, topic))
    if intervention and not comparator:
        intervention, comparator = _split_comparator(intervention)
    return PICO(
        population=population,
        intervention=_phrase(intervention),
        comparator=comparator,
        outcome=outcome,
    )


def frame_question(question: str) -> QuestionFrame:
    """Type, PICO elements and cues of ``question`` (never raises)."""
    kind, cues = classify_question(question)
    return QuestionFrame(question_type=kind, pico=extract_pico(question), cues=cues)
