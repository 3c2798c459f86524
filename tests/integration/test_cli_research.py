"""The ``deepcritical`` console script, run in subprocesses as a user would.

A subset of the PubMedQA corpus (the gold abstracts of the first 40 dev questions plus 60
others) is imported once per module with ``corpus add``; a dev question whose gold abstract is
in the subset is then researched with ``--llm none``, once on the local corpus only
(``--corpus DIR``) and once with the default sources (the local corpus plus the live sources,
which fail fast here because there is no network). The tests read the files the command
wrote: the markdown report and the JSON next to it.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from deepcritical.models import CITATION_MARKER, SOURCE_LABELS, RunResult, Screening, marker_ids
from deepcritical.report.appraisal import STUDY_TABLE_HEADING
from deepcritical.report.validation import citation_problems
from tests.unit.test_environment import SHAPING

GOLD_QUESTIONS = 40
OTHER_RECORDS = 60
SUBSET_SIZE = GOLD_QUESTIONS + OTHER_RECORDS
QUESTION_INDEX = 1  # "Should general practitioners call patients by their first names?"
LIVE_SOURCES = ["pubmed", "trials", "europepmc", "openalex", "web"]
SECTIONS = [
    "## Executive summary",
    "## Methodology",
    "## Findings",
    "## Limitations",
    "## Conclusion",
    "## References",
]
SECRET_VARIABLES = {
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "NCBI_API_KEY",
}
RUN_TIMEOUT = 300  # a hung process fails the test instead of hanging the suite
OFFLINE_SEARCH_LIMIT = 30.0
"""Seconds the offline default run's searching stage may take (its "Time per stage" line):
the live sources must fail fast offline (no retries with back-off on a refused connection).
The stage, not the whole process: loading the embedding model and importing the corpus take
what the machine's load makes them."""


# --------------------------------------------------------------------------- running the CLI
def cli_command() -> list[str]:
    """The installed console script next to this interpreter, else ``python -m``."""
    script = shutil.which("deepcritical", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "deepcritical.cli"]


def user_env() -> dict[str, str]:
    """The test's environment without API keys or DEEPCRITICAL_ settings, offline models,
    and a wide terminal (rich wraps long lines at the terminal width)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("DEEPCRITICAL_") and k not in SECRET_VARIABLES
    }
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        COLUMNS="200",
        NO_COLOR="1",
        PYTHONIOENCODING="utf-8",
    )
    return env


@dataclass(frozen=True)
class Run:
    """One finished CLI process."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def output(self) -> str:
        """stdout and stderr with white space collapsed (rich wraps lines)."""
        return " ".join(f"{self.stdout}\n{self.stderr}".split())

    def describe(self) -> str:
        return (
            f"deepcritical {' '.join(a[:80] for a in self.args)} -> exit {self.returncode} "
            f"in {self.seconds:.1f} s\nSTDOUT:\n{self.stdout[-3000:]}\nSTDERR:\n"
            f"{self.stderr[-3000:]}"
        )


def run_cli(*args: str | Path, cwd: Path, launcher: Sequence[str] = ()) -> Run:
    """Run ``deepcritical ARGS`` in ``cwd`` (so no ``.env`` of the checkout is read), as the
    arguments of ``launcher`` when one is given (a command that runs its arguments)."""
    argv = [str(a) for a in args]
    started = time.monotonic()
    proc = subprocess.run(
        [*launcher, *cli_command(), *argv],
        cwd=cwd,
        env=user_env(),
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=RUN_TIMEOUT,
        check=False,
    )
    return Run(tuple(argv), proc.returncode, proc.stdout, proc.stderr, time.monotonic() - started)


# --------------------------------------------------------------------------- fixtures
@dataclass(frozen=True)
class CorpusSetup:
    root: Path
    data_dir: Path
    subset: Path
    question: str
    gold_pmid: str
    first_add: Run
    second_add: Run
    info: Run


