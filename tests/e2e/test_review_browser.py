"""The review steps of the web app in headless Chromium (issue 32's Done-when): the plan is
edited on its card (a checklist item removed, a query added, a date range set) and the
report's methodology states the edited plan; a record excluded at the evidence review is
counted in the flow ("Excluded by the reviewer: 1") and is absent from the references;
invalid edits show their error and change nothing. In jobs mode a run waiting for its plan
review survives a SIGKILL of its worker and a restart of the app, is approved from a new
page and finishes on another worker (the search calls not repeated is the stub-API test's,
tests/integration/test_jobs_reviews.py).

Screenshots go to ``tests/e2e/artifacts/``.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Playwright, sync_playwright
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from tests.e2e.conftest import (
    CHROMIUM_ARGS,
    AppServer,
    SlowChatStub,
    cli_command,
    running_server,
    server_env,
    stored_run,
)
from tests.e2e.test_browser import RUN_TIMEOUT_MS, open_app, show_tab, start_run, wait_for_report

pytestmark = pytest.mark.slow

PLAN_QUESTION = "Does metformin lower cancer incidence in people with type 2 diabetes?"
EVIDENCE_QUESTION = "Is metformin linked to lower cancer mortality in type 2 diabetes?"
JOBS_QUESTION = "Does metformin reduce cancer risk in type 2 diabetes?"
ADDED_QUERY = "metformin colorectal cancer"
REVIEW_MS = RUN_TIMEOUT_MS


@pytest.fixture(scope="module")
def browser(chromium: Path) -> Iterator[Browser]:
    """Headless Chromium (Playwright's ``launch``)."""
    p: Playwright
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    ctx = browser.new_context(viewport={"width": 1280, "height": 1000})
    yield ctx
    ctx.close()


def ask_for_review(page: Page, question: str, *, plan: bool, evidence: bool) -> str:
    """Tick the review toggles asked for, start ``question``; the run's id."""
    if plan:
        page.locator("#dc-review-plan-toggle input").check()
    if evidence:
        page.locator("#dc-review-evidence-toggle input").check()
    start_run(page, question)
    run_id = page.locator("#dc-progress .dc-run-id code")
    run_id.wait_for(state="visible", timeout=60_000)
    return run_id.inner_text().strip()


def plan_card(page: Page) -> None:
    """Wait for the plan card (failing with what the progress panel shows)."""
    try:
        page.locator("#dc-review-plan").wait_for(state="visible", timeout=REVIEW_MS)
    except PlaywrightTimeoutError:
        pytest.fail(
            "no plan card; the progress panel: " + page.locator("#dc-progress").inner_text()
        )
    page.locator("#dc-review-checklist textarea").wait_for(state="visible")


def status_text(page: Page) -> str:
    return page.locator("#dc-review-status").inner_text()


def edit_and_start(page: Page) -> None:
    """On the plan card: first an empty checklist (refused, the card stays), then the
    "trials" item removed, a query added for the local corpus and 2019-2022 set; Start."""
    checklist = page.locator("#dc-review-checklist textarea")
    lines = checklist.input_value().splitlines()
    assert [line.split(":")[0] for line in lines] == ["cancer_incidence", "mechanism", "trials"]
    checklist.fill("")
    page.locator("#dc-review-start").click()
    page.wait_for_function(
        "document.querySelector('#dc-review-status').textContent.includes('checklist item')",
        timeout=30_000,
    )
    assert page.locator("#dc-review-plan").is_visible()  # nothing changed: the card stays
    checklist.fill("\n".join(line for line in lines if not line.startswith("trials:")))
    queries = page.locator("#dc-review-queries-local textarea")
    assert queries.input_value().strip()  # the corpus's queries as it receives them
    queries.fill(queries.input_value() + "\n" + ADDED_QUERY)
    page.locator("#dc-review-from textarea").fill("2019")
    page.locator("#dc-review-to textarea").fill("2022")
    page.locator("#dc-review-start").click()


def test_the_edited_plan_is_searched_and_stated_in_the_methodology(
    context: BrowserContext, app_server: AppServer, artifacts: Path
) -> None:
    page = open_app(context, app_server)
    run_id = ask_for_review(page, PLAN_QUESTION, plan=True, evidence=False)
    plan_card(page)
    assert "waits for your review of the plan" in page.locator("#dc-progress").inner_text()
    waiting = stored_run(app_server.data_dir, run_id)
    assert waiting is not None
    assert waiting.status == "awaiting_review"
    page.screenshot(path=str(artifacts / "e2e-plan-card.png"), full_page=True)
    edit_and_start(page)
    wait_for_report(page)
    assert not page.locator("#dc-review-plan").is_visible()
    report = page.locator("#dc-report").inner_text()
    (artifacts / "e2e-plan-review-report.txt").write_text(report, encoding="utf-8")
    assert "The plan was reviewed and edited by the user before the search" in report
    assert "removed checklist item" in report
    assert "trials" in report.split("removed checklist item", 1)[1][:20]
    assert f"added Local corpus query '{ADDED_QUERY}'" in report
    assert "Published: 2019-01-01 to 2022-12-31" in report
    assert "Randomised trials of metformin for cancer outcomes —" not in report  # item gone
    done = stored_run(app_server.data_dir, run_id)
    assert done is not None
    assert done.status in {"completed", "max_iterations"}, done.error


def test_a_record_excluded_at_the_evidence_review_is_counted_and_not_cited(
    context: BrowserContext, app_server: AppServer, artifacts: Path
) -> None:
    page = open_app(context, app_server)
    ask_for_review(page, EVIDENCE_QUESTION, plan=False, evidence=True)
    page.locator("#dc-review-evidence").wait_for(state="visible", timeout=RUN_TIMEOUT_MS)
    rows = page.locator("#dc-review-records tr.dc-review-included")
    rows.first.wait_for(state="visible")
    row = rows.first
    record_id = row.get_attribute("data-id") or ""
    title = row.locator("td").nth(1).inner_text()
    assert "<script>" in title  # a hostile title is shown as text
    assert page.evaluate("typeof window.__xss") == "undefined"
    page.screenshot(path=str(artifacts / "e2e-evidence-review.png"), full_page=True)
    toggle = page.locator("#dc-review-included label").filter(has_text=f"{record_id}:")
    toggle.locator("input").uncheck()
    page.locator("#dc-review-write").click()  # no reason: refused, nothing stored
    page.wait_for_function(
        "document.querySelector('#dc-review-status').textContent.includes('needs a reason')",
        timeout=30_000,
    )
    assert page.locator("#dc-review-evidence").is_visible()
    page.locator("#dc-review-reasons textarea").fill("wrong population")
    page.locator("#dc-review-write").click()
    wait_for_report(page)
    report = page.locator("#dc-report").inner_text()
    assert "Excluded by the reviewer: 1" in report
    assert f"excluded {record_id} (wrong population)" in report  # the methodology
    references = page.locator("#dc-report li.dc-ref")
    assert references.count() > 0
    cited = " ".join(references.nth(i).inner_text() for i in range(references.count()))
    assert title.split(" <script>")[0] not in cited
    show_tab(page, "Report")


def start_worker(server: AppServer, root: Path, worker_id: str) -> subprocess.Popen[bytes]:
    """Another ``deepcritical worker`` (``worker_id``) on ``server``'s data directory and
    environment (jobs mode)."""
    env = server_env(
        llm=f"openai-compatible:scripted@{server.stub.base_url}",
        sources='["local"]',
        max_rounds="2",
        results_per_query="3",
        llm_retries="0",
        llm_timeout_seconds="30",
        jobs="1",
    )
    command = [*cli_command(), "--data-dir", str(server.data_dir), "worker"]
    with (root / f"worker-{worker_id}.log").open("wb") as log:
        return subprocess.Popen(
            [*command, "--worker-id", worker_id],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=root,
        )


def _age_dead_heartbeat(data_dir: Path, run_id: str) -> None:
    """Age run ``run_id``'s heartbeat past the stale limit, as a dead worker's is after
    ``STALE_AFTER_SECONDS`` (the test does not wait them out)."""
    from deepcritical.config import Settings
    from deepcritical.state import RunStore
    from tests.integration.test_jobs import _age_heartbeat

    store = RunStore.open(Settings(data_dir=data_dir, _env_file=None))
    try:
        _age_heartbeat(store, run_id, 120)
    finally:
        store.close()


def restart_app(server: AppServer, root: Path) -> subprocess.Popen[bytes]:
    """Stop ``server``'s app process (its worker goes on) and start ``serve`` again on the
    same port, data directory and environment (jobs mode)."""
    server.process.terminate()
    server.process.wait(timeout=30)
    port = server.url.rsplit(":", 1)[1]
    env = server_env(
        llm=f"openai-compatible:scripted@{server.stub.base_url}",
        sources='["local"]',
        max_rounds="2",
        results_per_query="3",
        llm_retries="0",
        llm_timeout_seconds="30",
        jobs="1",
    )
    serve = ["serve", "--host", "127.0.0.1", "--port", port, "--concurrency", "2"]
    with (root / "server-2.log").open("wb") as log:
        process = subprocess.Popen(
            [*cli_command(), "--data-dir", str(server.data_dir), *serve],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=root,
        )
    server.process = process  # the fixture's teardown stops this one
    return process


def test_jobs_mode_a_waiting_plan_survives_its_worker_and_an_app_restart(
    browser: Browser, app_data: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from tests.e2e.conftest import _wait_until_up

    root = tmp_path_factory.mktemp("app-review-jobs")
    with running_server(
        app_data, root, concurrency=2, stub=SlowChatStub(0.2), workers=1, jobs="1"
    ) as server:

        def record(run_id: str) -> Any:
            return stored_run(server.data_dir, run_id)

        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        restarted: subprocess.Popen[bytes] | None = None
        try:
            page = open_app(ctx, server)
            run_id = ask_for_review(page, JOBS_QUESTION, plan=True, evidence=False)
            plan_card(page)
            waiting = record(run_id)
            assert waiting is not None
            assert waiting.status == "awaiting_review", server.log()
            assert waiting.worker == "e2e-w1"
            page.close()
            server.workers[0].send_signal(signal.SIGKILL)  # the waiting job's worker dies
            server.workers[0].wait(timeout=30)
            restarted = restart_app(server, root)
            _wait_until_up(server)
            server.workers.append(start_worker(server, root, "e2e-w2"))  # stopped by the fixture
            _age_dead_heartbeat(server.data_dir, run_id)  # e2e-w1's heartbeat, now stale
            page = open_app(ctx, server)  # the same visitor (its cookie), the new app
            show_tab(page, "History")
            page.wait_for_function(
                "id => document.querySelector('#dc-history').textContent.includes(id)",
                arg=run_id[:8],
                timeout=30_000,
            )
            table = page.locator("#dc-history")
            assert "waiting for review" in (table.text_content() or "")
            table.get_by_text(run_id[:8], exact=True).locator("visible=true").first.click()
            plan_card(page)
            assert "waits for your review" in page.locator("#dc-history-status").inner_text()
            page.locator("#dc-review-start").click()  # approved as proposed
            show_tab(page, "Report")
            wait_for_report(page)
            finished = record(run_id)
            assert finished is not None
            assert finished.status in {"completed", "max_iterations"}, finished.error
            assert finished.worker == "e2e-w2", server.log()  # another worker finished it
            report = page.locator("#dc-report").inner_text()
            assert "The plan was reviewed and approved unchanged by the user" in report
        finally:
            ctx.close()
            if restarted is not None:  # the fixture stops the first app process only
                restarted.terminate()
                restarted.wait(timeout=30)
