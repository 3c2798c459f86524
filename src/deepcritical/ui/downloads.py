"""The files a finished run offers for download, and who may fetch them.

:func:`write_downloads` writes the report as markdown, as JSON (report, plan, assessments and
every evidence item), as a standalone sanitised HTML page, and its references for reference
managers (RIS, BibTeX, CSL-JSON); :func:`write_version_downloads` writes one version of a
revised report as markdown and JSON.

:class:`DownloadShelf` keeps each set of files (a run's downloads, a report version's, a
History export) in a directory of its own, named by a random token, and remembers the owner of
the run they came from. :class:`deepcritical.ui.download_route.DownloadRoute` serves them at
``dc/download/<token>/<file name>``, to that owner only: Gradio's own file route would serve
a cached file to anyone holding its URL, another signed-in user included. The shelf is held in
memory: after a restart its old links answer 404 (opening the run from History writes its
files again).
"""

from __future__ import annotations

import html
import re
import secrets
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from urllib.parse import quote

from deepcritical.formats.references import EXPORT_FORMATS, EXPORT_SUFFIXES, export_references
from deepcritical.models import ReportVersion, RunResult
from deepcritical.ui.render import standalone_html

DOWNLOAD_PATH = "dc/download"
"""The URL path of the shelf's files, relative to the app's root:
``dc/download/<token>/<file name>``."""
TOKEN = re.compile(r"[A-Za-z0-9_-]{16,64}")
"""A shelf token: :func:`secrets.token_urlsafe` (16 bytes, 22 characters)."""
NO_DOWNLOADS_HTML = '<p class="dc-empty">The downloads appear here when the run ends.</p>'
"""The Downloads tab before a run has its report."""
FORMAT_NAMES = {
    ".md": "Markdown",
    ".json": "JSON",
    ".html": "HTML",
    ".ris": "RIS",
    ".bib": "BibTeX",
    ".csl.json": "CSL-JSON",
}
"""The format each download suffix names, as the Downloads tab labels it."""


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


class DownloadShelf:
    """Download files, each set in ``<root>/<token>/`` and served only to its owner.

    Args:
        root: where the files are written (default: a new temporary directory).
    """

    def __init__(self, root: Path | None = None) -> None:
        self.root = root if root is not None else Path(tempfile.mkdtemp(prefix="deepcritical-ui-"))
        self.root.mkdir(parents=True, exist_ok=True)
        self._owners: dict[str, str | None] = {}

    def shelve(self, owner: str | None, write: Callable[[Path], Sequence[Path]]) -> list[Path]:
        """Call ``write(directory)`` on a fresh directory of the shelf and keep the files it
        returns for ``owner`` (``None``: the local user of a shared history); the paths.

        Raises:
            OSError: the directory or a file could not be written (nothing is kept).
        """
        token = secrets.token_urlsafe(16)
        directory = self.root / token
        paths = list(write(directory))
        self._owners[token] = owner
        return paths

    def url(self, path: Path) -> str:
        """The URL, relative to the app's root, of a shelved file ``path``:
        ``dc/download/<token>/<quoted name>``.

        Raises:
            ValueError: ``path`` is not a file of this shelf.
        """
        token = path.parent.name
        if path.parent.parent != self.root or token not in self._owners:
            raise ValueError(f"{path} is not on the download shelf")
        return f"{DOWNLOAD_PATH}/{token}/{quote(path.name)}"

    def find(self, token: str, name: str, owner: str | None) -> Path | None:
        """The shelved file ``name`` of ``token`` when ``owner`` owns it and it exists; else
        ``None`` (unknown token, another owner's, a name outside the directory)."""
        if not TOKEN.fullmatch(token) or token not in self._owners:
            return None
        if self._owners[token] != owner or "/" in name or name in {"", ".", ".."}:
            return None
        path = self.root / token / name
        return path if path.is_file() else None


def download_suffix(path: Path) -> str:
    """The suffix that names a download's format: ``.csl.json`` (CSL-JSON is JSON under a
    two-part suffix), else the last one (``.md``, ``.json``, ``.ris``...)."""
    return ".csl.json" if path.name.endswith(".csl.json") else path.suffix


def _link(shelf: DownloadShelf, path: Path) -> str:
    """One list item: the file's link, labelled by its format, and its name."""
    suffix = download_suffix(path)
    label = f"{FORMAT_NAMES.get(suffix, suffix.lstrip('.').upper())} ({suffix})"
    return (
        f'<li><a href="{html.escape(shelf.url(path))}" download="{html.escape(path.name)}">'
        f'{html.escape(label)}</a> <span class="dc-download-name">{html.escape(path.name)}'
        "</span></li>"
    )


def downloads_html(shelf: DownloadShelf, paths: Sequence[Path]) -> str:
    """The Downloads tab: links to the shelved files of :func:`write_downloads` (``paths``,
    in its order), the report's three formats, then its references' three; a note while
    there are none."""
    if not paths:
        return NO_DOWNLOADS_HTML
    report = "".join(_link(shelf, p) for p in paths[:3])
    references = "".join(_link(shelf, p) for p in paths[3:])
    out = f'<p class="dc-downloads-head">The report</p><ul class="dc-downloads">{report}</ul>'
    if references:
        out += (
            '<p class="dc-downloads-head">Its references, for reference managers</p>'
            f'<ul class="dc-downloads">{references}</ul>'
        )
    return out


def write_version_downloads(
    result: RunResult, version: ReportVersion, directory: Path, scrub: Callable[[str], str] = str
) -> list[Path]:
    """Write version ``version`` of the report of the run ``result`` into ``directory``
    (created if missing): ``<slug>-version-<n>.md``, its markdown, and
    ``<slug>-version-<n>.json``, the run's result with this version as its report (as
    ``deepcritical runs export --version N`` writes them); ``scrub`` is applied to each
    file's text. The two paths."""
    directory.mkdir(parents=True, exist_ok=True)
    report = version.report
    stem = f"{slug(report.title or report.research_question)}-version-{version.version}"
    md = directory / f"{stem}.md"
    md.write_text(scrub(report.to_markdown()), encoding="utf-8")
    js = directory / f"{stem}.json"
    js.write_text(scrub(result.model_copy(update={"report": report}).to_json()), encoding="utf-8")
    return [md, js]


def version_downloads_html(shelf: DownloadShelf, label: str, paths: Sequence[Path]) -> str:
    """The links to a report version's shelved files (``paths``), under ``label``."""
    links = "".join(_link(shelf, p) for p in paths)
    return (
        f'<p class="dc-downloads-head">Download {html.escape(label)}</p>'
        f'<ul class="dc-downloads">{links}</ul>'
    )


def export_html(shelf: DownloadShelf, path: Path) -> str:
    """History's export link: the shelved JSON export of a run (``path``)."""
    return f'<ul class="dc-downloads">{_link(shelf, path)}</ul>'
