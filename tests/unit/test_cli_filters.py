"""``deepcritical research`` with the search-filter options, in-process: the options reach the
run as the settings' ``search_filters`` (which the plan starts with); a bad value exits 2 with
a message naming it and the accepted values, before any run."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from deepcritical.cli.main import app
from deepcritical.config import Settings
from deepcritical.events import ResearchEvent
from deepcritical.models import DesignFilter, SearchFilters, TrialPhase, TrialStatus
from deepcritical.orchestrators.deps import requested_filters


@pytest.fixture(autouse=True)
def _hermetic(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("DEEPCRITICAL_")]:
        monkeypatch.delenv(name)


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The ``api.research`` calls the command makes (none is run)."""
    calls: list[dict[str, Any]] = []

    async def fake_research(
        question: str, settings: Settings, **kw: Any
    ) -> AsyncIterator[ResearchEvent]:
        calls.append({"question": question, "settings": settings, **kw})
        events: tuple[ResearchEvent, ...] = ()  # an empty stream: the call is only recorded
        for event in events:
            yield event

    async def drain(events: AsyncIterator[ResearchEvent]) -> None:
        async for _ in events:
            pass

    monkeypatch.setattr("deepcritical.api.research", fake_research)
    monkeypatch.setattr(
        "deepcritical.cli.research.run_to_report",
        lambda factory, *_a, **_k: asyncio.run(drain(factory())),
    )
    return calls


def invoke(tmp_path: Path, *args: str) -> Result:
    base = ["--data-dir", str(tmp_path / "data"), "research", "metformin and dementia"]
    base += ["--llm", "none", "--sources", "pubmed,trials", "--out", str(tmp_path / "r.md")]
    return CliRunner().invoke(app, [*base, *args], catch_exceptions=True)


def flat(result: Result) -> str:
    return " ".join(result.output.split())


def test_filter_options_reach_the_run(tmp_path: Path, runs: list[dict[str, Any]]) -> None:
    result = invoke(
        tmp_path,
        "--published-from", "2015",
        "--published-to", "2024-06-30",
        "--language", "en,fr",
        "--language", "de",
        "--design", "randomised_trial",
        "--design", "meta-analysis",
        "--trial-phase", "phase3",
        "--trial-status", "recruiting",
        "--added-since", "2024-01-31",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (call,) = runs
    filters = requested_filters(call["settings"])
    assert filters == SearchFilters(
        published_from=date(2015, 1, 1),
        published_to=date(2024, 6, 30),
        languages=("de", "en", "fr"),
        designs=(DesignFilter.META_ANALYSIS, DesignFilter.RANDOMISED_TRIAL),
        trial_phases=(TrialPhase.PHASE3,),
        trial_statuses=(TrialStatus.RECRUITING,),
        added_since=datetime(2024, 1, 31, tzinfo=UTC),
    )


def test_a_year_alone_ends_on_its_last_day(tmp_path: Path, runs: list[dict[str, Any]]) -> None:
    assert invoke(tmp_path, "--published-to", "2020").exit_code == 0
    assert requested_filters(runs[0]["settings"]).published_to == date(2020, 12, 31)


def test_no_filter_option_means_no_filters(tmp_path: Path, runs: list[dict[str, Any]]) -> None:
    assert invoke(tmp_path).exit_code == 0
    assert runs[0]["settings"].search_filters == {}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--published-from", "2021", "--published-to", "2019"],
            "published_from (2021-01-01) is after published_to (2019-12-31)",
        ),
        (["--published-from", "May 2015"], "give a date as YYYY-MM-DD or a year as YYYY"),
        (["--language", "english"], "unknown language code 'english': use ISO 639-1 codes"),
        (["--design", "cohort"], "unknown study design 'cohort': one of case_report"),
        (["--trial-phase", "9"], "unknown trial phase '9'"),
        (["--trial-status", "open"], "unknown trial status 'open'"),
        (["--added-since", "last week"], "--added-since 'last week': give an ISO 8601 date"),
    ],
)
def test_bad_values_exit_2_before_the_run(
    tmp_path: Path, runs: list[dict[str, Any]], args: list[str], message: str
) -> None:
    result = invoke(tmp_path, *args)
    assert result.exit_code == 2, result.output
    assert message in flat(result)
    assert runs == []


def test_runs_submit_takes_the_same_filters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    submitted: list[Settings] = []

    def fake_submit(question: str, settings: Settings, **_kw: Any) -> str:
        submitted.append(settings)
        return "run-1"

    monkeypatch.setattr("deepcritical.jobs.submit_run", fake_submit)
    base = ["--data-dir", str(tmp_path / "data"), "runs", "submit", "metformin", "--llm", "none"]
    base += ["--sources", "pubmed"]
    bad = CliRunner().invoke(app, [*base, "--language", "klingon"], catch_exceptions=True)
    assert bad.exit_code == 2, bad.output
    assert "unknown language code 'klingon'" in flat(bad)
    assert submitted == []
    good = CliRunner().invoke(app, [*base, "--published-from", "2015"], catch_exceptions=True)
    assert good.exit_code == 0, good.output
    assert requested_filters(submitted[0]).published_from == date(2015, 1, 1)
