"""The files a finished run offers for download: the report as markdown, as JSON (report,
plan, assessments and every evidence item), as a standalone sanitised HTML page, and its
references for reference managers (RIS, BibTeX, CSL-JSON)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from deepcritical.formats.references import EXPORT_FORMATS, EXPORT_SUFFIXES, export_references
from deepcritical.models import RunResult
from deepcritical.ui.render import standalone_html


def slug(text: str, max_chars: int = 48) -> str:
    """A file-name stem from ``text``: lower-case ASCII letters, digits and dashes."""
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s[:max_chars].rstrip("-") or "report"


def write_downloads(
    result: RunResult, directory: Path, scrub: Callable[[str], str] = str
) -> list[Path]:
    """Write ``<slug>.md``, ``<slug>.json``, ``<slug>.html``, ``<slug>.ris``, ``<slug>.bib``
    and ``<slug>.csl.json`` of ``result`` into ``directory`` (created if missing); return the
    six paths in that order.

    The last three are the report's references in report order as RIS, BibTeX and CSL-JSON
    (:func:`~deepcritical.formats.references.export_references`, references scope). The files
    hold what the report holds and nothing of the settings (the report metadata keeps only
    the model label); ``scrub`` is applied to each file's text before writing (the app passes
    a redaction of the run's API keys).
    """
    directory.mkdir(parents=True, exist_ok=True)
    stem = slug(result.report.title or result.report.research_question)
    markdown = result.report.to_markdown()
    md = directory / f"{stem}.md"
    md.write_text(scrub(markdown), encoding="utf-8")
    js = directory / f"{stem}.json"
    js.write_text(scrub(result.to_json()), encoding="utf-8")
    page = directory / f"{stem}.html"
    page.write_text(scrub(standalone_html(markdown, result.report.title)), encoding="utf-8")
    paths = [md, js, page]
    for fmt in EXPORT_FORMATS:
        path = directory / f"{stem}{EXPORT_SUFFIXES[fmt]}"
        path.write_text(scrub(export_references(result, fmt)), encoding="utf-8")
        paths.append(path)
    return paths
