"""Report versions in the web app (issue 32), without a server: *Revise* under the report
makes a version through ``api.revise`` (a real SQLite run store, the hashing embedder) and
shows it, chooses it in the picker, offers its markdown and JSON on the download shelf to the
run's owner only and compares it with the one before, section by section; the picker
switches the report shown; bad input is one line (what works offline included); the panel
stays closed while no finished run is shown; the caller's owner reaches ``revise``."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import gradio as gr
import lxml.html
import pytest
from pydantic import SecretStr

from deepcritical.api import revise
from deepcritical.config import Settings
from deepcritical.models import ReportVersion, RunResult
from deepcritical.state import RunStore
from deepcritical.testing.embedders import HashingEmbedder
from deepcritical.ui.app import build_app
from deepcritical.ui.auth import Access
from deepcritical.ui.downloads import DownloadShelf
from deepcritical.ui.versions_panel import NO_RUN_NOTE
from tests.state.revision_run import finished_run
from tests.state.test_ask_api import store_run
from tests.unit.test_ui_app import handler, shelved
from tests.unit.ui_fixtures import FakeResearch

KEY = "sk-versions-secret-456"
REPORT, STATUS, BOX, PICKER, FILES, DIFF_FROM, DIFF_TO, DIFF = range(8)


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    return finished_run(tmp_path_factory.mktemp("versions-run"))


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, sources=["local"], _env_file=None)


@pytest.fixture
def run_id(settings: Settings, result: RunResult) -> str:
    """A finished run of the local user (no sign-in), stored with its result."""
    store = RunStore.open(settings)
    try:
        return store_run(store, result)
    finally:
        store.close()


@pytest.fixture
def shelf(tmp_path: Path) -> DownloadShelf:
    return DownloadShelf(tmp_path / "shelf")


def app(settings: Settings, shelf: DownloadShelf, **kwargs: Any) -> gr.Blocks:
    return build_app(
        settings,
        research_fn=FakeResearch([]),
        downloads=shelf,
        revise_fn=partial(revise, embedder=HashingEmbedder()),
        **kwargs,
    )


def sections(diff: str) -> dict[str, str]:
    root = lxml.html.fragment_fromstring(diff, create_parent="div")
    return {str(s.get("data-section")): str(s.get("data-status")) for s in root.iter("section")}


async def test_revise_shows_chooses_offers_and_compares_the_new_version(
    settings: Settings, shelf: DownloadShelf, run_id: str, result: RunResult
) -> None:
    demo = app(settings, shelf)
    out = await handler(demo, "revise")(run_id, "shorter")
    assert "Version 2 made (shorter)" in out[STATUS]
    assert out[BOX] == ""
    assert out[PICKER]["value"] == 2
    assert [label for label, _ in out[PICKER]["choices"]] == [
        "Version 1 (original)",
        "Version 2: shorter",
    ]
    assert (out[DIFF_FROM]["value"], out[DIFF_TO]["value"]) == (1, 2)
    assert 'class="dc-cite"' in out[REPORT]  # rendered as the report is, citations linked
    assert "This is version 2 of the report" in out[REPORT]  # the report area shows it
    md, js = shelved(shelf, out[FILES])
    assert md.name.endswith("-version-2.md")
    shorter = md.read_text(encoding="utf-8")
    assert len(shorter) < len(result.report.to_markdown())
    assert json.loads(js.read_text(encoding="utf-8"))["report"]["title"] == result.report.title
    assert shelf.find(md.parent.name, md.name, "anon:someone-else") is None  # owner only
    marked = sections(out[DIFF])
    assert marked["Methodology"] == "changed"  # it says which version this is
    assert marked["Conclusion"] == "unchanged"
    assert "Version 1 → version 2" in out[DIFF]

    report, status, files = await handler(demo, "pick_version")(run_id, 1)
    assert "Showing Version 1 (original)" in status
    (original, _) = shelved(shelf, files)
    assert original.read_text(encoding="utf-8") == result.report.to_markdown()
    assert original.read_text(encoding="utf-8") != shorter
    assert report != out[REPORT]

    status, diff = await handler(demo, "compare_versions")(run_id, 2, 2)
    assert status == ""
    assert set(sections(diff).values()) == {"unchanged"}


async def test_bad_input_is_one_line_and_changes_nothing_else(
    settings: Settings, shelf: DownloadShelf, run_id: str
) -> None:
    revise_handler = handler(app(settings, shelf), "revise")
    for rid, instruction, expected in [
        (run_id, "make it sparkle", "shorter"),  # what works offline is listed
        (run_id, "   ", "empty"),
        ("f" * 32, "shorter", "no run"),
        (None, "shorter", "open once a run has finished"),
    ]:
        out = await revise_handler(rid, instruction)
        assert 'class="dc-error"' in out[STATUS]
        assert expected in out[STATUS].lower(), out[STATUS]
        assert "Traceback" not in out[STATUS]
        assert all(isinstance(v, dict) for i, v in enumerate(out) if i != STATUS)  # skipped
    store = RunStore.open(settings)
    try:
        assert len(store.report_versions(run_id)) == 1  # nothing was kept
    finally:
        store.close()
    _, status, _ = await handler(app(settings, shelf), "pick_version")(run_id, 7)
    assert 'class="dc-error"' in status
    assert "7" in status


async def test_a_failing_revision_shows_why_without_the_servers_key(
    settings: Settings, shelf: DownloadShelf, run_id: str
) -> None:
    keyed = settings.model_copy(update={"openai_api_key": SecretStr(KEY)})

    async def broken(*args: Any, **kwargs: Any) -> ReportVersion:
        raise RuntimeError(f"database down (key {KEY})")

    demo = build_app(keyed, research_fn=FakeResearch([]), downloads=shelf, revise_fn=broken)
    out = await handler(demo, "revise")(run_id, "shorter")
    assert "could not be revised: database down" in out[STATUS]
    assert KEY not in out[STATUS]
    assert "RuntimeError" not in out[STATUS]


async def test_the_callers_owner_reaches_revise(settings: Settings, shelf: DownloadShelf) -> None:
    owners: list[str | None] = []

    async def recording(run_id: str, instruction: str, s: Settings, *, owner: str | None) -> Any:
        owners.append(owner)
        raise RuntimeError("stop here")

    passwords = Access("password", {"alice": SecretStr("a")})
    demo = build_app(settings, research_fn=FakeResearch([]), revise_fn=recording, access=passwords)
    await handler(demo, "revise")("r1", "shorter", gr.Request(username="alice"), None)
    assert owners == ["user:alice"]
    out = await handler(demo, "revise")("r1", "shorter", None, None)
    assert "sign in" in out[STATUS].lower()
    assert owners == ["user:alice"]  # refused before revising


async def test_the_panel_opens_only_on_a_finished_run_with_its_report(
    settings: Settings, shelf: DownloadShelf, run_id: str
) -> None:
    demo = app(settings, shelf)
    shown = handler(demo, "versions_shown")
    await handler(demo, "revise")(run_id, "shorter")
    rid, note, box, button, _, picker, files, old, new, compare, diff = await shown(run_id)
    assert rid == run_id
    assert run_id in note
    assert box["interactive"] is True
    assert button["interactive"] is True
    assert picker["value"] == 1  # the report shown is the run's own
    assert len(picker["choices"]) == 2  # a revision made earlier is listed
    assert (old["value"], new["value"]) == (1, 2)
    assert compare["interactive"] is True
    assert diff == ""  # compared on request
    assert shelved(shelf, files)[0].name.endswith("-version-1.md")
    store = RunStore.open(settings)
    try:
        failed = store_run(store, None, "failed", "boom")
    finally:
        store.close()
    for closed in [None, "", failed, "f" * 32]:
        values = await shown(closed)
        assert values[0] is None
        assert values[1] == NO_RUN_NOTE
        assert values[3]["interactive"] is False
        assert values[5]["interactive"] is False
    assert handler(demo, "closed_versions")()[0] is None  # a run starts: it closes at once
