"""A worker's operations endpoints (``deepcritical worker --metrics-port``): ``/healthz``,
``/readyz`` and ``/metrics`` (:func:`~deepcritical.jobs.readiness.answer_ops`) on a small
HTTP server in a daemon thread of the worker's process."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from deepcritical.jobs.readiness import Readiness, answer_ops

__all__ = ["OpsServer"]


class OpsServer:
    """Serves :func:`answer_ops` on ``host:port`` (``port=0``: an ephemeral one, see
    :attr:`port`) until :meth:`close`.

    Args:
        readiness: the process's dependencies.
        host: the interface (default all: an orchestrator's probes come from outside).
        port: the TCP port.
    """

    def __init__(self, readiness: Readiness, host: str = "0.0.0.0", port: int = 9464) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                answer = answer_ops(self.path.split("?", 1)[0], readiness)
                if answer is None:
                    self.send_error(404)
                    return
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.content_type)
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="deepcritical-ops", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        """Stop serving and free the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
