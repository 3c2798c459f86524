"""ClinicalTrials.gov (API v2) as a search source.

One search is ``GET {base_url}/studies`` with ``query.term=<query>``, ``format=json``,
``pageSize`` (at most 1000) and, from the second page on, ``pageToken`` (the previous page's
``nextPageToken``); pages are fetched until ``limit`` studies are collected or the API sends
no ``nextPageToken``. Optional filters:

* ``statuses`` -> ``filter.overallStatus=RECRUITING,COMPLETED`` (comma-separated list of
  ``overallStatus`` enum values, see :data:`OVERALL_STATUSES`);
* ``phases`` -> ``filter.advanced=AREA[Phase](PHASE2 OR PHASE3)`` (an Essie expression over the
  ``Phase`` field; values from :data:`PHASES`). A study listed as phase 2/3 has both
  ``PHASE2`` and ``PHASE3`` in ``designModule.phases`` and matches either.

By default only the fields the evidence item uses are requested (``fields=`` piece names, see
:data:`DEFAULT_FIELDS`), which keeps results sections (tens of kB per study) off the wire.

Each study becomes one :class:`~deepcritical.models.Evidence` (see :func:`study_to_evidence`);
its content is a compact structured summary of the registration, not the registry page.

Rate: the source defaults to 5 requests/s. ClinicalTrials.gov does not publish a hard limit;
third-party notes cite about 50 requests per minute per IP. One search is usually one request
(``pageSize`` covers ``limit``), so bursts stay small, and 429 replies are retried honouring
``Retry-After`` (:class:`~deepcritical.sources.http.SourceHttp`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from deepcritical.evidence.identifiers import normalize_nct
from deepcritical.logs import get_logger
from deepcritical.models import (
    Citation,
    Evidence,
    SearchFilters,
    SourceName,
    TrialPhase,
    TrialStatus,
)
from deepcritical.sources.base import SourceError, rank_in_order
from deepcritical.sources.filter_syntax import clinicaltrials_filters, registry_designs
from deepcritical.sources.html_text import collapse_whitespace
from deepcritical.sources.http import HttpOptions, SourceHttp
from deepcritical.sources.paging import collect_token_pages, page_token
from deepcritical.sources.payload import as_list, as_mapping, json_object, parse_each

log = get_logger(__name__)

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_FIELDS",
    "DEFAULT_REQUESTS_PER_SECOND",
    "MAX_PAGE_SIZE",
    "OVERALL_STATUSES",
    "PHASES",
    "ClinicalTrialsSource",
    "normalize_phase",
    "normalize_status",
    "parse_studies",
    "phase_filter",
    "study_to_evidence",
]

SOURCE = SourceName.CLINICALTRIALS.value
LABEL = "ClinicalTrials.gov"
DEFAULT_BASE_URL = "https://clinicaltrials.gov/api/v2"
DEFAULT_REQUESTS_PER_SECOND = 5.0
MAX_PAGE_SIZE = 1000
STUDY_URL = "https://clinicaltrials.gov/study/{nct}"
NOT_JSON = f"malformed JSON from {LABEL}: got {{content_type}} starting {{start}} ({{error}})"
"""How a body that is not JSON is reported (:func:`~deepcritical.sources.http.decode_json`)."""

OVERALL_STATUSES: frozenset[str] = frozenset(s.value for s in TrialStatus)
"""Values of ``statusModule.overallStatus`` accepted by ``filter.overallStatus`` (the
:class:`~deepcritical.models.TrialStatus` enum of the plan's search filters)."""

PHASES: tuple[str, ...] = tuple(p.value for p in TrialPhase)
"""Values of ``designModule.phases`` (``NA``: not applicable, e.g. device or behavioural;
the :class:`~deepcritical.models.TrialPhase` enum of the plan's search filters)."""

DEFAULT_FIELDS: tuple[str, ...] = (
    "NCTId", "BriefTitle", "OfficialTitle", "Acronym", "OverallStatus", "WhyStopped",
    "StudyType", "Phase", "Condition", "InterventionType", "InterventionName",
    "LeadSponsorName", "EnrollmentCount", "EnrollmentType", "BriefSummary",
    "PrimaryOutcomeMeasure", "StartDate", "PrimaryCompletionDate", "CompletionDate",
    "StudyFirstPostDate", "HasResults",
)  # fmt: skip
"""API v2 field (piece) names requested by default; ``fields=None`` asks for whole records."""

_PHASE_LABELS = {
    "EARLY_PHASE1": "Early Phase 1",
    "PHASE1": "Phase 1",
    "PHASE2": "Phase 2",
    "PHASE3": "Phase 3",
    "PHASE4": "Phase 4",
}
_STUDY_TYPE_LABELS = {
    "INTERVENTIONAL": "Clinical Trial",
    "OBSERVATIONAL": "Observational Study",
    "EXPANDED_ACCESS": "Expanded Access",
}
_ISO_DATE = re.compile(r"^\d{4}(?:-\d{2}(?:-\d{2})?)?$")
# ClinicalTrials.gov text is markdown: "\>" "\*" "\_" are escaped literal characters.
_MD_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!<>|~^=])")
_MAX_OUTCOMES = 5


