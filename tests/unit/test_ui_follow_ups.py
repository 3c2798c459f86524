"""Follow-up questions in the web app (issue 32 item 4), without a server: the panel under the
report answers a question about the finished run shown through ``api.ask`` (a real SQLite run
store, the hashing embedder), lists the run's follow-ups newest first with citations linked
to each answer's own references, shows bad input as a line (never a traceback), stays closed
while no finished run is shown, and History's open lists the stored follow-ups under the
report and opens the panel on the run; the caller's owner reaches ``ask``."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import Any

import gradio as gr
import lxml.html
import pytest
from pydantic import SecretStr

from deepcritical.api import ask
from deepcritical.config import Settings
from deepcritical.models import Citation, FollowUp, Reference
from deepcritical.state import RunStore
from deepcritical.testing.embedders import HashingEmbedder
from deepcritical.ui.app import build_app
from deepcritical.ui.auth import Access
from deepcritical.ui.citation_links import link_citations
from deepcritical.ui.follow_up_panel import (
    NO_RUN_NOTE,
    WEB_SUGGESTION,
    follow_ups_html,
)
from deepcritical.ui.progress_view import ProgressView, fail, stop
from deepcritical.writing.follow_up import NOT_ANSWERED
from tests.state.test_ask_api import QUESTION, store_run
from tests.unit.test_follow_up_answer import RUN
from tests.unit.test_ui_app import handler
from tests.unit.test_ui_jobs import FakeJobs
from tests.unit.ui_fixtures import (
    HOSTILE,
    OPEN_FOLLOW_UPS,
    PANEL_ANSWERS,
    PANEL_ASK,
    PANEL_RUN_ID,
    FakeResearch,
    run_result,
)

UNRELATED = "What is the boiling point of tungsten?"
KEY = "sk-follow-up-secret-123"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, sources=["local"], _env_file=None)


@pytest.fixture
def run_id(settings: Settings) -> str:
    """A finished run of the local user (no sign-in), stored with its result."""
    store = RunStore.open(settings)
    try:
        return store_run(store, RUN)
    finally:
        store.close()


def app(settings: Settings, **kwargs: Any) -> gr.Blocks:
    return build_app(
        settings,
        research_fn=FakeResearch([]),
        ask_fn=partial(ask, embedder=HashingEmbedder()),
        **kwargs,
    )


def cite_targets(fragment: str) -> tuple[list[str], set[str]]:
    """The ``href`` of every citation link of ``fragment`` and the ids of its references."""
    root = lxml.html.fragment_fromstring(fragment, create_parent="div")
    hrefs = [str(a.get("href")) for a in root.iter("a") if "dc-cite" in (a.get("class") or "")]
    ids = {str(li.get("id")) for li in root.iter("li") if li.get("id")}
    return hrefs, ids


async def collect(stream: AsyncIterator[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [out async for out in stream]


async def test_ask_answers_with_cited_answers_listed_newest_first(
    settings: Settings, run_id: str
) -> None:
    demo = app(settings)
    box, status, answers = await handler(demo, "ask")(run_id, QUESTION)
    assert box == ""  # the box is cleared for the next question
    assert "Answered from this run's evidence" in status
    hrefs, ids = cite_targets(answers)
    assert hrefs
    assert all(h.startswith("#dc-fu-1-ref-") for h in hrefs), hrefs
    assert {h[1:] for h in hrefs} <= ids  # every [n] reaches a reference of this answer
    assert "PMID: 111" in answers
    assert not re.search(r'id="dc-ref-\d', answers)  # never the report's ids

    box, status, answers = await handler(demo, "ask")(run_id, UNRELATED)
    assert "does not answer it" in status
    assert answers.index("Follow-up 2") < answers.index("Follow-up 1")  # newest first
    assert NOT_ANSWERED in answers
    assert WEB_SUGGESTION in answers
    assert "deepcritical research" not in answers  # the page suggests the page's own way
    store = RunStore.open(settings)
    try:
        kept = store.follow_ups(run_id)
    finally:
        store.close()
    assert [f.question for f in kept] == [QUESTION, UNRELATED]
    assert [f.answered for f in kept] == [True, False]


async def test_bad_input_shows_a_line_and_keeps_the_question(
    settings: Settings, run_id: str
) -> None:
    store = RunStore.open(settings)
    try:
        failed = store_run(store, None, "failed", "boom")
    finally:
        store.close()
    ask_handler = handler(app(settings), "ask")
    for rid, question, expected in [
        (run_id, "   ", "empty"),
        ("f" * 32, QUESTION, "no run"),
        (failed, QUESTION, "no report"),
        (None, QUESTION, "open once a run has finished"),
    ]:
        box, status, answers = await ask_handler(rid, question)
        assert isinstance(box, dict)
        assert box.get("__type__") == "update"  # left as typed
        assert 'class="dc-error"' in status
        assert expected in status.lower(), status
        assert "Traceback" not in status
        assert isinstance(answers, dict)  # the list is left as it was


async def test_a_failing_ask_shows_why_without_the_servers_key(
    settings: Settings, run_id: str
) -> None:
    keyed = settings.model_copy(update={"openai_api_key": SecretStr(KEY)})

    async def broken(*args: Any, **kwargs: Any) -> FollowUp:
        raise RuntimeError(f"database down (key {KEY})")

    demo = build_app(keyed, research_fn=FakeResearch([]), ask_fn=broken)
    _, status, _ = await handler(demo, "ask")(run_id, QUESTION)
    assert "could not be answered" in status
    assert "database down" in status
    assert KEY not in status
    assert "RuntimeError" not in status


async def test_the_callers_owner_reaches_ask(settings: Settings) -> None:
    owners: list[str | None] = []

    async def recording(run_id: str, question: str, s: Settings, *, owner: str | None) -> Any:
        owners.append(owner)
        return FollowUp(question=question, answer=NOT_ANSWERED, answered=False)

    passwords = Access("password", {"alice": SecretStr("a")})
    demo = build_app(settings, research_fn=FakeResearch([]), ask_fn=recording, access=passwords)
    await handler(demo, "ask")("r1", QUESTION, gr.Request(username="alice"), None)
    assert owners == ["user:alice"]
    _, status, _ = await handler(demo, "ask")("r1", QUESTION, None, None)
    assert "sign in" in status.lower()
    assert owners == ["user:alice"]  # refused before asking


async def test_the_panel_opens_only_on_a_finished_run_with_its_report(
    settings: Settings, run_id: str
) -> None:
    demo = app(settings)
    after_run = handler(demo, "after_run")
    await handler(demo, "ask")(run_id, QUESTION)
    done = ProgressView(run_id=run_id, finished=True, stage="Report ready")
    rid, note, box, button, _, answers = await after_run(done)
    assert rid == run_id
    assert run_id in note
    assert box["interactive"] is True
    assert button["interactive"] is True
    assert "Follow-up 1" in answers  # a resumed run's earlier follow-ups are listed
    for view in [
        None,
        ProgressView(run_id=run_id, stage="Searching"),  # still running
        fail(ProgressView(run_id=run_id), "boom"),
        stop(ProgressView(run_id=run_id)),
        ProgressView(finished=True),  # not recorded: no run id
        ProgressView(run_id="f" * 32, finished=True),  # unknown
    ]:
        rid, note, box, button, _, answers = await after_run(view)
        assert rid is None
        assert note == NO_RUN_NOTE
        assert box["interactive"] is False
        assert button["interactive"] is False
        assert answers == ""
    closed = handler(demo, "closed_panel")()  # a run starts: the panel closes at once
    assert closed[0] is None
    assert closed[3]["interactive"] is False


async def test_history_lists_the_stored_follow_ups_and_opens_the_panel(
    settings: Settings, run_id: str
) -> None:
    demo = app(settings)
    await handler(demo, "ask")(run_id, QUESTION)
    await handler(demo, "ask")(run_id, UNRELATED)
    (out,) = await collect(handler(demo, "open_run")(run_id[:8]))
    listed = out[OPEN_FOLLOW_UPS]
    assert listed.index(UNRELATED) < listed.index(QUESTION)
    hrefs, ids = cite_targets(listed)
    assert hrefs
    assert all(h.startswith("#dc-hfu-1-ref-") for h in hrefs)
    assert {h[1:] for h in hrefs} <= ids
    assert out[PANEL_RUN_ID] == run_id
    assert out[PANEL_ASK]["interactive"] is True
    assert "#dc-fu-1-ref-" in out[PANEL_ANSWERS]  # the Report tab's copy has its own ids


def test_source_text_in_a_follow_up_is_shown_as_text() -> None:
    hostile = FollowUp(
        question=f"Why {HOSTILE}?",
        answer=f"Metformin lowers risk {HOSTILE} [E1].",
        answered=True,
        references=[
            Reference(
                evidence_id="E1",
                citation=Citation(source="local", id="1", title=f"Title {HOSTILE}"),
            )
        ],
    )
    shown = follow_ups_html([hostile], "dc-fu-")
    root = lxml.html.fragment_fromstring(shown, create_parent="div")
    assert not [el.tag for el in root.iter() if el.tag in {"script", "img"}]
    assert not [a for el in root.iter() for a in el.attrib if a.startswith("on")]
    assert "&lt;script&gt;" in shown  # shown as text
    hrefs, ids = cite_targets(shown)
    assert hrefs == ["#dc-fu-1-ref-1"]
    assert ids == {"dc-fu-1-ref-1"}


def test_a_reference_prefix_must_be_one_the_allow_list_names() -> None:
    result = run_result()
    with pytest.raises(ValueError, match="prefix"):
        link_citations("<p>x [1]</p>", result, ref_prefix='x" onclick="y')
    linked = link_citations("<p>x [1]</p>", result, ref_prefix="dc-q-")
    assert 'href="#dc-q-1"' in linked


async def test_jobs_mode_asks_the_run_store_too(settings: Settings, run_id: str) -> None:
    """In jobs mode runs execute in workers; a follow-up question still reads the run store
    in the app's process (no job is submitted)."""
    jobs = FakeJobs([])
    demo = app(settings.model_copy(update={"jobs": True}), jobs=jobs)
    _, status, answers = await handler(demo, "ask")(run_id, QUESTION)
    assert "Answered from this run's evidence" in status
    assert "#dc-fu-1-ref-1" in answers
    assert jobs.submitted == []
    assert jobs.followed == []
