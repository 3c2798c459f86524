"""Sources: the search sources, study designs, bibliographic citations and evidence items.

Identifiers follow the field's conventions: PMID (PubMed id, digits), PMCID (``PMC`` + digits),
DOI (lower-cased, without ``https://doi.org/``), NCT ID (``NCT`` + 8 digits).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from enum import StrEnum

from pydantic import BaseModel, Field

from deepcritical.models._appraisal import StudyRecord
from deepcritical.models._integrity import IntegrityFlag, flag_labels, is_retracted
from deepcritical.models._passages import Passage

__all__ = [
    "DERIVED_TITLE_MARK",
    "SOURCE_LABELS",
    "Citation",
    "Evidence",
    "Screening",
    "SourceName",
    "Stance",
    "StudyDesign",
    "on_topic_items",
    "retracted_items",
    "utc_now",
]

DERIVED_TITLE_MARK = "[derived title]"
"""What precedes a derived title wherever one is shown (:meth:`Citation.display_title`)."""


def utc_now() -> datetime:
    """Current time as an aware UTC datetime."""
    return datetime.now(UTC)


class SourceName(StrEnum):
    """The search sources DeepCritical knows; values are the names used on the CLI."""

    PUBMED = "pubmed"
    CLINICALTRIALS = "trials"
    EUROPEPMC = "europepmc"
    OPENALEX = "openalex"
    WEB = "web"
    LOCAL = "local"


SOURCE_LABELS: dict[str, str] = {
    SourceName.PUBMED: "PubMed",
    SourceName.CLINICALTRIALS: "ClinicalTrials.gov",
    SourceName.EUROPEPMC: "Europe PMC",
    SourceName.OPENALEX: "OpenAlex",
    SourceName.WEB: "Web",
    SourceName.LOCAL: "Local corpus",
}


class StudyDesign(StrEnum):
    """Study design of a source, as read by :mod:`deepcritical.evidence.grading`.

    Values are the labels shown in reports. Evidence levels (strongest first: meta-analysis,
    systematic review, randomised controlled trial, other clinical trial, cohort, case-control,
    cross-sectional/observational, case report or series, narrative review, preclinical) live in
    :data:`deepcritical.evidence.grading.EVIDENCE_LEVEL`. ``PREPRINT`` is given only when no
    design can be read from a preprint; a preprint whose design is recognised keeps that design
    (``Evidence.is_preprint`` says it is not peer reviewed).
    """

    META_ANALYSIS = "meta-analysis"
    SYSTEMATIC_REVIEW = "systematic review"
    RCT = "randomised controlled trial"
    CLINICAL_TRIAL = "clinical trial (non-randomised or phase)"
    COHORT = "cohort study"
    CASE_CONTROL = "case-control study"
    CROSS_SECTIONAL = "cross-sectional study"
    OBSERVATIONAL = "observational study (design not specified)"
    CASE_REPORT = "case report or case series"
    REVIEW = "narrative review"
    ANIMAL = "preclinical: animal study"
    IN_VITRO = "preclinical: in vitro study"
    PREPRINT = "preprint (design not recognised)"
    OTHER = "other or not recognised"


class Screening(StrEnum):
    """Whether an evidence item addresses the run's question (see
    :mod:`deepcritical.evidence.screening`). Off-topic items stay in the store (counted,
    exported, shown with their reason) but never reach the checklist, hypotheses, judge, writer,
    verdict or references."""

    RELEVANT = "relevant"
    PARTIAL = "partial"
    OFF_TOPIC = "off_topic"


class Stance(StrEnum):
    """How a source's conclusions bear on a yes/no question, relative to the question's
    polarity: ``supports`` (its conclusions answer "yes"), ``contradicts`` (they answer "no")
    or ``neutral`` (hedged, mixed, or no decisive finding). For "Does X not affect Y?" a source
    that finds no effect supports. Read by :mod:`deepcritical.evidence.stance` without a model,
    or taken from the model's hypothesis judgement with one."""

    SUPPORTS = "supports"
    CONTRADICTS = "contradicts"
    NEUTRAL = "neutral"

    def reversed(self) -> Stance:
        """The stance towards the opposite question (``neutral`` stays ``neutral``)."""
        if self is Stance.SUPPORTS:
            return Stance.CONTRADICTS
        if self is Stance.CONTRADICTS:
            return Stance.SUPPORTS
        return Stance.NEUTRAL


