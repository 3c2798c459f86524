"""Readers for the files ``deepcritical corpus add`` imports, yielding :class:`PubmedArticle`.

Supported formats, chosen by file suffix (case-insensitive):

- ``.jsonl`` / ``.jsonl.gz``: one JSON object per line in the PubMedQA corpus format
  (``../shared/data/pubmedqa/corpus.jsonl``, from PubMedQA, Jin et al. 2019, MIT licence)::

      {"pmid": "1571683", "year": 1992, "mesh_terms": ["Humans", ...],
       "abstract_sections": [{"label": "OBJECTIVE", "text": "..."}, ...]}

  Optional keys: ``title`` (PubMedQA records have none), ``authors`` (list of names),
  ``journal``, ``doi``, ``pmcid``, ``date``, ``keywords``, ``publication_types``, and
  ``abstract`` (a plain string, used when ``abstract_sections`` is absent). Other keys are
  ignored. Blank lines are skipped.
- ``.xml`` / ``.xml.gz``: PubMed efetch responses or annual baseline / update files
  (``<PubmedArticleSet>``), streamed by :func:`deepcritical.formats.pubmed_xml.iter_pubmed_updates`
  with PMID versions and ``DeleteCitation`` blocks (:func:`read_pubmed_updates`).
- ``.nxml``, and ``.xml`` files whose root element is ``<article>``: one JATS full-text
  article (PMC / Europe PMC), read whole by :func:`read_full_text` into its record and its
  passages (:func:`deepcritical.formats.jats.read_jats`).

Readers stream (constant memory per record) and raise :class:`CorpusFormatError`, naming the
file and the line, on the first bad record. They never write anything: the caller
(:meth:`deepcritical.corpus.index.LocalCorpus.add_file`) reads a whole file once to validate it
before importing, so a bad line aborts the import with nothing written. A JSONL reader given
``on_bad_line`` hands it each bad line's error instead and goes on with the next line
(``deepcritical corpus add --skip-bad-lines``); a corrupt gzip stream or malformed XML still
raises, since nothing after it can be read.
"""

from __future__ import annotations

import glob
import gzip
import io
import json
import re
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from deepcritical.corpus.corpus_errors import CorpusFormatError
from deepcritical.formats.jats import JatsError, is_jats_file, parse_jats
from deepcritical.formats.pubmed_xml import (
    AbstractSection,
    PubmedArticle,
    PubmedUpdate,
    PubmedXMLError,
    VersionedArticle,
    iter_pubmed_updates,
)
from deepcritical.models import Passage

__all__ = [
    "SUPPORTED_SUFFIXES",
    "BadLineHandler",
    "CorpusFormatError",
    "corpus_file_kind",
    "corpus_files",
    "read_corpus_file",
    "read_full_text",
    "read_jsonl",
    "read_pubmed_updates",
    "read_pubmed_xml",
]

SUPPORTED_SUFFIXES = (".jsonl", ".jsonl.gz", ".xml", ".xml.gz", ".nxml")
"""File name endings :func:`read_corpus_file` accepts."""

BadLineHandler = Callable[[CorpusFormatError], None]
"""Called with the error of each bad JSONL line that is skipped (its ``line`` is set)."""

_PMID = re.compile(r"^\d+$")
_LIST_FIELDS = ("mesh_terms", "authors", "keywords", "publication_types")
_OPTIONAL_STR_FIELDS = ("journal", "doi", "pmcid", "date")


def corpus_file_kind(path: Path) -> str:
    """``"jsonl"``, ``"xml"`` (PubMed XML) or ``"jats"`` (a full-text article) for a supported
    file: by name, and for an existing ``.xml`` file by its root element (``<article>`` is
    JATS; a name alone is PubMed XML).

    Raises:
        CorpusFormatError: the name ends with none of :data:`SUPPORTED_SUFFIXES`.
        OSError: a ``.xml`` file cannot be opened.
    """
    name = path.name.lower()
    if name.endswith((".jsonl", ".jsonl.gz")):
        return "jsonl"
    if name.endswith(".nxml") or (name.endswith(".xml") and path.is_file() and is_jats_file(path)):
        return "jats"
    if name.endswith((".xml", ".xml.gz")):
        return "xml"
    raise CorpusFormatError(
        path, f"unsupported file type; expected one of {', '.join(SUPPORTED_SUFFIXES)}"
    )


