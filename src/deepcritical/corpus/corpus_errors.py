"""Errors raised by the local corpus (import and search).

Every error is a :class:`CorpusError`; its ``str()`` is a one-line message fit for the CLI.
"""

from __future__ import annotations

from pathlib import Path

ADD_HINT = "run `deepcritical corpus add FILE` first"


class CorpusError(Exception):
    """Base class of every local-corpus error."""


class CorpusFormatError(CorpusError, ValueError):
    """A corpus file cannot be imported: unknown suffix, bad JSON, missing PMID, bad XML.

    ``path`` is the file; ``line`` the 1-based line number when known (JSONL lines, XML parse
    errors that report one), else ``None``. The message names both.
    """

    def __init__(self, path: Path, reason: str, line: int | None = None) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


class CorpusNotFoundError(CorpusError):
    """The directory holds no corpus database (nothing was ever imported there)."""

    def __init__(self, directory: Path, detail: str = "no local corpus") -> None:
        super().__init__(f"{detail} in {directory}: {ADD_HINT}")
        self.directory = directory


class EmptyCorpusError(CorpusNotFoundError):
    """The corpus database exists but holds no document, so there is nothing to search."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory, detail="the local corpus is empty")


class CorpusMismatchError(CorpusError):
    """The corpus was embedded with another model than the embedder given to open it.

    Dense vectors from different models are not comparable; open the corpus with the model
    named in the message, or import the files again into a new directory.
    """
