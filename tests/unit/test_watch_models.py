"""The living-review models (issue 33): schedules as written on the command line, and what
an update's change says (one line, the "What's new" section)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from deepcritical.models import ChangedRecord, UpdateFlow, WatchChange, format_every, parse_every

SINCE = datetime(2026, 11, 1, 9, 30, tzinfo=UTC)
UNTIL = datetime(2026, 11, 28, 9, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "seconds", "shown"),
    [("7d", 604800.0, "7d"), ("30d", 2592000.0, "30d"), ("12h", 43200.0, "12h"),
     ("2s", 2.0, "2s"), ("2w", 1209600.0, "14d"), (" 15 m ", 900.0, "15m")],
)  # fmt: skip
def test_schedules_read_and_shown(text: str, seconds: float, shown: str) -> None:
    assert parse_every(text) == seconds
    assert format_every(parse_every(text)) == shown


@pytest.mark.parametrize("text", ["", "weekly", "7", "0s", "0.5s", "-1d", "3y"])
def test_bad_schedules_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="schedule"):
        parse_every(text)


def test_a_change_says_what_is_new_removed_and_how_the_verdict_moved() -> None:
    change = WatchChange(
        since=SINCE,
        until=UNTIL,
        new_included=[ChangedRecord(evidence_id="E9", title="A trial", identifier="PMID 9")],
        removed=[
            ChangedRecord(evidence_id="E2", title="Old", identifier="PMID 2", reason="retracted")
        ],
        verdict_before="yes",
        verdict_after="uncertain",
        certainty_before="moderate",
        certainty_after="low",
        verdict_reason="The cited conclusions disagree.",
        flow=UpdateFlow(identified_per_source={"pubmed": 5}, already_known=2, new=3, excluded=2,
                        included=1),
    )  # fmt: skip
    assert change.relevant
    assert change.heading() == "What's new since 2026-11-01"
    assert change.summary() == (
        "What's new since 2026-11-01: 1 new included study; 1 removed (retracted); "
        "verdict yes -> uncertain (certainty moderate -> low)."
    )
    text = change.markdown()
    assert "- A trial (PMID 9)" in text
    assert "- Old (PMID 2) - retracted" in text
    assert "Changed from yes to uncertain (certainty moderate -> low)." in text
    assert "The cited conclusions disagree." in text
    assert "- Records identified: 5 (pubmed 5)" in text
    assert "- Excluded as off-topic: 2" in text


def test_nothing_relevant_is_one_line() -> None:
    change = WatchChange(since=SINCE, until=UNTIL, flow=UpdateFlow(already_known=4))
    assert not change.relevant
    assert change.summary() == "Nothing relevant is new since 2026-11-01."