class Citation(BaseModel):
    """Bibliographic record of one source document.

    ``source`` is the :class:`SourceName` value of the source that produced it; ``id`` is that
    source's native identifier (a PMID for PubMed and the local PubMed corpus, an NCT ID for
    ClinicalTrials.gov, a DOI or OpenAlex id, a URL for the web). ``date`` is an ISO-8601
    prefix (``2019``, ``2019-03`` or ``2019-03-14``) when known.

    ``title`` is the record's own title, ``""`` when it has none (PubMedQA corpus records, some
    web pages). ``derived_title`` is then a stand-in derived from the item's text (the
    objective or first sentence, shortened; made by
    :func:`deepcritical.evidence.titles.with_derived_title`, which the evidence store applies
    to every stored item), ``""`` otherwise. It is display data only: deduplication (embedded
    text, content hash), design grading and grounding read ``title``, never ``derived_title``.
    """

    source: str
    id: str
    title: str = ""
    derived_title: str = ""
    authors: list[str] = Field(default_factory=list)
    journal: str | None = None
    year: int | None = None
    date: str | None = None
    url: str | None = None
    doi: str | None = None
    pmid: str | None = None
    pmcid: str | None = None
    nct_id: str | None = None
    open_access: bool | None = None
    """Whether the record says its full text is open access in Europe PMC / PMC (Europe
    PMC's ``isOpenAccess``); ``None`` when the source does not say. A run fetches the full
    text of an item with a PMCID unless this is False."""
    integrity_flags: list[IntegrityFlag] = Field(default_factory=list)
    """Retraction, expression-of-concern, erratum and correction flags the source's API
    gave (:mod:`deepcritical.models._integrity`); unioned when records of one paper merge."""
    cited_by_count: int | None = None
    """Times the work is cited, as OpenAlex counts it (``cited_by_count``); ``None`` when no
    source said. Shown, never used to rank evidence."""

    @property
    def retracted(self) -> bool:
        """Whether a flag says the record was retracted: such a record is never cited as
        support and never feeds a hypothesis, the judge or the verdict."""
        return is_retracted(self.integrity_flags)

    def display_title(self) -> str:
        """The title every display shows (report references, web UI, MCP tool, prompts).

        The record's ``title``; else its ``derived_title`` marked as derived, after
        :data:`DERIVED_TITLE_MARK`: ``"[derived title] To assess quality of storage of
        vaccines in the community"``; else (a record with neither, e.g. one with no text) a
        stand-in naming the identifier (``"PubMed record 123"``, ``"Trial NCT01234567"``).
        """
        if self.title.strip():
            return self.title.strip()
        if self.derived_title.strip():
            return f"{DERIVED_TITLE_MARK} {self.derived_title.strip()}"
        if self.pmid:
            return f"PubMed record {self.pmid}"
        if self.nct_id:
            return f"Trial {self.nct_id}"
        return f"{SOURCE_LABELS.get(self.source, self.source)} record {self.id}"

    def format_reference(self) -> str:
        """One-line reference in a Vancouver-like style, with every identifier known and
        its integrity flags last (``**[Expression of concern: ...]**``)."""
        parts: list[str] = []
        if self.authors:
            names = self.authors[:6]
            authors = ", ".join(names) + (", et al." if len(self.authors) > 6 else "")
            parts.append(authors.rstrip(".") + ".")
        title = self.display_title()
        parts.append(title if title.endswith("…") else title.rstrip(".") + ".")
        venue = " ".join(p for p in [self.journal or "", str(self.year) if self.year else ""] if p)
        if venue:
            parts.append(venue.rstrip(".") + ".")
        ids = []
        if self.pmid:
            ids.append(f"PMID: {self.pmid}")
        if self.pmcid:
            ids.append(f"PMCID: {self.pmcid}")
        if self.doi:
            ids.append(f"doi: {self.doi}")
        if self.nct_id:
            ids.append(f"ClinicalTrials.gov: {self.nct_id}")
        if ids:
            parts.append("; ".join(ids) + ".")
        if self.url:
            parts.append(f"<{self.url}>")
        parts += [f"**[{label}]**" for label in flag_labels(self.integrity_flags)]
        return " ".join(parts)


