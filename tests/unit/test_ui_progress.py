"""The fold of run events into the progress view (no Gradio)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from deepcritical.events import EvidenceReadyData, PlanReadyData, ResearchEvent, SearchingData
from deepcritical.models import ChecklistItem, ResearchPlan
from deepcritical.ui.progress_view import MAX_LOG, ProgressView, fail, fold
from deepcritical.ui.render import progress_html
from deepcritical.ui.stop_resume import resumable
from tests.unit.ui_fixtures import run_result, script


def fold_all(events: list[ResearchEvent]) -> list[ProgressView]:
    views = [ProgressView()]
    for e in events:
        views.append(fold(views[-1], e))
    return views


def test_fold_tracks_stage_round_sources_and_coverage() -> None:
    views = fold_all(script(run_result()))
    stages = [v.stage for v in views]
    assert stages == [
        "Waiting",
        "Starting",
        "Planning",
        "Searching",
        "Screening evidence",
        "Report ready",
    ]
    assert views[1].run_id == "run-42"
    assert views[2].checklist == {"incidence": "unsatisfied", "trials": "unsatisfied"}
    searching = views[3]
    assert searching.round == 1
    assert searching.queries_per_source == {"local": 2, "pubmed": 2}
    screened = views[4]
    assert screened.hits_per_source == {"local": 2}
    assert screened.sources_found == 2
    assert screened.coverage == 0.5
    assert screened.checklist["incidence"] == "satisfied"
    done = views[-1]
    assert done.finished
    assert not done.failed
    # the final plan of the result wins (one satisfied of two items)
    assert done.coverage == 0.5
    assert done.checklist == {
        "incidence": "satisfied",
        "trials": "unsatisfied",
    }


def test_fold_does_not_modify_its_input() -> None:
    view = ProgressView()
    after = fold(
        view,
        ResearchEvent(
            type="searching", round=1, message="r", data={"queries": ["q"], "sources": ["local"]}
        ),
    )
    assert view.queries_per_source == {}
    assert view.stage == "Waiting"
    assert after.queries_per_source == {"local": 1}


def test_queries_accumulate_over_rounds() -> None:
    view = ProgressView()
    for r in (1, 2):
        view = fold(
            view,
            ResearchEvent(
                type="searching",
                round=r,
                message="r",
                data={"queries": ["a", "b", "c"], "sources": ["pubmed"]},
            ),
        )
    assert view.queries_per_source == {"pubmed": 6}
    assert view.round == 2


def test_hypotheses_of_a_round_replace_the_previous_set() -> None:
    def hyp(r: int, hid: str, text: str, sup: int) -> ResearchEvent:
        return ResearchEvent(
            type="hypothesis",
            round=r,
            message=text,
            data={
                "id": hid,
                "statement": text,
                "confidence": 0.5,
                "supporting_evidence_ids": [f"E{i}" for i in range(sup)],
                "contradicting_evidence_ids": ["E9"],
            },
        )

    view = ProgressView()
    for e in [hyp(1, "H1", "first", 1), hyp(1, "H2", "second", 2)]:
        view = fold(view, e)
    assert [(h.id, h.supporting, h.contradicting) for h in view.hypotheses] == [
        ("H1", 1, 1),
        ("H2", 2, 1),
    ]
    view = fold(view, hyp(2, "H1", "revised", 3))
    assert [(h.statement, h.supporting) for h in view.hypotheses] == [("revised", 3)]


def test_error_event_and_outside_failure() -> None:
    view = fold(ProgressView(), ResearchEvent(type="error", message="planning failed"))
    assert view.failed
    assert view.finished
    assert view.error == "planning failed"
    assert view.stage == "Failed"
    stopped = fail(ProgressView(), "Stopped")
    assert stopped.failed
    assert stopped.error == "Stopped"


def test_malformed_or_renamed_data_is_refused_where_the_event_is_made() -> None:
    """Typed event data: a wrong value or a misspelt field fails when the event is built
    (and when a stored one is read back), never silently in the view."""
    with pytest.raises(ValidationError):
        ResearchEvent(
            type="evidence_added", message="x", data={"per_source": {"local": "many"}, "total": "?"}
        )
    with pytest.raises(ValidationError, match="totl"):
        ResearchEvent(type="evidence_added", message="x", data={"totl": 2})
    with pytest.raises(ValidationError, match="cannot carry"):
        ResearchEvent(type="warning", message="x", data=SearchingData(queries=["q"]))


def test_the_log_is_bounded() -> None:
    view = ProgressView()
    for i in range(MAX_LOG + 5):
        view = fold(view, ResearchEvent(type="warning", message=f"w{i}"))
    assert len(view.log) == MAX_LOG
    assert view.log[-1] == f"w{MAX_LOG + 4}"
    assert len(view.warnings) == MAX_LOG


def test_the_counters_say_what_they_count() -> None:
    """Records found by the searches → unique records → those screening kept; the final
    count of the kept ones comes from the result's evidence."""
    from deepcritical.ui.render import progress_html

    views = fold_all(script(run_result()))
    screened = views[4]
    assert (sum(screened.hits_per_source.values()), screened.sources_found) == (2, 2)
    assert screened.on_topic == 1
    line = " ".join(progress_html(screened).replace("<", " <").split())
    assert "Records:" in line
    assert "found by the searches" in line
    assert "unique" in line
    assert "on topic" in line
    assert "Sources found" not in line  # the old count that mixed excluded records in
    done = views[-1]
    result = run_result()
    off_topic = sum(
        e.screening is not None and e.screening.value == "off_topic" for e in result.evidence
    )
    assert done.on_topic == len(result.evidence) - off_topic


