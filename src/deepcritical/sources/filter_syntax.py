"""The plan's search filters in each API's own syntax.

One function per API turns a :class:`~deepcritical.models.SearchFilters` into what that API
understands; the sources call them, and the local API stub reads the same forms back
(:mod:`deepcritical.testing.api_stub`). Open date bounds use the far years PubMed's own date
ranges use (``1000`` and ``3000``), so every range has two ends.

- PubMed E-utilities ``esearch``: the term gets ``("2015/01/01"[dp] : "2020/12/31"[dp])``,
  ``(english[la] OR french[la])`` and ``("randomized controlled trial"[pt] OR ...)``;
  ``added_since`` becomes ``datetype=edat&mindate=2024/01/01&maxdate=3000/12/31`` (the Entrez
  date: when the record was added to PubMed).
- Europe PMC ``search``: ``FIRST_PDATE:[2015-01-01 TO 2020-12-31]``, ``(LANG:eng OR
  LANG:fre)``, ``(PUB_TYPE:"Randomized Controlled Trial" OR ...)``; ``added_since`` becomes
  ``CREATION_DATE:[2024-01-01 TO 3000-12-31]`` (when Europe PMC created the record).
- ClinicalTrials.gov API v2 ``studies``: ``filter.overallStatus=COMPLETED,RECRUITING`` and one
  ``filter.advanced`` Essie expression: ``AREA[Phase](PHASE2 OR PHASE3)``,
  ``AREA[StartDate]RANGE[2015-01-01,2020-12-31]``, the registry's designs
  (``AREA[DesignAllocation]RANDOMIZED``, ``AREA[StudyType]INTERVENTIONAL`` / ``OBSERVATIONAL``)
  and ``added_since`` as ``AREA[LastUpdatePostDate]RANGE[2024-01-01,MAX]`` (a study first
  posted or updated since). Languages have no counterpart (registrations are in English).
- OpenAlex ``works``: ``filter=from_publication_date:2015-01-01,to_publication_date:...,
  language:en|fr,type:review,from_created_date:2024-01-01``. ``from_created_date`` is
  documented by OpenAlex as needing a premium API key; it is sent anyway, and an API that
  refuses it makes the source fail with the API's reason rather than widen the search.
"""

from __future__ import annotations

from datetime import date, datetime

from deepcritical.models import DesignFilter, SearchFilters

__all__ = [
    "FAR_FUTURE",
    "FAR_PAST",
    "clinicaltrials_filters",
    "europepmc_query",
    "openalex_filters",
    "pubmed_added_params",
    "pubmed_term",
    "registry_designs",
    "unapplied_filters",
]

FAR_PAST = date(1000, 1, 1)
"""The lower end of a date range open below."""
FAR_FUTURE = date(3000, 12, 31)
"""The upper end of a date range open above."""

_REGISTRY_DESIGNS: dict[DesignFilter, str] = {
    DesignFilter.RANDOMISED_TRIAL: "AREA[DesignAllocation]RANDOMIZED",
    DesignFilter.CLINICAL_TRIAL: "AREA[StudyType]INTERVENTIONAL",
    DesignFilter.OBSERVATIONAL: "AREA[StudyType]OBSERVATIONAL",
}
"""The designs a trial registry holds, as ``filter.advanced`` expressions; the others
(reviews, guidelines, case reports) are never registered studies."""

_REVIEW_DESIGNS = frozenset(
    {DesignFilter.REVIEW, DesignFilter.SYSTEMATIC_REVIEW, DesignFilter.META_ANALYSIS}
)


def _bounds(filters: SearchFilters) -> tuple[date, date] | None:
    """The publication range with open ends closed by :data:`FAR_PAST` / :data:`FAR_FUTURE`;
    ``None`` when neither end is set."""
    if filters.published_from is None and filters.published_to is None:
        return None
    return filters.published_from or FAR_PAST, filters.published_to or FAR_FUTURE


def _added_day(filters: SearchFilters) -> date | None:
    """The day of ``added_since`` (UTC), or ``None``."""
    since: datetime | None = filters.added_since
    return since.date() if since is not None else None


def _any(parts: list[str]) -> str:
    """``parts`` joined by OR, parenthesised when more than one."""
    return parts[0] if len(parts) == 1 else "(" + " OR ".join(parts) + ")"


def pubmed_term(term: str, filters: SearchFilters | None) -> str:
    """The esearch ``term`` for ``term`` within ``filters``: publication dates as ``[dp]``,
    languages as ``[la]`` (PubMed's English names), designs as ``[pt]`` (MEDLINE publication
    types), each clause ANDed after ``(term)``. ``term`` unchanged when no such filter is
    set (``added_since`` goes in :func:`pubmed_added_params`)."""
    if filters is None:
        return term
    clauses: list[str] = []
    bounds = _bounds(filters)
    if bounds is not None:
        low, high = (d.strftime("%Y/%m/%d") for d in bounds)
        clauses.append(f'("{low}"[dp] : "{high}"[dp])')
    if filters.languages:
        clauses.append(_any([f"{lang.name}[la]" for lang in filters.language_entries()]))
    if filters.designs:
        types = [f'"{t.lower()}"[pt]' for t in filters.publication_types()]
        clauses.append(_any(types))
    if not clauses:
        return term
    return " AND ".join([f"({term})", *clauses])


def pubmed_added_params(filters: SearchFilters | None) -> dict[str, str]:
    """esearch parameters bounding the Entrez date (when the record was added to PubMed) by
    ``added_since``: ``{"datetype": "edat", "mindate": "2024/01/01", "maxdate":
    "3000/12/31"}``; ``{}`` without ``added_since``."""
    day = _added_day(filters) if filters is not None else None
    if day is None:
        return {}
    return {
        "datetype": "edat",
        "mindate": day.strftime("%Y/%m/%d"),
        "maxdate": FAR_FUTURE.strftime("%Y/%m/%d"),
    }


