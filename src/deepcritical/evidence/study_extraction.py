"""The study record of an evidence item read by rules, assembled from the readers of each
of its parts and verified before it is kept.

Offline extraction (:func:`extract_study`) reads the item's abstract (``Evidence.content``,
structured abstracts as ``LABEL: text`` paragraphs, as :mod:`deepcritical.formats.pubmed_xml`
keeps them) and, for a full text, the passages of its Methods and Results sections and its
tables (``Evidence.passages``), each a :class:`~deepcritical.evidence.study_text.StudyText`:

- sample size: the rules (:mod:`deepcritical.evidence.sample_size`) read what a sentence
  states as the sample ("a total of 1,024 patients were randomised", "Sixty-seven patients",
  or the sum of the group sizes when only groups are given); a model fitted on hand labels
  (:mod:`deepcritical.evidence.sample_size_model`) weighs every count against them and shows
  a sample size only when it is sure enough, else "not stated"; the number analysed;
- effect estimates with their CI and outcome (:mod:`deepcritical.evidence.effect_estimates`;
  a table's CI columns, :mod:`deepcritical.evidence.table_estimates`);
- from the abstract only, population, setting, intervention and comparator, outcomes,
  follow-up and the phrases GRADE-style certainty reads (randomised, blinded, single centre
  or multicentre, dose-response): :mod:`deepcritical.evidence.study_cues`.

The first text that states a single value gives it; estimates are gathered from every text.
Every value keeps its proof, a :class:`~deepcritical.models.TextSpan`, and the record passes
:func:`~deepcritical.evidence.proofs.checked_record` (:mod:`deepcritical.evidence.proofs`),
which drops and counts every value whose quote is not the text at its span.

Limits: patterns, not understanding. About half of the labelled sample sizes are shown (the
model abstains on the rest); a CI given apart from its estimate without the words "CI" or
"confidence" is missed; the "primary" estimate is the first one reported with a CI, not
necessarily the primary outcome's. ``benchmarks/bench_appraisal.py`` measures precision and
recall on hand-labelled abstracts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from deepcritical.evidence.effect_estimates import EffectSpan, find_effects
from deepcritical.evidence.grading import grade_evidence
from deepcritical.evidence.proofs import checked_record, text_span
from deepcritical.evidence.sample_size import SampleSizeReading, find_analysed
from deepcritical.evidence.sample_size_model import read_sample_size
from deepcritical.evidence.study_cues import read_cues
from deepcritical.evidence.study_text import StudyText
from deepcritical.evidence.table_estimates import effects_of_table
from deepcritical.models import EffectEstimate, Evidence, PassageKind, StudyRecord

__all__ = ["SizeReader", "appraise_items", "extract_study"]


def _effect(src: StudyText, found: EffectSpan) -> EffectEstimate:
    outcome = src.value(*found.outcome) if found.outcome is not None else None
    return EffectEstimate(
        measure=found.measure,
        value=found.value,
        ci_low=found.ci_low,
        ci_high=found.ci_high,
        p_value=found.p_value,
        proof=text_span(src.text, found.start, found.end, src.passage, src.where),
        outcome=outcome,
    )


def _sources(evidence: Evidence) -> Iterator[StudyText]:
    """The abstract, then the full text's Methods and Results passages and its tables."""
    yield StudyText(evidence.content, None, "abstract")
    for i, p in enumerate(evidence.passages):
        path = " ".join(p.section).lower()
        if p.kind is PassageKind.TABLE or any(
            k in path for k in ("result", "method", "patient", "participant", "finding")
        ):
            yield StudyText(p.text, i, p.locator(), p.kind is PassageKind.TABLE)


SizeReader = Callable[[str], SampleSizeReading | None]
"""Where a text states its sample size: the rules weighed by the shipped model (the default,
:func:`~deepcritical.evidence.sample_size_model.read_sample_size`) or the rules alone
(:func:`~deepcritical.evidence.sample_size.find_sample_size`)."""


def _read_sample_size(record: StudyRecord, src: StudyText, read_size: SizeReader) -> None:
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


def _read_source(record: StudyRecord, src: StudyText, read_size: SizeReader) -> None:
    """Fill the record's empty fields from ``src`` (effects are appended)."""
    _read_sample_size(record, src, read_size)
    effects = effects_of_table(src.text) if src.table else find_effects(src.text)
    record.effects += [_effect(src, found) for found in effects]
    if src.passage is None:
        read_cues(record, src)


def extract_study(evidence: Evidence, *, read_size: SizeReader = read_sample_size) -> StudyRecord:
    """The study record of ``evidence`` read by rules from its abstract and, for a full text,
    its Methods / Results passages and tables (see the module docstring), verified with
    :func:`~deepcritical.evidence.proofs.checked_record`; ``read_size`` reads the sample size
    (default: the rules weighed by the shipped model). Pure and fast (regular expressions and
    a linear model; ~5 ms per abstract)."""
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
