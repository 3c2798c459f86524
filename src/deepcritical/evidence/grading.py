"""Evidence grading: the study design of a source and its level of evidence (no model).

:func:`grade_evidence` labels an evidence item with a :class:`~deepcritical.models.StudyDesign`;
:func:`assess_design` also says what the label was read from. Signals, strongest first (the
first rule that matches decides):

1. ``Evidence.study_design``, when someone set it.
2. **Publication types** (assigned by NLM indexers or by the registry): ``Meta-Analysis``,
   ``Systematic Review``, ``Randomized Controlled Trial``, ``Clinical Trial`` and its phases,
   ``Observational Study``, ``Case Reports``, ``Review`` (veterinary trial types are animal
   studies). Generic types are refined by the text: a ``Clinical Trial`` (which is all that
   ClinicalTrials.gov records carry for interventional studies) whose own text says it is
   randomised is a randomised trial (registry summaries, written in the future tense, count
   too; so would an ``Allocation: RANDOMIZED`` line, if the source wrote one); a ``Review``
   whose text describes a systematic search or a meta-analysis is one; an ``Observational
   Study`` is a cohort, case-control or cross-sectional study when MeSH or the text says
   which. A letter, comment, editorial, news item or erratum with no design type is
   ``OTHER`` (a letter about a meta-analysis is not one).
3. **MeSH check tags**: ``Animals`` without ``Humans`` is an animal study (randomised or not).
4. **The item's own text** says meta-analysis, then systematic review (a systematic search of
   named databases). The text read is the title and every paragraph of the abstract except
   the background (``BACKGROUND``/``INTRODUCTION``/``CONTEXT``... paragraphs describe earlier
   work), sentence by sentence; a sentence that points at other or future work ("further
   randomised trials are needed", "a previous meta-analysis", "current meta-analyses") is
   ignored.
5. **MeSH study-design headings** (indexers read the full text): ``Cohort Studies`` /
   ``Longitudinal Studies``, ``Case-Control Studies``, ``Cross-Sectional Studies``; when
   several are present, the one the text names, else the lowest level. ``... as Topic``
   headings are never read as the item's design: NLM uses them for articles *about* trials
   (in PubMedQA, "Randomized Controlled Trials as Topic" is mostly on meta-analyses, secondary
   analyses and simulations).
6. The text again: a randomised trial (a randomisation phrase about this study, or a
   blinding/allocation MeSH heading with the word randomised); a non-randomised, phase I-IV,
   single-arm or quasi-experimental trial; a case report or case series; a cohort,
   case-control or cross-sectional study it names (several: the lowest level, so a nested
   case-control study within a cohort is a case-control study), or a survey; animal or in
   vitro work (``In Vitro Techniques`` / ``Cells, Cultured`` / ``Cell Line`` MeSH, or animal
   or cell words with no human participants); an observational study it does not name
   ("retrospective", "prospective", "registry"... and the MeSH headings ``Retrospective
   Studies``, ``Prospective Studies``, ``Follow-Up Studies``); a narrative review.
7. ``PREPRINT`` for a preprint with no design recognised; a ClinicalTrials.gov record with no
   usable type is a clinical trial; ``OTHER`` otherwise.

This is keyword reading, good enough to group and weigh sources, not a methodological
appraisal (risk of bias, sample size and consistency are not judged).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from deepcritical.models import Evidence, SourceName, StudyDesign
from deepcritical.text.sentences import plain_sentence_spans

__all__ = [
    "CLINICAL_DESIGNS",
    "DESIGN_ORDER",
    "EVIDENCE_LEVEL",
    "HIGH_LEVEL_DESIGNS",
    "PRECLINICAL_DESIGNS",
    "DesignGrade",
    "StudyDesign",
    "assess_design",
    "clinical_weight",
    "evidence_level",
    "grade_evidence",
    "rank_by_level",
]

TEXT_CHARS = 4000
"""Characters of an item's content read for design cues."""

