"""Logging, in one place: every module's logger (:func:`get_logger`) and the one configuration
of a process (:func:`configure_logging`), which only its entry points call.

Every module logs through structlog, event-style: ``log.warning("source failed",
source="pubmed", reason=...)``. :func:`get_logger` gives it a :class:`Logger` that decides at
each call where the record goes:

- when structlog is configured (by an entry point through :func:`configure_logging`, or by
  an application that embeds DeepCritical), through that configuration;
- otherwise, as a library should, to the standard library's logger of the same name, the
  event and its fields rendered as one line (``source failed reason='HTTP 503'
  source=pubmed``): the application's own ``logging`` configuration decides what is shown
  and where, and without one Python shows warnings and errors on standard error. Nothing is
  written to standard output, and calling :func:`deepcritical.research` configures nothing.

:func:`configure_logging` configures both systems for a process: structlog hands its records
to the standard library, and one handler on the root logger writes every record, DeepCritical's
and third-party libraries' (httpx, chromadb, gradio, DBOS...), to standard error through the
same structlog renderer. Levels are the standard library's, per logger, so
``show_level("deepcritical.ui", "WARNING")`` lets the web app's warnings through while the
rest stays at errors. Libraries that configure their own handlers when they start (uvicorn,
started by Gradio) keep their own format.

Tracebacks are rendered plainly, without local variables: a frame's locals may hold an API key
or a URL with a password.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog
from structlog.typing import Processor

__all__ = [
    "HANDLER_NAME",
    "NOISY_LIBRARIES",
    "OWN_HANDLER_LIBRARIES",
    "Level",
    "Logger",
    "configure_logging",
    "get_logger",
    "show_level",
]

Level = int | str
"""A standard library level: ``logging.DEBUG`` (10) or a name such as ``"WARNING"``."""

NOISY_LIBRARIES = ("bm25s", "chromadb", "httpx", "sentence_transformers", "transformers")
"""Libraries whose loggers get ``library_level`` from :func:`configure_logging`."""

OWN_HANDLER_LIBRARIES = ("dbos",)
"""Libraries that add a console handler of their own (and stop propagating) unless their
logger already has a handler: :func:`configure_logging` gives each a
:class:`logging.NullHandler`, so their records reach the root handler like any other."""

HANDLER_NAME = "deepcritical"
"""The name of the root logger's handler that :func:`configure_logging` installs (and replaces
when called again)."""

_TRACEBACKS = structlog.dev.plain_traceback


class _Stderr:
    """Writes to whatever :data:`sys.stderr` is at the time of writing (a test runner or
    ``typer.testing.CliRunner`` replaces it after the handler is made)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


_RENDER_FOR_LIBRARY = structlog.dev.ConsoleRenderer(
    colors=False, pad_event_to=0, exception_formatter=_TRACEBACKS
)
"""Unconfigured structlog: the event and its fields (and a traceback asked for with
``exc_info``) as the standard library record's message; its level, logger name and place in
the code are the record's own."""


class Logger:
    """A module's logger: ``debug``, ``info``, ``warning``, ``error`` and ``exception`` (an
    error with the traceback of the exception being handled), each taking the event (a short
    text) and its fields as keywords (``exc_info=True`` adds the current traceback). Where the
    record goes is decided at each call, as the module docstring says."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name
        """The logger's name: the module's ``__name__``."""

    def _log(self, level: int, method: str, event: str, fields: dict[str, Any]) -> None:
        if structlog.is_configured():
            getattr(structlog.get_logger(self.name), method)(event, **fields)
            return
        logger = logging.getLogger(self.name)
        if logger.isEnabledFor(level):
            message = _RENDER_FOR_LIBRARY(logger, method, {"event": event, **fields})
            # the record's place in the code: the caller of debug(), info()...
            logger.log(level, message, stacklevel=3)

    def debug(self, event: str, **fields: Any) -> None:
        """Log ``event`` at DEBUG."""
        self._log(logging.DEBUG, "debug", event, fields)

    def info(self, event: str, **fields: Any) -> None:
        """Log ``event`` at INFO."""
        self._log(logging.INFO, "info", event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        """Log ``event`` at WARNING."""
        self._log(logging.WARNING, "warning", event, fields)

    def error(self, event: str, **fields: Any) -> None:
        """Log ``event`` at ERROR."""
        self._log(logging.ERROR, "error", event, fields)

    def exception(self, event: str, **fields: Any) -> None:
        """Log ``event`` at ERROR with the traceback of the exception being handled."""
        self._log(logging.ERROR, "exception", event, {"exc_info": True, **fields})


def get_logger(name: str) -> Logger:
    """The logger of the module ``name`` (pass ``__name__``)."""
    return Logger(name)


def _level(level: Level) -> int:
    """``level`` as a number; a name is looked up in :mod:`logging` (``ValueError`` when it
    names no level)."""
    if isinstance(level, int):
        return level
    number = logging.getLevelName(level.upper())
    if not isinstance(number, int):
        raise ValueError(f"unknown log level {level!r}")
    return number


def configure_logging(level: Level = "ERROR", *, library_level: Level = "WARNING") -> None:
    """Configure logging for this process (entry points only: a library call never does).

    structlog hands its records to the standard library; the root logger gets ``level`` and
    one handler (named :data:`HANDLER_NAME`) writing every record to standard error through
    one structlog renderer: time, level, event, logger name and fields (colours when standard
    error is a terminal). The loggers of :data:`NOISY_LIBRARIES` get ``library_level``;
    those of :data:`OWN_HANDLER_LIBRARIES` a null handler so they propagate to the root.

    Calling it again replaces the previous configuration (one handler, never two).

    Args:
        level: the root level, e.g. ``"DEBUG"`` (the CLI's ``--verbose``) or ``"ERROR"``.
        library_level: the level of :data:`NOISY_LIBRARIES`.

    Raises:
        ValueError: a level name names no level.
    """
    root_level, libraries = _level(level), _level(library_level)
    shared: list[Processor] = [
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="%Y-%m-%d %H:%M:%S"),
    ]
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.PositionalArgumentsFormatter(),
            structlog.processors.StackInfoRenderer(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    colors = sys.stderr.isatty()
    handler = logging.StreamHandler(_Stderr())
    handler.set_name(HANDLER_NAME)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.dev.ConsoleRenderer(colors=colors, exception_formatter=_TRACEBACKS),
            ],
            foreign_pre_chain=shared,
        )
    )
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == HANDLER_NAME]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(root_level)
    for name in NOISY_LIBRARIES:
        logging.getLogger(name).setLevel(libraries)
    for name in OWN_HANDLER_LIBRARIES:
        own = logging.getLogger(name)
        if not any(isinstance(h, logging.NullHandler) for h in own.handlers):
            own.addHandler(logging.NullHandler())


def show_level(name: str, level: Level) -> None:
    """Let the logger ``name`` (and those under it) show records at ``level`` and above even
    when the configured level is stricter; a looser level already set is kept.

    Raises:
        ValueError: ``level`` names no level.
    """
    logger, number = logging.getLogger(name), _level(level)
    if logger.getEffectiveLevel() > number:
        logger.setLevel(number)
