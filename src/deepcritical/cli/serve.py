"""``deepcritical serve``: the Gradio web app (with its MCP server) on HOST:PORT."""

from __future__ import annotations

from typing import Annotated

import typer

from deepcritical.cli.context import fail, global_options
from deepcritical.logs import get_logger

__all__ = ["serve"]


def serve(
    host: Annotated[str, typer.Option("--host", help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535)] = 7860,
    mcp: Annotated[
        bool, typer.Option("--mcp/--no-mcp", help="Expose deep_research as an MCP tool.")
    ] = True,
    concurrency: Annotated[
        int | None,
        typer.Option(
            "--concurrency",
            min=1,
            help="Research runs at once (default $DEEPCRITICAL_UI_CONCURRENCY or 2).",
        ),
    ] = None,
    jobs: Annotated[
        bool | None,
        typer.Option(
            "--jobs/--no-jobs",
            help="Run research as durable jobs on workers (`deepcritical worker`) instead of "
            "in this process (default $DEEPCRITICAL_JOBS, off).",
        ),
    ] = None,
) -> None:
    """Serve the web app (and the deep_research MCP tool at /gradio_api/mcp/), with
    /healthz, /readyz and /metrics for probes and Prometheus.

    Settings come from the environment (DEEPCRITICAL_LLM, DEEPCRITICAL_SOURCES, API keys...)
    and --data-dir; each browser session may override model, key, sources and depth.
    Sign-in: DEEPCRITICAL_UI_AUTH / DEEPCRITICAL_UI_AUTH_FILE (user:password), or Sign in with
    Hugging Face on a Space with OAuth; without sign-in, each browser sees only its own runs
    (a signed cookie), or every visitor shares one history with DEEPCRITICAL_SHARED_HISTORY=1.
    With --jobs (or DEEPCRITICAL_JOBS=1) runs execute in workers, so they outlive the page
    and this server; start at least one `deepcritical worker` on the same run database.
    """
    from deepcritical.jobs.readiness import Readiness
    from deepcritical.ui.app import build_app
    from deepcritical.ui.auth import Access, AuthConfigError
    from deepcritical.ui.downloads import DownloadShelf
    from deepcritical.ui.launch import (
        UI_LOGGER,
        concurrency_from_env,
        launch,
        server_settings,
        show_app_warnings,
    )
    from deepcritical.ui.source_check import SourceCheck

    settings = server_settings(global_options.data_dir)
    try:
        access = Access.from_env(settings.data_dir)
    except AuthConfigError as exc:
        raise fail(f"sign-in settings: {exc}", 2) from None
    show_app_warnings()
    if jobs is not None:
        settings = settings.model_copy(update={"jobs": jobs})
    if settings.jobs:
        get_logger(UI_LOGGER).warning(
            "jobs mode: research runs execute in `deepcritical worker` processes"
        )
    downloads = DownloadShelf()
    demo = build_app(
        settings,
        concurrency=concurrency or concurrency_from_env(),
        access=access,
        downloads=downloads,
        source_check=SourceCheck(settings).start(),  # which live sources answer, at start
    )
    launch(
        demo,
        host=host,
        port=port,
        mcp_server=mcp,
        access=access,
        downloads=downloads,
        readiness=Readiness(settings),
        settings=settings,
    )
