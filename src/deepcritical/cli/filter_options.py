"""The search-filter options of ``deepcritical research``: publication dates, languages, study
designs, ClinicalTrials.gov phases and statuses, and the "added since" bound of a living
review, read into a :class:`~deepcritical.models.SearchFilters` (exit code 2 on a bad value).

``--published-from 2015-01-01 --published-to 2024-12-31 --language en --design
randomised_trial``; a year alone is its first day (``--published-from``) or last day
(``--published-to``); ``--language`` and the other lists take repeated options or comma
lists (``--language en,fr``).
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated

import typer
from pydantic import ValidationError

from deepcritical.cli.context import fail
from deepcritical.models import LANGUAGES, DesignFilter, SearchFilters, TrialPhase, TrialStatus

__all__ = [
    "AddedSinceOption",
    "DesignOption",
    "LanguageOption",
    "PublishedFromOption",
    "PublishedToOption",
    "TrialPhaseOption",
    "TrialStatusOption",
    "parse_bound",
    "search_filters",
]

PublishedFromOption = Annotated[
    str | None,
    typer.Option(
        "--published-from",
        help="Earliest publication date, YYYY-MM-DD or YYYY (inclusive).",
    ),
]
PublishedToOption = Annotated[
    str | None,
    typer.Option("--published-to", help="Latest publication date, YYYY-MM-DD or YYYY (inclusive)."),
]
LanguageOption = Annotated[
    list[str] | None,
    typer.Option(
        "--language",
        help=f"ISO 639-1 language code, repeatable or comma list ({', '.join(LANGUAGES)}).",
    ),
]
DesignOption = Annotated[
    list[str] | None,
    typer.Option(
        "--design",
        help="Study design, repeatable or comma list "
        f"({', '.join(d.value for d in DesignFilter)}).",
    ),
]
TrialPhaseOption = Annotated[
    list[str] | None,
    typer.Option(
        "--trial-phase",
        help="ClinicalTrials.gov phase, repeatable or comma list "
        f"({', '.join(p.value for p in TrialPhase)}).",
    ),
]
TrialStatusOption = Annotated[
    list[str] | None,
    typer.Option(
        "--trial-status",
        help="ClinicalTrials.gov overall status, repeatable or comma list "
        f"(e.g. {TrialStatus.RECRUITING.value}, {TrialStatus.COMPLETED.value}).",
    ),
]
AddedSinceOption = Annotated[
    str | None,
    typer.Option(
        "--added-since",
        help="Only records added to the sources since this date or time (ISO 8601; UTC "
        "when no offset is given): for living reviews.",
    ),
]


def parse_bound(text: str, option: str, *, end: bool) -> date:
    """``text`` (``YYYY-MM-DD`` or ``YYYY``) as a date: a year alone is its 1 January, or its
    31 December when ``end``.

    Raises:
        typer.Exit: code 2, naming ``option`` and the accepted forms.
    """
    value = text.strip()
    try:
        if len(value) == 4 and value.isdigit():
            return date(int(value), 12, 31) if end else date(int(value), 1, 1)
        return date.fromisoformat(value)
    except ValueError:
        raise fail(f"{option} {text!r}: give a date as YYYY-MM-DD or a year as YYYY", 2) from None


def _since(text: str) -> datetime:
    """``--added-since`` as a datetime (a date alone is its midnight, UTC)."""
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError:
        raise fail(
            f"--added-since {text!r}: give an ISO 8601 date or time, e.g. 2024-01-31 or "
            "2024-01-31T12:00:00Z",
            2,
        ) from None


def _items(values: list[str] | None) -> list[str]:
    """Repeated options and comma lists as one list of non-blank values."""
    return [v.strip() for raw in values or [] for v in raw.split(",") if v.strip()]


def search_filters(
    *,
    published_from: str | None = None,
    published_to: str | None = None,
    languages: list[str] | None = None,
    designs: list[str] | None = None,
    trial_phases: list[str] | None = None,
    trial_statuses: list[str] | None = None,
    added_since: str | None = None,
) -> SearchFilters | None:
    """The :class:`SearchFilters` of the options (``None`` when none is given).

    Raises:
        typer.Exit: code 2 on a bad date, an unknown language, design, phase or status, or
            ``--published-from`` after ``--published-to`` (the message says which and lists
            the accepted values).
    """
    given = [published_from, published_to, languages, designs, trial_phases, trial_statuses]
    if all(v is None for v in given) and added_since is None:
        return None
    fields: dict[str, object] = {
        "languages": _items(languages),
        "designs": _items(designs),
        "trial_phases": _items(trial_phases),
        "trial_statuses": _items(trial_statuses),
    }
    if published_from:
        fields["published_from"] = parse_bound(published_from, "--published-from", end=False)
    if published_to:
        fields["published_to"] = parse_bound(published_to, "--published-to", end=True)
    if added_since:
        fields["added_since"] = _since(added_since)
    try:
        return SearchFilters.model_validate(fields)
    except ValidationError as exc:
        reasons = "; ".join(
            _error_text(".".join(str(p) for p in e["loc"]), e["msg"]) for e in exc.errors()
        )
        raise fail(f"search filters: {reasons}", 2) from None


def _error_text(where: str, message: str) -> str:
    """One validation error as ``"field: message"`` (without pydantic's ``Value error, ``)."""
    text = message.removeprefix("Value error, ")
    return f"{where}: {text}" if where else text