def corpus_files(paths: Iterable[Path]) -> list[Path]:
    """The files to import for ``paths``, in a stable order: each file as given; for each
    directory the files directly in it whose names end with one of
    :data:`SUPPORTED_SUFFIXES` (subdirectories are not entered); for a glob pattern not
    expanded by the shell (``'dir/*.xml.gz'``) the supported files it matches. A directory's or
    pattern's files are sorted by name, so PubMed's baseline files come before the update
    files that follow them in numbering (``pubmed25n0001`` ... ``pubmed25n1275``). A file named
    twice is imported once.

    Raises:
        CorpusFormatError: a directory or pattern matches no supported file.
        FileNotFoundError: a path that is neither a file, a directory nor a pattern.
        OSError: a directory cannot be listed.
    """
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.is_file() and _supported(p))
        elif path.exists():
            out.append(path)
            continue
        elif glob.has_magic(str(path)):
            matches = (Path(m) for m in glob.glob(str(path)))
            found = sorted((p for p in matches if p.is_file() and _supported(p)), key=_by_name)
        else:
            raise FileNotFoundError(f"no such file or directory: {path}")
        if not found:
            raise CorpusFormatError(
                path, f"no file to import; expected names ending {', '.join(SUPPORTED_SUFFIXES)}"
            )
        out += found
    return list(dict.fromkeys(out))


def _supported(path: Path) -> bool:
    return path.name.lower().endswith(SUPPORTED_SUFFIXES)


def _by_name(path: Path) -> tuple[str, str]:
    return path.name, str(path)


def read_corpus_file(
    path: Path, *, on_bad_line: BadLineHandler | None = None
) -> Iterator[PubmedArticle]:
    """Stream the records of a corpus file, dispatching on its suffix (see module docs).

    ``on_bad_line``: for JSONL files, called with the error of each bad line, which is then
    skipped (see :func:`read_jsonl`); ignored for XML files.

    Raises:
        CorpusFormatError: unknown suffix, a bad record (the message names file and line;
            for JSONL only without ``on_bad_line``), malformed XML, or a corrupt gzip stream.
        OSError: the file cannot be opened or read.
    """
    kind = corpus_file_kind(path)
    if kind == "jsonl":
        return read_jsonl(path, on_bad_line=on_bad_line)
    if kind == "jats":
        return iter([read_full_text(path)[0]])
    return read_pubmed_xml(path)


def read_full_text(path: Path) -> tuple[PubmedArticle, list[Passage]]:
    """One JATS article: its record (title, abstract, ids, authors, journal, year, integrity
    flags) and its full text as passages (:meth:`deepcritical.formats.jats.JatsArticle.passages`).

    Raises:
        CorpusFormatError: the file is not a readable JATS article (truncated, malformed,
            entity declarations refused) or it has no PMID (the corpus keys records by PMID).
        OSError: the file cannot be read.
    """
    try:
        article = parse_jats(path.read_bytes())
    except JatsError as exc:
        raise CorpusFormatError(path, str(exc)) from exc
    if not article.pmid:
        raise CorpusFormatError(path, "the article has no PMID (<article-id pub-id-type=pmid>)")
    sections = [AbstractSection(text=article.abstract)] if article.abstract else []
    record = PubmedArticle(
        pmid=article.pmid,
        title=article.title,
        abstract_sections=sections,
        authors=article.authors,
        journal=article.journal,
        year=article.year,
        doi=article.doi,
        pmcid=article.pmcid,
        integrity_flags=article.integrity_flags,
    )
    return record, article.passages()


def read_pubmed_xml(path: Path) -> Iterator[PubmedArticle]:
    """Stream the ``<PubmedArticle>`` records of a PubMed XML file (``.gz`` read transparently;
    ``DeleteCitation`` blocks and PMID versions ignored: :func:`read_pubmed_updates` has them).

    Raises:
        CorpusFormatError: malformed XML (wraps :class:`PubmedXMLError`, keeping its line
            number when the parser gives one).
    """
    for item in read_pubmed_updates(path):
        if isinstance(item, VersionedArticle):
            yield item.article


