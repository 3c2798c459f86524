"""The plan's search filters: validation with clear errors, JSON round trip, screening of a
record by its own metadata, old plans without filters, and the per-source queries of a plan."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime

import pytest
from pydantic import ValidationError

from deepcritical.config import Settings
from deepcritical.models import (
    DATE_CAUSE,
    DESIGN_CAUSE,
    ChecklistItem,
    Citation,
    DesignFilter,
    ResearchPlan,
    SearchFilters,
    StudyDesign,
    TrialPhase,
    TrialStatus,
)
from deepcritical.orchestrators.deps import requested_filters
from deepcritical.sources.filter_syntax import unapplied_filters
from deepcritical.sources.query_syntax import source_queries


def test_empty_filters_filter_nothing() -> None:
    empty = SearchFilters()
    assert empty.is_empty()
    assert empty.key() == {}
    assert empty.lines() == []
    assert empty.excludes(Citation(source="pubmed", id="1", year=1950)) is None


def test_values_are_normalised_sorted_and_deduplicated() -> None:
    filters = SearchFilters.model_validate(
        {
            "languages": ["FR", "en", "fr"],
            "designs": ["Randomized-Trial", "rct", "review"],
            "trial_phases": ["phase 3", "Phase2", "early phase 1"],
            "trial_statuses": ["recruiting", "not yet recruiting"],
        }
    )
    assert filters.languages == ("en", "fr")
    assert filters.designs == (DesignFilter.RANDOMISED_TRIAL, DesignFilter.REVIEW)
    assert filters.trial_phases == (
        TrialPhase.EARLY_PHASE1,
        TrialPhase.PHASE2,
        TrialPhase.PHASE3,
    )
    assert filters.trial_statuses == (TrialStatus.NOT_YET_RECRUITING, TrialStatus.RECRUITING)


def test_json_round_trip_and_frozen() -> None:
    filters = SearchFilters(
        published_from=date(2015, 1, 1),
        published_to=date(2020, 12, 31),
        languages=("en",),
        designs=(DesignFilter.META_ANALYSIS,),
        trial_phases=(TrialPhase.PHASE3,),
        trial_statuses=(TrialStatus.COMPLETED,),
        added_since=datetime(2024, 1, 31, 12, 0),  # naive: read as UTC
    )
    text = filters.model_dump_json()
    assert SearchFilters.model_validate_json(text) == filters
    assert json.loads(text)["added_since"] == "2024-01-31T12:00:00Z"
    assert filters.added_since is not None
    assert filters.added_since.tzinfo is UTC
    with pytest.raises(ValidationError):
        filters.languages = ("fr",)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"published_from": "2021-01-01", "published_to": "2020-12-31"},
            "published_from (2021-01-01) is after published_to (2020-12-31)",
        ),
        ({"languages": ["english"]}, "unknown language code 'english': use ISO 639-1 codes"),
        ({"languages": ["xx"]}, "one of ar, bg"),
        ({"designs": ["cohort_study"]}, "unknown study design 'cohort_study': one of"),
        ({"trial_phases": ["PHASE5"]}, "unknown trial phase 'PHASE5': one of EARLY_PHASE1"),
        ({"trial_statuses": ["OPEN"]}, "unknown trial status 'OPEN'"),
        ({"published_from": "2015-13-01"}, "published_from"),
        ({"languages": ["en"], "colour": "red"}, "colour"),
    ],
)
def test_bad_values_raise_a_clear_error(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        SearchFilters.model_validate(fields)
    assert message in str(caught.value)


def test_added_since_is_kept_in_utc() -> None:
    filters = SearchFilters.model_validate({"added_since": "2024-02-01T01:30:00+02:00"})
    assert filters.added_since == datetime(2024, 1, 31, 23, 30, tzinfo=UTC)
    assert filters.added_since is not None
    assert filters.added_since.tzinfo is UTC


def test_a_one_day_range_is_allowed() -> None:
    day = date(2020, 2, 29)
    assert SearchFilters(published_from=day, published_to=day).year_range == (2020, 2020)


RANGE = SearchFilters(published_from=date(2015, 6, 1), published_to=date(2020, 12, 31))


@pytest.mark.parametrize(
    ("year", "iso", "kept"),
    [
        (2012, None, False),
        (2015, None, True),  # a year overlapping the range is inside at its precision
        (2015, "2015-05", False),
        (2015, "2015-06", True),
        (2015, "2015-05-31", False),
        (2021, "2021-01-01", False),
        (2020, "2020-12-31", True),
        (None, None, True),  # unknown date: kept
        (None, "not a date", True),
    ],
)
def test_records_are_screened_by_their_own_date(
    year: int | None, iso: str | None, kept: bool
) -> None:
    outside = RANGE.excludes(Citation(source="openalex", id="W1", year=year, date=iso))
    assert (outside is None) is kept
    if outside is not None:
        assert outside.cause == DATE_CAUSE
        assert "published" in outside.reason


def test_records_are_screened_by_their_graded_design() -> None:
    trials = SearchFilters(designs=(DesignFilter.RANDOMISED_TRIAL,))
    record = Citation(source="openalex", id="W1", year=2019)
    assert trials.excludes(record, StudyDesign.RCT) is None
    outside = trials.excludes(record, StudyDesign.COHORT)
    assert outside is not None
    assert outside.cause == DESIGN_CAUSE
    assert "cohort study" in outside.reason
    assert trials.excludes(record, StudyDesign.OTHER) is None  # unknown design: kept
    assert trials.excludes(record, None) is None
    guidelines = SearchFilters(designs=(DesignFilter.GUIDELINE,))
    assert guidelines.excludes(record, StudyDesign.COHORT) is None  # no design to check


def test_lines_describe_every_filter() -> None:
    filters = SearchFilters(
        published_from=date(2015, 1, 1), languages=("en", "fr"), designs=("review",)
    )
    assert filters.lines() == [
        "Published: 2015-01-01 to today",
        "Languages: english (en), french (fr)",
        "Study designs: review",
    ]


PLAN = {
    "question": "Does metformin prevent dementia?",
    "refined_question": "Does metformin lower the risk of dementia in type 2 diabetes?",
    "checklist": [{"key": "effect", "description": "Effect on dementia risk"}],
    "queries": ["metformin[tiab] AND dementia[tiab]", "metformin dementia risk"],
}


def test_a_plan_stored_before_filters_still_loads() -> None:
    plan = ResearchPlan.model_validate_json(json.dumps(PLAN))
    assert plan.filters == SearchFilters()
    assert plan.source_queries == {}
    again = ResearchPlan.model_validate_json(plan.model_dump_json())
    assert again == plan


def test_plan_round_trips_its_filters_and_source_queries() -> None:
    plan = ResearchPlan.model_validate(
        {
            **PLAN,
            "filters": {"published_from": "2015-01-01", "languages": ["en"]},
            "source_queries": {"pubmed": ["  metformin[mh]   AND dementia[mh] ", " "]},
        }
    )
    assert plan.source_queries == {"pubmed": ["metformin[mh] AND dementia[mh]"]}
    assert ResearchPlan.model_validate_json(plan.model_dump_json()) == plan


def test_source_queries_must_name_known_sources() -> None:
    with pytest.raises(ValidationError, match="unknown source 'scopus': one of"):
        ResearchPlan.model_validate({**PLAN, "source_queries": {"scopus": ["x"]}})


def test_effective_source_queries_translate_the_plan_queries_unless_given() -> None:
    plan = ResearchPlan(
        question=PLAN["question"],
        refined_question=str(PLAN["refined_question"]),
        checklist=[ChecklistItem(key="effect", description="Effect")],
        queries=["metformin[tiab] AND dementia[tiab]", "metformin dementia"],
        source_queries={"europepmc": ['TITLE:"metformin" AND dementia']},
    )
    queries = source_queries(plan, ["pubmed", "openalex", "europepmc"], year_from=2015)
    assert queries == {
        "pubmed": [
            '(metformin[tiab] AND dementia[tiab]) AND ("2015"[dp] : "3000"[dp])',
            '(metformin dementia) AND ("2015"[dp] : "3000"[dp])',
        ],
        "openalex": ["metformin dementia"],  # both plain forms are the same query: once
        "europepmc": ['TITLE:"metformin" AND dementia'],
    }


def test_sources_that_cannot_apply_a_filter_are_named() -> None:
    filters = SearchFilters(
        published_from=date(2015, 1, 1), languages=("en",), trial_phases=(TrialPhase.PHASE3,)
    )
    assert unapplied_filters("web", filters) == ["published_from", "languages"]
    assert unapplied_filters("trials", filters) == ["languages"]
    assert unapplied_filters("local", filters) == ["languages"]
    assert unapplied_filters("pubmed", filters) == []  # trial phases are not PubMed's
    assert unapplied_filters("web", None) == []


def test_settings_carry_the_requested_filters(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "DEEPCRITICAL_SEARCH_FILTERS", '{"published_from": "2015-01-01", "languages": ["en"]}'
    )
    settings = Settings(_env_file=None)
    wanted = SearchFilters(published_from=date(2015, 1, 1), languages=("en",))
    assert requested_filters(settings) == wanted
    stored = Settings(**settings.public_dict())  # what a resumed run is rebuilt from
    assert requested_filters(stored) == wanted
    plan_filters = SearchFilters(languages=("fr",))
    monkeypatch.delenv("DEEPCRITICAL_SEARCH_FILTERS")
    assert requested_filters(Settings(_env_file=None), plan_filters) == plan_filters


async def test_research_refuses_bad_filters_before_any_event() -> None:
    from deepcritical.api import research

    settings = Settings(
        _env_file=None, persist_runs=False, search_filters={"languages": ["xx"]}, llm="none"
    )
    events = research("Does metformin prevent dementia?", settings)
    with pytest.raises(ValidationError, match="unknown language code 'xx'"):
        await anext(events)  # the first event is the error: nothing was streamed