def test_a_finished_run_folds_how_it_was_found_under_its_answer() -> None:
    """Running: the account of the run is open; report ready: it folds into a closed "How
    this was found" panel (stage and run id stay visible); stopped or failed: it stays
    open, next to what went wrong."""
    from deepcritical.ui.progress_view import stop
    from deepcritical.ui.render import progress_html

    views = fold_all(script(run_result()))
    running, done = views[4], views[-1]
    assert 'class="dc-how"' not in progress_html(running)
    assert "dc-log" in progress_html(running)
    shown = progress_html(done)
    closed = shown.index('<details class="dc-how"><summary>How this was found</summary>')
    assert shown.index('class="dc-stage"') < closed
    assert shown.index('class="dc-run-id"') < closed
    assert shown.index('class="dc-log"') > closed  # the log is inside the closed panel
    assert 'class="dc-how"' not in progress_html(stop(running))
    assert 'class="dc-how"' not in progress_html(fail(running, "the source failed"))


def judged(coverage: float, sufficient: bool, reason: str) -> ProgressView:
    """The view after a judge's verdict, the checklist at ``coverage``."""
    data = {"coverage": coverage, "sufficient": sufficient, "reason": reason}
    event = ResearchEvent(type="judge_assessment", round=1, message="Judge", data=data)
    return fold(ProgressView(), event)


def test_the_judge_and_the_coverage_agree_or_the_panel_says_why_not() -> None:
    """Issue 30: "Checklist coverage 100%" beside "Judge: not sufficient" with no word on
    why. The judge's verdict and reason are shown under the coverage, and when the two point
    different ways the panel says what each measures."""
    from html import escape

    from deepcritical.ui.render import COVERAGE_VS_JUDGE, progress_html

    why = escape(COVERAGE_VS_JUDGE)

    assert "Judge:" not in progress_html(ProgressView())  # no verdict yet: nothing claimed
    reason = "only 0 of the items assessed mention the question's key terms"
    full_but_weak = progress_html(judged(1.0, False, reason))
    assert "Checklist coverage:</strong> 100%" in full_but_weak
    assert "not enough evidence yet: only 0 of the items assessed mention" in full_but_weak
    assert why in full_but_weak
    sparse_but_enough = progress_html(judged(0.25, True, "two large trials agree"))
    assert "the evidence is enough: two large trials agree." in sparse_but_enough
    assert why in sparse_but_enough
    for coverage, sufficient in ((1.0, True), (0.25, False)):  # they agree: no explanation
        agreeing = progress_html(judged(coverage, sufficient, ""))
        assert "Judge:" in agreeing
        assert why not in agreeing
    assert "&lt;b&gt;" in progress_html(judged(0.5, False, "<b>x</b>"))  # escaped


def test_a_run_stopped_for_its_review_waits_and_goes_on_after_it() -> None:
    plan = ResearchPlan(
        question="q", refined_question="q?", checklist=[ChecklistItem(key="k", description="d")]
    )
    ready = ResearchEvent(type="plan_ready", message="ready", data=PlanReadyData(plan=plan))
    view = fold(ProgressView(run_id="r1"), ready)
    assert (view.finished, view.failed, view.awaiting) == (True, False, "plan")
    assert view.stage == "Waiting for the plan's review"
    assert not resumable(view)  # decided in the review panel, not by Resume
    assert "waits for your review of the plan" in progress_html(view)
    going = fold(view, ResearchEvent(type="started", message="resumed"))
    assert (going.finished, going.awaiting) == (False, "")
    evidence = ResearchEvent(type="evidence_ready", message="x", data=EvidenceReadyData())
    assert fold(going, evidence).awaiting == "evidence"
