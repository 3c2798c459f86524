"""The files a finished run offers for download: the report as markdown, as JSON (report,
plan, assessments and every evidence item) and as a standalone sanitised HTML page."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from deepcritical.models import RunResult
from deepcritical.ui.render import standalone_html


def slug(text: str, max_chars: int = 48) -> str:
    """A file-name stem from ``text``: lower-case ASCII letters, digits and dashes."""
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s[:max_chars].rstrip("-") or "report"


def write_downloads(
    result: RunResult, directory: Path, scrub: Callable[[str], str] = str
) -> list[Path]:
    """Write ``<slug>.md``, ``<slug>.json`` and ``<slug>.html`` of ``result`` into
    ``directory`` (created if missing); return the three paths in that order.

    The files hold what the report holds and nothing of the settings (the report metadata
    keeps only the model label); ``scrub`` is applied to each file's text before writing
    (the app passes a redaction of the run's API keys).
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
    return [md, js, page]
