"""The plan review with the plan's search filters and per-source queries: an edited plan's
filters and source queries are checked (:func:`deepcritical.state.reviews.check_plan`) and
what they change is stated (:func:`deepcritical.models.plan_changes`)."""

from __future__ import annotations

from datetime import date

import pytest

from deepcritical.models import ChecklistItem, ResearchPlan, SearchFilters, plan_changes
from deepcritical.sources.query_syntax import source_queries
from deepcritical.state.errors import InvalidPlanError
from deepcritical.state.reviews import check_plan

SOURCES = ["pubmed", "local"]


def _plan(**extra: object) -> ResearchPlan:
    data: dict[str, object] = {
        "question": "metformin and dementia",
        "refined_question": "Does metformin lower dementia risk?",
        "checklist": [ChecklistItem(key="effect", description="Effect on incidence")],
        "queries": ["metformin dementia"],
    }
    data.update(extra)
    return ResearchPlan.model_validate(data)


def test_edited_filters_and_source_queries_are_stated_as_changes() -> None:
    proposed = _plan()
    edit = _plan(
        filters=SearchFilters(published_from=date(2015, 1, 1), languages=("en",)),
        source_queries={"local": ["metformin dementia", "metformin cognition"]},
    )
    reviewed = check_plan(edit, proposed, SOURCES)
    changes = plan_changes(
        proposed, reviewed, SOURCES, sent_before=source_queries(proposed, SOURCES)
    )
    assert changes == [
        "search filters: Published: 2015-01-01 to today; Languages: english (en)",
        "added Local corpus query 'metformin cognition'",
    ]
    assert reviewed.source_queries == {"local": ["metformin dementia", "metformin cognition"]}


def test_removed_filters_are_stated() -> None:
    proposed = _plan(filters=SearchFilters(published_to=date(2020, 12, 31)))
    reviewed = check_plan(_plan(), proposed, SOURCES)
    assert plan_changes(proposed, reviewed, SOURCES) == ["search filters removed"]


def test_queries_of_a_dropped_source_are_left_out() -> None:
    edit = _plan(sources=["local"], source_queries={"pubmed": ["x"], "local": ["y"]})
    reviewed = check_plan(edit, _plan(), SOURCES)
    assert reviewed.source_queries == {"local": ["y"]}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"source_queries": {"trials": ["x"]}}, "queries for unknown source.s. trials"),
        ({"source_queries": {"local": ["  "]}}, "gives local no query"),
        ({"source_queries": {"local": ["x" * 301]}}, "local query 1 is longer than 300"),
        ({"source_queries": {"nowhere": ["x"]}}, "unknown source 'nowhere'"),
        (
            {"filters": {"published_from": "2024-01-01", "published_to": "2020-01-01"}},
            "is after published_to",
        ),
        ({"filters": {"languages": ["xx"]}}, "unknown language code 'xx'"),
    ],
)
def test_bad_filters_or_source_queries_are_refused(extra: dict[str, object], message: str) -> None:
    data = _plan().model_dump(mode="json") | extra
    with pytest.raises(InvalidPlanError, match=message):
        check_plan(data, _plan(), SOURCES)
