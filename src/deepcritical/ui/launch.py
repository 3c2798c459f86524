"""Starting the web app: server settings from the environment, the launch call shared by
``deepcritical serve`` and the Space's root ``app.py``."""

from __future__ import annotations

import os
from pathlib import Path

import gradio as gr
from starlette.middleware import Middleware

from deepcritical.config import Settings
from deepcritical.jobs.readiness import Readiness
from deepcritical.logs import get_logger, show_level
from deepcritical.ui.app import CSS, build_app
from deepcritical.ui.auth import Access
from deepcritical.ui.download_route import DownloadRoute
from deepcritical.ui.downloads import DownloadShelf
from deepcritical.ui.feed_route import FeedRoute
from deepcritical.ui.headers import security_middleware
from deepcritical.ui.ops_routes import OpsRoutes
from deepcritical.ui.source_check import SourceCheck
from deepcritical.ui.theme import THEME
from deepcritical.ui.visitor import VisitorMiddleware

DEFAULT_CONCURRENCY = 2
SHARED_HISTORY_WARNING = (
    "DEEPCRITICAL_SHARED_HISTORY is set and the web app has no sign-in: every visitor shares "
    "one run history (History lists, opens, exports and resumes every visitor's runs). Unset "
    "it to keep each browser's runs apart, or set DEEPCRITICAL_UI_AUTH (passwords) or, on a "
    "Hugging Face Space, hf_oauth: true (Sign in with Hugging Face); see docs/security.md"
)
AUTH_MESSAGE = "Sign in to DeepCritical: each user sees only their own runs."

UI_LOGGER = "deepcritical.ui"
"""The logger of the web app's modules (and the parent of their own)."""

log = get_logger(__name__)


def show_app_warnings() -> None:
    """Let the web app's warnings (the shared history's, jobs mode's, a failed run's) through
    the process's logging, which the command line configures to show errors only."""
    show_level(UI_LOGGER, "WARNING")


def server_settings(data_dir: Path | None = None) -> Settings:
    """The server's :class:`Settings`, read from the environment (``DEEPCRITICAL_*``; API
    keys also from ``OPENAI_API_KEY``/``ANTHROPIC_API_KEY``/``NCBI_API_KEY``, i.e. the Space's
    secrets). When ``DEEPCRITICAL_SOURCES`` is unset and a local corpus exists, ``local`` is
    searched too, as the CLI does."""
    from deepcritical.corpus.index import LocalCorpus

    settings = Settings() if data_dir is None else Settings(data_dir=data_dir)
    wants_local = "DEEPCRITICAL_SOURCES" not in os.environ and "local" not in settings.sources
    if wants_local and LocalCorpus.exists(settings.resolved_corpus_dir):
        settings = settings.model_copy(update={"sources": ["local", *settings.sources]})
    return settings


def concurrency_from_env() -> int:
    """``DEEPCRITICAL_UI_CONCURRENCY`` (research runs at once), default 2, at least 1."""
    try:
        return max(1, int(os.environ.get("DEEPCRITICAL_UI_CONCURRENCY", DEFAULT_CONCURRENCY)))
    except ValueError:
        return DEFAULT_CONCURRENCY


def launch(
    demo: gr.Blocks,
    *,
    host: str | None = None,
    port: int | None = None,
    mcp_server: bool = True,
    access: Access,
    downloads: DownloadShelf,
    readiness: Readiness | None = None,
    settings: Settings | None = None,
) -> None:
    """Serve ``demo`` (blocking) with the MCP server at ``/gradio_api/mcp/``; ``host`` and
    ``port`` default to Gradio's (``GRADIO_SERVER_NAME``/``GRADIO_SERVER_PORT`` or
    127.0.0.1:7860). Gradio's browser-side run history is off (it would store the API key).
    The theme (:mod:`deepcritical.ui.theme`) follows the system's light or dark mode.

    ``access`` must be the sign-in ``demo`` was built with: with passwords, Gradio's login
    page guards every route; without sign-in, each browser gets its signed visitor cookie
    (:class:`~deepcritical.ui.visitor.VisitorMiddleware`), or, in a shared history,
    :data:`SHARED_HISTORY_WARNING` is logged. ``downloads`` must be the shelf ``demo`` writes
    its download files to: :class:`~deepcritical.ui.download_route.DownloadRoute` serves
    each file to its run's owner only.

    With ``settings`` (where the run database is), the living reviews' Atom feeds are served
    to their owners (:class:`~deepcritical.ui.feed_route.FeedRoute`).

    With ``readiness``, ``/healthz``, ``/readyz`` and ``/metrics`` are answered before
    sign-in (:class:`~deepcritical.ui.ops_routes.OpsRoutes`) and ``/metrics`` shows the jobs
    by state.

    Every response carries the security headers of :mod:`deepcritical.ui.headers` (frame
    ancestors from ``DEEPCRITICAL_UI_FRAME_ANCESTORS``); server-side rendering is off, so
    the Python server, not a Node proxy, answers every request.

    Raises:
        ValueError: ``DEEPCRITICAL_UI_FRAME_ANCESTORS`` is malformed.
    """
    middleware = [security_middleware()]
    if readiness is not None:  # probes: before the visitor cookie and the sign-in
        readiness.register_metrics()
        middleware.append(Middleware(OpsRoutes, readiness=readiness))
    if access.visitor_key is not None:  # each browser its own runs: a signed visitor cookie
        middleware.append(Middleware(VisitorMiddleware, key=access.visitor_key))
    elif not access.required:
        log.warning(SHARED_HISTORY_WARNING)
    # inside the visitor cookie's middleware: a first request's new visitor is already set
    middleware.append(Middleware(DownloadRoute, shelf=downloads, access=access))
    if settings is not None:
        middleware.append(Middleware(FeedRoute, settings=settings, access=access))
    demo.launch(
        app_kwargs={"middleware": middleware},
        ssr_mode=False,
        server_name=host,
        server_port=port,
        mcp_server=mcp_server,
        show_error=False,
        css=CSS,
        theme=THEME,
        footer_links=["api"],
        # Gradio's run history saves every call's inputs in the browser (and can upload them
        # to a Hugging Face bucket): that would keep the session's API key. Off.
        run_history=False,
        auth=access.gradio_auth(),
        auth_message=AUTH_MESSAGE if access.mode == "password" else None,
    )


def build_from_env(
    access: Access, downloads: DownloadShelf, data_dir: Path | None = None
) -> gr.Blocks:
    """The app with :func:`server_settings`, :func:`concurrency_from_env`, the sign-in
    ``access`` (:meth:`Access.from_env`) and the download shelf ``downloads`` (give
    :func:`launch` the same two); the reachability check of the live sources starts now, in
    the background."""
    settings = server_settings(data_dir)
    return build_app(
        settings,
        concurrency=concurrency_from_env(),
        access=access,
        downloads=downloads,
        source_check=SourceCheck(settings).start(),
    )