# --------------------------------------------------------------------------- filters


def normalize_status(value: str) -> str:
    """The ``overallStatus`` enum value for a status written loosely.

    ``"recruiting"`` -> ``"RECRUITING"``, ``"Active, not recruiting"`` ->
    ``"ACTIVE_NOT_RECRUITING"``, ``"not-yet-recruiting"`` -> ``"NOT_YET_RECRUITING"``.

    Raises:
        ValueError: not one of :data:`OVERALL_STATUSES`.
    """
    status = re.sub(r"[^A-Z]+", "_", value.strip().upper()).strip("_")
    if status not in OVERALL_STATUSES:
        raise ValueError(
            f"unknown ClinicalTrials.gov status {value!r}; "
            f"choose from {', '.join(sorted(OVERALL_STATUSES))}"
        )
    return status


def normalize_phase(value: str | int) -> str:
    """The ``Phase`` enum value for a phase written loosely.

    ``2``, ``"2"``, ``"phase 2"``, ``"Phase II"``, ``"PHASE2"`` -> ``"PHASE2"``;
    ``"early phase 1"`` -> ``"EARLY_PHASE1"``; ``"na"``, ``"N/A"`` -> ``"NA"``.

    Raises:
        ValueError: not one of :data:`PHASES`.
    """
    raw = str(value).strip().upper()
    compact = re.sub(r"[^A-Z0-9]+", "", raw)
    for roman, digit in (("IV", "4"), ("III", "3"), ("II", "2"), ("I", "1")):
        if compact.startswith(("PHASE", "EARLY")) and compact.endswith(roman):
            compact = compact[: -len(roman)] + digit
            break
    if compact in {"NA", "NOTAPPLICABLE"}:
        return "NA"
    if compact.startswith("EARLYPHASE") or compact == "EARLY1":
        phase = "EARLY_PHASE" + compact.removeprefix("EARLYPHASE").removeprefix("EARLY")
    else:
        phase = "PHASE" + compact.removeprefix("PHASE")
    if phase not in PHASES:
        raise ValueError(
            f"unknown ClinicalTrials.gov phase {value!r}; choose from {', '.join(PHASES)}"
        )
    return phase


def phase_filter(phases: Sequence[str | int]) -> str:
    """The ``filter.advanced`` expression selecting studies in any of ``phases``.

    ``["PHASE2", "PHASE3"]`` -> ``"AREA[Phase](PHASE2 OR PHASE3)"``.

    Raises:
        ValueError: an unknown phase, or no phase at all.
    """
    values = list(dict.fromkeys(normalize_phase(p) for p in phases))
    if not values:
        raise ValueError("phase_filter needs at least one phase")
    return f"AREA[Phase]({' OR '.join(values)})"


# --------------------------------------------------------------------------- parsing


def _str(value: Any) -> str | None:
    if isinstance(value, str):
        text = collapse_whitespace(_MD_ESCAPE.sub(r"\1", value))
        return text or None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def _strs(values: Any) -> list[str]:
    out = [s for s in (_str(v) for v in as_list(values)) if s]
    return list(dict.fromkeys(out))


def _pairs(objects: Any, key: str, qualifier: str) -> list[tuple[str, str | None]]:
    """``(object[key], object[qualifier])`` as text (:func:`_str`) for each object of the JSON
    array ``objects`` that has a ``key`` text, in order; the qualifier may be None."""
    pairs = []
    for obj in as_list(objects):
        value = _str(as_mapping(obj).get(key))
        if value:
            pairs.append((value, _str(as_mapping(obj).get(qualifier))))
    return pairs