EVIDENCE_LEVEL: dict[StudyDesign, int] = {
    StudyDesign.META_ANALYSIS: 10,
    StudyDesign.SYSTEMATIC_REVIEW: 9,
    StudyDesign.RCT: 8,
    StudyDesign.CLINICAL_TRIAL: 7,
    StudyDesign.COHORT: 6,
    StudyDesign.CASE_CONTROL: 5,
    StudyDesign.CROSS_SECTIONAL: 4,
    StudyDesign.OBSERVATIONAL: 4,
    StudyDesign.CASE_REPORT: 3,
    StudyDesign.REVIEW: 2,
    StudyDesign.ANIMAL: 1,
    StudyDesign.IN_VITRO: 1,
    StudyDesign.PREPRINT: 0,
    StudyDesign.OTHER: 0,
}
"""Level of evidence of each design, higher is stronger: meta-analysis > systematic review >
randomised trial > other trial > cohort > case-control > cross-sectional = unspecified
observational > case report/series > narrative review > preclinical (animal, in vitro);
0 when the design is unknown."""

DESIGN_ORDER: list[StudyDesign] = sorted(StudyDesign, key=lambda d: -EVIDENCE_LEVEL[d])
"""Every design, strongest evidence first (stable for equal levels)."""

HIGH_LEVEL_DESIGNS = frozenset(
    {StudyDesign.META_ANALYSIS, StudyDesign.SYSTEMATIC_REVIEW, StudyDesign.RCT}
)
CLINICAL_DESIGNS = frozenset(
    {
        *HIGH_LEVEL_DESIGNS,
        StudyDesign.CLINICAL_TRIAL,
        StudyDesign.COHORT,
        StudyDesign.CASE_CONTROL,
        StudyDesign.CROSS_SECTIONAL,
        StudyDesign.OBSERVATIONAL,
        StudyDesign.CASE_REPORT,
    }
)
"""Designs that study people (the clinical evidence the judge weighs)."""
PRECLINICAL_DESIGNS = frozenset({StudyDesign.ANIMAL, StudyDesign.IN_VITRO})


@dataclass(frozen=True)
class DesignGrade:
    """A design and what it was read from (``basis``), e.g. ``publication type
    'Randomized Controlled Trial'`` or ``text: 'were randomly assigned'``."""

    design: StudyDesign
    basis: str

    @property
    def level(self) -> int:
        """:data:`EVIDENCE_LEVEL` of the design."""
        return EVIDENCE_LEVEL[self.design]


# --------------------------------------------------------------------------- patterns

