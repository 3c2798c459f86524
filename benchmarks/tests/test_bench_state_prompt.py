"""The gathering agent's prompt stays flat as its store grows (``benchmarks/bench_state_prompt.py``
measures it at 10 to 2,000 sources; here 10 and 2,000)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.bench_state_prompt import SYLLABUS, fill, measure
from deepcritical.state import RunStore, Syllabus
from deepcritical.state.sources import SourceCollector


def test_scale_2000_sources_keep_tool_answers_short_and_prompt_flat(tmp_path: Path) -> None:
    """Measured on SQLite (the answers do not depend on the database)."""
    sizes: dict[int, int] = {}
    runs = RunStore.open_url(f"sqlite:///{tmp_path / 'runs.db'}")
    try:
        for n in (10, 2000):
            syllabus = Syllabus.from_file(SYLLABUS)
            run_id = runs.create_run("Profile of drug X", {"llm": "none"}, syllabus=syllabus)
            c = SourceCollector(runs, run_id, syllabus)
            fill(c, n)
            m = measure(c)
            assert m.tool_answers
            assert all(len(a) < 500 for a in m.tool_answers)
            assert len(c.get_progress().text()) < 500
            assert c.get_progress().total_sources == n + 1
            sizes[n] = m.prompt_chars
    finally:
        runs.close()
    assert abs(sizes[2000] - sizes[10]) <= 200, sizes
