"""Study design of an evidence item, read from publication types and text (no model).

Used by the extractive report writer to group quotes and by the extractive judge to score.
The reading is keyword-based: good enough to group, not a methodological appraisal.
"""

from __future__ import annotations

import re
from enum import StrEnum

from deepcritical.models import Evidence, SourceName

__all__ = ["DESIGN_ORDER", "StudyDesign", "classify_design", "is_clinical", "is_mechanistic"]

TEXT_CHARS = 3000
"""Characters of an item's content searched for design keywords."""


class StudyDesign(StrEnum):
    """Study designs, strongest clinical evidence first; values are report headings."""

    SYSTEMATIC = "Systematic reviews and meta-analyses"
    RCT = "Randomised controlled trials"
    TRIAL = "Other clinical trials and registered trials"
    OBSERVATIONAL = "Observational studies (cohort, case-control, cross-sectional, surveys)"
    CASE = "Case reports and case series"
    LABORATORY = "Animal and laboratory studies"
    REVIEW = "Narrative reviews"
    OTHER = "Other studies"


DESIGN_ORDER = list(StudyDesign)
"""Designs in heading order."""

_RULES: list[tuple[StudyDesign, re.Pattern[str]]] = [
    (StudyDesign.SYSTEMATIC, re.compile(r"meta-?analy|systematic(?:ally)? review", re.I)),
    (
        StudyDesign.RCT,
        re.compile(r"randomi[sz]ed|randomly (?:assigned|allocated)|randomi[sz]ation", re.I),
    ),
    (
        StudyDesign.TRIAL,
        re.compile(r"clinical trial|phase (?:i{1,3}|iv|[1-4])\b|single-arm|open-label", re.I),
    ),
    (
        StudyDesign.OBSERVATIONAL,
        re.compile(
            r"cohort|case-control|cross-sectional|retrospective|prospective|registry|survey|"
            r"questionnaire|observational|population-based|longitudinal",
            re.I,
        ),
    ),
    (StudyDesign.CASE, re.compile(r"case reports?\b|case series|we (?:report|describe) a", re.I)),
    (
        StudyDesign.LABORATORY,
        re.compile(
            r"\b(?:mice|mouse|murine|rats?|rodents?|in vitro|cell lines?|cultured cells|"
            r"zebrafish|animal models?|knockout|xenograft)\b",
            re.I,
        ),
    ),
    (StudyDesign.REVIEW, re.compile(r"\breview\b", re.I)),
]

_CLINICAL = {StudyDesign.SYSTEMATIC, StudyDesign.RCT, StudyDesign.TRIAL, StudyDesign.OBSERVATIONAL}
_CLINICAL_WORDS = re.compile(r"\b(?:patients|participants|clinical|trial)\b", re.I)
_MECHANISTIC = re.compile(
    r"\b(?:mechanism\w*|pathway\w*|receptor\w*|signal(?:l)?ing|inhibit\w*|activat\w*|"
    r"express\w*|phosphorylat\w*|in vitro|mice|mouse|rats?|cell lines?|molecular|gene|"
    r"proteins?|enzyme\w*|mitochondri\w*|AMPK|mTOR)\b",
    re.I,
)


def classify_design(evidence: Evidence) -> StudyDesign:
    """The design of ``evidence``: publication types first, then the first 3000 characters of
    the content (first matching rule in :data:`DESIGN_ORDER`); ClinicalTrials.gov records are
    trials unless randomised."""
    types = " ".join(evidence.publication_types)
    for design, pattern in _RULES:
        if types and pattern.search(types):
            return design
    text = f"{evidence.citation.title}\n{evidence.content[:TEXT_CHARS]}"
    for design, pattern in _RULES:
        if pattern.search(text):
            if design == StudyDesign.REVIEW and not types:
                continue  # "review" in an abstract is too weak a signal on its own
            return design
    if evidence.citation.source == SourceName.CLINICALTRIALS:
        return StudyDesign.TRIAL
    return StudyDesign.OTHER


def is_clinical(evidence: Evidence) -> bool:
    """True for clinical designs (systematic, randomised, other trials, observational), or an
    item that mentions patients, participants or a clinical trial."""
    return classify_design(evidence) in _CLINICAL or bool(
        _CLINICAL_WORDS.search(evidence.content[:TEXT_CHARS])
    )


def is_mechanistic(evidence: Evidence) -> bool:
    """True when the item mentions mechanisms (pathways, receptors, animal or cell studies)."""
    return bool(_MECHANISTIC.search(evidence.content[:TEXT_CHARS]))