def read_pubmed_updates(path: Path) -> Iterator[PubmedUpdate]:
    """Stream the records (with their PMID versions) and ``DeleteCitation`` blocks of a PubMed
    baseline or update file (:func:`~deepcritical.formats.pubmed_xml.iter_pubmed_updates`).

    Raises:
        CorpusFormatError: malformed XML or a corrupt gzip stream (line number kept).
        OSError: the file cannot be opened.
    """
    try:
        yield from iter_pubmed_updates(path)
    except PubmedXMLError as exc:
        line = getattr(exc.__cause__, "lineno", None)
        raise CorpusFormatError(path, str(exc), line if isinstance(line, int) else None) from exc


def read_jsonl(path: Path, *, on_bad_line: BadLineHandler | None = None) -> Iterator[PubmedArticle]:
    """Stream the records of a PubMedQA-format JSONL file (``.gz`` when the name says so).

    Each line is decoded on its own (UTF-8; a byte-order mark on the first line is allowed),
    so one line of other bytes is one bad line.

    Args:
        path: the file.
        on_bad_line: ``None``: the first bad line raises. Else it is called with each bad
            line's :class:`CorpusFormatError` (``line`` = its 1-based number) and the line is
            skipped.

    Raises:
        CorpusFormatError: (without ``on_bad_line``) a line that is not UTF-8, not JSON, not
            an object, has no usable ``pmid`` (digits, as a string or an integer) or has
            fields of the wrong type; (always) a corrupt or truncated gzip stream.
        OSError: the file cannot be opened.
    """
    with _open_binary(path) as handle:
        lineno = 0
        try:
            for lineno, raw in enumerate(handle, start=1):
                try:
                    record = _jsonl_record(path, lineno, raw)
                except CorpusFormatError as exc:
                    if on_bad_line is None:
                        raise
                    on_bad_line(exc)
                    continue
                if record is not None:
                    yield record
        except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
            raise CorpusFormatError(path, f"corrupt gzip file: {exc}", lineno + 1) from exc


def _open_binary(path: Path) -> io.BufferedIOBase:
    if path.name.lower().endswith(".gz"):
        return gzip.open(path, "rb")
    return path.open("rb")


def _jsonl_record(path: Path, lineno: int, raw: bytes) -> PubmedArticle | None:
    """The record of one JSONL line (``None`` for a blank line)."""
    try:
        line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
    except UnicodeDecodeError as exc:
        raise CorpusFormatError(path, f"not UTF-8 text ({exc.reason})", lineno) from exc
    if not line.strip():
        return None
    try:
        parsed = json.loads(line)
    except json.JSONDecodeError as exc:
        raise CorpusFormatError(path, f"invalid JSON: {exc.msg}", lineno) from exc
    if not isinstance(parsed, dict):
        raise CorpusFormatError(
            path, f"expected a JSON object, found {type(parsed).__name__}", lineno
        )
    pmid = parsed.get("pmid")
    if isinstance(pmid, int) and not isinstance(pmid, bool):
        pmid = str(pmid)
    if not isinstance(pmid, str) or not _PMID.match(pmid.strip()):
        what = "missing" if pmid in (None, "") else f"not a PMID (digits): {repr(pmid)[:40]}"
        raise CorpusFormatError(path, f"'pmid' is {what}", lineno)
    try:
        return PubmedArticle.model_validate(_article_fields(parsed, pmid.strip()))
    except (ValidationError, TypeError, ValueError) as exc:
        raise CorpusFormatError(path, f"bad record for PMID {pmid}: {_short(exc)}", lineno) from exc


def _article_fields(raw: dict[str, Any], pmid: str) -> dict[str, Any]:
    sections = raw.get("abstract_sections")
    if sections is None:
        abstract = raw.get("abstract")
        if isinstance(abstract, str) and abstract.strip():
            sections = [{"label": None, "text": abstract}]
        else:
            sections = []
    if not isinstance(sections, list):
        raise ValueError("'abstract_sections' must be a list")
    fields: dict[str, Any] = {
        "pmid": pmid,
        "title": raw.get("title") or "",
        "abstract_sections": [AbstractSection.model_validate(s) for s in sections],
        "year": raw.get("year"),
    }
    for key in _LIST_FIELDS:
        fields[key] = raw.get(key) or []
    for key in _OPTIONAL_STR_FIELDS:
        fields[key] = raw.get(key)
    return fields


def _short(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        errs = exc.errors()
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'record'}: {e['msg']}" for e in errs[:3]
        )
    return str(exc)
