"""The Gradio web app: :func:`build_app` returns the ``gr.Blocks`` that ``deepcritical
serve`` and the Space's root ``app.py`` launch.

One research run per click, streamed: every :class:`ResearchEvent` is folded into a
:class:`~deepcritical.ui.progress_view.ProgressView` and the panels are re-rendered; the last
event gives the report, the evidence table, the hypotheses and the downloads. Each run is a
fresh :func:`deepcritical.api.research` call (own evidence store, own events), so sessions
never share evidence. The queue runs ``concurrency`` research runs at once and shows the
others their position; *Stop* cancels the running generator, which closes the run.

The same Blocks expose ``deep_research`` (:mod:`deepcritical.ui.mcp_tool`) and
``ask_about_run`` (a follow-up question about a finished run: :mod:`deepcritical.ui.ask_tool`)
as API endpoints and, with ``launch(mcp_server=True)``, as MCP tools; the UI's own handlers
are private (they take the session's API key and must not become tools).

Under the report, a finished run shown (a live one or one opened from History) can be asked
follow-up questions (:mod:`deepcritical.ui.follow_up_panel`), answered from its evidence
through :func:`deepcritical.api.ask`; they are kept with the run and listed under its report
when History opens it again. The same finished run can be revised there
(:mod:`deepcritical.ui.versions_panel`: *Revise* through :func:`deepcritical.api.revise`, a
version picker that switches the report shown and downloads the chosen version, a diff by
section between two versions).

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

The page is composed here from its parts, in order: the header, the question
(:mod:`deepcritical.ui.question_panel`), the *Settings* accordion
(:mod:`deepcritical.ui.settings_panel`), the progress panel, the run's tabs
(:mod:`deepcritical.ui.run_tabs`), *History* (:mod:`deepcritical.ui.history_tab`) and
*Watches* (living reviews, :mod:`deepcritical.ui.watches_tab`); the
form's handlers are :mod:`deepcritical.ui.run_handlers`, and every run is rendered by
:mod:`deepcritical.ui.live_run`.

Being private hides a handler from the API page and the MCP tools, but anyone can still call
it by its index through ``/gradio_api/queue/join``. So every handler that records or reads
runs (research, History's refresh, open, export, resume, a follow-up question, a revision,
a version shown or compared) takes the
request and asks
:meth:`~deepcritical.ui.auth.Access.owner` who the caller is: it works on that owner's runs
only, and with sign-in on, a request without a signed-in user gets nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gradio as gr
from gradio.events import api as gr_api

from deepcritical.config import Settings
from deepcritical.state import RunStore
from deepcritical.ui import history as hist
from deepcritical.ui.answer import CARD_CSS
from deepcritical.ui.ask_tool import AskFn, default_ask, make_ask_about_run_tool
from deepcritical.ui.auth import Access
from deepcritical.ui.citation_links import CITATION_CSS
from deepcritical.ui.clarify_card import (
    ClarifyCard,
    ClarifyFn,
    ClarifyHandlers,
    clarify_card,
    default_clarify,
    wire_clarify,
)
from deepcritical.ui.downloads import DownloadShelf
from deepcritical.ui.follow_up_panel import FollowUpHandlers, FollowUpPanel, closed_panel
from deepcritical.ui.history_tab import HistoryTab, history_tab
from deepcritical.ui.jobs_mode import FOLLOWERS, DbosJobs, JobBackend, job_research
from deepcritical.ui.live_run import RunStreams, notice_md, stop_off
from deepcritical.ui.mcp_tool import ResearchFn, default_research, make_deep_research_tool
from deepcritical.ui.progress_view import ProgressView
from deepcritical.ui.question_panel import QuestionPanel, question_panel
from deepcritical.ui.render import progress_html
from deepcritical.ui.review_handlers import ReviewHandlers
from deepcritical.ui.review_panel import REVIEW_CSS, ReviewPanel, hidden_review, review_panel
from deepcritical.ui.run_handlers import RunHandlers
from deepcritical.ui.run_tabs import RunTabs, run_tabs
from deepcritical.ui.section_diff import DIFF_CSS
from deepcritical.ui.settings_panel import SettingsPanel, settings_panel
from deepcritical.ui.source_check import SourceCheck, sources_on_md
from deepcritical.ui.theme import THEME_CSS
from deepcritical.ui.versions_panel import (
    ReviseFn,
    VersionHandlers,
    closed_versions,
    default_revise,
)
from deepcritical.ui.watches_tab import watches_tab

CSS = """
.dc-evidence { border-collapse: collapse; width: 100%; font-size: 0.9em; }
.dc-evidence td, .dc-evidence th { border: 1px solid #d1d5db; padding: 4px 6px; vertical-align: top; }
.dc-evidence caption { caption-side: top; text-align: left; color: #4b5563; padding: 2px 0; }
.dc-evidence tr.dc-off-topic td { text-decoration: line-through; text-decoration-color: #9ca3af; }
.dc-evidence .dc-id { color: #6b7280; font-size: 0.85em; }
.dc-hyp-quote { font-size: 0.9em; color: #374151; }
"""  # noqa: E501
CSS += CARD_CSS + CITATION_CSS + DIFF_CSS + REVIEW_CSS
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


def _corpus_exists(settings: Settings) -> bool:
    from deepcritical.corpus.index import LocalCorpus

    return LocalCorpus.exists(settings.resolved_corpus_dir)


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


SHOW_ANSWER_JS = """() => {
  setTimeout(() => {
    const card = document.querySelector('#dc-answer');
    if (card) card.scrollIntoView({block: 'start'});
  }, 300);
}"""
"""Run in the browser when a run ends: the answer card, when there is one, comes to the top of
the view (a stopped or failed run has none, and the page stays where it is)."""


def _show_the_answer_when_done(events: list[Any]) -> None:
    """When each of ``events`` (a run started on this page) ends, the page shows its answer
    card at the top (:data:`SHOW_ANSWER_JS`, in the browser)."""
    for event in events:
        event.then(None, None, None, js=SHOW_ANSWER_JS, api_visibility="private")


def _header(settings: Settings, access: Access) -> gr.Markdown:
    """The page's title and what it does, the Hugging Face sign-in button (with that
    sign-in), the notice on the model the runs use (returned: runs update it) and whose runs
    History shows."""
    gr.Markdown(
        "# DeepCritical\nBiomedical deep research: plans, searches the literature, tests "
        "hypotheses and writes a report whose every citation is checked against the "
        "evidence collected. A run takes minutes."
    )
    if access.mode == "huggingface":
        gr.LoginButton(elem_id="dc-login")
    notice = gr.Markdown(notice_md(settings), elem_id="dc-notice")
    gr.Markdown(history_mode_md(access), elem_id="dc-history-mode")
    return notice


def _wire_run_events(
    handlers: RunHandlers,
    form: QuestionPanel,
    options: SettingsPanel,
    watch_state: gr.State,
    progress: gr.HTML,
    run_outputs: list[Any],
    history: HistoryTab,
    clarify: tuple[ClarifyCard, ClarifyFn],
    continued: list[Any],
) -> list[Any]:
    """*Research* (the button and Enter, through the clarify card:
    :mod:`deepcritical.ui.clarify_card`), *Resume* and *Stop* of the form: a run streams into
    ``run_outputs``; *Stop* cancels the form's runs, History's *Resume* and the runs
    ``continued`` after a review (in jobs mode also History's opens, which may follow a
    running job), shows the run in ``progress`` "Stopped" and turns itself off. A run that
    ends brings its answer card into view. Returns the events that run a run (the form's,
    the card's, History's *Resume* and ``continued``)."""
    card, clarify_fn = clarify
    card_handlers = ClarifyHandlers(handlers.settings, clarify_fn, handlers.run, len(run_outputs))
    started = wire_clarify(
        card,
        card_handlers,
        [form.run_btn.click, form.question.submit],
        form.question,
        form.context,
        options.run_inputs(),
        run_outputs,
    )
    resume_event = form.resume_btn.click(
        handlers.resume_stopped, [watch_state], run_outputs, api_visibility="private"
    )
    stop_event = form.stop_btn.click(
        handlers.stop,
        [watch_state],
        [progress, form.resume_btn, watch_state],
        # in jobs mode History's open follows a running job: Stop cancels it too
        cancels=[*started, resume_event, history.resume, *continued]
        + (history.opens if handlers.backend is not None else []),
        queue=False,
        api_visibility="private",
    )
    runs = [*started, resume_event, history.resume, *continued]
    _show_the_answer_when_done(runs)
    stop_event.then(stop_off, None, form.stop_btn, api_visibility="private")
    return runs


def _wire_reviews(
    handlers: ReviewHandlers, panel: ReviewPanel, run_outputs: list[Any]
) -> list[Any]:
    """The review panel's decisions: *Start search*, *Write report* and *One more search
    round* store the decision (or show why not), then the run goes on into ``run_outputs``;
    *Cancel* cancels the run at its review. Returns the events that continue a run."""
    decided = [panel.status, panel.plan_box, panel.evidence_box, panel.decided]
    evidence = [panel.waiting, panel.included, panel.reasons]
    decisions = [
        panel.start_btn.click(
            handlers.start_search,
            {panel.waiting, *panel.plan_inputs()},
            decided,
            api_visibility="private",
        ),
        panel.write_btn.click(handlers.write_report, evidence, decided, api_visibility="private"),
        panel.more_btn.click(handlers.more_search, evidence, decided, api_visibility="private"),
    ]
    gr.on(
        [panel.cancel_plan_btn.click, panel.cancel_evidence_btn.click],
        handlers.cancel,
        [panel.waiting],
        [panel.status, panel.plan_box, panel.evidence_box, panel.waiting],
        api_visibility="private",
    )
    return [
        event.then(
            handlers.continue_run,
            [panel.decided, panel.waiting],
            run_outputs,
            api_visibility="private",
        )
        for event in decisions
    ]


def _show_reviews(
    handlers: ReviewHandlers,
    panel: ReviewPanel,
    starts: list[Any],
    runs: list[Any],
    history: HistoryTab,
    watch_state: gr.State,
) -> list[Any]:
    """The review panel hidden when a run starts (``starts``), and after each run of
    ``runs`` (its view in ``watch_state``) or History's opens showing the review the run
    waits for, if any. Returns the steps after the runs: the follow-up panel's step follows
    them, so that each run has one step after it (two steps after one run, side by side,
    kept Gradio's front end from running one of them: found by the browser tests)."""
    outputs = panel.outputs()
    gr.on(starts, hidden_review, None, outputs, queue=False, api_visibility="private")
    for event in history.opens:
        event.then(handlers.review_after_open, [history.run_id], outputs, api_visibility="private")
    return [
        event.then(
            handlers.review_after_run,
            [watch_state, panel.waiting],
            outputs,
            api_visibility="private",
        )
        for event in runs
    ]


def _wire_follow_ups(
    handlers: FollowUpHandlers,
    panel: FollowUpPanel,
    starts: list[Any],
    runs: list[Any],
    watch_state: gr.State,
) -> list[Any]:
    """The follow-up panel: closed when a run starts (``starts``, the triggers of ``runs``),
    opened on a run of ``runs`` that ended with its report (its view in ``watch_state``);
    *Ask* and Enter in its box answer the question (History's opens set it themselves).
    Returns the events that open or close it after a run."""
    outputs = panel.outputs()
    gr.on(starts, closed_panel, None, outputs, queue=False, api_visibility="private")
    after = [
        event.then(handlers.after_run, [watch_state], outputs, api_visibility="private")
        for event in runs
    ]
    gr.on(
        [panel.ask_btn.click, panel.question.submit],
        handlers.ask,
        [panel.run_id, panel.question],
        [panel.question, panel.status, panel.answers],
        api_visibility="private",
    )
    return after


def _wire_versions(
    handlers: VersionHandlers, tabs: RunTabs, starts: list[Any], shown: list[Any]
) -> None:
    """The versions panel: closed when a run starts (``starts``), and after each event of
    ``shown`` (a run ended, History opened one) open on the run the follow-up panel holds;
    *Revise* (and Enter), the picker and *Compare* act on it and the report area."""
    panel, outputs = tabs.versions, tabs.versions.outputs()
    revised = [tabs.report, panel.status, panel.instruction, panel.version, panel.downloads]
    gr.on(starts, closed_versions, None, outputs, queue=False, api_visibility="private")
    for event in shown:
        event.then(
            handlers.versions_shown, [tabs.follow_up.run_id], outputs, api_visibility="private"
        )
    gr.on(
        [panel.revise_btn.click, panel.instruction.submit],
        handlers.revise,
        [panel.run_id, panel.instruction],
        [*revised, panel.diff_from, panel.diff_to, panel.diff],
        api_visibility="private",
    )
    panel.version.input(
        handlers.pick_version,
        [panel.run_id, panel.version],
        [tabs.report, panel.status, panel.downloads],
        api_visibility="private",
    )
    panel.compare_btn.click(
        handlers.compare_versions,
        [panel.run_id, panel.diff_from, panel.diff_to],
        [panel.status, panel.diff],
        api_visibility="private",
    )


def _page(
    demo: gr.Blocks,
    handlers: RunHandlers,
    store_opener: hist.StoreOpener,
    shelf: DownloadShelf,
    ask_fn: AskFn,
    revise_fn: ReviseFn,
    clarify_fn: ClarifyFn,
) -> None:
    """Lay out the page inside ``demo`` (header, question, the clarify card, settings,
    progress, the run's tabs and History) and wire its events; the sources ticked are set at
    page load; questions are clarified by ``clarify_fn``, follow-up questions answered by
    ``ask_fn``, reports revised by ``revise_fn``."""
    settings, access = handlers.settings, handlers.access
    notice = _header(settings, access)
    watch_state = gr.State(None)
    form = question_panel(settings, handlers.corpus_exists)
    card = clarify_card(settings)
    options = settings_panel(settings, handlers.corpus_exists)
    progress = gr.HTML(progress_html(ProgressView()), elem_id="dc-progress")
    review = review_panel()
    with gr.Tabs():
        tabs = run_tabs()
        outputs = [notice, progress, *tabs.outputs()]
        run_outputs = [*outputs, watch_state, form.resume_btn, form.stop_btn]
        history = history_tab(
            store_opener,
            settings,
            shelf,
            run_outputs,
            access,
            handlers.resume_run,
            handlers.streams.watched,
            handlers.backend,
            tabs.follow_up,
        )
        watches_tab(settings, access, tabs.versions.run_id)
    reviews = ReviewHandlers(settings, access, handlers.backend, handlers.streams, review)
    continued = _wire_reviews(reviews, review, run_outputs)
    runs = _wire_run_events(
        handlers,
        form,
        options,
        watch_state,
        progress,
        run_outputs,
        history,
        (card, clarify_fn),
        continued,
    )
    starts = [form.run_btn.click, form.question.submit, form.resume_btn.click]
    starts += [card.go.click, card.skip.click]
    reviewed = _show_reviews(
        reviews, review, [*starts, history.resume_btn.click], runs, history, watch_state
    )
    after_runs = _wire_follow_ups(
        FollowUpHandlers(store_opener, settings, access, ask_fn),
        tabs.follow_up,
        [*starts, history.resume_btn.click],
        reviewed,
        watch_state,
    )
    _wire_versions(
        VersionHandlers(store_opener, settings, access, shelf, revise_fn),
        tabs,
        [*starts, history.resume_btn.click],
        [*after_runs, *history.opens],
    )
    sources_outputs = [options.sources, options.sources_info, form.sources_on]
    demo.load(handlers.load_sources, None, sources_outputs, api_visibility="private")
    options.sources.change(
        sources_on_md, options.sources, form.sources_on, queue=False, api_visibility="private"
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
    ask_fn: AskFn | None = None,
    revise_fn: ReviseFn | None = None,
    clarify_fn: ClarifyFn | None = None,
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
        ask_fn: ``ask(run_id, question, settings, owner=...)`` for follow-up questions, in the
            page and the ``ask_about_run`` tool (default :func:`deepcritical.api.ask`, also in
            jobs mode: it reads the run store); tests pass one with a test embedder.
        revise_fn: ``revise(run_id, instruction, settings, owner=...)`` for the Report tab's
            *Revise* (default :func:`deepcritical.api.revise`, also in jobs mode); tests pass
            one with a test embedder.
        clarify_fn: ``clarify(question, settings)`` for the clarify card before a run
            (default :func:`deepcritical.api.clarify`; the card is on by default:
            ``settings.ui_clarify``); tests pass scripted ones.
    """
    backend, research_fn = _run_mode(settings, jobs, research_fn)
    sign_in = access or Access()
    shelf = downloads if downloads is not None else DownloadShelf(downloads_dir)
    handlers = RunHandlers(
        settings=settings,
        run_fn=research_fn if research_fn is not None else default_research(),
        backend=backend,
        access=sign_in,
        streams=RunStreams(shelf),
        check=source_check or SourceCheck(settings),
        corpus_exists=_corpus_exists(settings),
    )
    deep_research = make_deep_research_tool(settings, research_fn, sign_in)
    ask = ask_fn if ask_fn is not None else default_ask()
    ask_about_run = make_ask_about_run_tool(settings, sign_in, ask)
    demo = gr.Blocks(title="DeepCritical", analytics_enabled=False)
    with demo:
        revise = revise_fn if revise_fn is not None else default_revise()
        clarify = clarify_fn if clarify_fn is not None else default_clarify()
        _page(demo, handlers, store_opener, shelf, ask, revise, clarify)
        gr_api(deep_research, api_name="deep_research")
        gr_api(ask_about_run, api_name="ask_about_run")
    # in jobs mode a handler only follows a run: the workers limit the runs themselves
    demo.queue(
        default_concurrency_limit=concurrency if backend is None else max(concurrency, FOLLOWERS)
    )
    return demo
