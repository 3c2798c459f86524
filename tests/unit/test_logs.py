"""One logging system (issue 31, item 7): every module of ``src`` logs through structlog by
:func:`deepcritical.logs.get_logger`, and only :mod:`deepcritical.logs` touches the standard
library's ``logging`` or structlog itself. Entry points configure logging
(:func:`~deepcritical.logs.configure_logging`: one renderer on standard error for DeepCritical's
records and third-party libraries' alike, idempotent); :func:`deepcritical.research` never
does: without a configuration its records go to the standard library's loggers (nothing on
standard output), with one they follow it, and it is left as it was.

Each test starts unconfigured and leaves logging as it found it (``tests/conftest.py``)."""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import pytest
import structlog
from structlog.testing import LogCapture
from typer.testing import CliRunner

from deepcritical.api import research
from deepcritical.cli.main import app
from deepcritical.config import Settings
from deepcritical.logs import (
    HANDLER_NAME,
    NOISY_LIBRARIES,
    OWN_HANDLER_LIBRARIES,
    configure_logging,
    get_logger,
    show_level,
)
from deepcritical.sources.base import SearchSource
from deepcritical.testing.embedders import HashingEmbedder
from deepcritical.testing.failing_sources import FailingSource
from tests.unit.test_iterative_orchestrator import CountingSource

SRC = Path(__file__).resolve().parents[2] / "src" / "deepcritical"
CONFIGURATION_MODULE = SRC / "logs.py"
LOGGING_PACKAGES = {"logging", "structlog"}


def _our_handlers() -> list[logging.Handler]:
    return [h for h in logging.getLogger().handlers if h.get_name() == HANDLER_NAME]