@dataclass(frozen=True)
class ResearchRun:
    run: Run
    markdown_path: Path
    json_path: Path


def write_subset(pubmedqa_dir: Path, path: Path) -> tuple[str, str]:
    """Write the gold abstracts of the first dev questions and 60 others to ``path``
    (JSONL, verbatim lines); return the chosen question and its gold PMID."""
    with (pubmedqa_dir / "dev_questions.jsonl").open(encoding="utf-8") as handle:
        questions = [
            json.loads(line) for _, line in zip(range(GOLD_QUESTIONS), handle, strict=False)
        ]
    gold = {q["pmid"] for q in questions}
    chosen: dict[str, str] = {}
    others: list[str] = []
    with (pubmedqa_dir / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            pmid = json.loads(line)["pmid"]
            if pmid in gold:
                chosen[pmid] = line.rstrip("\n")
            elif len(others) < OTHER_RECORDS:
                others.append(line.rstrip("\n"))
    lines = [chosen[q["pmid"]] for q in questions if q["pmid"] in chosen] + others
    assert len(lines) == SUBSET_SIZE, "the PubMedQA corpus lacks gold abstracts of dev questions"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    question = questions[QUESTION_INDEX]
    return question["question"], question["pmid"]


@pytest.fixture(scope="module")
def corpus_setup(pubmedqa_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> CorpusSetup:
    """``corpus add SUBSET`` twice, then ``corpus info``, in a fresh data directory."""
    root = tmp_path_factory.mktemp("cli")
    subset = root / "subset.jsonl"
    question, gold = write_subset(pubmedqa_dir, subset)
    data_dir = root / "data"
    first = run_cli("--data-dir", data_dir, "corpus", "add", subset, cwd=root)
    assert first.returncode == 0, first.describe()
    second = run_cli("--data-dir", data_dir, "corpus", "add", subset, cwd=root)
    assert second.returncode == 0, second.describe()
    info = run_cli("--data-dir", data_dir, "corpus", "info", cwd=root)
    return CorpusSetup(root, data_dir, subset, question, gold, first, second, info)


def research_run(setup: CorpusSetup, name: str, *extra: str | Path) -> ResearchRun:
    out = setup.root / name / "report.md"
    run = run_cli(
        "--data-dir",
        setup.data_dir,
        "research",
        setup.question,
        "--llm",
        "none",
        *extra,
        "--out",
        out,
        cwd=setup.root,
    )
    return ResearchRun(run, out, out.with_suffix(".json"))


@pytest.fixture(scope="module")
def local_run(corpus_setup: CorpusSetup) -> ResearchRun:
    """``research QUESTION --llm none --corpus DIR`` (plus report preferences): the local
    corpus only."""
    return research_run(
        corpus_setup,
        "local",
        "--corpus",
        corpus_setup.data_dir / "corpus",
        "--audience",
        "general practitioners",
        "--length",
        "brief",
        "--focus",
        "older patients",
    )


def network_reachable() -> bool:
    try:
        socket.getaddrinfo("eutils.ncbi.nlm.nih.gov", 443)
    except OSError:
        return False
    return True


@pytest.fixture(scope="module")
def default_run(corpus_setup: CorpusSetup) -> ResearchRun:
    """``research QUESTION --llm none``: the local corpus plus the live sources, offline."""
    if network_reachable():
        pytest.skip("the network is reachable: the offline default run cannot be tested here")
    return research_run(corpus_setup, "default")


# --------------------------------------------------------------------------- helpers
def load_result(research: ResearchRun) -> RunResult:
    return RunResult.model_validate_json(research.json_path.read_text(encoding="utf-8"))


def squash(text: str) -> str:
    return " ".join(text.split())


def quotes(text: str) -> list[tuple[str, list[str]]]:
    """(quoted sentence, cited ids) of every marker of an extractive text: the sentence is
    the text since the previous marker, with the punctuation that follows the marker."""
    out: list[tuple[str, list[str]]] = []
    for paragraph in re.split(r"\n\s*\n", text):
        pos = 0
        for m in CITATION_MARKER.finditer(paragraph):
            after = paragraph[m.end() : m.end() + 1]
            end = after if after in {".", "!", "?"} else ""
            sentence = paragraph[pos : m.start()].strip() + end
            out.append((sentence, [i.strip() for i in m.group(1).split(",")]))
            pos = m.end() + len(end)
    return out


# --------------------------------------------------------------------------- corpus
def test_corpus_add_twice_adds_the_subset_once(corpus_setup: CorpusSetup) -> None:
    first, second, info = corpus_setup.first_add, corpus_setup.second_add, corpus_setup.info
    assert f"{SUBSET_SIZE} records read, {SUBSET_SIZE} added, 0 already" in first.output, (
        first.describe()
    )
    assert f"{SUBSET_SIZE} records read, 0 added, {SUBSET_SIZE} already" in second.output, (
        second.describe()
    )
    assert f"{SUBSET_SIZE} documents" in second.output
    assert info.returncode == 0, info.describe()
    assert f"{SUBSET_SIZE} documents" in squash(info.stdout), info.describe()
    assert "dense index faiss-ivf-sq8" in squash(info.stdout), info.describe()


BAD_LINES: dict[str, str] = {
    "invalid-json": '{"pmid": "123", "abstract_sections": [',
    "missing-pmid": json.dumps({"abstract": "A record without an identifier."}),
    "wrong-type": json.dumps({"pmid": "123", "mesh_terms": "not a list", "abstract": "x"}),
}


@pytest.mark.parametrize("bad", sorted(BAD_LINES))
def test_malformed_jsonl_is_refused_and_the_corpus_is_unchanged(
    corpus_setup: CorpusSetup, pubmedqa_dir: Path, tmp_path: Path, bad: str
) -> None:
    data_dir = tmp_path / "data"
    shutil.copytree(corpus_setup.data_dir / "corpus", data_dir / "corpus")
    # a valid record that is NOT in the corpus yet, then the bad line
    subset_pmids = {
        json.loads(line)["pmid"]
        for line in corpus_setup.subset.read_text(encoding="utf-8").splitlines()
    }
    with (pubmedqa_dir / "corpus.jsonl").open(encoding="utf-8") as handle:
        new_record = next(line for line in handle if json.loads(line)["pmid"] not in subset_pmids)
    path = tmp_path / "bad.jsonl"
    path.write_text(new_record.rstrip("\n") + "\n" + BAD_LINES[bad] + "\n", encoding="utf-8")

    run = run_cli("--data-dir", data_dir, "corpus", "add", path, cwd=tmp_path)
    assert run.returncode != 0, run.describe()
    assert "Error:" in run.output, run.describe()
    assert f"{path}:2:" in run.output, run.describe()
    assert "Traceback" not in run.stderr, run.describe()

    info = run_cli("--data-dir", data_dir, "corpus", "info", cwd=tmp_path)
    assert info.returncode == 0, info.describe()
    assert f"{SUBSET_SIZE} documents" in squash(info.stdout), info.describe()


# --------------------------------------------------------------------------- research
RUNS = ["local_run", "default_run"]


@pytest.mark.parametrize("which", RUNS)
def test_research_writes_a_report_with_every_section(
    request: pytest.FixtureRequest, which: str
) -> None:
    research: ResearchRun = request.getfixturevalue(which)
    run = research.run
    assert run.returncode == 0, run.describe()
    assert research.markdown_path.is_file(), run.describe()
    assert research.json_path.is_file(), run.describe()
    markdown = research.markdown_path.read_text(encoding="utf-8")
    positions = [markdown.find(f"\n{s}\n") for s in SECTIONS]
    assert all(p >= 0 for p in positions), [s for s, p in zip(SECTIONS, positions, strict=True)]
    assert positions == sorted(positions), "sections out of order"
    assert "done" in run.stderr
    assert "Run summary" in run.stderr

    result = load_result(research)
    assert markdown == result.report.to_markdown(), "report.md and report.json disagree"
    assert result.report.metadata.llm == "none"
    assert result.report.metadata.stop_reason is not None
    assert result.plan is not None
    assert result.assessments
    environment = result.report.metadata.environment
    assert environment is not None, "report.json records no software environment"
    assert environment.deepcritical == importlib.metadata.version("deepcritical")
    assert environment.embedding_model.endswith("all-MiniLM-L6-v2")
    assert set(environment.packages) >= SHAPING
    assert f"*Software: DeepCritical {environment.deepcritical}" in markdown


@pytest.mark.parametrize("which", RUNS)
def test_research_report_cites_only_collected_evidence(
    request: pytest.FixtureRequest, which: str
) -> None:
    research: ResearchRun = request.getfixturevalue(which)
    assert research.run.returncode == 0, research.run.describe()
    result = load_result(research)
    report = result.report
    by_id = {e.id: e for e in result.evidence}
    assert len(by_id) == len(result.evidence), "duplicate evidence ids"

    assert report.references
    for ref in report.references:
        assert ref.evidence_id in by_id, ref.evidence_id
        assert ref.citation == by_id[ref.evidence_id].citation
    referenced = {r.evidence_id for r in report.references}
    cited = [i for text in report.texts() for i in marker_ids(text)]
    assert cited, "the report cites nothing"
    assert set(cited) <= referenced
    for h in report.hypotheses_tested:
        assert set(h.supporting_evidence_ids + h.contradicting_evidence_ids) <= referenced
    assert citation_problems(report, by_id) == []
    assert report.metadata.citation_validation.valid

    markdown = research.markdown_path.read_text(encoding="utf-8")
    assert not re.search(r"\[E\d+", markdown), "an unrendered evidence marker in report.md"
    listing = markdown.split("\n## References\n", 1)[1].split("\n---\n", 1)[0]
    entries = re.findall(r"^(\d+)\. (.+)$", listing, flags=re.MULTILINE)
    assert [int(n) for n, _ in entries] == list(range(1, len(report.references) + 1))
    numbers = report.reference_numbers()
    for ref in report.references:
        line = entries[numbers[ref.evidence_id] - 1][1]
        assert ref.citation.pmid
        assert f"PMID: {ref.citation.pmid}" in line


@pytest.mark.parametrize("which", RUNS)
def test_extractive_quotes_are_verbatim_from_the_cited_evidence(
    request: pytest.FixtureRequest, which: str
) -> None:
    research: ResearchRun = request.getfixturevalue(which)
    assert research.run.returncode == 0, research.run.describe()
    result = load_result(research)
    report = result.report
    content = {e.id: squash(e.content) for e in result.evidence}
    # the "Study characteristics" table is built from the study records (report.appraisal),
    # each value proven verbatim there; the writer's quoted sentences are checked here
    written = [s.content for s in report.findings if s.heading != STUDY_TABLE_HEADING]
    texts = [report.executive_summary, *written, report.conclusion]
    checked = 0
    for text in texts:
        for sentence, ids in quotes(text):
            assert sentence, f"an empty quote in {text!r}"
            assert any(squash(sentence) in content[i] for i in ids), (sentence, ids)
            checked += 1
    assert checked >= 3, "too few quotes to check"


@pytest.mark.parametrize("which", RUNS)
def test_research_retrieves_and_cites_the_gold_abstract(
    request: pytest.FixtureRequest, corpus_setup: CorpusSetup, which: str
) -> None:
    research: ResearchRun = request.getfixturevalue(which)
    assert research.run.returncode == 0, research.run.describe()
    result = load_result(research)
    gold = corpus_setup.gold_pmid
    assert gold in {e.citation.pmid for e in result.evidence}
    assert gold in {r.citation.pmid for r in result.report.references}


def test_off_topic_records_are_in_the_json_and_the_run_export_with_their_reasons(
    corpus_setup: CorpusSetup, local_run: ResearchRun
) -> None:
    """Screening excludes records of the corpus on other topics from the report, but the
    report's JSON and ``runs export`` keep them, with the reason."""
    assert local_run.run.returncode == 0, local_run.run.describe()
    result = load_result(local_run)
    excluded = {e.id: e for e in result.evidence if e.screening == Screening.OFF_TOPIC}
    assert excluded, "the 100-record corpus should give some off-topic records"
    assert all(e.screening_reason.startswith("off-topic") for e in excluded.values())
    assert not set(excluded) & {r.evidence_id for r in result.report.references}
    assert result.report.metadata.off_topic_excluded == len(excluded)
    listed = run_cli("--data-dir", corpus_setup.data_dir, "runs", "list", cwd=corpus_setup.root)
    assert listed.returncode == 0, listed.describe()
    run_ids = re.findall(r"\b[0-9a-f]{32}\b", listed.stdout)
    out = corpus_setup.root / "export.json"
    exported: dict[str, Any] = {}
    for run_id in run_ids:  # the run whose sources are the JSON's evidence
        done = run_cli(
            "--data-dir", corpus_setup.data_dir, "runs", "export", run_id, "--out", out,
            cwd=corpus_setup.root,
        )  # fmt: skip
        assert done.returncode == 0, done.describe()
        exported = json.loads(out.read_text(encoding="utf-8"))
        saved = {s["citation_id"] for g in exported["sources_by_question"].values() for s in g}
        if saved == {e.id for e in result.evidence}:
            break
    else:
        pytest.fail(f"no exported run holds the report's evidence ({listed.stdout})")
    reasons = {x["citation_id"]: x["reason"] for x in exported["screening"]["excluded"]}
    assert reasons == {i: e.screening_reason for i, e in excluded.items()}
    assert exported["screening"]["counts"]["off_topic"] == len(excluded)


def test_corpus_option_searches_the_local_corpus_only(local_run: ResearchRun) -> None:
    assert local_run.run.returncode == 0, local_run.run.describe()
    result = load_result(local_run)
    meta = result.report.metadata
    assert meta.sources_searched == ["local"]
    assert result.plan is not None
    assert result.plan.preferences.model_dump() == {
        "audience": "general practitioners",
        "length": "brief",
        "focus": "older patients",
    }
    assert meta.source_failures == {}
    assert "unavailable" not in local_run.markdown_path.read_text(encoding="utf-8")


def test_default_sources_offline_still_report_and_say_what_failed(
    default_run: ResearchRun,
) -> None:
    run = default_run.run
    assert run.returncode == 0, run.describe()
    searching = re.search(r"Time per stage: .*?searching (\d+(?:\.\d+)?) s", run.output)
    assert searching is not None, run.describe()
    assert float(searching.group(1)) < OFFLINE_SEARCH_LIMIT, (
        f"the offline default run searched for {searching.group(1)} s: the live sources do "
        "not fail fast"
    )
    result = load_result(default_run)
    meta = result.report.metadata
    assert meta.sources_searched == ["local", *LIVE_SOURCES]
    assert sorted(meta.source_failures) == sorted(LIVE_SOURCES)
    assert {s for e in result.evidence for s in e.sources} == {"local"}

    markdown = default_run.markdown_path.read_text(encoding="utf-8")
    footer = markdown.rsplit("\n---\n", 1)[1]
    unavailable = [line for line in footer.splitlines() if "Sources unavailable" in line]
    assert unavailable, footer
    for name in LIVE_SOURCES:
        label = SOURCE_LABELS[name]
        assert f"{label}: " in unavailable[0], (label, unavailable[0])
        assert f"{label} unavailable" in result.report.methodology
        assert f"{label} unavailable" in run.output  # the warning events


# --------------------------------------------------------------------------- bad input
@dataclass(frozen=True)
class BadInput:
    args: Callable[[CorpusSetup, Path], list[str | Path]]
    message: str


def _with_corpus(setup: CorpusSetup, *args: str) -> list[str | Path]:
    return ["--corpus", setup.data_dir / "corpus", *args]


HUGE_QUESTION = ("Does metformin reduce the risk of cancer in type 2 diabetes? " * 100)[:4999] + "?"
BAD_INPUTS: dict[str, BadInput] = {
    "empty-question": BadInput(
        lambda s, _: ["", *_with_corpus(s, "--llm", "none")], "the research question is empty"
    ),
    "blank-question": BadInput(
        lambda s, _: [" \n\t ", *_with_corpus(s, "--llm", "none")],
        "the research question is empty",
    ),
    "huge-question": BadInput(
        lambda s, _: [HUGE_QUESTION, *_with_corpus(s, "--llm", "none")],
        "has 5000 characters; the limit is 2000",
    ),
    "bogus-model": BadInput(
        lambda s, _: [s.question, *_with_corpus(s, "--llm", "bogus:x")],
        "unknown model provider 'bogus'",
    ),
    "openai-without-key": BadInput(
        lambda s, _: [s.question, *_with_corpus(s, "--llm", "openai:gpt-4o")],
        "OPENAI_API_KEY",
    ),
    "bad-report-length": BadInput(
        lambda s, _: [s.question, *_with_corpus(s, "--llm", "none", "--length", "epic")],
        "--length epic: choose brief, standard or detailed",
    ),
    "local-without-corpus": BadInput(
        lambda s, _: [s.question, "--llm", "none", "--sources", "local"],
        "no local corpus in",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_exits_2_with_a_message_and_writes_no_report(
    corpus_setup: CorpusSetup, tmp_path: Path, case: str
) -> None:
    bad = BAD_INPUTS[case]
    data_dir = tmp_path / "empty" if case == "local-without-corpus" else corpus_setup.data_dir
    out = tmp_path / "out" / "report.md"
    args: list[Any] = ["--data-dir", data_dir, "research"]
    args += [*bad.args(corpus_setup, tmp_path), "--out", out]
    run = run_cli(*args, cwd=tmp_path)
    assert run.returncode == 2, run.describe()
    assert "Error:" in run.output, run.describe()
    assert bad.message in run.output, run.describe()
    assert "Traceback" not in run.stderr, run.describe()
    assert not out.exists()
    assert not out.with_suffix(".json").exists()
    assert not (tmp_path / "out").exists()
    if case == "local-without-corpus":
        assert not (data_dir / "corpus").exists(), "a refused run created a corpus"


@pytest.mark.parametrize(
    ("out_name", "message"),
    [
        ("report.json", "give the markdown path"),
        ("a-file/report.md", "is a file, not a directory"),
    ],
)
def test_bad_out_path_is_refused_before_any_work(
    corpus_setup: CorpusSetup, tmp_path: Path, out_name: str, message: str
) -> None:
    """--out report.json would be overwritten by the JSON; --out under a file cannot be
    written: both are refused at once (exit 2), not after the run."""
    (tmp_path / "a-file").write_text("not a directory", encoding="utf-8")
    out = tmp_path / out_name
    args: list[str | Path] = [
        "--data-dir",
        corpus_setup.data_dir,
        "research",
        corpus_setup.question,
    ]
    run = run_cli(*args, *_with_corpus(corpus_setup, "--llm", "none"), "--out", out, cwd=tmp_path)
    assert run.returncode == 2, run.describe()
    assert message in run.output, run.describe()
    assert "searching" not in run.output  # refused before the run started
    assert not out.exists()
