"""The stance of a source towards a yes/no question, read from its conclusions without a model.

A source's conclusion sentences (its CONCLUSIONS section, or, unlabelled, the sentences that
read like conclusions; without any, its finding sentences) are read for cue families:

- **null** cues, a negative or null finding: "no significant", "did not", "not associated",
  "no difference", "failed to", "insufficient", "should not", "of limited value", "but
  not", ...; a positive cue in their scope ("did not benefit") does not count;
- **positive** cues, an effect or association found: "significantly", "associated with",
  "improved", "reduced", "predicts", "effective", "is a useful", ...; sameness ("similar",
  "comparable", "equivalent") is positive for a question about sameness ("Is X equivalent to
  Y?") and not read otherwise;
- **hedge** cues: "unclear", "remains to be", "inconclusive", "no consensus", "further
  studies are needed", "controversial", ...

The main sentence (the first conclusion sentence) decides: a null cue with no positive one, or
a null cue that outweighs the positive ones over all conclusion sentences -> the finding is
null; a positive cue with no null and no hedge one -> positive; otherwise no decisive
finding. When the main sentence states no finding, the next one that does is read, but only a
null finding read there decides. A positive finding on a skeptical question ("Is X really
necessary?") is not decisive, and neither is a finding the p-values of the source's results
disagree with (:func:`results_disagree`), nor one whose sentence names none of the
question's content words or is restricted in scope ("only in women", "alone", "not
necessarily"). A positive finding *supports* the question, a
null one *contradicts* it; for a negated question ("Does X not affect Y?",
:func:`deepcritical.text.polarity.is_negated_question`) the two swap.

The cue lists and rules were calibrated by hand on the tuning half of the PubMedQA dev
questions (``benchmarks/verdict_split.json``) with ``benchmarks/fit_stance.py`` (each
question's gold abstract read against it; yes -> supports, no -> contradicts, maybe ->
neutral): decisive stances right 99.0% (103/104), decisive on 41.6% of the tuning half. The
test half is never tuned on; ``fit_stance`` prints its totals and ``bench_pubmedqa`` measures
the verdicts end to end on it. Beyond cue words: "no better than", "will not" and an opening
"Not all" are null findings, "may or may not" a hedge; an opening condition ("Unless ...,")
or concession ("Although ...,") is not read, the main clause deciding; sameness
("as effective as", "similar") answers a superiority question ("Is X better than Y?") with
no and a sameness question with yes; a sentence with both kinds of cue is read clause by
clause, the clauses naming the question's terms deciding; a decisive conclusion must name at
least :data:`TOPIC_TERMS` of the question's content words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from deepcritical.evidence.keysentences import (
    KeySentence,
    SectionKind,
    candidate_sentences,
    sentences_of,
)
from deepcritical.models import Evidence, Stance
from deepcritical.text.polarity import is_negated_question
from deepcritical.text.terms import content_stems

__all__ = [
    "Finding",
    "SentenceCues",
    "StanceReading",
    "conclusion_sentences",
    "finding_of",
    "p_value_counts",
    "read_stance",
    "results_disagree",
    "sentence_cues",
    "stance_of_sentences",
]


class Finding(StrEnum):
    """What a source's conclusions report, before the question's polarity is applied."""

    POSITIVE = "positive"
    NULL = "null"
    UNDECIDED = "undecided"


_NULL_CUES = re.compile(
    r"\b(?:no\s+(?:statistically\s+)?significant|not\s+(?:statistically\s+)?significant"
    r"|non-?significant|(?<!who\s)(?<!those\s)(?:did|does|do|was|were|is|are|has|have|had"
    r"|could|need|should)\s+not|cannot|can\s+not|seems?\s+not|appears?\s+not"
    r"|not\s+necessar(?:y|ily)|(?:is|are|was|were|be|seems?|appears?)\s+(?:\w+\s+)?unnecessary"
    r"|not\s+needed|not\s+required|not\s+justified|but\s+not"
    r"|not\s+(?:a\s+)?(?:good|reliable|useful|suitable|valid)|not\s+associated|none\s+of"
    r"|(?:there\s+(?:is|was|were|are)|showed|shows|found|revealed|observed|has|had|have)\s+no"
    r"(?!\s+(?:\w+\s+)?consensus)"
    r"|no\s+(?:[\w-]+\s+){0,3}(?:associations?|differences?|effects?|impact|benefits?"
    r"|evidence|changes?|increase|decrease|improvement|advantage|role|relationship"
    r"|correlation|influence|value|data|predictive|prognostic|reduction|elevation)"
    r"|failed\s+to|unable\s+to|neither|nor\b|unrelated|insufficient|inadequate"
    r"|little\s+(?:evidence|need|value|benefit|effect|impact)"
    r"|of\s+(?:limited|little|no)\s+(?:\w+\s+)?(?:value|use|benefit|significance|help)"
    r"|low\s+yield|poor(?:ly)?\s+(?:predict\w*|correlat\w*|accura\w*|agreement|sensitiv\w*)"
    r"|independent\s+of|not\s+predictive|not\s+a\s+(?:risk|predict)"
    r"|not\s+(?:be\s+)?(?:recommended|indicated|warranted|superior|effective)"
    r"|no\s+better\s+than|not\s+better\s+than|no\s+more\s+(?:\w+\s+)?than"
    r"|not\s+more\s+(?:\w+\s+)?than|(?:will|would|must)\s+not|won't|^\s*not\s+(?:all|every))\b",
    re.IGNORECASE,
)
"""Cues of a negative or null finding (a negation right after "who" or "those" is a
subgroup's description, "those who had not received it", and is not one)."""

_SAMENESS_CUES = re.compile(
    r"\b(?:similar|comparable|equivalent|equally|same|no\s+worse|non-?inferior"
    r"|as\s+(?:\w+\s+){1,2}as)\b",
    re.IGNORECASE,
)
"""Cues of sameness: positive for a question about sameness ("Is X equivalent to Y?"),
otherwise not read (a similar outcome answers "Does X differ?" with no, but "Can X replace
Y?" with yes)."""

_POSITIVE_CUES = re.compile(
    r"\b(?:significant(?:ly)?|associated\s+with|associations?\s+(?:between|of|with)"
    r"|improve[sd]?|improvements?|reduce[sd]?|reductions?|increase[sd]?|decrease[sd]?"
    r"|predict(?:s|ed|ive|or|ors)?|effective|efficacious|useful|beneficial|benefits?"
    r"|superior|better|higher|lower|greater|safe|safely|feasible|accurate|reliable|valid"
    r"|valuable|recommended|can\s+be\s+used|is\s+a\s+(?:useful|valuable|reliable"
    r"|good|promising|simple|sensitive)|important|risk\s+factors?|correlat(?:es|ed|ion)"
    r"|contribut(?:es|ed)|plays?\s+a\s+role|affects?|influences?|related\s+to|linked\s+to"
    r"|results?\s+in|leads?\s+to|caus(?:es|ed)|increased\s+risk|more\s+likely|less\s+likely"
    r"|helpful|appropriate|promising|advantage)\b",
    re.IGNORECASE,
)
"""Cues of an effect or association found."""

_HEDGE_CUES = re.compile(
    r"\b(?:unclear|not\s+clear|remains?\s+to\s+be|remain\s+(?:unknown|uncertain|unclear)"
    r"|uncertain|inconclusive|controversial|conflicting|equivocal|debated|unknown"
    r"|(?:no|lack\s+of)\s+(?:\w+\s+)?consensus"
    r"|(?:further|more|larger|additional)\s+(?:\w+\s+)?(?:studies|research|trials"
    r"|investigations?|data)\s+(?:are|is)\s+(?:needed|required|warranted|necessary)"
    r"|cannot\s+be\s+(?:drawn|made|determined|concluded)"
    r"|(?:may|might|can|could)\s+or\s+(?:may|might|can|could)\s+not)\b",
    re.IGNORECASE,
)
"""Cues of a hedged or open conclusion ("may or may not reduce")."""

_COMPARATIVE_QUESTION = re.compile(
    r"\b(?:more|less|better|worse|higher|lower|greater|fewer)\b[^?]*\bthan\b|\bsuperior\b"
    r"|\boutperform\w*|\binferior\b",
    re.IGNORECASE,
)
"""A question about superiority ("Is X better than Y?", "Is X superior to Y?"): sameness
("as effective as", "similar", "non-inferior") answers it with no."""

_SAMENESS_QUESTION = re.compile(
    r"\b(?:same|similar|equal|equally|equivalent|comparable|as\s+(?:\w+\s+){0,2}as"
    r"|non-?inferior|interchangeable|substitute|alternative)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class SentenceCues:
    """The cue families found in one sentence (the matched phrases, in order)."""

    null: tuple[str, ...]
    positive: tuple[str, ...]
    hedge: tuple[str, ...]


def _found(pattern: re.Pattern[str], text: str) -> tuple[str, ...]:
    return tuple(m.group(0).lower() for m in pattern.finditer(text))


_CLAUSE_END = re.compile(r"[,;:()]|\b(?:but|whereas|while|although|though|however|yet)\b", re.I)
NEGATION_SCOPE_WORDS = 8
"""Words after a null cue that it negates (up to the end of its clause)."""


def _outside_negation(text: str) -> str:
    """``text`` with every null cue and the words it negates (up to the end of its clause, at
    most :data:`NEGATION_SCOPE_WORDS` words) blanked out: "did not benefit from surgery"
    leaves no positive cue behind."""
    out = text
    for m in _NULL_CUES.finditer(text):
        end = _CLAUSE_END.search(text, m.end())
        stop = end.start() if end else len(text)
        words = list(re.finditer(r"\S+", text[m.end() : stop]))
        if len(words) > NEGATION_SCOPE_WORDS:
            stop = m.end() + words[NEGATION_SCOPE_WORDS - 1].end()
        out = out[: m.start()] + " " * (stop - m.start()) + out[stop:]
    return out


_CONDITION = re.compile(r"^\s*(?:unless|if|once|provided\s+that)\b[^,;]*[,;]", re.IGNORECASE)
"""An opening condition ("Unless improvements are made ..., X will not ..."): what it names is
not a finding; its words are not read."""

_CONCESSION = re.compile(
    r"^\s*(?:although|though|even\s+though|while|whereas|despite|in\s+spite\s+of)\b[^,;]*[,;]",
    re.IGNORECASE,
)
"""An opening concession ("Although X cannot establish it, Y excludes it"): the main clause
after it states the finding."""


def sentence_cues(
    text: str, sameness_question: bool = False, *, comparative: bool = False
) -> SentenceCues:
    """The null, positive and hedge cues of ``text``.

    An opening condition or concession ("Unless ..., ", "Although ..., ") is not read: the
    main clause states the finding. A positive cue in the scope of a null one ("did not
    benefit", "no significant improvement", "little evidence that it was effective") does
    not count as positive;
    sameness cues ("similar", "comparable", "as effective as") are positive when
    ``sameness_question``, null for a ``comparative`` question ("Is X better than Y?": the
    positive words inside "as effective as" then do not count), and not read otherwise.
    """
    text = _CONDITION.sub(lambda m: " " * len(m.group(0)), text)
    text = _CONCESSION.sub(lambda m: " " * len(m.group(0)), text)
    null = list(_found(_NULL_CUES, text))
    positive_text = _outside_negation(text)
    sameness = _found(_SAMENESS_CUES, positive_text)
    if comparative and not sameness_question and sameness:
        null += sameness
        positive_text = _SAMENESS_CUES.sub(lambda m: " " * len(m.group(0)), positive_text)
    positive = list(_found(_POSITIVE_CUES, positive_text))
    if sameness_question:
        positive += sameness
    return SentenceCues(tuple(null), tuple(positive), _found(_HEDGE_CUES, text))


@dataclass(frozen=True)
class StanceReading:
    """A source's stance towards a question and why.

    Attributes:
        stance: supports / contradicts / neutral, relative to the question's polarity.
        finding: what the conclusions report before polarity (positive / null / undecided).
        reason: one line naming the cue that decided it (``'null finding: "did not"'``).
        sentence: the main conclusion sentence read (verbatim), ``""`` when there is none.
    """

    stance: Stance
    finding: Finding
    reason: str
    sentence: str = ""


def _quoted(cues: Sequence[str]) -> str:
    return ", ".join(f'"{c}"' for c in dict.fromkeys(cues))


_SKEPTICAL_QUESTION = re.compile(r"\b(?:really|always|truly|actually)\b", re.IGNORECASE)
"""A question that doubts its claim ("Is X really necessary?", "Is it always needed?"): a
positive finding does not settle it, a null one does."""


def finding_of(
    sentences: Sequence[str], sameness_question: bool = False, *, comparative: bool = False
) -> tuple[Finding, str, int]:
    """What conclusions report: ``(finding, reason, index of the sentence read)``.

    ``sentences[0]`` is the main conclusion sentence; when it states no finding (no null or
    positive cue), the first of the others that does is read in its place, but only a null
    finding read there decides (a positive cue outside the main conclusion is too weak a
    sign: on the fitted questions it was right less than two times in three). A sentence with
    both kinds of cue reads as null when null cues outnumber positive ones over all the
    sentences (those of the sentence read counted twice), else as mixed.

    Raises:
        ValueError: ``sentences`` is empty.
    """
    if not sentences:
        raise ValueError("finding_of needs at least one sentence")
    all_cues = [sentence_cues(t, sameness_question, comparative=comparative) for t in sentences]
    index = next((i for i, c in enumerate(all_cues) if c.null or c.positive), 0)
    cues = all_cues[index]
    null = sum(len(c.null) for c in all_cues) + len(cues.null)
    positive = sum(len(c.positive) for c in all_cues) + len(cues.positive)
    if cues.null and (not cues.positive or null > positive):
        kind = "null finding" if not cues.positive else "mostly null findings"
        return Finding.NULL, f"{kind}: {_quoted(cues.null)}", index
    if cues.positive and not cues.null and not cues.hedge:
        if index > 0:  # a positive cue elsewhere is too weak a sign (calibrated)
            return Finding.UNDECIDED, "its main conclusion states no finding", 0
        return Finding.POSITIVE, f"positive finding: {_quoted(cues.positive)}", index
    if cues.positive and cues.null:
        reason = f"mixed findings: {_quoted(cues.positive)} and {_quoted(cues.null)}"
        return Finding.UNDECIDED, reason, index
    if cues.hedge:
        return Finding.UNDECIDED, f"hedged conclusion: {_quoted(cues.hedge)}", index
    return Finding.UNDECIDED, "no finding stated in its conclusions", index


_RESTRICTED_SCOPE = re.compile(
    r"\b(?:(?<!not\s)only|solely|alone|not\s+necessarily|except|modest(?:ly)?"
    r"|in\s+selected|in\s+some)\b",
    re.IGNORECASE,
)
"""Cues of a conclusion restricted in scope ("only in women", "this alone does not", "not
necessarily", "modestly", "except those"): it answers part of the question, not all of it."""


TOPIC_TERMS = 2
"""Content words of the question a decisive conclusion must name (all of them when the
question has fewer): on the tuning half, conclusions naming one were right 86% of the time,
those naming two or more 96%."""


def _undecisive_why(sentence: str, question: str) -> str:
    """Why the finding of ``sentence`` does not settle ``question``, or ``""``: the sentence
    names fewer than :data:`TOPIC_TERMS` of the question's content words
    (:func:`content_stems`; it is about something else the source studied, or only part of
    the question), or its scope is restricted (:data:`_RESTRICTED_SCOPE`)."""
    wanted = content_stems(question)
    named = len(wanted & content_stems(sentence))
    if wanted and named < min(TOPIC_TERMS, len(wanted)):
        if not named:
            return "its conclusion names none of the question's terms"
        return f"its conclusion names only {named} of the question's terms"
    restricted = _RESTRICTED_SCOPE.search(sentence)
    if restricted is not None:
        return f'its conclusion is restricted in scope ("{restricted.group(0).lower()}")'
    return ""


_CLAUSE_SPLIT = re.compile(
    r";|,?\s+(?=\b(?:but|whereas|while|although|though|however|yet)\b)", re.IGNORECASE
)
"""Where a sentence's clauses part (the joining word stays with its clause: "but not with
parks" keeps its null cue)."""


def _by_clause(
    sentence: str, question: str, index: int, mixed: tuple[Finding, str]
) -> tuple[Finding, str]:
    """A sentence with both kinds of cue read clause by clause ("X did not reduce pain but
    improved sleep"): only the clauses that name the question's terms count, and they decide
    when they agree (a positive one only in the main conclusion sentence); else ``mixed``."""
    wanted = content_stems(question)
    own = [
        c for c in _CLAUSE_SPLIT.split(sentence) if c and c.strip() and wanted & content_stems(c)
    ]
    cues = [sentence_cues(c) for c in own]
    null = [x for c in cues for x in c.null]
    positive = [x for c in cues for x in c.positive]
    hedge = [x for c in cues for x in c.hedge]
    if null and not positive:
        return Finding.NULL, f"null finding on the question's terms: {_quoted(null)}"
    if positive and not null and not hedge and index == 0:
        return Finding.POSITIVE, f"positive finding on the question's terms: {_quoted(positive)}"
    return mixed


def stance_of_sentences(
    sentences: Sequence[str], question: str, *, negated: bool | None = None
) -> StanceReading:
    """The stance of conclusion ``sentences`` (the main one first) towards ``question``.

    ``negated`` overrides :func:`~deepcritical.text.polarity.is_negated_question`. A
    positive finding on a skeptical question ("Is X really necessary?") is neutral.

    Raises:
        ValueError: ``sentences`` is empty.
    """
    sameness = _SAMENESS_QUESTION.search(question) is not None
    comparative = _COMPARATIVE_QUESTION.search(question) is not None
    finding, reason, index = finding_of(sentences, sameness, comparative=comparative)
    if reason.startswith("mixed findings"):
        finding, reason = _by_clause(sentences[index], question, index, (finding, reason))
    skeptical = _SKEPTICAL_QUESTION.search(question)
    if finding is Finding.POSITIVE and skeptical is not None:
        finding = Finding.UNDECIDED
        reason = f'{reason}, but the question asks whether it holds "{skeptical.group(0).lower()}"'
    if finding is not Finding.UNDECIDED:
        why = _undecisive_why(sentences[index], question)
        if why:
            finding, reason = Finding.UNDECIDED, f"{reason}, but {why}"
    stance = {
        Finding.POSITIVE: Stance.SUPPORTS,
        Finding.NULL: Stance.CONTRADICTS,
        Finding.UNDECIDED: Stance.NEUTRAL,
    }[finding]
    if negated if negated is not None else is_negated_question(question):
        stance = stance.reversed()
        if stance is not Stance.NEUTRAL:
            reason = f"{reason} (the question is negated)"
    return StanceReading(stance, finding, reason, sentences[index])


def conclusion_sentences(evidence: Evidence) -> list[KeySentence]:
    """The sentences of ``evidence`` that state its conclusions: conclusion-type sentences,
    else its finding sentences (results), else its last two candidate sentences; in reading
    order. ``[]`` for an item with no usable sentence."""
    candidates = candidate_sentences(evidence)
    return (
        [s for s in candidates if s.is_conclusion]
        or [s for s in candidates if s.is_finding]
        or candidates[-2:]
    )


_P_VALUE = re.compile(r"\bp\s*(<|>|=|≤|≥|<=|>=)\s*(0?\.\d+|1(?:\.0+)?|0)\b", re.IGNORECASE)
SIGNIFICANCE = 0.05


def p_value_counts(texts: Sequence[str]) -> tuple[int, int]:
    """``(significant, not significant)``: the p-values reported in ``texts`` below / at or
    above :data:`SIGNIFICANCE` ("p < 0.001", "P = .03" / "p = 0.41", "p > 0.05"); a bound
    that says neither ("p < 0.10", "p > 0.01") is not counted."""
    significant = not_significant = 0
    for m in _P_VALUE.finditer(" ".join(texts)):
        op, value = m.group(1), float(m.group(2))
        below = value < SIGNIFICANCE or (value == SIGNIFICANCE and op != "=")
        if op in ("<", "≤", "<=", "=") and below:
            significant += 1
        elif op in ("=", ">", "≥", ">=") and value >= SIGNIFICANCE:
            not_significant += 1
    return significant, not_significant


def results_disagree(finding: Finding, evidence: Evidence) -> str:
    """Why the p-values of ``evidence``'s results section disagree with ``finding``, or
    ``""``: a positive finding whose results report more non-significant than significant
    p-values, or a null finding whose results report significant ones outnumbering the
    others by more than one (calibrated: on the fitted questions, the decisive readings this
    turns neutral were right about two times in three, against 86% for the others)."""
    results = [s.text for s in sentences_of(evidence) if s.kind is SectionKind.RESULTS]
    significant, not_significant = p_value_counts(results)
    if finding is Finding.POSITIVE and not_significant > significant:
        return (
            f"its conclusion reads positive, but its results report {not_significant} "
            f"non-significant p-value(s) against {significant} significant"
        )
    if finding is Finding.NULL and significant > not_significant + 1:
        return (
            f"its conclusion reads null, but its results report {significant} significant "
            f"p-value(s) against {not_significant} non-significant"
        )
    return ""


def read_stance(evidence: Evidence, question: str) -> StanceReading:
    """The stance of ``evidence`` towards ``question`` from its conclusion sentences
    (:func:`conclusion_sentences`; the first is the main one: picking the one most similar to
    the question instead was less precise on the fitted questions, 82% against 85%), checked
    against the p-values of its results (:func:`results_disagree`: a disagreement makes it
    neutral). An item with no conclusion sentence is neutral ("no conclusion to read")."""
    sentences = [s.text for s in conclusion_sentences(evidence)]
    if not sentences:
        return StanceReading(Stance.NEUTRAL, Finding.UNDECIDED, "no conclusion to read")
    reading = stance_of_sentences(sentences, question)
    disagreement = results_disagree(reading.finding, evidence)
    if disagreement:
        return StanceReading(Stance.NEUTRAL, Finding.UNDECIDED, disagreement, reading.sentence)
    return reading