def _date(struct: Any) -> str | None:
    date = _str(as_mapping(struct).get("date"))
    return date if date and _ISO_DATE.match(date) else None


def _date_line(label: str, struct: Any) -> str | None:
    date = _date(struct)
    if not date:
        return None
    kind = _str(as_mapping(struct).get("type"))
    return f"{label}: {date}" + (f" ({kind.lower()})" if kind else "")


def study_to_evidence(study: Mapping[str, Any]) -> Evidence | None:
    """One API v2 study object -> an evidence item, or ``None`` when it has no valid NCT ID.

    Citation (``source="trials"``), from ``protocolSection``:

    * ``id``, ``nct_id``: ``identificationModule.nctId`` (``"NCT"`` + 8 digits);
    * ``title``: ``identificationModule.officialTitle``, else ``briefTitle``;
    * ``authors``: ``[sponsorCollaboratorsModule.leadSponsor.name]`` (the organisation or
      person responsible for the study), empty when absent; ``journal``: ``None``;
    * ``date``/``year``: ``statusModule.startDateStruct.date`` (``"2019-03"`` or
      ``"2019-03-14"``), else ``studyFirstPostDateStruct.date``;
    * ``url``: ``https://clinicaltrials.gov/study/<NCT ID>``.

    ``content`` is one line per known item, in this order (lines without data are left out)::

        Brief summary: <descriptionModule.briefSummary>
        Status: WITHDRAWN (why stopped: ...)      # overallStatus; lastKnownStatus when UNKNOWN
        Study type: INTERVENTIONAL
        Phase: PHASE2, PHASE3                     # "NA (not applicable)" for NA
        Conditions: <conditionsModule.conditions; joined>
        Interventions: DRUG: Metformin; DRUG: Placebo
        Enrollment: 120 (ACTUAL)
        Primary outcomes: <measure> (<timeFrame>); ...   # first 5
        Results posted: yes                       # top-level hasResults
        Start: 2019-03; Primary completion: 2021-06 (actual); Completion: 2021-12 (estimated)

    Text is de-markdowned (``\\>`` -> ``>``) and whitespace-collapsed. ``publication_types``
    are the study type (``"Clinical Trial"`` for interventional, ``"Observational Study"``,
    ``"Expanded Access"``) then ``"Phase 2"``-style labels; ``relevance`` is 0 and ``query``
    ``None`` (the caller ranks).
    """
    protocol = as_mapping(study.get("protocolSection"))
    nct = normalize_nct(_str(as_mapping(protocol.get("identificationModule")).get("nctId")))
    if nct is None:
        return None
    citation = _citation(nct, protocol)
    design = as_mapping(protocol.get("designModule"))
    study_type = _str(design.get("studyType"))
    publication_types = [_STUDY_TYPE_LABELS.get(study_type or "", "Clinical Trial")]
    publication_types += [
        _PHASE_LABELS[p] for p in _strs(design.get("phases")) if p in _PHASE_LABELS
    ]
    lines = _status_lines(protocol) + _design_lines(protocol) + _result_lines(study, protocol)
    return Evidence(
        content="\n".join(lines) or citation.title or f"Trial {nct}",
        citation=citation,
        publication_types=publication_types,
    )


def _citation(nct: str, protocol: Mapping[str, Any]) -> Citation:
    """The citation of a study (see :func:`study_to_evidence`)."""
    ident = as_mapping(protocol.get("identificationModule"))
    status_mod = as_mapping(protocol.get("statusModule"))
    sponsor_mod = as_mapping(protocol.get("sponsorCollaboratorsModule"))
    title = _str(ident.get("officialTitle")) or _str(ident.get("briefTitle")) or ""
    date = _date(status_mod.get("startDateStruct")) or _date(
        status_mod.get("studyFirstPostDateStruct")
    )
    sponsor = _str(as_mapping(sponsor_mod.get("leadSponsor")).get("name"))
    return Citation(
        source=SOURCE,
        id=nct,
        nct_id=nct,
        title=title,
        authors=[sponsor] if sponsor else [],
        journal=None,
        year=int(date[:4]) if date else None,
        date=date,
        url=STUDY_URL.format(nct=nct),
    )


