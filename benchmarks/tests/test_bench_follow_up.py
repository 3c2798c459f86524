"""The scoring of the follow-up benchmark (benchmarks.bench_follow_up): citations valid over
the answers of runs with a report, the gold abstract kept over the runs whose report cited it
only, and a clean exit when the data is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.bench_follow_up import AskFigures, main, score


def test_scores_count_gold_only_where_the_report_cited_it() -> None:
    figures = [
        AskFigures("1", True, True, True, True, 0.2),
        AskFigures("2", True, False, True, True, 0.4),
        AskFigures("3", False, False, False, True, 0.3),  # the report missed the gold: not counted
        AskFigures("4", False, True, True, False, 0.1),
        AskFigures("5", error="no report"),
    ]
    s = score(figures)
    assert (s.runs, s.failed) == (5, 1)
    assert s.citations_valid == pytest.approx(3 / 4)
    assert s.gold_runs == 2
    assert s.gold_kept == pytest.approx(1 / 2)
    assert s.answered == pytest.approx(3 / 4)
    assert s.seconds_per_ask == pytest.approx(0.25)


def test_no_report_citing_its_gold_gives_no_gold_figure() -> None:
    s = score([AskFigures("1", False, False, True, True, 0.5)])
    assert s.gold_kept is None
    assert s.citations_valid == 1.0


def test_absent_data_skips_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--data", str(tmp_path)]) == 0
    assert "skipped: PubMedQA data not found" in capsys.readouterr().out