# singular on purpose: "meta-analyses" (plural) nearly always means other people's
_MA = re.compile(r"\bmeta-?analysis\b|\bmeta-?analytic|\bpooled\s+analysis\b", re.I)
_SR = re.compile(
    r"\bsystematic(?:ally)?\s+(?:literature\s+)?(?:review|search)\w*"
    r"|\b(?:searched|search\s+of)\s+(?:the\s+)?(?:electronic\s+)?(?:databases?|MEDLINE|PubMed|"
    r"EMBASE|Cochrane)"
    r"|\b(?:MEDLINE|PubMed|EMBASE|Cochrane\s+(?:Library|Central|registry))\b[^.]{0,120}"
    r"\b(?:were|was)\s+searched"
    r"|\b(?:electronic|bibliographic)\s+databases?\b[^.]{0,80}\b(?:were|was)\s+searched",
    re.I,
)
_NOT_RANDOM = r"(?<!non-)(?<!non)(?<!quasi-)(?<!not\s)"
_RCT = re.compile(
    rf"{_NOT_RANDOM}\brandomi[sz]ed\b[^.;]{{0,80}}?\b(?:trials?|study|design)\b"
    r"|\b(?:were|was|been|being)\s+(?:prospectively\s+|then\s+)?randomi[sz]ed\b"
    rf"|{_NOT_RANDOM}\brandomi[sz]ed\s+(?:to|into|in\s+a\s+\d|between)\b"
    r"|\brandomly\s+(?:assigned|allocated|divided|distributed)\b"
    r"|(?<!mendelian\s)\brandomi[sz]ation\b|\ballocation:\s*randomi[sz]ed\b",
    re.I,
)
_RANDOM_WORD = re.compile(r"\brandomi[sz]|\brandomly\s+(?:assigned|allocated|divided)", re.I)
_TRIAL = re.compile(
    r"\bnon-?randomi[sz]ed\b[^.]{0,40}\b(?:trial|study)\b"
    r"|\bphase\s+(?:i{1,3}|iv|[1-4])(?:\s*[/ab-]\s*(?:i{1,3}|[1-4]))?\s+(?:\w+\s+){0,2}"
    r"(?:trial|study)\b"
    r"|\b(?:single-arm|open-label|dose-escalation|uncontrolled)\b[^.]{0,40}\b(?:trial|study)\b"
    r"|\b(?:clinical|pilot|controlled|feasibility)\s+trial\b"
    r"|\bbefore-and-after\s+study\b|\bquasi-experimental\b|\bintervention\s+study\b",
    re.I,
)
_COHORT = re.compile(r"\bcohorts?\b", re.I)
_CASE_CONTROL = re.compile(r"\bcase[- ]control(?:led)?\b", re.I)
_CROSS_SECTIONAL = re.compile(r"\bcross[- ]sectional\b|\bprevalence\s+study\b", re.I)
_SURVEY = re.compile(r"\bsurvey(?:ed|s)?\b|\bquestionnaires?\b", re.I)
_OBSERVATIONAL = re.compile(
    r"\bretrospective(?:ly)?\b|\bprospective(?:ly)?\b|\bregistry\b|\bobservational\b"
    r"|\bpopulation-based\b|\blongitudinal\b|\bfollow-up\s+study\b|\bchart\s+review\b"
    r"|\bmedical\s+records\b|\bdatabase\s+(?:study|analysis)\b",
    re.I,
)
_CASE_REPORT = re.compile(
    r"\bcase\s+reports?\b|\bcase\s+series\b"
    r"|\bwe\s+(?:report|describe|present)\s+(?:a|an|the|two|three|four|five|\d+)\s+"
    r"(?:\w+\s+){0,3}(?:cases?|patients?|infants?|children|man|woman|boy|girl)\b"
    r"|\ba\s+\d{1,3}-(?:year|month|day|week)-old\s+(?:\w+\s+)?"
    r"(?:man|woman|male|female|boy|girl|infant|patient|child)\b",
    re.I,
)
_ANIMAL_WORDS = re.compile(
    r"\b(?:mice|mouse|murine|rats?|rodents?|rabbits?|dogs?|canine|pigs?|piglets?|porcine|"
    r"sheep|ewes?|ovine|primates?|monkeys?|macaques?|zebrafish|drosophila|animal\s+models?|"
    r"knock-?out|transgenic|xenografts?)\b",
    re.I,
)
_IN_VITRO_WORDS = re.compile(
    r"\bin\s+vitro\b|\bcell\s+lines?\b|\bcultured\s+(?:\w+\s+)?cells\b|\bcell\s+cultures?\b"
    r"|\borganoids?\b",
    re.I,
)
_HUMAN_WORDS = re.compile(
    r"\b(?:patients?|participants?|volunteers?|subjects|women|men|children|adults|"
    r"inpatients|outpatients|residents|respondents|physicians|nurses|students)\b",
    re.I,
)
_REVIEW = re.compile(
    r"\b(?:this|our|the\s+present)\s+(?:narrative\s+|literature\s+)?review\b"
    r"|\bwe\s+(?:review|summari[sz]e)\b|\bnarrative\s+review\b|\breview\s+of\s+the\s+literature\b",
    re.I,
)
# a sentence about other or future work does not describe the item's own design
_ELSEWHERE = re.compile(
    r"\b(?:needed|warranted|necessary|required|should|future|further|previous(?:ly)?|"
    r"earlier|published|existing|larger|current(?:ly)?|have\s+shown|has\s+shown|have\s+demonstrated|"
    r"has\s+been\s+shown|have\s+reported|been\s+described|been\s+reported|will|would|"
    r"planned|ongoing|proposed|underway|indicated|merits?|justif(?:y|ied|ies))\b",
    re.I,
)
_BACKGROUND_LABELS = frozenset(
    {"BACKGROUND", "INTRODUCTION", "CONTEXT", "RATIONALE", "IMPORTANCE", "BACKGROUNDS"}
)
_LABEL = re.compile(r"^[ \t]*([A-Z][A-Za-z /&,()-]{1,60}?)[ \t]*:[ \t]+")

