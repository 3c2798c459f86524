"""Automated GRADE-style certainty of a body of evidence (a finding's, a hypothesis's, the
verdict's): High, Moderate, Low or Very low, with its reasons. It follows the GRADE
approach's structure, read from what can be read in the text; it is not a formal GRADE
assessment (:data:`~deepcritical.models.CERTAINTY_LABEL` says so wherever it is shown).

Rules (:func:`rate_certainty`), over the on-topic items given:

- **start** from the best study design present (:func:`~deepcritical.evidence.grading.
  grade_evidence`): meta-analyses, systematic reviews and randomised trials start High;
  non-randomised trials and observational designs (cohort, case-control, cross-sectional,
  unspecified) Low; case reports, preclinical studies, narrative reviews and unrecognised
  designs Very low. The items of that best design are the body rated ("the base"); the
  others are listed but do not move the rating.
- **downgrades**, one level each:
  - *risk of bias*, when more than half of the base items show a proxy that can be read: a
    randomised trial that states no blinding, or whose text states no randomisation; a
    single centre stated; a small study (n < :data:`SMALL_STUDY_N`, only when the n was read:
    rules read a sample size only when the text states it);
  - *inconsistency*, when the items include both supporting and contradicting ones (their
    stances, :mod:`deepcritical.evidence.stance`, or the hypothesis's evidence lists);
  - *indirectness*, when more than half of the base items were screened ``partial`` (the
    population or intervention only partly matches the question,
    :mod:`deepcritical.evidence.screening`);
  - *imprecision*, when the base items' summed sample size is below the optimal information
    size :data:`OPTIMAL_INFORMATION_SIZE` (400, GRADE's rule of thumb for a binary outcome:
    Guyatt et al., J Clin Epidemiol 2011;64:1283-93), read only when every base item's n
    was read; otherwise the rating notes "total n not stated (the studies)" and makes no
    size-based downgrade, and imprecision is judged from their primary estimates: more than
    half with a 95% CI crossing no effect (1 for ratios, 0 for differences).

Every reason names the values and the studies it rests on (their PMID, else NCT ID, DOI,
PMCID or evidence id), never as a bracketed citation: "risk of bias (blinding not stated,
small n = 40 in PMID 1)", "imprecision, total n = 84 (84 in PMID 1)", "large effect (OR
3.1 (95% CI 2.0 to 4.8) in PMID 2)".
- **upgrades** (only for a body that does not start High, and only when no risk-of-bias
  downgrade applied), one level each: a *large effect* (a ratio estimate > 2 or < 0.5
  whose CI does not cross 1), a *dose-response* stated (not negated).

Not rated: publication bias (one run's search cannot show it), the certainty of each
outcome separately, pooled estimates. Study records are read with
:func:`deepcritical.evidence.study_extraction.extract_study` when an item has none yet.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from deepcritical.evidence.grading import grade_evidence
from deepcritical.evidence.study_extraction import extract_study
from deepcritical.models import (
    Certainty,
    CertaintyLevel,
    Evidence,
    Screening,
    Stance,
    StudyDesign,
    StudyRecord,
)

__all__ = [
    "LARGE_EFFECT",
    "OPTIMAL_INFORMATION_SIZE",
    "SMALL_STUDY_N",
    "rate_certainty",
    "source_label",
    "study_of",
]

OPTIMAL_INFORMATION_SIZE = 400
"""Total participants below which a body of evidence is imprecise (GRADE's rule of thumb for
a binary outcome with a modest relative risk reduction)."""

SMALL_STUDY_N = 50
"""A study with fewer participants than this counts as a risk-of-bias proxy (small n)."""

LARGE_EFFECT = 2.0
"""A ratio estimate above this (or below its inverse, 0.5) is a large effect (upgrade)."""

_ORDER = [
    CertaintyLevel.VERY_LOW,
    CertaintyLevel.LOW,
    CertaintyLevel.MODERATE,
    CertaintyLevel.HIGH,
]
_HIGH_START = {StudyDesign.META_ANALYSIS, StudyDesign.SYSTEMATIC_REVIEW, StudyDesign.RCT}
_LOW_START = {
    StudyDesign.CLINICAL_TRIAL,
    StudyDesign.COHORT,
    StudyDesign.CASE_CONTROL,
    StudyDesign.CROSS_SECTIONAL,
    StudyDesign.OBSERVATIONAL,
}


def study_of(item: Evidence) -> StudyRecord:
    """The item's study record; read by rules (and kept on the item) when it has none."""
    if item.study is None:
        item.study = extract_study(item)
    return item.study


