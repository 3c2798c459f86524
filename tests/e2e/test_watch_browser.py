"""Living reviews in the web app (issue 33, item 5), in headless Chromium: a run researched
in the browser is kept up to date from the Watches tab (its run box holds the finished run
the page shows); two relevant records are added to the
local corpus; *Update now* says what is new and writes version 2; the list shows the badge
of unseen changes; *Show what changed* opens the "What's new" section and the diff by
section, and the badge clears. The watch's Atom feed is served to this browser and refused to
another (a 404 for another visitor)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.e2e.conftest import (
    CHROMIUM_ARGS,
    AppServer,
    cli_command,
    running_server,
    server_env,
)

pytestmark = pytest.mark.slow

QUESTION = "Does metformin lower cancer incidence in people with type 2 diabetes?"
RUN_TIMEOUT_MS = 180_000
NEW_RECORDS = [
    {
        "pmid": "90000101",
        "year": 2026,
        "title": "Metformin and cancer incidence in type 2 diabetes: a nationwide cohort",
        "abstract_sections": [
            {
                "label": "RESULTS",
                "text": "Metformin users with type 2 diabetes had a lower cancer incidence "
                "than users of other glucose-lowering drugs (hazard ratio 0.71).",
            }
        ],
    },
    {
        "pmid": "90000102",
        "year": 2026,
        "title": "Long-term metformin use and cancer incidence in diabetes",
        "abstract_sections": [
            {
                "label": "RESULTS",
                "text": "Long-term metformin use was associated with a lower cancer incidence "
                "in people with type 2 diabetes.",
            }
        ],
    },
]


@pytest.fixture(scope="module")
def watch_server(app_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """An app server of its own (its corpus grows during the test)."""
    with running_server(app_data, tmp_path_factory.mktemp("app-watch"), concurrency=2) as srv:
        yield srv


@pytest.fixture(scope="module")
def browser(chromium: Path) -> Iterator[Browser]:
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def open_app(page: Page, server: AppServer) -> None:
    page.goto(server.url + "/", wait_until="domcontentloaded")
    page.locator("#dc-question textarea").wait_for(state="visible", timeout=60_000)


def add_records(server: AppServer, root: Path) -> None:
    path = root / "new.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in NEW_RECORDS), encoding="utf-8")
    added = subprocess.run(
        [*cli_command(), "--data-dir", str(server.data_dir), "corpus", "add", str(path)],
        env=server_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert added.returncode == 0, added.stderr[-2000:]


def test_keep_a_review_up_to_date_update_badge_and_diff(
    browser: Browser, watch_server: AppServer, tmp_path: Path, artifacts: Path
) -> None:
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = ctx.new_page()
        open_app(page, watch_server)
        page.locator("#dc-question textarea").fill(QUESTION)
        page.locator("#dc-run").click()
        page.locator("#dc-report h1").wait_for(state="visible", timeout=RUN_TIMEOUT_MS)
        run_id = page.locator("#dc-progress .dc-run-id code").inner_text().strip()
        assert run_id

        page.get_by_role("tab", name="Watches").click()
        # the finished run the page shows is the one "Keep this review up to date" acts on
        box = page.locator("#dc-watch-run input, #dc-watch-run textarea").first
        expect(box).to_have_value(run_id, timeout=30_000)
        page.locator("#dc-watch-keep").click()
        status = page.locator("#dc-watch-status")
        status.get_by_text("Watching run").wait_for(timeout=30_000)
        watch_id = (
            page.locator("#dc-watch-id input, #dc-watch-id textarea").first.input_value().strip()
        )
        assert len(watch_id) == 32
        assert QUESTION in page.locator("#dc-watches").inner_text()

        add_records(watch_server, tmp_path)
        page.locator("#dc-watch-update").click()
        status.get_by_text("What's new since").wait_for(timeout=RUN_TIMEOUT_MS)
        assert "2 new included studies" in status.inner_text()
        assert "Version 2 written" in status.inner_text()
        badge = page.locator("#dc-watches .dc-badge")
        badge.wait_for(timeout=30_000)
        assert badge.inner_text().strip() == "1 new"
        page.screenshot(path=str(artifacts / "watches.png"))

        page.locator("#dc-watch-changes").click()
        whats_new = page.locator("#dc-watch-whats-new")
        whats_new.get_by_text("Metformin and cancer incidence in type 2 diabetes").wait_for(
            timeout=30_000
        )
        assert "What's new since" in whats_new.inner_text()
        diff = page.locator("#dc-watch-diff")
        assert "Version 1 -> version 2" in diff.inner_text()
        assert diff.locator("section").count() > 0
        page.locator("#dc-watches").get_by_text(QUESTION).wait_for()
        assert page.locator("#dc-watches .dc-badge").count() == 0  # seen: the badge clears

        feed = page.request.get(f"{watch_server.url}/dc/feeds/watch/{watch_id}.atom")
        assert feed.status == 200
        assert "What's new since" in feed.text()
        other = browser.new_context()
        try:
            stranger = other.new_page()
            open_app(stranger, watch_server)  # another visitor, with a cookie of its own
            refused = stranger.request.get(f"{watch_server.url}/dc/feeds/watch/{watch_id}.atom")
            assert refused.status == 404
        finally:
            other.close()
    finally:
        ctx.close()
