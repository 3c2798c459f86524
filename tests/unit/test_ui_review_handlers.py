"""The review panel's handlers (:class:`deepcritical.ui.review_handlers.ReviewHandlers`) on
runs recorded offline (``llm none``, a fixed source of metformin records): the caller's
waiting run fills the plan card; an invalid edit is refused with its message and stores
nothing; a valid one is stored with its changes and names the run to continue; another
owner's run is neither shown nor decided; the evidence review's decisions and *Cancel*."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gradio as gr
import pytest

from deepcritical.api import research, run_reviews
from deepcritical.config import Settings
from deepcritical.testing.embedders import HashingEmbedder
from deepcritical.ui.auth import Access
from deepcritical.ui.downloads import DownloadShelf
from deepcritical.ui.live_run import RunStreams
from deepcritical.ui.progress_view import ProgressView
from deepcritical.ui.review_handlers import ReviewHandlers, Shown
from deepcritical.ui.review_panel import ReviewPanel, review_panel
from tests.state.revision_run import QUESTION, MetforminSource


def _settings(tmp_path: Path) -> Settings:
    return Settings(
        llm="none", sources=["pubmed"], data_dir=tmp_path, max_rounds=1, max_full_texts=0
    )


async def _waiting(
    tmp_path: Path, owner: str | None, *, review_plan: bool = False, review_evidence: bool = False
) -> str:
    events = [
        e
        async for e in research(
            QUESTION,
            _settings(tmp_path),
            sources=[MetforminSource()],
            embedder=HashingEmbedder(),
            owner=owner,
            review_plan=review_plan,
            review_evidence=review_evidence,
        )
    ]
    assert events[-1].type in {"plan_ready", "evidence_ready"}
    run_id = events[0].run_id
    assert run_id is not None
    return run_id


@pytest.fixture
def handlers(tmp_path: Path) -> ReviewHandlers:
    with gr.Blocks():
        panel = review_panel()
    streams = RunStreams(DownloadShelf(tmp_path / "downloads"))
    return ReviewHandlers(_settings(tmp_path), Access(), None, streams, panel)


def _values(panel: ReviewPanel, shown: tuple[Any, ...]) -> dict[Any, Any]:
    """The plan card's values as the page would send them back after ``shown``."""
    fields = dict(zip(panel.outputs(), shown, strict=True))
    out: dict[Any, Any] = {panel.waiting: fields[panel.waiting]}
    for component in panel.plan_inputs():
        value = fields[component]
        out[component] = value.get("value") if isinstance(value, dict) else value
    return out


async def test_the_plan_card_refuses_a_bad_edit_and_stores_a_good_one(
    tmp_path: Path, handlers: ReviewHandlers
) -> None:
    run_id = await _waiting(tmp_path, None, review_plan=True)
    view = ProgressView(run_id=run_id, finished=True, awaiting="plan")
    shown = await handlers.review_after_run(view)
    panel = handlers.panel
    assert shown[0]["visible"] is True  # the plan card
    assert shown[1]["visible"] is False
    values = _values(panel, shown)
    assert "waits for your review of its plan" in shown[2]
    assert values[panel.queries["pubmed"]]  # the queries PubMed was to receive

    values[panel.checklist] = ""
    line, *_, decided = await handlers.start_search(values)
    assert "at least one checklist item" in line
    assert decided == ""
    (review,) = await run_reviews(run_id, _settings(tmp_path))
    assert review.status == "waiting"  # nothing stored

    keep = shown[panel.outputs().index(panel.checklist)].splitlines()[:1]
    values[panel.checklist] = "\n".join(keep)
    values[panel.published_from] = "2015"
    line, plan_box, _, decided = await handlers.start_search(values)
    assert decided == run_id
    assert plan_box["visible"] is False
    (review,) = await run_reviews(run_id, _settings(tmp_path))
    assert review.status == "approved"
    assert any(c.startswith("removed checklist item") for c in review.changes)
    assert any(c.startswith("search filters: Published: 2015-01-01") for c in review.changes)


async def test_another_owner_s_run_is_neither_shown_nor_decided(
    tmp_path: Path, handlers: ReviewHandlers
) -> None:
    run_id = await _waiting(tmp_path, "user:bob", review_plan=True)
    shown = await handlers.review_after_open(run_id)
    assert shown[0]["visible"] is False  # the caller is the local user, not bob
    (review,) = await run_reviews(run_id, _settings(tmp_path), owner="user:bob")
    forged = Shown(run_id, review)
    line, *_, decided = await handlers.write_report(forged, [], "")
    assert "no run" in line.lower() or "not found" in line.lower()
    assert decided == ""
    cancelled = await handlers.cancel(forged)
    assert "dc-error" in cancelled[0]
    (review,) = await run_reviews(run_id, _settings(tmp_path), owner="user:bob")
    assert review.status == "waiting"


async def test_the_evidence_review_stores_the_toggles_and_cancel_ends_the_run(
    tmp_path: Path, handlers: ReviewHandlers
) -> None:
    run_id = await _waiting(tmp_path, None, review_evidence=True)
    shown = await handlers.review_after_open(run_id)
    panel = handlers.panel
    assert shown[1]["visible"] is True  # the evidence review
    waiting: Shown = shown[3]
    included = [r.id for r in waiting.review.records if r.included]
    assert included
    line, *_, decided = await handlers.write_report(waiting, included[1:], "")
    assert "needs a reason" in line
    assert decided == ""
    line, *_, decided = await handlers.more_search(waiting, included[1:], "wrong population")
    assert decided == run_id
    (review,) = await run_reviews(run_id, _settings(tmp_path))
    assert review.more_search
    assert review.changes == [f"excluded {included[0]} (wrong population)"]
    assert "records included by screening" in shown[panel.outputs().index(panel.records)]

    other = await _waiting(tmp_path, None, review_plan=True)
    again = await handlers.review_after_open(other)
    note, plan_box, _, state = await handlers.cancel(again[3])
    assert "was cancelled at its plan review" in note
    assert plan_box["visible"] is False
    assert state is None
    (review,) = await run_reviews(other, _settings(tmp_path))
    assert review.status == "cancelled"
