"""Study-design groups of evidence items, for report headings and the extractive judge.

The design itself is read by :func:`deepcritical.evidence.grading.grade_evidence` (publication
types, MeSH headings, preprint flag and keywords; see that module). This module only groups
those designs under report headings (:class:`StudyDesign`, kept under its historical name) and
says which items are clinical or mechanistic.
"""

from __future__ import annotations

import re
from enum import StrEnum

from deepcritical.evidence.grading import (
    CLINICAL_DESIGNS,
    TEXT_CHARS,
    clinical_weight,
    grade_evidence,
)
from deepcritical.models import Evidence
from deepcritical.models import StudyDesign as Design

__all__ = [
    "DESIGN_ORDER",
    "DesignGroup",
    "StudyDesign",
    "classify_design",
    "design_group",
    "is_clinical",
    "is_mechanistic",
]


class DesignGroup(StrEnum):
    """Groups of study designs, strongest clinical evidence first; values are report headings."""

    SYSTEMATIC = "Systematic reviews and meta-analyses"
    RCT = "Randomised controlled trials"
    TRIAL = "Other clinical trials and registered trials"
    OBSERVATIONAL = "Observational studies (cohort, case-control, cross-sectional, surveys)"
    CASE = "Case reports and case series"
    LABORATORY = "Animal and laboratory studies"
    REVIEW = "Narrative reviews"
    OTHER = "Other studies"


StudyDesign = DesignGroup
"""Former name of :class:`DesignGroup` (the fine-grained design is
:class:`deepcritical.models.StudyDesign`)."""

DESIGN_ORDER = list(DesignGroup)
"""Groups in heading order."""

_GROUP: dict[Design, DesignGroup] = {
    Design.META_ANALYSIS: DesignGroup.SYSTEMATIC,
    Design.SYSTEMATIC_REVIEW: DesignGroup.SYSTEMATIC,
    Design.RCT: DesignGroup.RCT,
    Design.CLINICAL_TRIAL: DesignGroup.TRIAL,
    Design.COHORT: DesignGroup.OBSERVATIONAL,
    Design.CASE_CONTROL: DesignGroup.OBSERVATIONAL,
    Design.CROSS_SECTIONAL: DesignGroup.OBSERVATIONAL,
    Design.OBSERVATIONAL: DesignGroup.OBSERVATIONAL,
    Design.CASE_REPORT: DesignGroup.CASE,
    Design.ANIMAL: DesignGroup.LABORATORY,
    Design.IN_VITRO: DesignGroup.LABORATORY,
    Design.REVIEW: DesignGroup.REVIEW,
    Design.PREPRINT: DesignGroup.OTHER,
    Design.OTHER: DesignGroup.OTHER,
}

_MECHANISTIC = re.compile(
    r"\b(?:mechanism\w*|pathway\w*|receptor\w*|signal(?:l)?ing|inhibit\w*|activat\w*|"
    r"express\w*|phosphorylat\w*|in vitro|mice|mouse|rats?|cell lines?|molecular|gene|"
    r"proteins?|enzyme\w*|mitochondri\w*|AMPK|mTOR)\b",
    re.I,
)


def design_group(design: Design) -> DesignGroup:
    """The heading group of a fine-grained design."""
    return _GROUP[design]


def classify_design(evidence: Evidence) -> DesignGroup:
    """The heading group of ``evidence``'s design (:func:`grade_evidence`)."""
    return _GROUP[grade_evidence(evidence)]


def is_clinical(evidence: Evidence) -> bool:
    """True for clinical designs (trials, observational studies, case reports, systematic
    reviews), or an item of unknown design that studies people
    (:func:`~deepcritical.evidence.grading.clinical_weight` above 0)."""
    return grade_evidence(evidence) in CLINICAL_DESIGNS or clinical_weight(evidence) > 0


def is_mechanistic(evidence: Evidence) -> bool:
    """True when the item mentions mechanisms (pathways, receptors, animal or cell studies)."""
    return bool(_MECHANISTIC.search(evidence.content[:TEXT_CHARS]))
