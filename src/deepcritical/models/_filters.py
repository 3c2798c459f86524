"""The plan's search filters: publication dates, languages, study designs, trial phases and
statuses, and the "added since" bound of a living review.

:class:`SearchFilters` is part of the :class:`~deepcritical.models.ResearchPlan`, which the
user reviews and edits before the search starts. Each source turns it into its API's own
query or parameters where the API has them (PubMed ``[dp]``, ``[la]``, ``[pt]`` and
``datetype=edat``; Europe PMC ``FIRST_PDATE``, ``LANG``, ``PUB_TYPE``, ``CREATION_DATE``;
ClinicalTrials.gov ``filter.overallStatus`` and ``filter.advanced``; OpenAlex ``filter=``);
what an API cannot filter is screened out after retrieval when the record's metadata shows
it is outside (:meth:`SearchFilters.excludes`). An empty :class:`SearchFilters` means no
filtering, and a search with it is the same request as before filters existed.

The vocabularies are closed: ISO 639-1 language codes (:data:`LANGUAGES`), the study designs of
:class:`DesignFilter`, and the ClinicalTrials.gov API v2 enums :class:`TrialPhase` and
:class:`TrialStatus`. Bad values raise a :class:`pydantic.ValidationError` naming the value
and the accepted ones.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date, datetime
from enum import StrEnum
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from deepcritical.models._evidence import Citation, StudyDesign

__all__ = [
    "DATE_CAUSE",
    "DESIGN_CAUSE",
    "LANGUAGES",
    "DesignFilter",
    "FilterExclusion",
    "Language",
    "SearchFilters",
    "TrialPhase",
    "TrialStatus",
]


DATE_CAUSE = "publication date outside the range"
"""The cause of a record screened out by its date (:meth:`SearchFilters.excludes`)."""
DESIGN_CAUSE = "study design not asked for"
"""The cause of a record screened out by its graded design."""


class FilterExclusion(NamedTuple):
    """Why a retrieved record falls outside the plan's filters: ``cause`` (:data:`DATE_CAUSE`
    or :data:`DESIGN_CAUSE`, the flow of records counts by it) and ``reason`` (the record's
    own value, e.g. ``"published 2012, before 2015-01-01"``)."""

    cause: str
    reason: str


class Language(NamedTuple):
    """A language as the APIs name it: ``code`` ISO 639-1 (OpenAlex ``language:en``),
    ``code3`` ISO 639-2/B (Europe PMC ``LANG:eng``, PubMed's XML ``<Language>``), ``name``
    PubMed's ``[la]`` name (``english[la]``)."""

    code: str
    code3: str
    name: str


LANGUAGES: dict[str, Language] = {
    lang.code: lang
    for lang in (
        Language("ar", "ara", "arabic"),
        Language("bg", "bul", "bulgarian"),
        Language("cs", "cze", "czech"),
        Language("da", "dan", "danish"),
        Language("de", "ger", "german"),
        Language("el", "gre", "greek"),
        Language("en", "eng", "english"),
        Language("es", "spa", "spanish"),
        Language("fa", "per", "persian"),
        Language("fi", "fin", "finnish"),
        Language("fr", "fre", "french"),
        Language("he", "heb", "hebrew"),
        Language("hr", "hrv", "croatian"),
        Language("hu", "hun", "hungarian"),
        Language("it", "ita", "italian"),
        Language("ja", "jpn", "japanese"),
        Language("ko", "kor", "korean"),
        Language("lt", "lit", "lithuanian"),
        Language("nl", "dut", "dutch"),
        Language("no", "nor", "norwegian"),
        Language("pl", "pol", "polish"),
        Language("pt", "por", "portuguese"),
        Language("ro", "rum", "romanian"),
        Language("ru", "rus", "russian"),
        Language("sk", "slo", "slovak"),
        Language("sl", "slv", "slovenian"),
        Language("sr", "srp", "serbian"),
        Language("sv", "swe", "swedish"),
        Language("th", "tha", "thai"),
        Language("tr", "tur", "turkish"),
        Language("uk", "ukr", "ukrainian"),
        Language("vi", "vie", "vietnamese"),
        Language("zh", "chi", "chinese"),
    )
}
"""The languages a plan may name, by ISO 639-1 code: those PubMed indexes most often."""


class DesignFilter(StrEnum):
    """A study design a plan may ask for (a small closed vocabulary; values are the CLI's).

    Each maps to publication types (PubMed ``[pt]``, Europe PMC ``PUB_TYPE``), to what
    ClinicalTrials.gov and OpenAlex can filter, and to the fine-grained
    :class:`~deepcritical.models.StudyDesign` read from a record after retrieval
    (:attr:`designs`); ``guideline`` has none, so records are never screened out for it.
    """

    RANDOMISED_TRIAL = "randomised_trial"
    CLINICAL_TRIAL = "clinical_trial"
    SYSTEMATIC_REVIEW = "systematic_review"
    META_ANALYSIS = "meta_analysis"
    OBSERVATIONAL = "observational"
    CASE_REPORT = "case_report"
    REVIEW = "review"
    GUIDELINE = "guideline"

    @property
    def publication_types(self) -> tuple[str, ...]:
        """The MEDLINE publication types of this design (PubMed ``[pt]``, Europe PMC
        ``PUB_TYPE``), e.g. ``("Randomized Controlled Trial",)``."""
        return _PUBLICATION_TYPES[self]

    @property
    def designs(self) -> frozenset[StudyDesign]:
        """The fine-grained designs a record may be graded as to match this filter (empty for
        ``guideline``: no record is screened out for it)."""
        return _DESIGNS[self]


_PUBLICATION_TYPES: dict[DesignFilter, tuple[str, ...]] = {
    DesignFilter.RANDOMISED_TRIAL: ("Randomized Controlled Trial",),
    DesignFilter.CLINICAL_TRIAL: ("Clinical Trial",),
    DesignFilter.SYSTEMATIC_REVIEW: ("Systematic Review",),
    DesignFilter.META_ANALYSIS: ("Meta-Analysis",),
    DesignFilter.OBSERVATIONAL: ("Observational Study",),
    DesignFilter.CASE_REPORT: ("Case Reports",),
    DesignFilter.REVIEW: ("Review",),
    DesignFilter.GUIDELINE: ("Guideline", "Practice Guideline"),
}

_DESIGNS: dict[DesignFilter, frozenset[StudyDesign]] = {
    DesignFilter.RANDOMISED_TRIAL: frozenset({StudyDesign.RCT}),
    DesignFilter.CLINICAL_TRIAL: frozenset({StudyDesign.RCT, StudyDesign.CLINICAL_TRIAL}),
    DesignFilter.SYSTEMATIC_REVIEW: frozenset(
        {StudyDesign.SYSTEMATIC_REVIEW, StudyDesign.META_ANALYSIS}
    ),
    DesignFilter.META_ANALYSIS: frozenset({StudyDesign.META_ANALYSIS}),
    DesignFilter.OBSERVATIONAL: frozenset(
        {
            StudyDesign.OBSERVATIONAL,
            StudyDesign.COHORT,
            StudyDesign.CASE_CONTROL,
            StudyDesign.CROSS_SECTIONAL,
        }
    ),
    DesignFilter.CASE_REPORT: frozenset({StudyDesign.CASE_REPORT}),
    DesignFilter.REVIEW: frozenset(
        {StudyDesign.REVIEW, StudyDesign.SYSTEMATIC_REVIEW, StudyDesign.META_ANALYSIS}
    ),
    DesignFilter.GUIDELINE: frozenset(),
}

_DESIGN_ALIASES = {
    "rct": DesignFilter.RANDOMISED_TRIAL.value,
    "randomised_controlled_trial": DesignFilter.RANDOMISED_TRIAL.value,
    "meta-analysis": DesignFilter.META_ANALYSIS.value,
    "case_reports": DesignFilter.CASE_REPORT.value,
}
"""Other names of designs accepted on input (after lower-casing, ``-``/space as ``_``)."""

_UNKNOWN_DESIGNS = frozenset({StudyDesign.OTHER, StudyDesign.PREPRINT})
"""Designs that say nothing is known: such a record is kept whatever the filter."""


class TrialPhase(StrEnum):
    """A ClinicalTrials.gov study phase (API v2 ``Phase`` enum; ``NA``: not applicable)."""

    EARLY_PHASE1 = "EARLY_PHASE1"
    PHASE1 = "PHASE1"
    PHASE2 = "PHASE2"
    PHASE3 = "PHASE3"
    PHASE4 = "PHASE4"
    NA = "NA"


class TrialStatus(StrEnum):
    """A ClinicalTrials.gov overall recruitment status (API v2 ``OverallStatus`` enum)."""

    ACTIVE_NOT_RECRUITING = "ACTIVE_NOT_RECRUITING"
    COMPLETED = "COMPLETED"
    ENROLLING_BY_INVITATION = "ENROLLING_BY_INVITATION"
    NOT_YET_RECRUITING = "NOT_YET_RECRUITING"
    RECRUITING = "RECRUITING"
    SUSPENDED = "SUSPENDED"
    TERMINATED = "TERMINATED"
    WITHDRAWN = "WITHDRAWN"
    AVAILABLE = "AVAILABLE"
    NO_LONGER_AVAILABLE = "NO_LONGER_AVAILABLE"
    TEMPORARILY_NOT_AVAILABLE = "TEMPORARILY_NOT_AVAILABLE"
    APPROVED_FOR_MARKETING = "APPROVED_FOR_MARKETING"
    WITHHELD = "WITHHELD"
    UNKNOWN = "UNKNOWN"


def _choices(values: Iterable[object]) -> str:
    return ", ".join(sorted(str(v) for v in values))


def _upper_enum_names(value: object) -> object:
    """Strings upper-cased with ``-``/space as ``_``: ``"phase 3"`` -> ``"PHASE_3"``; the
    enum validators then name any value still unknown."""
    if isinstance(value, str):
        return "_".join(value.strip().upper().replace("-", " ").split())
    return value


class SearchFilters(BaseModel):
    """What the plan's searches include: the filters every source applies.

    Attributes:
        published_from: earliest publication date, inclusive (``None``: no lower bound).
        published_to: latest publication date, inclusive (``None``: no upper bound).
        languages: ISO 639-1 codes (``"en"``, ``"fr"``); a record in any of them is kept.
        designs: study designs (:class:`DesignFilter`); a record of any of them is kept.
        trial_phases: ClinicalTrials.gov phases (:class:`TrialPhase`); only that source.
        trial_statuses: ClinicalTrials.gov overall statuses (:class:`TrialStatus`); only that
            source.
        added_since: for living reviews: only records added to the source at or after this
            instant, stored in UTC (a naive value is read as UTC). The APIs resolve it to the
            day (UTC).

    Immutable (``frozen``) and JSON round-trippable (``model_dump_json`` /
    ``model_validate_json``); lists are stored as sorted, de-duplicated tuples, so two equal
    filters dump the same JSON (the call cache keys on it). An empty instance (the default)
    filters nothing.

    Raises:
        pydantic.ValidationError: ``published_from`` after ``published_to``, an unknown
            language code, design, phase or status (the message lists the accepted values).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    published_from: date | None = None
    published_to: date | None = None
    languages: tuple[str, ...] = ()
    designs: tuple[DesignFilter, ...] = ()
    trial_phases: tuple[TrialPhase, ...] = ()
    trial_statuses: tuple[TrialStatus, ...] = ()
    added_since: datetime | None = None

    @field_validator("languages", mode="before")
    @classmethod
    def _check_languages(cls, value: object) -> object:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list | tuple | set | frozenset):
            return value
        codes = [str(v).strip().lower() for v in value]
        unknown = [c for c in codes if c not in LANGUAGES]
        if unknown:
            raise ValueError(
                f"unknown language code {unknown[0]!r}: use ISO 639-1 codes, one of "
                f"{_choices(LANGUAGES)}"
            )
        return tuple(sorted(set(codes)))

    @field_validator("designs", mode="before")
    @classmethod
    def _check_designs(cls, value: object) -> object:
        return _enum_tuple(value, DesignFilter, "study design", lower=True)

    @field_validator("trial_phases", mode="before")
    @classmethod
    def _check_phases(cls, value: object) -> object:
        return _enum_tuple(value, TrialPhase, "trial phase", lower=False)

    @field_validator("trial_statuses", mode="before")
    @classmethod
    def _check_statuses(cls, value: object) -> object:
        return _enum_tuple(value, TrialStatus, "trial status", lower=False)

    @field_validator("added_since")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)

    @model_validator(mode="after")
    def _check_range(self) -> SearchFilters:
        low, high = self.published_from, self.published_to
        if low is not None and high is not None and low > high:
            raise ValueError(
                f"published_from ({low.isoformat()}) is after published_to "
                f"({high.isoformat()}): the range is inclusive and must not be empty"
            )
        return self

    def is_empty(self) -> bool:
        """True when nothing is filtered (every field at its default)."""
        return self == _EMPTY

    def key(self) -> dict[str, object]:
        """The fields that are set, as JSON values (``{}`` when empty): the part of a search
        call's cache key that the filters add (:class:`deepcritical.state.cache.
        CachedSource`)."""
        data: dict[str, object] = self.model_dump(mode="json", exclude_defaults=True)
        return data

    @property
    def year_range(self) -> tuple[int | None, int | None]:
        """The publication years the date range spans (``(from year, to year)``, each
        ``None`` when unbounded)."""
        low = self.published_from.year if self.published_from else None
        high = self.published_to.year if self.published_to else None
        return low, high

    def language_entries(self) -> list[Language]:
        """The :class:`Language` of each code, in code order."""
        return [LANGUAGES[code] for code in self.languages]

    def publication_types(self) -> list[str]:
        """The MEDLINE publication types of every design, in design order, each once."""
        return list(dict.fromkeys(t for d in self.designs for t in d.publication_types))

    def excludes(
        self, citation: Citation, design: StudyDesign | None = None
    ) -> FilterExclusion | None:
        """Why a retrieved record falls outside the filters by its own metadata
        (:class:`FilterExclusion`), or ``None`` to keep it.

        Reads ``citation.date`` (ISO prefix) or else ``citation.year`` against the
        publication range (at the precision the record gives: a record dated ``2015`` is
        inside a range starting 2015-06-01), and ``design`` (the record's graded design)
        against :attr:`designs`. A record whose date or design is unknown is kept. Languages,
        trial phases, statuses and ``added_since`` are left to the APIs (records rarely
        carry them). Example reason: ``"published 2012, before 2015-01-01"``.
        """
        reason = self._date_reason(citation)
        if reason is not None:
            return FilterExclusion(DATE_CAUSE, reason)
        if self.designs and design is not None and design not in _UNKNOWN_DESIGNS:
            allowed = frozenset[StudyDesign]().union(*(d.designs for d in self.designs))
            if allowed and design not in allowed:
                wanted = ", ".join(d.value for d in self.designs)
                return FilterExclusion(DESIGN_CAUSE, f"{design.value} is not among {wanted}")
        return None

    def _date_reason(self, citation: Citation) -> str | None:
        shown, low, high = _record_span(citation)
        if shown is None or low is None or high is None:
            return None
        if self.published_from is not None and high < self.published_from:
            return f"published {shown}, before {self.published_from.isoformat()}"
        if self.published_to is not None and low > self.published_to:
            return f"published {shown}, after {self.published_to.isoformat()}"
        return None

    def lines(self) -> list[str]:
        """Plain-text lines describing the filters, for the methodology and the plan review
        (``[]`` when empty), e.g. ``"Published: 2015-01-01 to 2024-12-31"``."""
        out: list[str] = []
        if self.published_from or self.published_to:
            low = self.published_from.isoformat() if self.published_from else "any date"
            high = self.published_to.isoformat() if self.published_to else "today"
            out.append(f"Published: {low} to {high}")
        if self.languages:
            names = ", ".join(f"{lang.name} ({lang.code})" for lang in self.language_entries())
            out.append(f"Languages: {names}")
        if self.designs:
            out.append("Study designs: " + ", ".join(d.value for d in self.designs))
        if self.trial_phases:
            out.append("Trial phases: " + ", ".join(p.value for p in self.trial_phases))
        if self.trial_statuses:
            out.append("Trial statuses: " + ", ".join(s.value for s in self.trial_statuses))
        if self.added_since is not None:
            out.append(f"Added to the source since: {self.added_since.isoformat()}")
        return out


def _enum_tuple(value: object, enum: type[StrEnum], what: str, *, lower: bool) -> object:
    """``value`` (one string or a sequence) as a sorted tuple of ``enum`` members, input
    normalised (``"Phase 3"`` -> ``PHASE3``, ``"randomised-trial"`` ->
    ``randomised_trial``); an unknown value raises ``ValueError`` listing the accepted."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple | set | frozenset):
        return value
    members: set[StrEnum] = set()
    for raw in value:
        text = _upper_enum_names(str(raw))
        assert isinstance(text, str)
        if lower:
            text = text.lower().replace("randomized", "randomised")
            text = _DESIGN_ALIASES.get(text, text)
        else:
            text = text.replace("PHASE_", "PHASE")
        try:
            members.add(enum(text))
        except ValueError:
            raise ValueError(
                f"unknown {what} {str(raw)!r}: one of {_choices(m.value for m in enum)}"
            ) from None
    return tuple(sorted(members, key=lambda m: m.value))


def _record_span(citation: Citation) -> tuple[str | None, date | None, date | None]:
    """The record's publication date as shown, and the first and last day it can mean
    (``2019`` -> 2019-01-01..2019-12-31; ``2019-03`` -> March); ``None``s when unknown."""
    text = (citation.date or "").strip()
    parts = text[:10].split("-") if text else []
    try:
        year = int(parts[0]) if parts and parts[0] else citation.year
        month = int(parts[1]) if len(parts) > 1 else None
        day = int(parts[2]) if len(parts) > 2 else None
    except ValueError:
        year, month, day = citation.year, None, None
    if year is None or not 1 <= year <= 9999:
        return None, None, None
    try:
        if month is None:
            return str(year), date(year, 1, 1), date(year, 12, 31)
        if day is None:
            end = date(year + 1, 1, 1) if month == 12 else date(year, month + 1, 1)
            return (
                f"{year}-{month:02d}",
                date(year, month, 1),
                date.fromordinal(end.toordinal() - 1),
            )
        return f"{year}-{month:02d}-{day:02d}", date(year, month, day), date(year, month, day)
    except ValueError:
        return str(year), date(year, 1, 1), date(year, 12, 31)


_EMPTY = SearchFilters()