class Evidence(BaseModel):
    """One source document kept in a run's evidence store.

    ``id`` is the run-local evidence id (``E1``, ``E2``, ...) assigned by the evidence store;
    inline citations in reports use it as ``[E3]``. ``content`` is the text the source gave
    (an abstract, with structured-abstract labels kept as ``LABEL: text`` paragraphs; a trial
    summary; extracted web page text), in characters, possibly truncated by the source.
    ``relevance`` is in 0..1 (the source's own ranking, normalised). ``sources`` lists every
    source that returned this document (cross-source deduplication merges them).
    """

    id: str = ""
    content: str
    citation: Citation
    relevance: float = Field(default=0.0, ge=0.0, le=1.0)
    retrieved_at: datetime = Field(default_factory=utc_now)
    query: str | None = None
    sources: list[str] = Field(default_factory=list)
    mesh_terms: list[str] = Field(default_factory=list)
    publication_types: list[str] = Field(default_factory=list)
    is_preprint: bool = False
    checklist_keys: list[str] = Field(default_factory=list)
    search_rank: float | None = Field(default=None, ge=0.0, le=1.0)
    """The source's own ranking of the record (0..1, normalised), kept when screening replaces
    ``relevance`` with its calibrated score; ``None`` before screening (``relevance`` is the
    rank then) and in records stored before."""
    screening: Screening | None = None
    """Whether the item addresses the question; ``None`` until it is screened."""
    screening_reason: str = ""
    """One line saying why (similarity to the question, key concepts mentioned)."""
    stance: Stance | None = None
    """How the item's conclusions bear on the question; ``None`` until it is read (set when
    hypotheses are formed; stored runs without it load as ``None``)."""
    stance_reason: str = ""
    """One line saying why (the cue found in its conclusions, or the model's judgement)."""
    study_design: StudyDesign | None = None
    """An explicit study design (set by whoever knows it); ``None``: read it with
    :func:`deepcritical.evidence.grading.grade_evidence`, which honours a value set here."""
    passages: list[Passage] = Field(default_factory=list)
    """The item's full text, passage by passage (sections, tables, figure captions), when it
    was read (a JATS article); empty for an abstract only (and in records stored before)."""
    found_by: str = ""
    """How the record was found when a search did not find it: citation tracking from a seed
    study, ``"cited by PMID 22663011"`` (in the seed's references) or ``"cites PMID
    22663011"`` (a paper citing the seed); ``""`` for search results (and records stored
    before). A record later found by a search too keeps the note of how it was found first."""
    study: StudyRecord | None = None
    """What the study reports (sample size, PICO, effect estimates), each value with its
    verbatim proof (:mod:`deepcritical.evidence.study_extraction`); ``None`` until it is
    appraised (and in records stored before)."""

    def model_post_init(self, __context: object) -> None:
        if not self.sources:
            self.sources = [self.citation.source]

    @property
    def full_text(self) -> bool:
        """True when the item's full text was read (it has passages), False for an abstract
        only; what the methodology counts."""
        return bool(self.passages)

    def snippet(self, max_chars: int = 300) -> str:
        """First ``max_chars`` characters of the content, cut at a word boundary."""
        text = " ".join(self.content.split())
        if len(text) <= max_chars:
            return text
        cut = text[:max_chars].rsplit(" ", 1)[0]
        return cut + " …"


def on_topic_items(items: Iterable[Evidence]) -> list[Evidence]:
    """The items screening did not find off-topic and no source marks as retracted
    (``Citation.retracted``), in the given order: the only ones that reach the checklist,
    hypotheses, judge, writer, verdict, references and follow-up answers."""
    return [e for e in items if e.screening != Screening.OFF_TOPIC and not e.citation.retracted]


def retracted_items(items: Iterable[Evidence]) -> list[Evidence]:
    """The items screening did not find off-topic but a source marks as retracted, in the
    given order: listed and flagged in a report, never cited as support."""
    return [e for e in items if e.screening != Screening.OFF_TOPIC and e.citation.retracted]
