"""Runs as durable jobs (:mod:`deepcritical.jobs`): ``deepcritical worker``, and ``deepcritical
runs submit|follow|cancel``.

``runs submit`` takes the options of ``research`` and prints the run id (on standard output,
alone, for scripts); ``runs follow ID`` shows the run's progress from its event log exactly as
``research`` does and, when it ends with a report, writes the report files; Ctrl-C stops
following (never the run), and following again starts from the run's first event. ``runs
cancel ID`` asks the worker to stop the run.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated

import typer

from deepcritical.cli.context import console, fail, out_console, settings_from_options
from deepcritical.cli.filter_options import (
    AddedSinceOption,
    DesignOption,
    LanguageOption,
    PublishedFromOption,
    PublishedToOption,
    TrialPhaseOption,
    TrialStatusOption,
    search_filters,
)
from deepcritical.cli.research import (
    AudienceOption,
    ContextOption,
    CorpusOption,
    FocusOption,
    LengthOption,
    LlmOption,
    MaxRoundsOption,
    MaxSourcesOption,
    OrchestratorOption,
    QuestionArg,
    ReviewEvidenceOption,
    ReviewPlanOption,
    SourcesOption,
    SyllabusOption,
    TimeBudgetOption,
    run_inputs,
    with_reviews,
)
from deepcritical.cli.run_output import (
    ExportOption,
    ReportPath,
    check_out_path,
    error_line,
    parse_export_formats,
    run_to_report,
)
from deepcritical.cli.runs import Owner
from deepcritical.events import ResearchEvent
from deepcritical.state import RunNotFoundError

__all__ = ["cancel", "follow", "submit", "worker"]

RunId = Annotated[str, typer.Argument(help="Run id (or a unique prefix).")]


def submit(
    question: QuestionArg,
    corpus: CorpusOption = None,
    llm: LlmOption = None,
    sources: SourcesOption = None,
    max_rounds: MaxRoundsOption = None,
    max_sources: MaxSourcesOption = None,
    time_budget: TimeBudgetOption = None,
    orchestrator: OrchestratorOption = None,
    context: ContextOption = None,
    audience: AudienceOption = None,
    length: LengthOption = None,
    focus: FocusOption = None,
    syllabus_file: SyllabusOption = None,
    review_plan: ReviewPlanOption = False,
    review_evidence: ReviewEvidenceOption = False,
    published_from: PublishedFromOption = None,
    published_to: PublishedToOption = None,
    language: LanguageOption = None,
    design: DesignOption = None,
    trial_phase: TrialPhaseOption = None,
    trial_status: TrialStatusOption = None,
    added_since: AddedSinceOption = None,
) -> None:
    """Submit QUESTION as a job for the workers (`deepcritical worker`) and print its run id;
    `deepcritical runs follow ID` shows its progress. The search filters are those of
    `research`. With --review-plan / --review-evidence the job waits for `deepcritical runs
    approve-plan|approve-evidence ID`, holding no worker."""
    filters = search_filters(
        published_from=published_from,
        published_to=published_to,
        languages=language,
        designs=design,
        trial_phases=trial_phase,
        trial_statuses=trial_status,
        added_since=added_since,
    )
    inputs = run_inputs(
        corpus=corpus,
        llm=llm,
        sources=sources,
        max_rounds=max_rounds,
        max_sources=max_sources,
        time_budget=time_budget,
        orchestrator=orchestrator,
        audience=audience,
        length=length,
        focus=focus,
        syllabus_file=syllabus_file,
        filters=filters,
    )
    from deepcritical.jobs import submit_run
    from deepcritical.orchestrators.deps import QuestionError

    try:
        run_id = submit_run(
            question,
            with_reviews(inputs.settings, review_plan, review_evidence),
            context=context,
            preferences=inputs.preferences,
            syllabus=inputs.syllabus,
        )
    except QuestionError as exc:
        raise fail(str(exc), 2) from exc
    except Exception as exc:
        raise fail(f"could not submit the job: {type(exc).__name__}: {exc}") from exc
    out_console.print(run_id)
    console.print(f"Submitted: follow it with `deepcritical runs follow {run_id}`")


def follow(
    run_id: RunId,
    out: ReportPath = Path("report.md"),
    export: ExportOption = None,
    owner: Owner = None,
) -> None:
    """Show a job's progress from its event log, as `research` does, until it ends; write
    its report files when it delivers a report. Ctrl-C stops following, not the run."""
    exports = parse_export_formats(export)
    check_out_path(out, exports)
    settings = settings_from_options()
    from deepcritical.jobs import follow_run

    async def events() -> AsyncIterator[ResearchEvent]:
        async for logged in follow_run(run_id, settings, owner=owner):
            yield logged.event

    run_to_report(
        events,
        out,
        bad_input=(RunNotFoundError,),
        interrupt_hint=f"The run goes on; follow it again: deepcritical runs follow {run_id}",
        exports=exports,
    )


def cancel(run_id: RunId, owner: Owner = None) -> None:
    """Cancel a job: a queued one never starts, a running one is stopped by its worker
    within seconds (recorded as cancelled)."""
    settings = settings_from_options()
    from deepcritical.jobs import cancel_run

    try:
        status = cancel_run(run_id, settings, owner=owner)
    except RunNotFoundError as exc:
        raise fail(error_line(exc), 2) from exc
    console.print(f"Cancel requested for run {run_id} (status now: {status}).")


def worker(
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, help="Jobs this worker runs at once.")
    ] = 1,
    worker_id: Annotated[
        str | None,
        typer.Option(
            "--worker-id",
            help="This worker's name (default <host>-<pid>). A worker restarted with the "
            "same name continues the jobs it was running at once.",
        ),
    ] = None,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            "--metrics-port",
            min=0,
            max=65535,
            help="Serve /metrics (Prometheus), /healthz and /readyz on this port, on every "
            "interface (default: not served).",
        ),
    ] = None,
) -> None:
    """Run submitted jobs (`deepcritical runs submit`) until stopped (Ctrl-C, SIGTERM).
    Workers on several machines share the jobs of one PostgreSQL run database
    (DEEPCRITICAL_DATABASE_URL)."""
    settings = settings_from_options()
    from deepcritical.jobs import run_worker
    from deepcritical.jobs.ops_server import OpsServer
    from deepcritical.jobs.readiness import Readiness

    stop = threading.Event()

    def _stop(_signum: int, _frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    console.print(f"Worker {worker_id or 'started'} (concurrency {concurrency}); Ctrl-C stops it.")
    readiness = Readiness(settings, jobs=True)
    ops = None
    if metrics_port is not None:
        readiness.register_metrics()
        ops = OpsServer(readiness, port=metrics_port)
        console.print(f"Metrics and health on port {ops.port}: /metrics, /healthz, /readyz.")
    try:
        run_worker(settings, concurrency=concurrency, worker_id=worker_id, stop=stop)
    except Exception as exc:
        raise fail(f"the worker stopped: {type(exc).__name__}: {exc}") from exc
    finally:
        if ops is not None:
            ops.close()
        readiness.close()