def _start(design: StudyDesign) -> tuple[CertaintyLevel, str]:
    if design in _HIGH_START:
        basis = "randomised trials" if design is StudyDesign.RCT else "systematic reviews"
        return CertaintyLevel.HIGH, basis
    if design in _LOW_START:
        basis = "non-randomised trials" if design is StudyDesign.CLINICAL_TRIAL else "observational"
        return CertaintyLevel.LOW, basis
    return CertaintyLevel.VERY_LOW, "case reports, preclinical or unrecognised designs"


def source_label(item: Evidence) -> str:
    """How a certainty reason names the study it rests on: ``"PMID 123"``, else the NCT ID,
    DOI or PMCID, else the evidence id (never a citation marker: the rated items need not be
    the report's references)."""
    c = item.citation
    for prefix, value in (("PMID", c.pmid), ("NCT", c.nct_id), ("DOI", c.doi), ("PMCID", c.pmcid)):
        if value:
            return value if prefix == "NCT" else f"{prefix} {value}"
    return item.id


def _bias_proxies(design: StudyDesign, study: StudyRecord) -> list[str]:
    out = []
    if design is StudyDesign.RCT:
        if study.randomised is None:
            out.append("randomisation not stated")
        if study.blinded is None:
            out.append("blinding not stated")
    if study.single_centre is not None:
        out.append("single centre")
    n = study.n
    if n is not None and n < SMALL_STUDY_N:
        out.append(f"small n = {n}")
    return out


def _more_than_half(count: int, total: int) -> bool:
    return total > 0 and count * 2 > total


def _stances(
    items: Sequence[Evidence], supporting: Collection[str], contradicting: Collection[str]
) -> tuple[list[Evidence], list[Evidence]]:
    if supporting or contradicting:
        return (
            [e for e in items if e.id in set(supporting)],
            [e for e in items if e.id in set(contradicting)],
        )
    return (
        [e for e in items if e.stance is Stance.SUPPORTS],
        [e for e in items if e.stance is Stance.CONTRADICTS],
    )


def _names(items: Sequence[Evidence]) -> str:
    return ", ".join(source_label(e) for e in items)


def _imprecision(
    base: Sequence[Evidence], studies: dict[str, StudyRecord]
) -> tuple[str | None, str | None]:
    """The imprecision downgrade (or ``None``) and a note when the total n is not known. By
    size only when every item's n was read (the rules read one only when the text states it:
    :mod:`deepcritical.evidence.sample_size`); else by the CIs of their primary estimates."""
    unknown = [e for e in base if studies[e.id].n is None]
    if not unknown:
        sizes = [(e, studies[e.id].n or 0) for e in base]
        total = sum(n for _, n in sizes)
        if total < OPTIMAL_INFORMATION_SIZE:
            each = ", ".join(f"{n} in {source_label(e)}" for e, n in sizes)
            return f"imprecision, total n = {total} ({each})", None
        return None, None
    note = f"total n not stated for {_names(unknown)}: no size-based downgrade"
    crossing = [
        (e, p) for e in base if (p := studies[e.id].primary_effect) is not None and p.has_ci
    ]
    known = [(e, p) for e, p in crossing if p.crosses_null() is not None]
    cross = [(e, p) for e, p in known if p.crosses_null()]
    if _more_than_half(len(cross), len(known)):
        each = "; ".join(f"{p.short()} in {source_label(e)}" for e, p in cross)
        return f"imprecision, 95% CI crosses no effect ({each})", note
    return None, note


