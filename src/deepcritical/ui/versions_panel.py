"""Versions of the report in the Report tab: *Revise* (an instruction and a button), a version
picker that switches the report shown, a download of the chosen version (markdown and JSON)
and a diff by section between two chosen versions.

The panel is open whenever the page shows a finished run with its report (a live run that
ended, or one opened from History: it follows the follow-up panel's run,
:mod:`deepcritical.ui.follow_up_panel`), closed otherwise (instruction box and buttons
disabled, a note saying why).

*Revise* calls :func:`deepcritical.api.revise` (rules, no model: "shorter", "for patients",
"focus on X", "only randomised trials"...) for the caller's run only
(:meth:`~deepcritical.ui.auth.Access.owner`); the new version is kept with the run, shown in
the report area, chosen in the picker, and compared with the one before it. An instruction
that is not understood shows :class:`~deepcritical.writing.revision_instructions.RevisionError`'s
message (what works offline) as one line; nothing is raised to the page.

A version is rendered as the run's report is (sanitised markdown, citations linked:
:func:`~deepcritical.ui.citation_links.report_html`); its files go to the download shelf for
the caller only (:func:`~deepcritical.ui.downloads.write_version_downloads`); the diff is
:mod:`deepcritical.ui.section_diff` (escaped text, ``<ins>``/``<del>``, sanitised).
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gradio as gr

from deepcritical.config import Settings
from deepcritical.logs import get_logger
from deepcritical.models import ReportVersion, ReportVersionInfo, RunResult, error_text
from deepcritical.state import StateError
from deepcritical.ui import history as hist
from deepcritical.ui.auth import Access, SignInRequired
from deepcritical.ui.citation_links import report_html
from deepcritical.ui.downloads import (
    DownloadShelf,
    version_downloads_html,
    write_version_downloads,
)
from deepcritical.ui.section_diff import diff_html, section_changes
from deepcritical.ui.session import redact, secret_values
from deepcritical.writing.revision_instructions import RevisionError

log = get_logger(__name__)

__all__ = [
    "NO_RUN_NOTE",
    "ReviseFn",
    "VersionHandlers",
    "VersionsPanel",
    "closed_versions",
    "default_revise",
    "version_label",
    "versions_panel",
]

ReviseFn = Callable[..., Awaitable[ReportVersion]]
"""``revise(run_id, instruction, settings, owner=...)``, as :func:`deepcritical.api.revise`."""
NO_RUN_NOTE = (
    "**Versions of the report** open once a run has finished with its report: research a "
    "question above, or open a finished run from History."
)
VERSION_ERRORS = (SignInRequired, RevisionError, StateError)
"""What the panel's handlers show as their own message: bad input, another owner's or an
unknown run, a run without its report, an unknown version, a revision kept meanwhile."""
PanelValues = tuple[Any, ...]
"""The values of :meth:`VersionsPanel.outputs`."""
_Read = tuple[RunResult, ReportVersion, list[ReportVersionInfo]]


def default_revise() -> ReviseFn:
    """:func:`deepcritical.api.revise` (imported on first use: it loads the writing code)."""
    from deepcritical.api import revise

    return revise


def version_label(info: ReportVersionInfo) -> str:
    """The picker's label of a version: "Version 1 (original)", "Version 2: shorter"."""
    if info.version == 1:
        return "Version 1 (original)"
    return f"Version {info.version}: {info.instruction}"


def _ready_note(run_id: str) -> str:
    return (
        f"**Revise the report** of run `{html.escape(run_id)}` from its own evidence (no new "
        'search): "shorter", "longer", "for patients", "for clinicians", "focus on X", '
        '"only randomised trials"... Every version is kept; pick one to show and download '
        "it, or compare two."
    )


def _line(text: str, css: str) -> str:
    role = "alert" if css == "dc-error" else "status"
    return f'<p class="{css}" role="{role}">{html.escape(text, quote=False)}</p>'


def _picker(infos: Sequence[ReportVersionInfo], value: int) -> Any:
    choices = [(version_label(i), i.version) for i in infos]
    return gr.update(choices=choices, value=value, interactive=True)


def closed_versions() -> PanelValues:
    """The panel with no finished run shown: no run id, everything disabled, a note."""
    off = gr.update(interactive=False)
    empty = gr.update(choices=[], value=None, interactive=False)
    box = gr.update(value="", interactive=False)
    return None, NO_RUN_NOTE, box, off, "", empty, "", empty, empty, off, ""


