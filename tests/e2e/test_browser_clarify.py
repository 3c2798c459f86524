"""The clarify card in headless Chromium (Debian's ``/usr/bin/chromium``, Playwright), on the
shared test server (scripted model, whose clarifier answers with the offline rules): a
question without a population shows the card; picking a choice starts the run, and the
report's methodology says what was clarified; *Skip* starts it unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Playwright, sync_playwright

from tests.e2e.conftest import CHROMIUM_ARGS, AppServer

pytestmark = pytest.mark.slow

RUN_TIMEOUT_MS = 180_000
NO_POPULATION = "Does metformin reduce mortality?"
CLARIFIED = "The question was clarified by the user before planning: population = "


@pytest.fixture(scope="module")
def browser(chromium: Path) -> Iterator[Browser]:
    """Headless Chromium with a fresh temporary profile."""
    with sync_playwright() as p:
        yield _launch(p, chromium)


def _launch(p: Playwright, chromium: Path) -> Browser:
    return p.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS, headless=True)


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    ctx = browser.new_context(viewport={"width": 1280, "height": 1000})
    yield ctx
    ctx.close()


def ask(ctx: BrowserContext, server: AppServer, question: str) -> Page:
    """The app with ``question`` submitted, once the clarify card shows."""
    page = ctx.new_page()
    page.goto(server.url + "/", wait_until="domcontentloaded")
    page.locator("#dc-question textarea").wait_for(state="visible", timeout=60_000)
    assert page.locator("#dc-clarify-on input").is_checked()  # on by default
    page.locator("#dc-question textarea").fill(question)
    page.locator("#dc-run").click()
    page.locator("#dc-clarify:visible").wait_for(state="visible", timeout=60_000)
    return page


def report_text(page: Page) -> str:
    page.locator("#dc-report h1").wait_for(state="visible", timeout=RUN_TIMEOUT_MS)
    return page.locator("#dc-report").inner_text()


def test_a_chosen_population_reaches_the_methodology(
    context: BrowserContext, app_server: AppServer, artifacts: Path
) -> None:
    page = ask(context, app_server, NO_POPULATION)
    card = page.locator("#dc-clarify:visible")
    assert "Which population is the question about?" in card.inner_text()
    assert page.locator("#dc-clarify-choice-1:visible").count() == 0  # one question only
    # the run waits for the answer
    page.wait_for_timeout(1_000)
    assert page.locator("#dc-report h1").count() == 0
    page.screenshot(path=str(artifacts / "clarify-card.png"))
    card.get_by_text("Older adults (65 and over)").click()
    page.locator("#dc-clarify-go:visible").click()
    text = report_text(page)
    assert page.locator("#dc-clarify:visible").count() == 0
    assert CLARIFIED + "Older adults (65 and over)." in text
    assert "population: Older adults (65 and over)" in text  # the plan's PICO element


def test_skip_runs_the_question_as_asked(context: BrowserContext, app_server: AppServer) -> None:
    page = ask(context, app_server, NO_POPULATION)
    page.locator("#dc-clarify-text-0:visible textarea").fill("people with gout")  # skipped
    page.locator("#dc-clarify-skip:visible").click()
    text = report_text(page)
    assert page.locator("#dc-clarify:visible").count() == 0
    assert "Methodology" in text
    assert "clarified by the user" not in text
    assert "people with gout" not in text