def europepmc_query(query: str, filters: SearchFilters | None) -> str:
    """The Europe PMC ``query`` for ``query`` within ``filters``: ``FIRST_PDATE:[a TO b]``,
    ``LANG:`` (ISO 639-2 codes), ``PUB_TYPE:"..."`` and ``CREATION_DATE:[since TO
    3000-12-31]`` ANDed after ``(query)``; ``query`` unchanged when none is set (trial phases
    and statuses do not apply)."""
    if filters is None:
        return query
    clauses: list[str] = []
    bounds = _bounds(filters)
    if bounds is not None:
        clauses.append(f"FIRST_PDATE:[{bounds[0].isoformat()} TO {bounds[1].isoformat()}]")
    if filters.languages:
        clauses.append(_any([f"LANG:{lang.code3}" for lang in filters.language_entries()]))
    if filters.designs:
        clauses.append(_any([f'PUB_TYPE:"{t}"' for t in filters.publication_types()]))
    day = _added_day(filters)
    if day is not None:
        clauses.append(f"CREATION_DATE:[{day.isoformat()} TO {FAR_FUTURE.isoformat()}]")
    if not clauses:
        return query
    return " AND ".join([f"({query})", *clauses])


def registry_designs(filters: SearchFilters) -> list[str] | None:
    """The ``filter.advanced`` expressions of the designs a trial registry holds; ``None``
    when no design is asked for (all studies), ``[]`` when designs are asked for but none is
    a registered study's (e.g. only systematic reviews: the registry has nothing to give)."""
    if not filters.designs:
        return None
    held = (_REGISTRY_DESIGNS[d] for d in filters.designs if d in _REGISTRY_DESIGNS)
    return list(dict.fromkeys(held))


def clinicaltrials_filters(filters: SearchFilters | None) -> tuple[list[str], list[str]]:
    """``filter.overallStatus`` values and the ``filter.advanced`` clauses (to AND together)
    of ``filters`` for ClinicalTrials.gov API v2, phases excepted (the source ANDs its
    :func:`~deepcritical.sources.clinicaltrials.phase_filter`): the start date as
    ``AREA[StartDate]RANGE[a,b]``, designs (:func:`registry_designs`, ORed), and
    ``added_since`` as ``AREA[LastUpdatePostDate]RANGE[since,MAX]``."""
    if filters is None:
        return [], []
    statuses = [s.value for s in filters.trial_statuses]
    clauses: list[str] = []
    bounds = _bounds(filters)
    if bounds is not None:
        low = bounds[0].isoformat() if filters.published_from else "MIN"
        high = bounds[1].isoformat() if filters.published_to else "MAX"
        clauses.append(f"AREA[StartDate]RANGE[{low},{high}]")
    designs = registry_designs(filters)
    if designs:
        clauses.append(_any(designs))
    day = _added_day(filters)
    if day is not None:
        clauses.append(f"AREA[LastUpdatePostDate]RANGE[{day.isoformat()},MAX]")
    return statuses, clauses


def openalex_filters(filters: SearchFilters | None) -> list[str]:
    """OpenAlex ``filter=`` parts of ``filters`` (joined by ``,`` by the caller):
    ``from_publication_date:``, ``to_publication_date:``, ``language:en|fr`` (ISO 639-1),
    ``type:review`` when every design asked for is a review (OpenAlex's work types tell
    reviews from articles, nothing finer: other designs are screened after retrieval), and
    ``from_created_date:`` for ``added_since`` (a premium-key filter at OpenAlex; see the
    module docstring)."""
    if filters is None:
        return []
    parts: list[str] = []
    if filters.published_from is not None:
        parts.append(f"from_publication_date:{filters.published_from.isoformat()}")
    if filters.published_to is not None:
        parts.append(f"to_publication_date:{filters.published_to.isoformat()}")
    if filters.languages:
        parts.append("language:" + "|".join(filters.languages))
    if filters.designs and all(d in _REVIEW_DESIGNS for d in filters.designs):
        parts.append("type:review")
    day = _added_day(filters)
    if day is not None:
        parts.append(f"from_created_date:{day.isoformat()}")
    return parts


_DATES = ("published_from", "published_to")
_TRIAL_ONLY = ("trial_phases", "trial_statuses")
_APPLIED: dict[str, frozenset[str]] = {
    "pubmed": frozenset({*_DATES, "languages", "designs", "added_since"}),
    "europepmc": frozenset({*_DATES, "languages", "designs", "added_since"}),
    "trials": frozenset({*_DATES, "designs", *_TRIAL_ONLY, "added_since"}),
    "openalex": frozenset({*_DATES, "languages", "designs", "added_since"}),
    "local": frozenset({*_DATES, "designs", "added_since"}),
    "web": frozenset(),
}
"""The filter fields each source applies, in its request or (``local``; designs for every
source) by the run's screening of what comes back."""


def unapplied_filters(source: str, filters: SearchFilters | None) -> list[str]:
    """The fields set in ``filters`` that ``source`` cannot apply (``[]`` when it applies
    them all): the web search applies none, ClinicalTrials.gov no languages, the local corpus
    no languages. Trial phases and statuses are for ClinicalTrials.gov only and never listed
    for the other sources; an unknown source applies none."""
    if filters is None:
        return []
    set_fields = list(filters.key())
    applied = _APPLIED.get(source, frozenset())
    return [
        f for f in set_fields if f not in applied and (source == "trials" or f not in _TRIAL_ONLY)
    ]
