"""Input limits end to end (issue 13 items 5, 6 and 7), through the ``deepcritical`` command as
a user runs it and through :func:`deepcritical.api.research` on a SQLite run database.

- A 50 MB record is truncated on import to 200,000 characters (the summary says so) and a
  research run (``--llm none``, the local corpus) over a corpus holding it finishes under
  1 GB of peak memory (``ru_maxrss`` of the CLI process, measured by a wrapper process),
  keeping 20,000 characters of it.
- ``corpus add --skip-bad-lines`` imports the good lines and lists the bad line numbers;
  without it the first bad line's number is named and nothing is imported.
- ``research --out /proc/x.md`` fails before the run with exit code 2.
- A question of nonsense words stops after one round with an abstention report.
- A question with NUL bytes runs, and its report (markdown, JSON), events and every text
  column of the run database hold no NUL.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from deepcritical.api import research
from deepcritical.config import Settings
from deepcritical.testing.embedders import HashingEmbedder
from tests.conftest import hashed_corpus
from tests.integration.test_cli_research import (
    Run,
    run_cli,
    squash,
)
from tests.integration.test_magentic_openai_stub import QUESTION, RECORDS

HUGE_PMID = "39999999"
HUGE_SENTENCE = (
    "Metformin use was associated with a lower incidence of cancer in people with type 2 "
    "diabetes in this cohort. "
)
HUGE_CHARS = 50_000_000
MAX_RSS_BYTES = 1 << 30
BAD_LINES = {3: '{"pmid": "40000003", "abstract_sections": [', 5: '{"abstract": "no pmid"}'}

WRAPPER = (
    "import resource, subprocess, sys\n"
    "proc = subprocess.run(sys.argv[1:])\n"
    "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "sys.stderr.write(f'\\nPEAK_RSS_KB={peak}\\n')\n"
    "sys.exit(proc.returncode)\n"
)
"""Runs its arguments as one child process and reports that child's peak resident memory
(Linux ``ru_maxrss`` is in KiB): the measurement covers the CLI process and nothing else."""


def run_measured(*args: str | Path, cwd: Path) -> tuple[Run, int]:
    """``deepcritical ARGS`` under :data:`WRAPPER`; the run and its peak RSS in bytes."""
    run = run_cli(*args, cwd=cwd, launcher=(sys.executable, "-c", WRAPPER))
    marker = [line for line in run.stderr.splitlines() if line.startswith("PEAK_RSS_KB=")]
    assert marker, run.describe()
    return run, int(marker[-1].removeprefix("PEAK_RSS_KB=")) * 1024


@dataclass(frozen=True)
class HugeCorpus:
    root: Path
    data_dir: Path
    source: Path
    add: Run


@pytest.fixture(scope="module")
def huge_corpus(tmp_path_factory: pytest.TempPathFactory) -> HugeCorpus:
    """``corpus add --skip-bad-lines`` of a file holding the metformin records, one record of
    50 MB (its abstract) and two bad lines."""
    root = tmp_path_factory.mktemp("limits")
    huge = {
        "pmid": HUGE_PMID,
        "year": 2020,
        "title": "Metformin and cancer incidence: a very long record",
        "abstract_sections": [
            {"label": "RESULTS", "text": HUGE_SENTENCE * (HUGE_CHARS // len(HUGE_SENTENCE) + 1)}
        ],
    }
    lines = [json.dumps(r) for r in RECORDS[:2]]
    lines.insert(2, BAD_LINES[3])
    lines.append(json.dumps(huge))
    lines.insert(4, BAD_LINES[5])
    lines.extend(json.dumps(r) for r in RECORDS[2:])
    source = root / "records.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert source.stat().st_size > HUGE_CHARS
    data_dir = root / "data"
    add = run_cli("--data-dir", data_dir, "corpus", "add", "--skip-bad-lines", source, cwd=root)
    return HugeCorpus(root, data_dir, source, add)


@pytest.mark.slow  # the CLI loads the embedding model
def test_a_50_mb_record_is_truncated_on_import(huge_corpus: HugeCorpus) -> None:
    add = huge_corpus.add
    assert add.returncode == 0, add.describe()
    out = add.output
    records = len(RECORDS) + 1
    assert f"{records} records read, {records} added" in out, add.describe()
    assert "1 record(s) over 200,000 characters truncated" in out, add.describe()
    db = huge_corpus.data_dir / "corpus" / "corpus.sqlite3"
    with sqlite3.connect(db) as conn:
        (longest,) = conn.execute("SELECT max(length(text)) FROM documents").fetchone()
    assert 100_000 < longest <= 200_000
    assert db.stat().st_size < 10_000_000


@pytest.mark.slow  # the CLI loads the embedding model
def test_skip_bad_lines_lists_the_lines_it_skipped(huge_corpus: HugeCorpus) -> None:
    add = huge_corpus.add
    assert add.returncode == 0, add.describe()
    assert f"skipped 2 bad line(s): {', '.join(str(n) for n in BAD_LINES)}" in add.output


def test_without_skip_bad_lines_the_first_bad_line_is_named_and_nothing_imported(
    tmp_path: Path,
) -> None:
    source = tmp_path / "bad.jsonl"
    lines = [json.dumps(RECORDS[0]), BAD_LINES[3], json.dumps(RECORDS[1])]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    data_dir = tmp_path / "data"
    add = run_cli("--data-dir", data_dir, "corpus", "add", source, cwd=tmp_path)
    assert add.returncode == 1, add.describe()
    assert f"{source}:2: invalid JSON" in add.output, add.describe()
    assert "--skip-bad-lines imports the other lines" in add.output
    assert "Traceback" not in add.stderr
    info = run_cli("--data-dir", data_dir, "corpus", "info", cwd=tmp_path)
    assert info.returncode != 0  # no corpus: nothing was imported


@pytest.mark.slow  # the CLI loads the embedding model
def test_a_run_over_the_corpus_with_the_huge_record_stays_under_1_gb(
    huge_corpus: HugeCorpus,
) -> None:
    assert huge_corpus.add.returncode == 0, huge_corpus.add.describe()
    out = huge_corpus.root / "run" / "report.md"
    run, peak = run_measured(
        "--data-dir",
        huge_corpus.data_dir,
        "research",
        QUESTION,
        "--llm",
        "none",
        "--corpus",
        huge_corpus.data_dir / "corpus",
        "--out",
        out,
        cwd=huge_corpus.root,
    )
    assert run.returncode == 0, run.describe()
    assert peak < MAX_RSS_BYTES, f"peak RSS {peak / 2**20:.0f} MiB"
    result = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    found = [e for e in result["evidence"] if e["citation"].get("pmid") == HUGE_PMID]
    assert found, "the run never retrieved the huge record"
    assert len(found[0]["content"]) <= 20_000  # what a run keeps of an item (max_evidence_chars)
    assert out.with_suffix(".json").stat().st_size < 1_000_000
    database = huge_corpus.data_dir / "deepcritical.db"
    assert database.stat().st_size < 50_000_000


@pytest.mark.slow  # the CLI loads the embedding model
def test_a_nonsense_question_stops_after_one_round_with_an_abstention(
    huge_corpus: HugeCorpus,
) -> None:
    """Issue 13: "Florb wuzzle..." searched three rounds and showed checklist coverage beside
    "No evidence found"."""
    assert huge_corpus.add.returncode == 0, huge_corpus.add.describe()
    out = huge_corpus.root / "nonsense" / "report.md"
    run = run_cli(
        "--data-dir", huge_corpus.data_dir, "research", "Florb wuzzle quaxing zindle prob?",
        "--llm", "none", "--corpus", huge_corpus.data_dir / "corpus", "--out", out,
        cwd=huge_corpus.root,
    )  # fmt: skip
    assert run.returncode == 0, run.describe()
    result = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    metadata = result["report"]["metadata"]
    assert metadata["stop_reason"] == "insufficient_evidence"
    assert metadata["iterations"] == 1
    assert metadata["checklist_coverage"] == 0.0
    assert {item["status"] for item in result["plan"]["checklist"]} == {"unsatisfied"}
    assert result["report"]["references"] == []
    markdown = out.read_text(encoding="utf-8")
    assert markdown.startswith("# No evidence found")
    assert "hold no evidence that addresses this question" in markdown
    assert "checklist coverage: 0%" in markdown
    assert "Round 2" not in run.stderr


def test_an_out_path_that_cannot_be_opened_fails_before_the_run(tmp_path: Path) -> None:
    if not Path("/proc/self").is_dir():
        pytest.skip("needs Linux /proc")
    data_dir = tmp_path / "data"
    run = run_cli(
        "--data-dir", data_dir, "research", QUESTION, "--llm", "none", "--out", "/proc/x.md",
        cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 2, run.describe()
    assert "--out /proc/x.md: /proc/x.md cannot be written" in squash(run.stderr), run.describe()
    assert "started" not in run.stderr
    assert "Traceback" not in run.stderr
    assert not (data_dir / "deepcritical.db").exists()  # no run was recorded


async def test_a_question_with_nul_bytes_runs_and_no_output_holds_a_nul(tmp_path: Path) -> None:
    corpus = hashed_corpus(tmp_path, RECORDS)
    data_dir = tmp_path / "data"
    settings = Settings(
        llm="none",
        sources=["local"],
        corpus_dir=corpus,
        data_dir=data_dir,
        persist_runs=True,
        max_rounds=1,
        grounding=False,
        _env_file=None,
    )
    question = "Does metformin\x00 reduce cancer\x00 risk in people with diabetes?\x00"
    events = [
        e
        async for e in research(
            question, settings, context="Adults\x00", embedder=HashingEmbedder()
        )
    ]
    assert events[-1].type == "done", [(e.type, e.message) for e in events[-5:]]
    result = events[-1].result
    assert result is not None
    assert result.report.research_question == QUESTION
    outputs = {
        "markdown": result.report.to_markdown(),
        "json": result.to_json(),
        "events": json.dumps([e.model_dump(mode="json") for e in events]),
    }
    for name, text in outputs.items():
        assert "\x00" not in text, name
        assert "\\u0000" not in text, name
    with sqlite3.connect(data_dir / "deepcritical.db") as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        checked = 0
        for table in tables:
            columns = [r[1] for r in conn.execute(f"PRAGMA table_info('{table}')")]
            for column in columns:
                rows = conn.execute(f'SELECT "{column}" FROM "{table}"').fetchall()
                for (value,) in rows:
                    if isinstance(value, str):
                        checked += 1
                        assert "\x00" not in value, (table, column)
                        assert "\\u0000" not in value, (table, column)
        assert checked > 10
        (stored,) = conn.execute("SELECT question FROM runs").fetchone()
    assert stored == QUESTION


async def test_answers_cached_before_a_lower_limit_are_bounded_on_the_way_out(
    tmp_path: Path,
) -> None:
    """The call cache keeps what a source answered (bounded by the limit of that run); a
    later run with a lower ``max_evidence_chars`` gets those answers bounded again."""
    long_record = {
        "pmid": HUGE_PMID,
        "title": "Metformin and cancer incidence: a long record",
        "abstract_sections": [{"label": "RESULTS", "text": HUGE_SENTENCE * 300}],  # ~32,000
    }
    corpus = hashed_corpus(tmp_path, [*RECORDS, long_record])
    base: dict[str, Any] = {
        "llm": "none",
        "sources": ["local"],
        "corpus_dir": corpus,
        "data_dir": tmp_path / "data",
        "max_rounds": 1,
        "grounding": False,
    }

    async def longest(limit: int) -> int:
        settings = Settings(**base, max_evidence_chars=limit, _env_file=None)
        events = [e async for e in research(QUESTION, settings, embedder=HashingEmbedder())]
        result = events[-1].result
        assert result is not None, [(e.type, e.message) for e in events[-5:]]
        return max(len(e.content) for e in result.evidence)

    assert await longest(200_000) > 25_000
    assert await longest(5_000) <= 5_000  # the same queries: answered from the call cache
