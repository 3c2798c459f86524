"""The review steps' forms (:mod:`deepcritical.ui.review_forms`): the plan card's values
from a plan and the edited plan back (checklist lines, per-source queries kept only where
edited, dates typed as years), the evidence table escaped, and the toggles' decisions."""

from __future__ import annotations

from datetime import date

import pytest
from pydantic import ValidationError

from deepcritical.models import (
    ChecklistItem,
    ResearchPlan,
    ScreenedRecord,
    SearchFilters,
)
from deepcritical.sources.query_syntax import source_queries
from deepcritical.ui.review_forms import (
    FormError,
    edited_plan,
    evidence_decisions,
    evidence_html,
    parse_date,
    plan_fields,
    record_choices,
)

SOURCES = ["pubmed", "local"]


def plan() -> ResearchPlan:
    return ResearchPlan(
        question="metformin and cancer",
        refined_question="Does metformin lower cancer incidence?",
        checklist=[
            ChecklistItem(key="incidence", description="Cancer incidence", min_evidence=3),
            ChecklistItem(key="trials", description="Randomised trials"),
        ],
        queries=["metformin cancer"],
        filters=SearchFilters(languages=("en",)),
    )


def edit(proposed: ResearchPlan, **changes: object) -> dict[str, object]:
    sent = source_queries(proposed, SOURCES)
    fields = plan_fields(proposed, SOURCES, sent)
    values: dict[str, object] = {
        "refined_question": fields.refined_question,
        "checklist": fields.checklist,
        "searched": fields.searched,
        "queries": dict(fields.queries),
        "published_from": fields.published_from,
        "published_to": fields.published_to,
        "languages": fields.languages,
        "designs": fields.designs,
    }
    values.update(changes)
    return edited_plan(proposed, sent, **values)  # type: ignore[arg-type]


def test_the_card_shows_the_plan_and_each_source_s_queries_as_sent() -> None:
    proposed = plan()
    fields = plan_fields(proposed, SOURCES, source_queries(proposed, SOURCES))
    assert fields.checklist == "incidence: Cancer incidence\ntrials: Randomised trials"
    assert fields.searched == SOURCES
    assert fields.queries["local"] == "metformin cancer"
    assert "metformin" in fields.queries["pubmed"]
    assert fields.languages == ["en"]


def test_an_unchanged_card_gives_the_plan_back() -> None:
    proposed = plan()
    again = ResearchPlan.model_validate(edit(proposed))
    assert again == proposed


def test_edits_reach_the_plan() -> None:
    proposed = plan()
    queries = {"pubmed": source_queries(proposed, SOURCES)["pubmed"][0], "local": "a\n\nb"}
    data = ResearchPlan.model_validate(
        edit(
            proposed,
            checklist="incidence: Cancer incidence\nMortality from any cancer",
            queries=queries,
            published_from="2015",
            published_to="2020-06",
            designs=["randomised_trial"],
        )
    )
    assert [(c.key, c.min_evidence) for c in data.checklist] == [
        ("incidence", 3),
        ("mortality-from-any-cancer", 2),
    ]
    assert data.source_queries == {"local": ["a", "b"]}  # PubMed as sent: not pinned
    assert data.filters.published_from == date(2015, 1, 1)
    assert data.filters.published_to == date(2020, 6, 30)
    assert [d.value for d in data.filters.designs] == ["randomised_trial"]


@pytest.mark.parametrize("typed", ["15", "2015-13", "2015-02-30", "soon", "2015--01"])
def test_a_date_the_form_cannot_read_is_refused(typed: str) -> None:
    with pytest.raises(FormError, match="is not a date"):
        parse_date(typed, end=False)


def test_no_source_ticked_is_refused() -> None:
    with pytest.raises(FormError, match="at least one source"):
        edit(plan(), searched=[])


RECORDS = [
    ScreenedRecord(id="E1", title="<script>x()</script>Trial", source="local", year=2020),
    ScreenedRecord(id="E2", title="Cohort", source="pubmed", included=False, reason="off"),
    ScreenedRecord(id="E3", title="Review", source="pubmed", year=2019),
]


def test_the_evidence_table_escapes_source_text() -> None:
    table = evidence_html(RECORDS)
    assert "<script>" not in table
    assert "&lt;script&gt;x()&lt;/script&gt;Trial" in table
    assert "2 of 3 records included by screening" in table
    assert record_choices(RECORDS)[0] == ("E1: <script>x()</script>Trial", "E1")


def test_the_toggles_make_decisions_with_their_reasons() -> None:
    decisions = evidence_decisions(RECORDS, ["E2"], "E3: a review\nwrong population")
    assert [(d.evidence_id, d.action, d.reason) for d in decisions] == [
        ("E1", "exclude", "wrong population"),
        ("E2", "include", ""),
        ("E3", "exclude", "a review"),
    ]
    assert evidence_decisions(RECORDS, ["E1", "E3"], "") == []


def test_an_exclusion_without_a_reason_is_refused() -> None:
    with pytest.raises(ValidationError, match="excluding E1 needs a reason"):
        evidence_decisions(RECORDS, ["E3"], "")