@dataclass(frozen=True)
class VersionsPanel:
    """The panel's components (:func:`versions_panel`); ``run_id`` is the finished run shown
    (``None``: none)."""

    run_id: gr.State
    note: gr.Markdown
    instruction: gr.Textbox
    revise_btn: gr.Button
    status: gr.HTML
    version: gr.Dropdown
    downloads: gr.HTML
    diff_from: gr.Dropdown
    diff_to: gr.Dropdown
    compare_btn: gr.Button
    diff: gr.HTML

    def outputs(self) -> list[Any]:
        """Every component, in the order of :func:`closed_versions`' values."""
        return [
            self.run_id,
            self.note,
            self.instruction,
            self.revise_btn,
            self.status,
            self.version,
            self.downloads,
            self.diff_from,
            self.diff_to,
            self.compare_btn,
            self.diff,
        ]


def versions_panel() -> VersionsPanel:
    """Build the panel (closed) inside the current Blocks, with the report."""
    with gr.Group(elem_id="dc-versions-panel"):
        note = gr.Markdown(NO_RUN_NOTE, elem_id="dc-versions-note")
        with gr.Row():
            instruction = gr.Textbox(
                label='Revise the report (e.g. "shorter", "for patients"; Enter revises)',
                lines=1,
                max_lines=2,
                interactive=False,
                scale=4,
                elem_id="dc-revise-instruction",
            )
            revise_btn = gr.Button(
                "Revise", variant="primary", interactive=False, scale=1, elem_id="dc-revise"
            )
        with gr.Row():
            version = gr.Dropdown(
                label="Version shown", choices=[], interactive=False, elem_id="dc-version"
            )
            downloads = gr.HTML(elem_id="dc-version-downloads")
        with gr.Row():
            diff_from = gr.Dropdown(
                label="Compare", choices=[], interactive=False, elem_id="dc-diff-from"
            )
            diff_to = gr.Dropdown(label="with", choices=[], interactive=False, elem_id="dc-diff-to")
            compare_btn = gr.Button("Compare", interactive=False, elem_id="dc-compare")
    status = gr.HTML(elem_id="dc-versions-status")
    diff = gr.HTML(elem_id="dc-version-diff")
    return VersionsPanel(
        gr.State(None),
        note,
        instruction,
        revise_btn,
        status,
        version,
        downloads,
        diff_from,
        diff_to,
        compare_btn,
        diff,
    )