# MeSH
_MESH_DESIGN: dict[str, StudyDesign] = {
    "cohort studies": StudyDesign.COHORT,
    "longitudinal studies": StudyDesign.COHORT,
    "case-control studies": StudyDesign.CASE_CONTROL,
    "cross-sectional studies": StudyDesign.CROSS_SECTIONAL,
}
_MESH_OBSERVATIONAL = frozenset(
    {"retrospective studies", "prospective studies", "follow-up studies", "observational study"}
)
_MESH_RANDOMISATION = frozenset(
    {"double-blind method", "single-blind method", "random allocation", "cross-over studies"}
)
_MESH_IN_VITRO = frozenset(
    {
        "in vitro techniques",
        "cells, cultured",
        "cell line",
        "cell line, tumor",
        "tumor cells, cultured",
        "organoids",
    }
)


# --------------------------------------------------------------------------- text scope


def _own_text(evidence: Evidence) -> str:
    """Title plus the content's paragraphs that are not background, first 4000 characters."""
    parts = [evidence.citation.title.strip()]
    for paragraph in evidence.content[:TEXT_CHARS].split("\n"):
        m = _LABEL.match(paragraph)
        if m and m.group(1).strip().upper() in _BACKGROUND_LABELS:
            continue
        parts.append(paragraph.strip())
    return "\n".join(p for p in parts if p)


def _sentences(text: str) -> list[str]:
    return [text[begin:stop] for begin, stop in plain_sentence_spans(text)]


def _own_match(pattern: re.Pattern[str], sentences: Sequence[str]) -> str | None:
    """The first match of ``pattern`` in a sentence that does not point at other work."""
    for sentence in sentences:
        m = pattern.search(sentence)
        if m is not None and _ELSEWHERE.search(sentence) is None:
            return m.group(0)
    return None


def _any_match(pattern: re.Pattern[str], sentences: Sequence[str]) -> str | None:
    for sentence in sentences:
        m = pattern.search(sentence)
        if m is not None:
            return m.group(0)
    return None


def _quote(text: str) -> str:
    return " ".join(text.split())[:60]


# --------------------------------------------------------------------------- rules


# Complexity: one rule per publication type, in evidence order.
def _from_types(evidence: Evidence, sentences: Sequence[str], mesh: set[str]) -> DesignGrade | None:  # noqa: C901
    types = [t.strip() for t in evidence.publication_types if t.strip()]
    lower = {t.lower(): t for t in types}

    def has(*names: str) -> str | None:
        for name in names:
            if name in lower:
                return lower[name]
        return None

    def basis(name: str) -> str:
        return f"publication type {name!r}"

    if found := has("randomized controlled trial, veterinary", "clinical trial, veterinary"):
        return DesignGrade(StudyDesign.ANIMAL, basis(found))
    if found := has("observational study, veterinary"):
        return DesignGrade(StudyDesign.ANIMAL, basis(found))
    if found := has("meta-analysis", "network meta-analysis"):
        return DesignGrade(StudyDesign.META_ANALYSIS, basis(found))
    if found := has("systematic review"):
        if (cue := _own_match(_MA, sentences)) is not None:
            return DesignGrade(StudyDesign.META_ANALYSIS, f"{basis(found)} and text {cue!r}")
        return DesignGrade(StudyDesign.SYSTEMATIC_REVIEW, basis(found))
    if found := has("randomized controlled trial", "equivalence trial", "pragmatic clinical trial"):
        return DesignGrade(StudyDesign.RCT, basis(found))
    trial = has(
        "clinical trial",
        "controlled clinical trial",
        "clinical trial, phase i",
        "clinical trial, phase ii",
        "clinical trial, phase iii",
        "clinical trial, phase iv",
        "adaptive clinical trial",
        "clinical study",
        "early phase 1",
        "phase 1",
        "phase 2",
        "phase 3",
        "phase 4",
    )
    if trial is not None:
        # registry summaries are written before the trial ("will be randomised"): any mention
        registry = evidence.citation.source == SourceName.CLINICALTRIALS
        if (cue := (_any_match if registry else _own_match)(_RCT, sentences)) is not None:
            return DesignGrade(StudyDesign.RCT, f"{basis(trial)} and text {_quote(cue)!r}")
        return DesignGrade(StudyDesign.CLINICAL_TRIAL, basis(trial))
    if found := has("observational study"):
        refined = _observational_kind(sentences, mesh)
        if refined is not None:
            return DesignGrade(refined.design, f"{basis(found)}; {refined.basis}")
        return DesignGrade(StudyDesign.OBSERVATIONAL, basis(found))
    if found := has("case reports"):
        return DesignGrade(StudyDesign.CASE_REPORT, basis(found))
    if found := has("review", "scoping review"):
        if (cue := _own_match(_MA, sentences)) is not None:
            return DesignGrade(StudyDesign.META_ANALYSIS, f"{basis(found)} and text {cue!r}")
        if (cue := _own_match(_SR, sentences)) is not None:
            return DesignGrade(
                StudyDesign.SYSTEMATIC_REVIEW, f"{basis(found)} and text {_quote(cue)!r}"
            )
        return DesignGrade(StudyDesign.REVIEW, basis(found))
    return None


