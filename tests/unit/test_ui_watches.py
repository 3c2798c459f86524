"""The Watches tab's listing (issue 33, item 5): each watch with its schedule, version, last
update, its feed link and the badge of unseen changes; text escaped."""

from __future__ import annotations

from datetime import UTC, datetime

from deepcritical.models import Watch
from deepcritical.ui.watches_tab import watches_html

NOW = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)


def watch(**values: object) -> Watch:
    base: dict[str, object] = {
        "id": "a" * 32,
        "question": "Does <b>X</b> help?",
        "run_id": "b" * 32,
        "checked_until": NOW,
        "every_seconds": 7 * 86400.0,
    }
    base.update(values)
    return Watch.model_validate(base)


def test_the_listing_shows_the_badge_of_unseen_changes_and_escapes_text() -> None:
    shown = watches_html(
        [watch(unseen=2, version=3, last_update_at=NOW, last_summary="What's new: 2 new"),
         watch(id="c" * 32, paused=True)]
    )  # fmt: skip
    assert shown.count('class="dc-badge"') == 1
    assert '<span class="dc-badge">2 new</span>' in shown
    assert "<b>X</b>" not in shown
    assert "Does &lt;b&gt;X&lt;/b&gt; help?" in shown
    assert "every 7d" in shown
    assert "paused" in shown
    assert f'href="dc/feeds/watch/{"a" * 32}.atom"' in shown
    assert "2026-11-28 09:00 UTC" in shown
    assert "never" in shown


def test_no_watch_says_how_to_make_one() -> None:
    assert "No watches yet" in watches_html([])
