"""The web app's operations endpoints: ``/healthz``, ``/readyz`` and ``/metrics``
(:func:`~deepcritical.jobs.readiness.answer_ops`), answered by :class:`OpsRoutes`, pure ASGI
middleware on Gradio's FastAPI app (put there by :func:`deepcritical.ui.launch.launch`)
before sign-in: a load balancer's or an orchestrator's probe carries no credentials. They
show no run, question or user: liveness, the dependencies' state and counts."""

from __future__ import annotations

import asyncio

from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from deepcritical.jobs.readiness import OPS_PATHS, Readiness, answer_ops

__all__ = ["OpsRoutes"]

READY_TIMEOUT_SECONDS = 10.0
"""The longest a probe waits for the dependencies' checks (a 503 after that)."""


class OpsRoutes:
    """Answers ``GET``/``HEAD`` of :data:`~deepcritical.jobs.readiness.OPS_PATHS` and passes
    every other request to ``app``; the checks run in a worker thread.

    Args:
        app: the next ASGI app.
        readiness: the process's dependencies.
    """

    def __init__(self, app: ASGIApp, readiness: Readiness) -> None:
        self.app = app
        self.readiness = readiness

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer an operations path, else pass the request on."""
        path = scope.get("path", "")
        if (
            scope["type"] != "http"
            or path not in OPS_PATHS
            or scope["method"] not in ("GET", "HEAD")
        ):
            await self.app(scope, receive, send)
            return
        try:
            answer = await asyncio.wait_for(
                asyncio.to_thread(answer_ops, path, self.readiness), READY_TIMEOUT_SECONDS
            )
        except TimeoutError:
            await Response('{"status": "timeout"}', 503, media_type="application/json")(
                scope, receive, send
            )
            return
        assert answer is not None  # path is one of OPS_PATHS
        await Response(answer.body, answer.status, media_type=answer.content_type)(
            scope, receive, send
        )