def _status_lines(protocol: Mapping[str, Any]) -> list[str]:
    """The "Brief summary" and "Status" lines of a study's content."""
    lines: list[str] = []
    summary = _str(as_mapping(protocol.get("descriptionModule")).get("briefSummary"))
    if summary:
        lines.append(f"Brief summary: {summary}")
    status_mod = as_mapping(protocol.get("statusModule"))
    status = _str(status_mod.get("overallStatus"))
    if status:
        notes = []
        last_known = _str(status_mod.get("lastKnownStatus"))
        if last_known and last_known != status:
            notes.append(f"last known: {last_known}")
        why = _str(status_mod.get("whyStopped"))
        if why:
            notes.append(f"why stopped: {why}")
        lines.append(f"Status: {status}" + (f" ({'; '.join(notes)})" if notes else ""))
    return lines


def _design_lines(protocol: Mapping[str, Any]) -> list[str]:
    """The "Study type", "Phase", "Conditions", "Interventions" and "Enrollment" lines."""
    lines: list[str] = []
    design = as_mapping(protocol.get("designModule"))
    study_type = _str(design.get("studyType"))
    if study_type:
        lines.append(f"Study type: {study_type}")
    phases = _strs(design.get("phases"))
    if phases:
        shown = ["NA (not applicable)" if p == "NA" else p for p in phases]
        lines.append(f"Phase: {', '.join(shown)}")
    conditions = _strs(as_mapping(protocol.get("conditionsModule")).get("conditions"))
    if conditions:
        lines.append(f"Conditions: {'; '.join(conditions)}")
    arms = as_mapping(protocol.get("armsInterventionsModule"))
    interventions = [
        f"{kind}: {name}" if kind else name
        for name, kind in _pairs(arms.get("interventions"), "name", "type")
    ]
    if interventions:
        lines.append(f"Interventions: {'; '.join(dict.fromkeys(interventions))}")
    enrollment = as_mapping(design.get("enrollmentInfo"))
    count = enrollment.get("count")
    if isinstance(count, int) and not isinstance(count, bool):
        kind = _str(enrollment.get("type"))
        lines.append(f"Enrollment: {count}" + (f" ({kind})" if kind else ""))
    return lines


def _result_lines(study: Mapping[str, Any], protocol: Mapping[str, Any]) -> list[str]:
    """The "Primary outcomes", "Results posted" and dates lines."""
    lines: list[str] = []
    outcomes = as_mapping(protocol.get("outcomesModule"))
    primary = [
        f"{measure} ({frame})" if frame else measure
        for measure, frame in _pairs(
            as_list(outcomes.get("primaryOutcomes"))[:_MAX_OUTCOMES], "measure", "timeFrame"
        )
    ]
    if primary:
        lines.append(f"Primary outcomes: {'; '.join(primary)}")
    has_results = study.get("hasResults")
    if isinstance(has_results, bool):
        lines.append(f"Results posted: {'yes' if has_results else 'no'}")
    status_mod = as_mapping(protocol.get("statusModule"))
    dates = [
        d
        for d in (
            _date_line("Start", status_mod.get("startDateStruct")),
            _date_line("Primary completion", status_mod.get("primaryCompletionDateStruct")),
            _date_line("Completion", status_mod.get("completionDateStruct")),
        )
        if d
    ]
    if dates:
        lines.append("; ".join(dates))
    return lines


def parse_studies(payload: Any) -> tuple[list[Evidence], str | None]:
    """Parse one ``GET /studies`` JSON reply.

    Args:
        payload: the decoded JSON body: ``{"studies": [...], "nextPageToken": "...",
            "totalCount": n}`` (``nextPageToken`` absent on the last page, ``totalCount`` only
            with ``countTotal=true``).

    Returns:
        ``(items, next_page_token)``: one evidence item per study in API order (see
        :func:`study_to_evidence`; studies without a valid NCT ID are skipped and logged), and
        the token of the next page or ``None``.

    Raises:
        SourceError: the body is not an object with a ``studies`` list.
    """
    payload = json_object(payload, SOURCE, f"unexpected response from {LABEL}: a JSON {{type}}")
    studies = payload.get("studies")
    if not isinstance(studies, list):
        raise SourceError(SOURCE, f"unexpected response from {LABEL}: no 'studies' list")
    skipped = f"skipping a {LABEL} study without a valid NCT ID"
    items = parse_each(studies, study_to_evidence, log, skipped)
    return items, page_token(payload.get("nextPageToken"))


