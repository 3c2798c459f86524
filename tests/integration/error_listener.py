"""A model server on 127.0.0.1 that answers every request with one error, and records what it
was sent: for tests of what a client sends (keys, retries), not of what it gets back."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ErrorListener:
    """An OpenAI-compatible server on 127.0.0.1 (ephemeral port, ``base_url`` ends in ``/v1``)
    that answers each POST with HTTP ``status`` and the JSON error ``{"error": {"message":
    message, "type": kind}}``, and appends each request's ``(path, Authorization header)`` to
    :attr:`seen` (``""`` without the header). Use it as a context manager."""

    def __init__(self, status: int, message: str, kind: str) -> None:
        self.seen: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        answer = json.dumps({"error": {"message": message, "type": kind}}).encode()
        listener = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with listener._lock:
                    listener.seen.append((self.path, self.headers.get("Authorization") or ""))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> ErrorListener:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