_NON_RESEARCH = frozenset(
    {
        "letter", "comment", "editorial", "news", "newspaper article", "published erratum",
        "erratum", "correction", "retraction of publication", "retraction notice",
        "expression of concern", "interview", "biography", "portrait",
    }
)  # fmt: skip


def _observational_kind(sentences: Sequence[str], mesh: set[str]) -> DesignGrade | None:
    """Cohort, case-control or cross-sectional, from MeSH headings and the text's own words.

    Several MeSH design headings: the one the text names, else the lowest level. No heading:
    the lowest level the text names ("a nested case-control study within a cohort")."""
    headed = [(term, design) for term, design in _MESH_DESIGN.items() if term in mesh]
    named = {
        design: cue
        for design, pattern in (
            (StudyDesign.COHORT, _COHORT),
            (StudyDesign.CASE_CONTROL, _CASE_CONTROL),
            (StudyDesign.CROSS_SECTIONAL, _CROSS_SECTIONAL),
        )
        if (cue := _any_match(pattern, sentences)) is not None
    }
    if headed:
        designs = {design for _, design in headed}
        both = [d for d in designs if d in named]
        chosen = min(both or designs, key=lambda d: EVIDENCE_LEVEL[d])
        term = next(t for t, d in headed if d == chosen)
        return DesignGrade(chosen, f"MeSH {_title(term)!r}")
    if named:
        chosen = min(named, key=lambda d: EVIDENCE_LEVEL[d])
        return DesignGrade(chosen, f"text {_quote(named[chosen])!r}")
    if (cue := _any_match(_SURVEY, sentences)) is not None:
        return DesignGrade(StudyDesign.CROSS_SECTIONAL, f"text {_quote(cue)!r}")
    return None


def _title(term: str) -> str:
    """A lower-cased MeSH heading in MeSH case: ``case-control studies`` ->
    ``Case-Control Studies``."""
    return " ".join("-".join(p.capitalize() for p in w.split("-")) for w in term.split(" "))