@dataclass(frozen=True)
class VersionHandlers:
    """The panel's handlers: :meth:`versions_shown` opens it on the run shown,
    :meth:`revise` makes a version, :meth:`pick_version` shows one, :meth:`compare_versions`
    compares two. ``opener`` opens the run store (as History's), ``shelf`` holds the version
    downloads, ``revise_fn`` is :func:`deepcritical.api.revise` (tests pass one with a test
    embedder)."""

    opener: hist.StoreOpener
    settings: Settings
    access: Access
    shelf: DownloadShelf
    revise_fn: ReviseFn

    def _scrub(self, text: str) -> str:
        return redact(text, secret_values(self.settings))

    def _read(self, run_id: str, owner: str | None, number: int | None) -> _Read | None:
        """``owner``'s run ``run_id``: its result, its version ``number`` and the list of its
        versions; ``None`` without a report."""
        store = self.opener(self.settings)
        try:
            result = store.result(run_id, owner=owner)
            if result is None:
                return None
            chosen = store.report_version(run_id, number, owner=owner)
            infos = store.report_versions(run_id, owner=owner)
        finally:
            store.close()
        return None if chosen is None else (result, chosen, infos)

    def _reports(self, run_id: str, owner: str | None, numbers: Sequence[int]) -> list[str]:
        """The markdown of versions ``numbers`` of ``owner``'s run ``run_id``'s report."""
        store = self.opener(self.settings)
        try:
            found = [store.report_version(run_id, n, owner=owner) for n in numbers]
        finally:
            store.close()
        if any(v is None for v in found):
            raise RevisionError("this run has no report, so it has no versions to compare")
        return [v.report.to_markdown() for v in found if v is not None]

    def _shown(
        self, result: RunResult, chosen: ReportVersion, owner: str | None
    ) -> tuple[str, str]:
        """Version ``chosen`` of the run ``result``: the report area's HTML and the links to
        its files (shelved for ``owner``)."""
        report = self._scrub(report_html(result.model_copy(update={"report": chosen.report})))
        paths = self.shelf.shelve(
            owner, lambda folder: write_version_downloads(result, chosen, folder, self._scrub)
        )
        label = version_label(chosen.info())
        return report, version_downloads_html(self.shelf, label, paths)

    def _diff(self, run_id: str, owner: str | None, old: int, new: int) -> str:
        before, after = self._reports(run_id, owner, [old, new])
        caption = f"Version {old} → version {new}"
        return self._scrub(diff_html(section_changes(before, after), caption))

    def _failed(self, exc: Exception, doing: str) -> str:
        """The status line of a failure: the message of a known one, else what went wrong
        (keys redacted)."""
        if isinstance(exc, VERSION_ERRORS):
            return _line(str(exc), "dc-error")
        log.warning("report version action failed", action=doing, error=type(exc).__name__)
        return _line(f"The report could not be {doing}: {self._scrub(error_text(exc))}", "dc-error")

    def _open(self, run_id: str, owner: str | None) -> PanelValues:
        read = self._read(run_id, owner, 1)
        if read is None:
            return closed_versions()
        result, chosen, infos = read
        _, files = self._shown(result, chosen, owner)
        latest = infos[-1].version
        on = gr.update(interactive=True)
        return (
            run_id,
            _ready_note(run_id),
            gr.update(value="", interactive=True),
            on,
            "",
            _picker(infos, 1),
            files,
            _picker(infos, max(latest - 1, 1)),
            _picker(infos, latest),
            on,
            "",
        )

    async def versions_shown(
        self,
        run_id: str | None,
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
    ) -> PanelValues:
        """The panel for the run the page shows (``run_id``, the follow-up panel's: ``None``
        when none): open on its versions, version 1 (the report shown) chosen; else closed."""
        if not run_id:
            return closed_versions()
        try:
            owner = self.access.owner(request, profile)
            opened: PanelValues = await asyncio.to_thread(self._open, run_id, owner)
        # shown as a closed panel, never raised: the report itself is shown already
        except Exception as exc:  # noqa: BLE001 (see above)
            log.warning("report versions could not be listed", error=type(exc).__name__)
            return closed_versions()
        return opened

    def _after_revise(self, run_id: str, owner: str | None, number: int) -> tuple[Any, ...]:
        read = self._read(run_id, owner, number)
        if read is None:
            raise RevisionError("the run's report went away meanwhile")
        result, chosen, infos = read
        report, files = self._shown(result, chosen, owner)
        diff = self._diff(run_id, owner, number - 1, number)
        return report, files, infos, diff

    async def revise(
        self,
        run_id: str | None,
        instruction: str,
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
    ) -> tuple[Any, ...]:
        """Revise the report of the run shown at ``instruction``: ``(report, status line,
        instruction box, picker, downloads, compare-from, compare-with, diff)``, the new
        version shown, chosen, offered for download and compared with the one before; on bad
        input or a failure only the status line changes (one line saying why)."""
        skip = tuple(gr.skip() for _ in range(8))
        if not run_id:
            return (skip[0], _line(NO_RUN_NOTE.replace("**", ""), "dc-error"), *skip[2:])
        try:
            owner = self.access.owner(request, profile)
            made = await self.revise_fn(run_id, instruction, self.settings, owner=owner)
            report, files, infos, diff = await asyncio.to_thread(
                self._after_revise, run_id, owner, made.version
            )
        # shown in the page, never raised: a failure must not look like a hung page
        except Exception as exc:  # noqa: BLE001 (see above)
            return (skip[0], self._failed(exc, "revised"), *skip[2:])
        n = made.version
        done = f"Version {n} made ({made.instruction}) and shown above, compared below."
        return (
            report,
            _line(done, "dc-versions-done"),
            "",
            _picker(infos, n),
            files,
            _picker(infos, n - 1),
            _picker(infos, n),
            diff,
        )

    async def pick_version(
        self,
        run_id: str | None,
        number: int | None,
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
    ) -> tuple[Any, str, Any]:
        """Show version ``number`` of the run shown: ``(report, status line, downloads)``."""
        if not run_id or number is None:
            return gr.skip(), "", gr.skip()
        try:
            owner = self.access.owner(request, profile)
            read = await asyncio.to_thread(self._read, run_id, owner, int(number))
            if read is None:
                raise RevisionError("this run has no report, so it has no versions")
            result, chosen, _ = read
            report, files = await asyncio.to_thread(self._shown, result, chosen, owner)
        except Exception as exc:  # noqa: BLE001 - shown as a line (see revise)
            return gr.skip(), self._failed(exc, "shown"), gr.skip()
        shown = f"Showing {version_label(chosen.info())}."
        return report, _line(shown, "dc-versions-done"), files

    async def compare_versions(
        self,
        run_id: str | None,
        old: int | None,
        new: int | None,
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
    ) -> tuple[str, Any]:
        """What changed, section by section, from version ``old`` to ``new`` of the run
        shown: ``(status line, diff)``."""
        if not run_id or old is None or new is None:
            return _line("Choose two versions to compare.", "dc-error"), gr.skip()
        try:
            owner = self.access.owner(request, profile)
            diff = await asyncio.to_thread(self._diff, run_id, owner, int(old), int(new))
        except Exception as exc:  # noqa: BLE001 - shown as a line (see revise)
            return self._failed(exc, "compared"), gr.skip()
        return "", diff
