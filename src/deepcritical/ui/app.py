"""The Gradio web app: :func:`build_app` returns the ``gr.Blocks`` that ``deepcritical
serve`` and the Space's root ``app.py`` launch.

One research run per click, streamed: every :class:`ResearchEvent` is folded into a
:class:`~deepcritical.ui.progress_view.ProgressView` and the panels are re-rendered; the last
event gives the report, the evidence table, the hypotheses and the downloads. Each run is a
fresh :func:`deepcritical.api.research` call (own evidence store, own events), so sessions
never share evidence. The queue runs ``concurrency`` research runs at once and shows the
others their position; *Stop* cancels the running generator, which closes the run.

The same Blocks expose ``deep_research`` (:mod:`deepcritical.ui.mcp_tool`) as an API
endpoint and, with ``launch(mcp_server=True)``, as an MCP tool; the UI's own handlers are
private (they take the session's API key and must not become tools).

*Stop* keeps the run's progress panel and run id and shows it "Stopped"
(:mod:`deepcritical.ui.stop_resume`); *Resume* then continues that run. The sources ticked by
default are the ones that can work (:mod:`deepcritical.ui.source_check`: the local corpus, and
the live sources that answered a short check at start); the examples are questions the
bundled corpus answers (:mod:`deepcritical.ui.examples`). History lists the caller's runs
when the tab opens; a row click opens the whole run in the Report, Evidence, Hypotheses and
Downloads tabs.

With ``Settings.jobs`` (``DEEPCRITICAL_JOBS=1``, ``deepcritical serve --jobs``) runs are
durable jobs instead (:mod:`deepcritical.ui.jobs_mode`): *Research* and ``deep_research``
submit a job and follow its event log through the same rendering, *Stop* also cancels the
job in its worker, and opening a queued or running run in History follows it live until it
ends; closing the page or restarting the app stops only the following. *Resume* still
continues a stopped run in this process.

Being private hides a handler from the API page and the MCP tools, but anyone can still call
it by its index through ``/gradio_api/queue/join``. So every handler that records or reads
runs (research, History's refresh, open, export, resume) takes the request and asks
:meth:`~deepcritical.ui.auth.Access.owner` who the caller is: it works on that owner's runs
only, and with sign-in on, a request without a signed-in user gets nothing.
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import gradio as gr
from gradio.events import api as gr_api
from pydantic import SecretStr, ValidationError

from deepcritical.config import Settings, redact_model_spec
from deepcritical.events import ResearchEvent
from deepcritical.logs import get_logger
from deepcritical.models import RunResult, error_text
from deepcritical.state import RunNotFoundError, RunRecord, RunStore
from deepcritical.ui import history as hist
from deepcritical.ui.answer import (
    CARD_CSS,
    answer_card_html,
    answer_panel,
    blank_answer,
    chart_update,
    design_frame,
    year_frame,
)
from deepcritical.ui.auth import Access, SignInRequired
from deepcritical.ui.citation_links import CITATION_CSS, report_html
from deepcritical.ui.downloads import (
    NO_DOWNLOADS_HTML,
    DownloadShelf,
    downloads_html,
    export_html,
    write_downloads,
)
from deepcritical.ui.evidence_table import evidence_panel, evidence_view
from deepcritical.ui.examples import choose_examples
from deepcritical.ui.flow_diagram import flow_html
from deepcritical.ui.jobs_mode import (
    FOLLOWED_STATUSES,
    FOLLOWERS,
    JOB_KEY_REFUSED,
    DbosJobs,
    JobBackend,
    job_research,
    reattach_events,
)
from deepcritical.ui.mcp_tool import ResearchFn, default_research, make_deep_research_tool
from deepcritical.ui.progress_view import ProgressView, fail, fold
from deepcritical.ui.render import (
    hypotheses_html,
    progress_html,
)
from deepcritical.ui.session import (
    SessionChoice,
    SettingsError,
    mode_notice,
    redact,
    secret_values,
    source_choices,
    visitor_settings,
)
from deepcritical.ui.source_check import (
    SourceCheck,
    default_sources,
    sources_note,
    sources_on_md,
)
from deepcritical.ui.stop_resume import RunWatch, resumable, stopped_html
from deepcritical.ui.streams import closing
from deepcritical.ui.theme import THEME_CSS

log = get_logger(__name__)

MODEL_CHOICES = [
    "none",
    "openai:gpt-4o",
    "openai:gpt-4o-mini",
    "anthropic:claude-sonnet-4-5",
    "openai-compatible:llama3.1@http://localhost:11434/v1",
]
CSS = """
.dc-evidence { border-collapse: collapse; width: 100%; font-size: 0.9em; }
.dc-evidence td, .dc-evidence th { border: 1px solid #d1d5db; padding: 4px 6px; vertical-align: top; }
.dc-evidence caption { caption-side: top; text-align: left; color: #4b5563; padding: 2px 0; }
.dc-evidence tr.dc-off-topic td { text-decoration: line-through; text-decoration-color: #9ca3af; }
.dc-evidence .dc-id { color: #6b7280; font-size: 0.85em; }
.dc-hyp-quote { font-size: 0.9em; color: #374151; }
"""  # noqa: E501
CSS += CARD_CSS + CITATION_CSS
CSS += THEME_CSS
STOPPED_RUN_CSS = """
:is(#dc-notice, #dc-progress, #dc-report, #dc-evidence, #dc-hypotheses, #dc-downloads,
    #dc-answer-card, #dc-chart-years, #dc-chart-designs, #dc-flow)
  [data-testid="status-tracker"]:has(.error) { display: none; }
"""
"""A run's handlers never raise: what goes wrong is shown in the progress panel (and a
stopped run says "Stopped" there). Gradio still marks the outputs of an event that *Stop*
cancelled with an "Error" overlay when the cancellation races the run's last update; on
these outputs that overlay can only be such an artefact, so it is not shown."""
CSS += STOPPED_RUN_CSS
SOURCE_WAIT = 3.0
"""Seconds the page load waits for the source check started with the app."""

Outputs = tuple[str, str, str, str, str, str, str, Any, Any, str]
"""(notice, progress, report, evidence, hypotheses, download links, answer card, evidence by
year, evidence by study design, flow of records); ``evidence`` is the Evidence tab's table,
carrying its rows for sorting and filtering
(:func:`~deepcritical.ui.evidence_table.evidence_view`)."""
RunOutputs = tuple[Any, ...]
""":data:`Outputs`, then the run's :class:`ProgressView` (session state, for *Stop*), the
update of the *Resume* button and that of the *Stop* button (enabled while the run runs)."""
Watcher = Callable[
    [AsyncIterator[ResearchEvent], Settings, str | None, gr.Request | None],
    AsyncIterator[RunOutputs],
]
"""A run's events, its settings, owner and request -> its outputs, as the app's ``watched``
streams them (*Stop* in the request's session ends them)."""


SHARED_HISTORY_NOTE = (
    "History is shared: this server has no sign-in, so every visitor sees, opens and resumes "
    "every run (a single-user install)."
)
PRIVATE_HISTORY_NOTE = "Your runs are kept for this browser only (no sign-in: a cookie)."


def history_mode_md(access: Access) -> str:
    """Whose runs History shows, in one line: the shared history of a single-user install,
    this browser's own (no sign-in), or the signed-in user's (nothing to say then)."""
    if access.required:
        return ""
    return PRIVATE_HISTORY_NOTE if access.private else SHARED_HISTORY_NOTE


def _notice_md(settings: Settings) -> str:
    return mode_notice(settings) or f"Model: `{html.escape(redact_model_spec(settings.llm))}`"


async def stream_run(
    events: AsyncIterator[ResearchEvent],
    settings: Settings,
    shelf: DownloadShelf,
    owner: str | None,
) -> AsyncIterator[Outputs]:
    """Fold ``events`` into UI outputs, one tuple per event (the generator behind *Run* and
    *Resume*); the final tuple carries the report, evidence, hypotheses and the links to its
    download files, written to ``shelf`` for ``owner`` (the run's, who alone may fetch them).

    Exceptions of the run are shown in the progress panel, never raised: a failed run must
    not look like a hung page. Every API key of ``settings`` is redacted from what is shown
    and from the downloads.
    """
    secrets = secret_values(settings)

    def out(
        view: ProgressView,
        report: str,
        evidence: str,
        hypotheses: str,
        files: str,
        answer: tuple[str, Any, Any, str] | None = None,
    ) -> Outputs:
        def r(text: str) -> str:
            return redact(text, secrets)

        card, years, designs, flow = answer or blank_answer()
        return (
            notice,
            r(progress_html(view)),
            r(report),
            r(evidence),
            r(hypotheses),
            files,
            r(card),
            chart_update(years),
            chart_update(designs),
            r(flow),
        )

    notice = _notice_md(settings)
    view = ProgressView(max_rounds=settings.max_rounds)
    report = '<p class="dc-empty">The report appears here when the run ends.</p>'
    evidence = '<p class="dc-empty">No evidence yet.</p>'
    hypotheses = '<p class="dc-empty">No hypothesis yet.</p>'
    files = NO_DOWNLOADS_HTML
    yield out(view, report, evidence, hypotheses, files)
    result: RunResult | None = None
    try:
        async with closing(events) as stream:
            async for event in stream:
                view = fold(view, event)
                if event.type == "done" and event.result is not None:
                    result = event.result
                    break
                yield out(view, report, evidence, hypotheses, files)
    except Exception as exc:  # noqa: BLE001 - shown to the user (keys redacted by out())
        log.warning("run failed", error=type(exc).__name__)
        view = fail(view, error_text(exc))
    if result is None:
        if not view.finished:
            view = fail(view, "the run ended without a report")
        yield out(view, report, evidence, hypotheses, files)
        return
    report = report_html(result)
    evidence = evidence_view(result)
    hypotheses = hypotheses_html(result)
    paths = await asyncio.to_thread(
        shelf.shelve,
        owner,
        lambda directory: write_downloads(result, directory, lambda text: redact(text, secrets)),
    )
    answer = (
        answer_card_html(result),
        year_frame(result),
        design_frame(result),
        flow_html(result.report.metadata.flow),
    )
    yield out(view, report, evidence, hypotheses, downloads_html(shelf, paths), answer)


def _choice(
    llm: str,
    api_key: str,
    sources: Sequence[str] | None,
    max_rounds: float | None,
    max_sources: float | None,
    orchestrator: str | None,
) -> SessionChoice:
    orch: Literal["iterative", "magentic"] | None = (
        "magentic" if orchestrator == "magentic" else "iterative" if orchestrator else None
    )
    return SessionChoice(
        llm=llm or "",
        api_key=SecretStr(api_key) if api_key else None,
        sources=list(sources or []),
        max_rounds=int(max_rounds) if max_rounds else None,
        max_sources=int(max_sources) if max_sources else None,
        orchestrator=orch,
    )


def _corpus_exists(settings: Settings) -> bool:
    from deepcritical.corpus.index import LocalCorpus

    return LocalCorpus.exists(settings.resolved_corpus_dir)


def _blank(view: ProgressView, settings: Settings) -> Outputs:
    card, _, _, flow = blank_answer()
    hidden = chart_update(None)
    notice, progress, files = _notice_md(settings), progress_html(view), NO_DOWNLOADS_HTML
    return notice, progress, "", "", "", files, card, hidden, hidden, flow


class RunStreams:
    """The app's run streams: :meth:`watched` renders a run's events for its session, and
    :meth:`ask_stop` ends the stream of a session whose *Stop* was pressed.

    Args:
        shelf: where finished runs' download files go.
    """

    def __init__(self, shelf: DownloadShelf) -> None:
        self.shelf = shelf
        self._stop_requests: set[str] = set()

    def ask_stop(self, request: gr.Request | None) -> None:
        """*Stop* was pressed in ``request``'s session: its run shows nothing more but
        "Stopped" (Gradio's cancellation of the run's handler may come after the run's next
        update, which would otherwise replace "Stopped")."""
        session = getattr(request, "session_hash", None)
        if session:
            self._stop_requests.add(session)

    async def watched(
        self,
        events: AsyncIterator[ResearchEvent],
        run_settings: Settings,
        owner: str | None,
        request: gr.Request | None,
    ) -> AsyncIterator[RunOutputs]:
        """:func:`stream_run` of ``owner``'s run, each tuple followed by the run's view (kept
        in the session's state for *Stop*), the *Resume* button (shown when the run ended
        without its report) and the *Stop* button (enabled while it runs). After
        :meth:`ask_stop` for the request's session, one last tuple shows "Stopped" and the
        run is closed."""
        session = getattr(request, "session_hash", None) or ""
        self._stop_requests.discard(session)  # a new run of the session
        secrets = secret_values(run_settings)
        watch = RunWatch(run_settings.max_rounds, lambda text: redact(text, secrets))
        outputs = stream_run(watch.watch(events), run_settings, self.shelf, owner)
        async with closing(outputs) as stream:
            async for out in stream:
                view = watch.shown
                if session and session in self._stop_requests:
                    self._stop_requests.discard(session)
                    skipped = [gr.skip() for _ in out]
                    skipped[1] = stopped_html(view)
                    yield (*skipped, view, gr.update(visible=resumable(view)), _stop_off())
                    return  # closes stream_run, which closes the run
                yield (
                    *out,
                    view,
                    gr.update(visible=view.finished and resumable(view)),
                    gr.update(interactive=not view.finished),  # Stop, while the run runs
                )


def build_app(
    settings: Settings,
    *,
    research_fn: ResearchFn | None = None,
    store_opener: hist.StoreOpener = RunStore.open,
    concurrency: int = 2,
    downloads_dir: Path | None = None,
    downloads: DownloadShelf | None = None,
    access: Access | None = None,
    source_check: SourceCheck | None = None,
    jobs: JobBackend | None = None,
) -> gr.Blocks:
    """The web app for runs with ``settings`` (the server's defaults: model, keys from the
    environment, sources, data dir); each session may override model, key, sources, depth
    and orchestrator for its own runs.

    Args:
        settings: the server's settings.
        research_fn: ``research(question, settings, context=..., owner=...)`` (default
            :func:`deepcritical.api.research`); tests pass scripted ones.
        store_opener: opens the durable run store for the History tab, once per action
            (default ``RunStore.open``); tests pass one that returns a fake store.
        concurrency: research runs executed at once; further clicks wait in the queue and
            see their position. In jobs mode the handlers only follow runs (the workers'
            concurrency limits the runs): at least ``FOLLOWERS`` (32) of them at once.
        downloads_dir: where each run's download files are written (default: a temporary
            directory); ignored when ``downloads`` is given.
        downloads: the shelf of download files (default: one over ``downloads_dir``);
            :func:`deepcritical.ui.launch.launch` must be given the same one, which serves
            each file to its run's owner only.
        access: the deployment's sign-in (default: none, every visitor is the local user);
            with Hugging Face sign-in the page gets a "Sign in with Hugging Face" button.
        source_check: the reachability check of the live sources (default: one over
            ``settings``, started at the first page load; ``deepcritical serve`` starts it
            with the app).
        jobs: the job engine when ``settings.jobs`` is on (default
            :class:`~deepcritical.ui.jobs_mode.DbosJobs`); tests pass fakes. In jobs mode
            *Research* and ``deep_research`` submit jobs and follow them (``research_fn`` is
            not used), *Stop* cancels the job, and History follows a queued or running run
            live (:mod:`deepcritical.ui.jobs_mode`).
    """
    backend, research_fn = _run_mode(settings, jobs, research_fn)
    run_fn: ResearchFn = research_fn if research_fn is not None else default_research()
    sign_in = access or Access()
    shelf = downloads if downloads is not None else DownloadShelf(downloads_dir)
    deep_research = make_deep_research_tool(settings, research_fn, sign_in)
    check = source_check or SourceCheck(settings)
    corpus_exists = _corpus_exists(settings)

    streams = RunStreams(shelf)
    watched = streams.watched

    async def run(
        question: str,
        context: str,
        llm: str,
        api_key: str,
        sources: list[str],
        max_rounds: float,
        max_sources: float,
        orchestrator: str,
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
    ) -> AsyncIterator[RunOutputs]:
        try:
            owner = sign_in.owner(request, profile)
            _check_job_key(backend, api_key)
            choice = _choice(llm, api_key, sources, max_rounds, max_sources, orchestrator)
            per_run = await visitor_settings(settings, choice)
            del api_key, choice  # the key lives on only inside per_run, as a SecretStr
        except (SettingsError, SignInRequired) as exc:
            view = fail(ProgressView(), str(exc))
            yield (*_blank(view, settings), None, gr.update(visible=False), _stop_off())
            return
        events = run_fn(question, per_run, context=context.strip() or None, owner=owner)
        async for out in watched(events, per_run, owner, request):
            yield out

    async def resume_run(
        run_id: str, request: gr.Request | None = None, profile: gr.OAuthProfile | None = None
    ) -> AsyncIterator[RunOutputs]:
        """Continue the caller's stored run ``run_id`` (stopped, failed or interrupted) to its
        report, streamed like a new run."""
        try:
            owner = sign_in.owner(request, profile)
        except SignInRequired as exc:
            view = fail(ProgressView(), str(exc))
            yield (*_blank(view, settings), None, gr.update(visible=False), _stop_off())
            return
        if not run_id.strip():
            view = fail(ProgressView(), "No run to resume: choose a run in History first.")
            yield (*_blank(view, settings), None, gr.update(visible=False), _stop_off())
            return
        events = hist.resume_events(run_id, settings, owner)
        async for out in watched(events, settings, owner, request):
            yield out

    async def resume_stopped(
        view: ProgressView | None,
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
    ) -> AsyncIterator[RunOutputs]:
        run_id = view.run_id if view is not None and view.run_id else ""
        async for out in resume_run(run_id, request, profile):
            yield out

    async def stop(
        view: ProgressView | None,
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
    ) -> tuple[str, Any, ProgressView | None]:
        """*Stop*: the run's panel as it was, "Stopped" (its handler is cancelled); in jobs
        mode the run's job is cancelled in its worker too. It answers outside the queue (a
        full queue cannot hold it back) and after :data:`STOP_SETTLE_SECONDS`, so that an
        update the cancelled run had already sent cannot land after it and hide "Stopped"."""
        streams.ask_stop(request)
        await asyncio.to_thread(_cancel_job, backend, view, settings, sign_in, request, profile)
        await asyncio.sleep(STOP_SETTLE_SECONDS)
        return stopped_html(view), gr.update(visible=resumable(view)), view

    async def load_sources() -> tuple[Any, str, str]:
        reachable = await asyncio.to_thread(check.wait, SOURCE_WAIT)
        ticked = default_sources(settings.sources, reachable, corpus_exists)
        return (
            gr.update(value=ticked),
            sources_note(reachable, corpus_exists),
            sources_on_md(ticked),
        )

    demo = gr.Blocks(title="DeepCritical", analytics_enabled=False)
    with demo:
        gr.Markdown(
            "# DeepCritical\nBiomedical deep research: plans, searches the literature, tests "
            "hypotheses and writes a report whose every citation is checked against the "
            "evidence collected. A run takes minutes."
        )
        if sign_in.mode == "huggingface":
            gr.LoginButton(elem_id="dc-login")
        notice = gr.Markdown(_notice_md(settings), elem_id="dc-notice")
        gr.Markdown(history_mode_md(sign_in), elem_id="dc-history-mode")
        watch_state = gr.State(None)
        with gr.Row():
            with gr.Column(scale=4):
                question = gr.Textbox(
                    label="Research question (Enter starts the research)",
                    lines=1,
                    max_lines=6,
                    elem_id="dc-question",
                )
                context = gr.Textbox(
                    label="Context (optional)", lines=1, max_lines=4, elem_id="dc-context"
                )
            with gr.Column(scale=1, min_width=160):
                run_btn = gr.Button("Research", variant="primary", elem_id="dc-run")
                stop_btn = gr.Button("Stop", variant="stop", interactive=False, elem_id="dc-stop")
                resume_btn = gr.Button(
                    "Resume", variant="secondary", visible=False, elem_id="dc-resume"
                )
        sources_on = gr.Markdown(
            sources_on_md(default_sources(settings.sources, None, corpus_exists)),
            elem_id="dc-sources-on",
        )
        gr.Examples(
            examples=[[q] for q in choose_examples(corpus_exists)],
            inputs=[question],
            label="Examples (answered from the local corpus)" if corpus_exists else "Examples",
        )
        with gr.Accordion("Settings", open=False):
            with gr.Row():
                llm = gr.Dropdown(
                    choices=list(dict.fromkeys([redact_model_spec(settings.llm), *MODEL_CHOICES])),
                    value=redact_model_spec(settings.llm),
                    allow_custom_value=True,
                    label="Model (provider:model)",
                    elem_id="dc-llm",
                )
                api_key = gr.Textbox(
                    label="API key (kept in this browser session only)",
                    type="password",
                    elem_id="dc-api-key",
                )
                orchestrator = gr.Radio(
                    ["iterative", "magentic"],
                    value=settings.orchestrator,
                    label="Orchestrator",
                    elem_id="dc-orchestrator",
                )
            with gr.Row():
                with gr.Column():
                    sources = gr.CheckboxGroup(
                        source_choices(),
                        value=default_sources(settings.sources, None, corpus_exists),
                        label="Sources",
                        elem_id="dc-sources",
                    )
                    sources_info = gr.Markdown(
                        sources_note(None, corpus_exists),
                        elem_id="dc-sources-note",
                        elem_classes=["dc-sources-note"],
                    )
                max_rounds = gr.Slider(
                    1, 20, value=settings.max_rounds, step=1, label="Max rounds", elem_id="dc-rnd"
                )
                max_sources = gr.Slider(
                    1,
                    300,
                    value=settings.max_sources,
                    step=1,
                    label="Max sources",
                    elem_id="dc-max-sources",
                )
        progress = gr.HTML(progress_html(ProgressView()), elem_id="dc-progress")
        with gr.Tabs():
            with gr.Tab("Report"):
                answer = answer_panel()
                report = gr.HTML(elem_id="dc-report")
            with gr.Tab("Evidence"):
                evidence = evidence_panel().table
            with gr.Tab("Hypotheses"):
                hypotheses = gr.HTML(elem_id="dc-hypotheses")
            with gr.Tab("Downloads"):
                files = gr.HTML(NO_DOWNLOADS_HTML, elem_id="dc-downloads")
            outputs = [notice, progress, report, evidence, hypotheses, files, *answer.outputs()]
            run_outputs = [*outputs, watch_state, resume_btn, stop_btn]
            hist_resume, hist_open = _history_tab(
                store_opener,
                settings,
                shelf,
                outputs,
                run_outputs,
                sign_in,
                resume_run,
                watched,
                backend,
            )
        inputs = [question, context, llm, api_key, sources, max_rounds, max_sources, orchestrator]
        run_event = run_btn.click(run, inputs, run_outputs, api_visibility="private")
        submit_event = question.submit(run, inputs, run_outputs, api_visibility="private")
        resume_event = resume_btn.click(
            resume_stopped, [watch_state], run_outputs, api_visibility="private"
        )
        stop_event = stop_btn.click(
            stop,
            [watch_state],
            [progress, resume_btn, watch_state],
            # in jobs mode History's open follows a running job: Stop cancels it too
            cancels=[run_event, submit_event, resume_event, hist_resume]
            + (hist_open if backend is not None else []),
            queue=False,
            api_visibility="private",
        )
        _show_the_answer_when_done([run_event, submit_event, resume_event, hist_resume])
        stop_event.then(_stop_off, None, stop_btn, api_visibility="private")
        demo.load(load_sources, None, [sources, sources_info, sources_on], api_visibility="private")
        sources.change(sources_on_md, sources, sources_on, queue=False, api_visibility="private")
        gr_api(deep_research, api_name="deep_research")
    # in jobs mode a handler only follows a run: the workers limit the runs themselves
    demo.queue(
        default_concurrency_limit=concurrency if backend is None else max(concurrency, FOLLOWERS)
    )
    return demo


def _run_mode(
    settings: Settings, jobs: JobBackend | None, research_fn: ResearchFn | None
) -> tuple[JobBackend | None, ResearchFn | None]:
    """``(job backend, research function)``: in jobs mode (``settings.jobs``) ``jobs`` (default
    :class:`DbosJobs`) and a research function that submits and follows jobs; else no
    backend and ``research_fn`` (in-process runs, as without jobs)."""
    if not settings.jobs:
        return None, research_fn
    backend = jobs or DbosJobs()
    return backend, job_research(backend)


def _check_job_key(backend: JobBackend | None, api_key: str | None) -> None:
    """Refuse a session's own API key in jobs mode (a worker never sees it).

    Raises:
        SettingsError: jobs mode and a key was given.
    """
    if backend is not None and (api_key or "").strip():
        raise SettingsError(JOB_KEY_REFUSED)


def _cancel_job(
    backend: JobBackend | None,
    view: ProgressView | None,
    settings: Settings,
    access: Access,
    request: gr.Request | None,
    profile: gr.OAuthProfile | None,
) -> None:
    """In jobs mode, cancel the caller's job of ``view`` in its worker (when it has a run id
    and has not ended); a failure is logged, never shown (the panel says Stopped; the job may
    have ended meanwhile)."""
    if backend is None or view is None or not view.run_id or view.finished:
        return
    try:
        owner = access.owner(request, profile)
        backend.cancel(view.run_id, settings, owner=owner)
    except Exception as exc:  # noqa: BLE001 - Stop must always answer
        log.warning(
            "could not cancel job", run_id=view.run_id, error=f"{type(exc).__name__}: {exc}"
        )


def _line_html(text: str) -> str:
    return f'<p class="dc-history-line" role="status">{html.escape(text)}</p>'


async def _follow_job(
    backend: JobBackend,
    record: RunRecord,
    owner: str | None,
    settings: Settings,
    watched: Watcher,
    request: gr.Request | None,
    with_store: Callable[[Callable[[hist.RunHistory], Any]], Any],
) -> AsyncIterator[tuple[Any, ...]]:
    """History's re-attach to the job ``record``: its event log from the first event, live,
    rendered in the run's panels (as a run started on this page) with a status line, until
    the run ends; then its final status line (read with ``with_store``) and the report below
    the table."""

    def final_line() -> str:
        ended, _ = with_store(lambda s: hist.stored_run(s, record.id, owner))
        return f"{hist.status_line(ended)}. Followed to its end."

    following = (
        f"{record.status} · run {record.id} — following it live "
        "(Stop cancels it; closing the page does not)."
    )
    last: tuple[Any, ...] = ()
    events = reattach_events(backend, record.id, str(record.status), settings, owner)
    async for out in watched(events, settings, owner, request):
        last = out
        yield (*out, _line_html(following), "")
    try:
        ended = await asyncio.to_thread(final_line)
    except Exception:  # noqa: BLE001 - the panels already show how the run ended
        ended = f"Run {record.id}: followed to its end."
    if last:
        yield (*last, _line_html(ended), last[2])


SHOW_ANSWER_JS = """() => {
  setTimeout(() => {
    const card = document.querySelector('#dc-answer');
    if (card) card.scrollIntoView({block: 'start'});
  }, 300);
}"""
"""Run in the browser when a run ends: the answer card, when there is one, comes to the top of
the view (a stopped or failed run has none, and the page stays where it is)."""


STOP_SETTLE_SECONDS = 0.5
"""How long *Stop* waits after cancelling before it shows "Stopped" (the cancelled run's
last update, already on its way, lands first)."""


def _stop_off() -> Any:
    """*Stop* disabled: nothing runs (after Stop, and for a run refused before it started)."""
    return gr.update(interactive=False)


def _show_the_answer_when_done(events: list[Any]) -> None:
    """When each of ``events`` (a run started on this page) ends, the page shows its answer
    card at the top (:data:`SHOW_ANSWER_JS`, in the browser)."""
    for event in events:
        event.then(None, None, None, js=SHOW_ANSWER_JS, api_visibility="private")


@dataclass(frozen=True)
class _HistoryHandlers:
    """The *History* tab's handlers over the durable store that ``opener`` opens: each asks
    ``access`` who the caller is before it opens the store, and acts on that caller's runs
    only."""

    opener: hist.StoreOpener
    settings: Settings
    shelf: DownloadShelf
    run_outputs: list[Any]
    access: Access
    watched: Watcher
    backend: JobBackend | None

    def with_store(self, action: Any) -> Any:
        """``action(store)`` on a store opened for it, closed after."""
        store = self.opener(self.settings)
        try:
            return action(store)
        finally:
            store.close()

    def refresh(
        self, request: gr.Request | None = None, profile: gr.OAuthProfile | None = None
    ) -> tuple[list[list[str]], list[str]]:
        """The caller's runs as table rows, and their ids (nothing before sign-in)."""
        try:
            owner = self.access.owner(request, profile)
        except SignInRequired:
            return [], []
        table: tuple[list[list[str]], list[str]] = self.with_store(
            lambda s: hist.history_table(s, owner)
        )
        return table

    @staticmethod
    def pick(ids: list[str] | None, evt: gr.SelectData) -> Any:
        """The run id of the row clicked."""
        index = evt.index[0] if isinstance(evt.index, list | tuple) else evt.index
        found = hist.selected_run_id(
            ids or [], index if isinstance(index, int) else None, evt.row_value
        )
        return found if found is not None else gr.skip()

    async def open_run(
        self,
        run_id: str,
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
    ) -> AsyncIterator[tuple[Any, ...]]:
        """Open the caller's run ``run_id`` in the run tabs (its report also here); in jobs
        mode follow a queued or running one live."""
        skip = tuple(gr.skip() for _ in self.run_outputs)
        try:
            owner = self.access.owner(request, profile)
            record, result = await asyncio.to_thread(
                self.with_store, lambda s: hist.stored_run(s, run_id, owner)
            )
        except (SignInRequired, RunNotFoundError) as exc:
            yield (*skip, f'<p class="dc-error">{html.escape(str(exc))}</p>', "")
            return
        except ValidationError:  # a result stored in a shape this version cannot read
            message = f"The stored result of run {run_id.strip()} could not be read."
            yield (*skip, f'<p class="dc-error">{html.escape(message)}</p>', "")
            return

        def line(more: str) -> str:
            text = f"{hist.status_line(record)}. {more}"
            return f'<p class="dc-history-line" role="status">{html.escape(text)}</p>'

        backend = self.backend
        if backend is not None and result is None and record.status in FOLLOWED_STATUSES:
            follow = _follow_job(
                backend, record, owner, self.settings, self.watched, request, self.with_store
            )
            async for out in follow:
                yield out
            return
        if result is None:
            more = "No report yet: Resume continues it." if record.resumable else "No report."
            yield (*skip, line(more), "")
            return
        last: tuple[Any, ...] = ()
        replayed = hist.replay_events(record, result)
        async for out in stream_run(replayed, self.settings, self.shelf, owner):
            last = out
        opened = "Opened in the Report, Evidence, Hypotheses and Downloads tabs; report below."
        yield (*last, gr.skip(), gr.skip(), gr.skip(), line(opened), last[2])

    def export(
        self, run_id: str, request: gr.Request | None = None, profile: gr.OAuthProfile | None = None
    ) -> str:
        """A link to the caller's run ``run_id`` as JSON, served to that caller only."""
        try:
            owner = self.access.owner(request, profile)
            rid, data = self.with_store(lambda s: hist.export_of(s, run_id, owner))
        except (SignInRequired, RunNotFoundError) as exc:
            return f'<p class="dc-error">{html.escape(str(exc))}</p>'
        (path,) = self.shelf.shelve(owner, lambda folder: [hist.write_export(rid, data, folder)])
        return export_html(self.shelf, path)


def _history_tab(
    opener: hist.StoreOpener,
    settings: Settings,
    shelf: DownloadShelf,
    outputs: list[Any],
    run_outputs: list[Any],
    access: Access,
    resume_run: Any,
    watched: Watcher,
    backend: JobBackend | None,
) -> tuple[Any, list[Any]]:
    """The *History* tab: the caller's past runs from the durable store, listed when the tab
    opens; a row click opens the run (report, evidence, hypotheses, downloads in their tabs,
    and its report here); Resume and Export act on the selected run (the handlers:
    :class:`_HistoryHandlers`). In jobs mode (``backend``) a queued or running run is
    followed live from its event log until it ends, as a run started on this page (*Stop*
    cancels it). Returns the Resume event and the open events (*Stop* cancels them)."""
    handlers = _HistoryHandlers(opener, settings, shelf, run_outputs, access, watched, backend)
    with gr.Tab("History", elem_id="dc-history-tab") as tab:
        gr.Markdown(
            "Your runs, newest first (listed when this tab opens). Click a row to open the "
            "run; Resume and Export act on the selected run."
        )
        table = gr.Dataframe(
            headers=hist.HEADERS,
            interactive=False,
            wrap=True,
            column_widths=["12%", "14%", "10%", "44%", "10%", "10%"],
            label="Runs",
            elem_id="dc-history",
        )
        ids = gr.State([])
        with gr.Row():
            run_id = gr.Textbox(
                label="Selected run (click a row, or type a run id and press Enter)",
                elem_id="dc-history-id",
            )
            refresh_btn = gr.Button("Refresh", elem_id="dc-history-refresh")
            resume_btn = gr.Button("Resume", elem_id="dc-history-resume")
            export_btn = gr.Button("Export", elem_id="dc-history-export-btn")
        status = gr.HTML(elem_id="dc-history-status")
        stored_report = gr.HTML(elem_id="dc-history-report")
        exported = gr.HTML(elem_id="dc-history-export")
    tab.select(handlers.refresh, None, [table, ids], api_visibility="private")
    refresh_btn.click(handlers.refresh, None, [table, ids], api_visibility="private")
    open_outputs = [*run_outputs, status, stored_report]
    opened = table.select(handlers.pick, [ids], run_id, api_visibility="private").then(
        handlers.open_run, run_id, open_outputs, api_visibility="private"
    )
    typed = run_id.submit(handlers.open_run, run_id, open_outputs, api_visibility="private")
    export_btn.click(handlers.export, run_id, exported, api_visibility="private")
    resumed = resume_btn.click(resume_run, run_id, run_outputs, api_visibility="private")
    return resumed, [opened, typed]