def imports_of(path: Path) -> set[str]:
    """The top-level packages ``path`` imports (absolute imports only)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_only_the_configuration_module_imports_logging_or_structlog() -> None:
    modules = sorted(SRC.rglob("*.py"))
    assert len(modules) > 100  # the whole package was read
    offenders = {
        str(path.relative_to(SRC)): sorted(imports_of(path) & LOGGING_PACKAGES)
        for path in modules
        if path != CONFIGURATION_MODULE and imports_of(path) & LOGGING_PACKAGES
    }
    assert offenders == {}
    assert imports_of(CONFIGURATION_MODULE) >= LOGGING_PACKAGES


def test_configuring_twice_is_configuring_once() -> None:
    configure_logging("INFO", library_level="ERROR")
    first = structlog.get_config()
    processors = [type(p) for p in first["processors"]]
    configure_logging("INFO", library_level="ERROR")
    again = structlog.get_config()
    assert len(_our_handlers()) == 1
    assert [type(p) for p in again["processors"]] == processors
    assert again["logger_factory"].__class__ is first["logger_factory"].__class__
    assert again["wrapper_class"] is first["wrapper_class"]
    assert logging.getLogger().level == logging.INFO
    assert {logging.getLogger(name).level for name in NOISY_LIBRARIES} == {logging.ERROR}
    for name in OWN_HANDLER_LIBRARIES:
        handlers = logging.getLogger(name).handlers
        assert sum(isinstance(h, logging.NullHandler) for h in handlers) == 1


def test_our_records_and_libraries_records_come_out_one_way_on_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging("INFO")
    get_logger("deepcritical.sources.pubmed").warning("source failed", source="pubmed")
    get_logger("deepcritical.api").debug("not shown at INFO")
    logging.getLogger("httpx").warning("HTTP Request: %s %s", "GET", "/esearch")
    logging.getLogger("httpx").info("not shown: a noisy library at WARNING")
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 2, err
    ours, theirs = lines
    assert "[warning" in ours
    assert "source failed" in ours
    assert "[deepcritical.sources.pubmed]" in ours
    assert "source=pubmed" in ours
    assert "[warning" in theirs
    assert "HTTP Request: GET /esearch" in theirs
    assert "[httpx]" in theirs
    assert "not shown" not in err


def test_a_traceback_is_shown_once_and_without_local_variables(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging("INFO")
    api_key = "sk-local-secret"
    try:
        raise RuntimeError("model call failed")
    except RuntimeError:
        get_logger("deepcritical.llm.runner").exception("agent model call failed", role="judge")
    err = capsys.readouterr().err
    assert err.count("Traceback (most recent call last)") == 1
    assert "RuntimeError: model call failed" in err
    assert api_key not in err


def test_unconfigured_records_go_to_the_standard_library_and_never_to_stdout(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    assert not structlog.is_configured()
    log = get_logger("deepcritical.sources.web")
    with caplog.at_level(logging.INFO, logger="deepcritical"):
        log.info("web result dropped", reason="private address")
        log.debug("not shown at INFO")
        try:
            raise ValueError("bad page")
        except ValueError:
            log.exception("extraction failed", url="https://example.org/")
    assert [(r.name, r.levelno) for r in caplog.records] == [
        ("deepcritical.sources.web", logging.INFO),
        ("deepcritical.sources.web", logging.ERROR),
    ]
    dropped, failed = (r.getMessage() for r in caplog.records)
    assert dropped == "web result dropped reason='private address'"
    assert failed.startswith("extraction failed url=https://example.org/\nTraceback")
    assert failed.count("ValueError: bad page") == 1  # in the message only, not added again
    assert caplog.records[1].exc_info is None
    assert {r.filename for r in caplog.records} == {"test_logs.py"}  # the caller's place
    assert capsys.readouterr().out == ""
    assert not structlog.is_configured()


def test_show_level_lets_one_part_through_and_keeps_a_looser_level(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging("ERROR")
    show_level("deepcritical.ui", "WARNING")
    show_level("deepcritical.ui", "ERROR")  # stricter than what is set: kept at WARNING
    get_logger("deepcritical.ui.launch").warning("every visitor shares one history")
    get_logger("deepcritical.api").warning("not shown: errors only")
    err = capsys.readouterr().err
    assert "every visitor shares one history" in err
    assert "not shown" not in err
    with pytest.raises(ValueError, match="unknown log level"):
        show_level("deepcritical.ui", "LOUD")


@pytest.mark.parametrize(
    ("options", "level", "library_level"),
    [([], logging.ERROR, logging.WARNING), (["--verbose"], logging.DEBUG, logging.DEBUG)],
)
def test_the_command_line_configures_logging_with_its_verbosity(
    tmp_path: Path, options: list[str], level: int, library_level: int
) -> None:
    result = CliRunner().invoke(app, [*options, "--data-dir", str(tmp_path), "runs", "list"])
    assert result.exit_code == 0, result.output
    assert structlog.is_configured()
    assert len(_our_handlers()) == 1
    assert logging.getLogger().level == level
    assert {logging.getLogger(name).level for name in NOISY_LIBRARIES} == {library_level}


async def _run_with_a_failing_source() -> str:
    """A one-round offline run whose second source fails (the search logs a warning); the
    type of its last event."""
    settings = Settings(persist_runs=False, sources=["local"], max_rounds=1)
    sources: list[SearchSource] = [CountingSource(), FailingSource()]
    last = ""
    async for event in research(
        "Does metformin help?", settings, sources=sources, embedder=HashingEmbedder()
    ):
        last = event.type
    return last


async def test_research_configures_nothing_and_writes_nothing_to_stdout(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    with caplog.at_level(logging.WARNING, logger="deepcritical"):
        assert await _run_with_a_failing_source() == "done"
    assert not structlog.is_configured()
    assert capsys.readouterr().out == ""
    assert ("deepcritical.agents.search", logging.WARNING) in [
        (r.name, r.levelno) for r in caplog.records if r.getMessage().startswith("source failed")
    ]
    assert root.handlers == handlers
    assert root.level == level


async def test_research_leaves_the_callers_configuration_as_it_was() -> None:
    """An application that configured structlog and the standard library's logging before
    calling ``research`` finds both unchanged after it, with the run's records in its own
    structlog configuration."""
    captured = LogCapture()
    structlog.configure(processors=[captured], cache_logger_on_first_use=False)
    root = logging.getLogger()
    own = logging.StreamHandler()
    root.addHandler(own)
    root.setLevel(logging.CRITICAL)
    before = structlog.get_config()
    processors = list(before["processors"])
    try:
        assert await _run_with_a_failing_source() == "done"
        after = structlog.get_config()
        assert after["processors"] == processors
        assert {k: v for k, v in after.items() if k != "processors"} == {
            k: v for k, v in before.items() if k != "processors"
        }
        assert own in root.handlers
        assert _our_handlers() == []
        assert root.level == logging.CRITICAL
    finally:
        root.removeHandler(own)
    failures = [e for e in captured.entries if e["event"] == "source failed"]
    assert failures
    assert failures[0]["source"] == "broken"
