"""The corpus-scale benchmark's report: each figure next to its target, the verdict following
the figure, and no import rate or RSS claimed for a size a kept corpus already held."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.bench_corpus_scale import report

QUERIED: dict[str, Any] = {
    "hybrid": (190.0, 240.0),
    "index": (180.0, 225.0),
    "embed": (10.0, 14.0),
    "recall10": 0.3,
    "dense_recall10": 1.0,
}


GROWN: dict[str, Any] = {"count": 10_000_000, "added": 9_000_000, "seconds": 3_000.0}


def _printed(capsys: pytest.CaptureFixture[str], grown: dict[str, Any], **queried: Any) -> str:
    report(10_000_000, {**GROWN, **grown}, {**QUERIED, **queried}, 64_000.0)
    return capsys.readouterr().out


def test_a_grown_size_reports_its_import_and_each_target(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = _printed(capsys, {"rss": 6_900.0})
    assert "3,000 docs/s" in out
    assert "target < 300 ms at 10^6 and 10^7: MET" in out
    assert "target < 8192 MB: MET" in out
    assert "6,400 bytes per document" in out


def test_a_missed_target_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    out = _printed(capsys, {"rss": 9_000.0}, hybrid=(400.0, 750.0), dense_recall10=0.9)
    assert "target < 300 ms at 10^6 and 10^7: MISSED" in out
    assert "target < 8192 MB: MISSED" in out
    assert "target >= 0.95: MISSED" in out


def test_a_kept_corpus_already_at_the_size_claims_no_import(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = _printed(capsys, {"added": 0, "seconds": 0.0, "rss": 75.0})
    assert "import             none" in out
    assert "docs/s" not in out
    assert "peak RSS" not in out
    assert "hybrid query p95        240.0 ms" in out
