"""The Blocks and the streaming handler, without a server: outputs per event, the session
key reaching the run only as a SecretStr, cancellation closing the run, the API surface."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
import rispy

from deepcritical.config import Settings
from deepcritical.events import ResearchEvent
from deepcritical.ui.app import build_app
from deepcritical.ui.downloads import NO_DOWNLOADS_HTML, DownloadShelf, write_downloads
from deepcritical.ui.live_run import stream_run
from tests.unit.test_ui_history import FakeStore, Record
from tests.unit.ui_fixtures import OPEN_REPORT, OPEN_STATUS, FakeResearch, run_result, script

KEY = "sk-unit-secret-999"


def handler(demo: Any, name: str) -> Any:
    """The event handler function named ``name`` of a built app."""
    found = [fn.fn for fn in demo.fns.values() if getattr(fn.fn, "__name__", "") == name]
    assert found, name
    assert found[0] is not None, name
    return found[0]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, sources=["local"], _env_file=None)


async def collect(stream: AsyncIterator[tuple[object, ...]]) -> list[tuple[object, ...]]:
    return [out async for out in stream]


def shelved(shelf: DownloadShelf, links: object, owner: str | None = None) -> list[Path]:
    """The files the Downloads links ``links`` (HTML) name, found on ``shelf`` for ``owner``."""
    found = re.findall(r'href="dc/download/([^/"]+)/([^"]+)"', str(links))
    paths = [shelf.find(token, unquote(name), owner) for token, name in found]
    assert all(p is not None for p in paths), found
    return [p for p in paths if p is not None]


async def test_stream_run_streams_progress_then_the_result(
    settings: Settings, tmp_path: Path
) -> None:
    fake = FakeResearch(script(run_result()))
    shelf = DownloadShelf(tmp_path / "dl")
    outs = await collect(stream_run(fake("Q?", settings), settings, shelf, "anon:v1"))
    assert len(outs) == 1 + 4 + 1  # initial, one per event before done, final
    progresses = [str(o[1]) for o in outs]
    assert "Waiting" in progresses[0]
    assert "Planning" in progresses[2]
    assert "Report ready" in progresses[-1]
    assert all(len(o) == 10 for o in outs)
    notice, _, report, evidence, hypotheses, files, card, years, designs, flow = outs[-1]
    assert "extractive mode" in str(notice)
    assert "<h1>Metformin review</h1>" in str(report)
    assert "&lt;script&gt;" in str(report)
    assert "<script" not in str(report)
    assert str(evidence).count('<tr class="dc-evidence-row') == 2
    assert "dc-evidence-data" in str(evidence)  # the rows, for sorting and filtering
    assert 'href="#dc-ref-1"' in str(report)  # citations link to their reference
    assert "supporting" in str(hypotheses)
    paths = shelved(shelf, files, "anon:v1")
    assert ["".join(p.suffixes) for p in paths] == [
        ".md",
        ".json",
        ".html",
        ".ris",
        ".bib",
        ".csl.json",
    ]
    for label in ("Markdown (.md)", "JSON (.json)", "HTML (.html)", "RIS (.ris)", "BibTeX (.bib)"):
        assert f">{label}</a>" in str(files)
    markdown = await asyncio.to_thread(paths[0].read_text, encoding="utf-8")
    assert markdown.startswith("# Metformin review")
    # the files are the run's owner's only: another visitor, or the shared history, finds none
    token, name = paths[0].parent.name, paths[0].name
    assert shelf.find(token, name, "anon:v2") is None
    assert shelf.find(token, name, None) is None
    assert shelf.find(token, "../" + name, "anon:v1") is None
    assert all(o[5] == NO_DOWNLOADS_HTML for o in outs[:-1])
    # the answer card, the two charts and the flow diagram come with the report only
    for o in outs[:-1]:
        assert (o[6], o[9]) == ("", "")
        # no empty chart box: the charts stay hidden until they have data
        assert o[7] == o[8] == {"__type__": "update", "value": None, "visible": False}
    assert 'id="dc-answer"' in str(card)
    assert "Does metformin lower cancer risk?" in str(card)
    assert "<script" not in str(card)
    assert years["visible"] is designs["visible"] is True  # type: ignore[index]
    assert list(years["value"]["year"]) == ["2020"]  # type: ignore[index]
    assert list(designs["value"]["records"]) == [2]  # type: ignore[index]
    assert "No flow of records was recorded" in str(flow)  # the fixture's report has none
    assert fake.closed == 1


async def test_stream_run_shows_errors(settings: Settings, tmp_path: Path) -> None:
    shelf = DownloadShelf(tmp_path)
    events = FakeResearch(script(None))("Q", settings)
    outs = await collect(stream_run(events, settings, shelf, None))
    assert "writing failed: boom" in str(outs[-1][1])
    assert outs[-1][5] == NO_DOWNLOADS_HTML
    boom = FakeResearch(script(run_result()), raise_at=1)
    outs = await collect(stream_run(boom("Q", settings), settings, shelf, None))
    assert "source exploded" in str(outs[-1][1])
    assert "RuntimeError" not in str(outs[-1][1])  # plain words, never an exception class


async def test_cancelling_the_consumer_closes_the_run(settings: Settings, tmp_path: Path) -> None:
    closed = asyncio.Event()
    started = asyncio.Event()

    async def slow() -> AsyncIterator[ResearchEvent]:
        try:
            yield ResearchEvent(type="started", message="go")
            started.set()
            await asyncio.sleep(3600)
            yield ResearchEvent(type="error", message="never")
        finally:
            closed.set()

    task = asyncio.create_task(collect(stream_run(slow(), settings, DownloadShelf(tmp_path), None)))
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert closed.is_set()


async def test_run_handler_passes_the_key_as_secret(settings: Settings) -> None:
    fake = FakeResearch(script(run_result()))
    demo = build_app(settings, research_fn=fake)
    run_fn = handler(demo, "run")
    outs = [
        o async for o in run_fn("Q?", " ctx ", "openai:gpt-4o", KEY, ["local"], 2, 10, "iterative")
    ]
    question, used, context = fake.calls[0]
    assert (question, context, used.max_rounds, used.max_sources) == ("Q?", "ctx", 2, 10)
    assert used.openai_api_key is not None
    assert used.openai_api_key.get_secret_value() == KEY
    assert settings.openai_api_key is None
    assert all(KEY not in str(o) for o in outs)
    assert "extractive mode" not in str(outs[-1][0])
    # a provider error echoing the key shows it redacted
    leaky = FakeResearch([ResearchEvent(type="error", message=f"401: bad key {KEY}")])
    demo = build_app(settings, research_fn=leaky)
    run_fn = handler(demo, "run")
    outs = [o async for o in run_fn("Q?", "", "openai:gpt-4o", KEY, [], 2, 10, "iterative")]
    assert "bad key [redacted]" in str(outs[-1][1])
    assert KEY not in str(outs)
    bad = [o async for o in run_fn("Q?", "", "bogus:x", KEY, [], 2, 10, "iterative")]
    assert "unknown model provider" in str(bad[-1][1])
    assert KEY not in str(bad)
    assert len(fake.calls) == 1
    assert len(leaky.calls) == 1


def test_api_surface(settings: Settings) -> None:
    demo = build_app(settings, research_fn=FakeResearch([]))
    public = {
        fn.api_name
        for fn in demo.fns.values()
        if fn.api_visibility == "public" and isinstance(fn.api_name, str)
    }
    assert public == {"deep_research", "ask_about_run"}
    assert demo.get_config_file()["components"]  # builds a valid config


def test_history_tab_is_always_built_and_uses_the_opener(settings: Settings) -> None:
    def labels(demo: object) -> set[str]:
        comps = demo.get_config_file()["components"]  # type: ignore[attr-defined]
        return {str(c.get("props", {}).get("label")) for c in comps}

    label = "Selected run (click a row, or type a run id and press Enter)"
    assert label in labels(build_app(settings, research_fn=FakeResearch([])))
    store = FakeStore([Record("r1", "Q1")])
    with_store = build_app(settings, research_fn=FakeResearch([]), store_opener=lambda s: store)
    assert label in labels(with_store)
    rows, ids = handler(with_store, "refresh")()
    assert rows[0][2:4] == ["r1", "Q1"]
    assert ids == ["r1"]
    assert store.closed == 1
    # the table is listed when the History tab opens (its select event), not only on Refresh
    config = with_store.get_config_file()
    tab = next(c["id"] for c in config["components"] if c["props"].get("label") == "History")
    refreshes = [
        d for d in config["dependencies"] if [tab, "select"] in [list(t) for t in d["targets"]]
    ]
    assert len(refreshes) == 1


async def test_history_row_opens_the_whole_run(settings: Settings, tmp_path: Path) -> None:
    store = FakeStore(
        [Record("r1abcdef99", "Q1"), Record("r2", "Q2", status="cancelled", report_markdown=None)]
    )
    store.results["r1abcdef99"] = run_result()
    shelf = DownloadShelf(tmp_path / "dl")
    demo = build_app(
        settings, research_fn=FakeResearch([]), store_opener=lambda s: store, downloads=shelf
    )
    outs = [o async for o in handler(demo, "open_run")("r1abcdef99")]
    assert len(outs) == 1
    (_notice, progress, report, evidence, hypotheses, files, card, *_rest) = outs[0]
    status, stored = outs[0][OPEN_STATUS], outs[0][OPEN_REPORT]
    assert "Report ready" in str(progress)
    assert "r1abcdef99" in str(progress)
    assert "<h1>Metformin review</h1>" in str(report)
    assert stored == report  # rendered as the Report tab renders it
    assert str(evidence).count("dc-evidence-row") == 2
    assert "supporting" in str(hypotheses)
    assert 'id="dc-answer"' in str(card)
    assert len(shelved(shelf, files)) == 6  # the shared history's (owner None) files
    assert "completed" in str(status)
    assert "r1abcdef99" in str(status)
    # a stopped run without a report: says so, leaves the run's panels alone
    outs = [o async for o in handler(demo, "open_run")("r2")]
    assert "No report yet: Resume continues it" in str(outs[0][OPEN_STATUS])
    assert outs[0][OPEN_REPORT] == ""
    outs = [o async for o in handler(demo, "open_run")("nope")]
    assert "no stored run" in str(outs[0][OPEN_STATUS])


def test_pick_maps_a_clicked_row_to_its_full_id(settings: Settings) -> None:
    import gradio as gr

    demo = build_app(settings, research_fn=FakeResearch([]))
    row = ["completed", "2026-01-02 03:04", "0123abcd", "Q", "", ""]
    evt = gr.SelectData(None, {"index": [0, 3], "value": "Q", "row_value": row})
    assert handler(demo, "pick")(["0123abcd9999", "ffff"], evt) == "0123abcd9999"


async def test_page_load_ticks_sources_that_can_work(tmp_path: Path) -> None:
    from deepcritical.ui.source_check import SourceCheck

    async def prober(roots: Any) -> dict[str, bool]:
        return {name: name == "pubmed" for name in roots}

    settings = Settings(data_dir=tmp_path, sources=["pubmed", "europepmc"], _env_file=None)
    demo = build_app(
        settings, research_fn=FakeResearch([]), source_check=SourceCheck(settings, prober)
    )
    ticked, note, searches = await handler(demo, "load_sources")()
    assert ticked["value"] == ["pubmed"]  # no corpus here; Europe PMC did not answer
    assert searches == "**Searches:** PubMed (change them in Settings)"
    assert "Unreachable from this server" in note
    assert "Europe PMC" in note
    assert "No local corpus" in note


def test_downloads_include_the_references_for_reference_managers_scrubbed(
    tmp_path: Path,
) -> None:
    result = run_result()
    result.report.references[1].citation.title = f"AMPK and mTOR {KEY}"
    paths = write_downloads(result, tmp_path, lambda text: text.replace(KEY, "[redacted]"))
    assert [p.name for p in paths] == [
        f"metformin-review{suffix}"
        for suffix in (".md", ".json", ".html", ".ris", ".bib", ".csl.json")
    ]
    texts = [p.read_text(encoding="utf-8") for p in paths]
    assert all(KEY not in text for text in texts)
    ris = rispy.loads(texts[3])
    assert [e["title"] for e in ris][1] == "AMPK and mTOR [redacted]"
    assert "@article{" in texts[4]
    assert json.loads(texts[5])[0]["title"].startswith("Metformin and cancer")


async def test_the_evidence_controls_re_render_the_run_table(
    settings: Settings, tmp_path: Path
) -> None:
    """Every sort and filter control sends the shown table (the run's ``evidence`` output)
    and the controls, and replaces that table; the run's table carries its rows."""
    demo = build_app(settings, research_fn=FakeResearch([]))
    run_fn = next(f for f in demo.fns.values() if getattr(f.fn, "__name__", "") == "run")
    evidence = run_fn.outputs[3]
    assert evidence.elem_id == "dc-evidence"
    rerenders = [f for f in demo.fns.values() if getattr(f.fn, "__name__", "") == "rerender_table"]
    assert len(rerenders) == 7  # sort, direction, text, design, from year, to year, scope
    for f in rerenders:
        assert f.inputs[0] is evidence
        assert list(f.outputs) == [evidence]
        assert f.api_visibility == "private"
    events = FakeResearch(script(run_result()))("Q?", settings)
    outs = await collect(stream_run(events, settings, DownloadShelf(tmp_path), None))
    shown = str(outs[-1][3])
    cited_only = handler(demo, "rerender_table")(
        shown, "Year", False, "", "all designs", 0, 0, "cited"
    )
    assert cited_only.count('<tr class="dc-evidence-row') == 2
    assert "AMPK" in handler(demo, "rerender_table")(shown, "Title", True, "ampk", "", 0, 0, "all")


async def test_history_open_of_an_unreadable_result_says_so(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deepcritical.models import RunResult
    from deepcritical.ui import history as hist

    def unreadable(store: Any, run_id: str, owner: str | None) -> Any:
        return RunResult.model_validate({"report": {"bogus": 1}})

    monkeypatch.setattr(hist, "stored_run", unreadable)
    store = FakeStore([Record("r1", "Q1")])
    demo = build_app(settings, research_fn=FakeResearch([]), store_opener=lambda s: store)
    outs = [o async for o in handler(demo, "open_run")("r1")]
    assert "could not be read" in str(outs[-1][OPEN_STATUS])