def _large_effect(base: Sequence[Evidence], studies: dict[str, StudyRecord]) -> str | None:
    for item in base:
        e = studies[item.id].primary_effect
        if e is None or not e.has_ci:
            continue
        value = e.number()
        if e.null_value() != 1.0 or value is None or e.crosses_null() is not False:
            continue
        if value > LARGE_EFFECT or 0 < value < 1 / LARGE_EFFECT:
            return f"large effect ({e.short()} in {source_label(item)})"
    return None


def _risk_of_bias(
    base: Sequence[Evidence], designs: dict[str, StudyDesign], studies: dict[str, StudyRecord]
) -> str | None:
    proxies = {e.id: _bias_proxies(designs[e.id], studies[e.id]) for e in base}
    if not _more_than_half(sum(bool(p) for p in proxies.values()), len(base)):
        return None
    each = "; ".join(
        f"{', '.join(proxies[e.id])} in {source_label(e)}" for e in base if proxies[e.id]
    )
    return f"risk of bias ({each})"


def rate_certainty(
    items: Sequence[Evidence],
    *,
    supporting: Collection[str] = (),
    contradicting: Collection[str] = (),
) -> Certainty | None:
    """The automated GRADE-style certainty of ``items`` (see the module docstring); ``None``
    for no item. Off-topic items are left out. ``supporting`` / ``contradicting`` are the
    evidence ids a hypothesis lists (inconsistency reads them; without them, each item's
    ``stance``). Items without a study record get one (:func:`study_of`). Every reason names
    the values and the studies it rests on ("imprecision, total n = 84 (84 in PMID 1)")."""
    rated = [e for e in items if e.screening != Screening.OFF_TOPIC]
    if not rated:
        return None
    designs = {e.id: grade_evidence(e) for e in rated}
    starts = {eid: _start(d) for eid, d in designs.items()}
    best = max(_ORDER.index(level) for level, _ in starts.values())
    base = [e for e in rated if _ORDER.index(starts[e.id][0]) == best]
    basis = starts[base[0].id][1]
    studies = {e.id: study_of(e) for e in base}
    sizes = [s.n for s in studies.values() if s.n is not None]
    downgrades: list[str] = []
    bias = _risk_of_bias(base, designs, studies)
    if bias:
        downgrades.append(bias)
    pro, con = _stances(rated, supporting, contradicting)
    if pro and con:
        downgrades.append(
            f"inconsistency ({len(pro)} supporting: {_names(pro)}; "
            f"{len(con)} contradicting: {_names(con)})"
        )
    partial = [e for e in base if e.screening is Screening.PARTIAL]
    if _more_than_half(len(partial), len(base)):
        downgrades.append(
            f"indirectness ({len(partial)} of {len(base)} only partly match the question: "
            f"{_names(partial)})"
        )
    imprecise, note = _imprecision(base, studies)
    if imprecise:
        downgrades.append(imprecise)
    upgrades: list[str] = []
    if best < _ORDER.index(CertaintyLevel.HIGH) and bias is None:
        large = _large_effect(base, studies)
        if large:
            upgrades.append(large)
        dose = next((e for e in base if studies[e.id].dose_response), None)
        if dose is not None:
            phrase = studies[dose.id].dose_response
            assert phrase is not None
            upgrades.append(f'dose-response ("{phrase.value}" in {source_label(dose)})')
    level = min(max(best - len(downgrades) + len(upgrades), 0), len(_ORDER) - 1)
    return Certainty(
        level=_ORDER[level],
        start=_ORDER[best],
        basis=basis,
        downgrades=downgrades,
        upgrades=upgrades,
        notes=[note] if note else [],
        evidence_ids=[e.id for e in rated],
        total_n=sum(sizes) if sizes and len(sizes) == len(base) else None,
    )