# Complexity: the evidence ladder, read top down.
def assess_design(evidence: Evidence) -> DesignGrade:  # noqa: C901
    """The design of ``evidence`` and what it was read from (rules in the module docstring)."""
    if evidence.study_design is not None:
        return DesignGrade(evidence.study_design, "set on the evidence item")
    mesh = {m.strip().lower() for m in evidence.mesh_terms}
    sentences = _sentences(_own_text(evidence))
    if (grade := _from_types(evidence, sentences, mesh)) is not None:
        return grade
    other = [t for t in evidence.publication_types if t.strip().lower() in _NON_RESEARCH]
    if other:  # a letter about a meta-analysis is not one
        return DesignGrade(StudyDesign.OTHER, f"publication type {other[0].strip()!r}")
    if "animals" in mesh and "humans" not in mesh:
        return DesignGrade(StudyDesign.ANIMAL, "MeSH 'Animals' without 'Humans'")
    if (cue := _own_match(_MA, sentences)) is not None:
        return DesignGrade(StudyDesign.META_ANALYSIS, f"text {cue!r}")
    if (cue := _own_match(_SR, sentences)) is not None:
        return DesignGrade(StudyDesign.SYSTEMATIC_REVIEW, f"text {_quote(cue)!r}")
    if any(term in mesh for term in _MESH_DESIGN):
        grade = _observational_kind(sentences, mesh)
        if grade is not None:
            return grade
    if (cue := _own_match(_RCT, sentences)) is not None:
        return DesignGrade(StudyDesign.RCT, f"text {_quote(cue)!r}")
    blinding = sorted(mesh & _MESH_RANDOMISATION)
    if blinding and (cue := _own_match(_RANDOM_WORD, sentences)) is not None:
        return DesignGrade(
            StudyDesign.RCT, f"MeSH {_title(blinding[0])!r} and text {_quote(cue)!r}"
        )
    if (cue := _own_match(_TRIAL, sentences)) is not None:
        return DesignGrade(StudyDesign.CLINICAL_TRIAL, f"text {_quote(cue)!r}")
    if (cue := _own_match(_CASE_REPORT, sentences)) is not None:
        return DesignGrade(StudyDesign.CASE_REPORT, f"text {_quote(cue)!r}")
    grade = _observational_kind(sentences, set())
    if grade is not None:
        return grade
    preclinical = _preclinical(evidence, sentences, mesh)
    if preclinical is not None:
        return preclinical
    if (cue := _any_match(_OBSERVATIONAL, sentences)) is not None:
        return DesignGrade(StudyDesign.OBSERVATIONAL, f"text {_quote(cue)!r}")
    if observed := sorted(mesh & _MESH_OBSERVATIONAL):
        return DesignGrade(StudyDesign.OBSERVATIONAL, f"MeSH {_title(observed[0])!r}")
    if (cue := _own_match(_REVIEW, sentences)) is not None:
        return DesignGrade(StudyDesign.REVIEW, f"text {_quote(cue)!r}")
    if evidence.is_preprint:
        return DesignGrade(StudyDesign.PREPRINT, "preprint with no design recognised")
    if evidence.citation.source == SourceName.CLINICALTRIALS:
        return DesignGrade(StudyDesign.CLINICAL_TRIAL, "ClinicalTrials.gov record")
    return DesignGrade(StudyDesign.OTHER, "no design cue found")


def _preclinical(
    evidence: Evidence, sentences: Sequence[str], mesh: set[str]
) -> DesignGrade | None:
    """Animal or in vitro work: MeSH cell headings, or animal/cell words with no people."""
    cells = sorted(mesh & _MESH_IN_VITRO)
    if cells:
        return DesignGrade(StudyDesign.IN_VITRO, f"MeSH {_title(cells[0])!r}")
    people = _any_match(_HUMAN_WORDS, sentences) is not None or "humans" in mesh
    animal = _any_match(_ANIMAL_WORDS, sentences)
    in_vitro = _any_match(_IN_VITRO_WORDS, sentences)
    if animal is not None and not people:
        return DesignGrade(StudyDesign.ANIMAL, f"text {_quote(animal)!r}, no human participants")
    if in_vitro is not None and not people:
        return DesignGrade(
            StudyDesign.IN_VITRO, f"text {_quote(in_vitro)!r}, no human participants"
        )
    return None


def grade_evidence(evidence: Evidence) -> StudyDesign:
    """The study design of ``evidence`` (an explicit ``evidence.study_design`` wins)."""
    return assess_design(evidence).design


def evidence_level(evidence: Evidence) -> int:
    """:data:`EVIDENCE_LEVEL` of the item's design (0 when unknown)."""
    return EVIDENCE_LEVEL[grade_evidence(evidence)]


def clinical_weight(evidence: Evidence) -> int:
    """How much an item counts as clinical evidence, 0-2.

    2: a peer-reviewed meta-analysis, systematic review or randomised trial; 1: any other
    clinical design (other trials, cohort, case-control, cross-sectional and unspecified
    observational studies, case reports and series), a preprint of a high-level design, or an
    item of unknown design whose text studies people (patients, participants...); 0:
    preclinical work, narrative reviews and items of unknown design that mention no people.
    """
    design = grade_evidence(evidence)
    if design in HIGH_LEVEL_DESIGNS:
        return 1 if evidence.is_preprint else 2
    if design in CLINICAL_DESIGNS:
        return 1
    if design in (StudyDesign.OTHER, StudyDesign.PREPRINT):
        text = f"{evidence.citation.title}\n{evidence.content[:TEXT_CHARS]}"
        return 1 if _HUMAN_WORDS.search(text) else 0
    return 0


def rank_by_level(items: Sequence[Evidence]) -> list[Evidence]:
    """``items`` sorted by evidence level, strongest first (stable within a level)."""
    return sorted(items, key=lambda e: -evidence_level(e))