# --------------------------------------------------------------------------- the source


class ClinicalTrialsSource:
    """ClinicalTrials.gov API v2 behind the :class:`~deepcritical.sources.base.SearchSource`
    protocol (``name = "trials"``).

    Args:
        client: the run's shared :class:`httpx.AsyncClient`.
        base_url: API root without trailing slash (tests and stub servers redirect it);
            requests go to ``{base_url}/studies``.
        http: timeout, tries, backoff and rate limit (:class:`~deepcritical.sources.http.
            HttpOptions`; the rate defaults to 5 requests/s; see the module notes).
        statuses: default ``filter.overallStatus`` values (loosely written, see
            :func:`normalize_status`); ``None`` for all statuses.
        phases: default phase filter (see :func:`phase_filter`); ``None`` for all phases.
        fields: API field names to request (:data:`DEFAULT_FIELDS`); ``None`` for whole records.

    Raises:
        ValueError: an unknown status or phase.
    """

    name: str = SOURCE

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        base_url: str = DEFAULT_BASE_URL,
        http: HttpOptions | None = None,
        statuses: Sequence[str] | None = None,
        phases: Sequence[str | int] | None = None,
        fields: Sequence[str] | None = DEFAULT_FIELDS,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.http = SourceHttp(client, SOURCE, http, default_rate=DEFAULT_REQUESTS_PER_SECOND)
        self.statuses = [normalize_status(s) for s in statuses] if statuses else None
        self.phases = [normalize_phase(p) for p in phases] if phases else None
        self.fields = list(fields) if fields else None

    async def search(
        self,
        query: str,
        limit: int,
        filters: SearchFilters | None = None,
        *,
        statuses: Sequence[str] | None = None,
        phases: Sequence[str | int] | None = None,
    ) -> list[Evidence]:
        """Up to ``limit`` studies matching ``query`` (``query.term``), in the API's order.

        Args:
            query: free text or Essie syntax (``metformin AND AREA[Condition]Alzheimer``).
                A blank query returns ``[]`` without a request.
            limit: maximum number of items; ``<= 0`` returns ``[]`` without a request.
            filters: the plan's filters (:func:`~deepcritical.sources.filter_syntax.
                clinicaltrials_filters`): ``trial_statuses`` and ``trial_phases`` replace the
                constructor's, the start date range, the registry's designs and
                ``added_since`` (last update posted) join ``filter.advanced``; languages do
                not apply. Designs none of which a registry holds (only reviews, say)
                return ``[]`` without a request.
            statuses: overrides the constructor's (and ``filters``') status filter.
            phases: overrides the constructor's (and ``filters``') phase filter.

        Returns:
            Evidence items with ``query`` set and ``relevance`` from rank: ``1 - rank / n``
            for ``n`` items (the first 1.0, the last ``1/n``).

        Raises:
            SourceError: HTTP failure after retries, timeout, a body that is not JSON, or JSON
                without a ``studies`` list.
            ValueError: an unknown status or phase in the overrides.
        """
        if limit <= 0 or not query.strip():
            return []
        if filters is not None and registry_designs(filters) == []:
            return []
        plan_statuses, clauses = clinicaltrials_filters(filters)
        plan_phases = [p.value for p in filters.trial_phases] if filters is not None else []
        status_filter = (
            [normalize_status(s) for s in statuses] if statuses else plan_statuses or self.statuses
        )
        phase_values = (
            [normalize_phase(p) for p in phases] if phases else plan_phases or self.phases
        )
        if phase_values:
            clauses.insert(0, phase_filter(phase_values))
        page_size = min(limit, MAX_PAGE_SIZE)
        params: dict[str, str | int] = {
            "query.term": query.strip(),
            "pageSize": page_size,
            "format": "json",
        }
        if status_filter:
            params["filter.overallStatus"] = ",".join(status_filter)
        if clauses:
            params["filter.advanced"] = " AND ".join(clauses)
        if self.fields:
            params["fields"] = ",".join(self.fields)

        async def fetch_page(token: str | None) -> tuple[list[Evidence], str | None]:
            page_params = {**params, "pageToken": token} if token else params
            payload = await self.http.get_json(
                f"{self.base_url}/studies", page_params, reason=NOT_JSON
            )
            return parse_studies(payload)

        items = await collect_token_pages(fetch_page, limit, first_token=None)
        rank_in_order(items, query)
        return items
