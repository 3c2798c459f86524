"""The server's keys, a visitor's model URL and credentials in model URLs, end to end
(issue 13, items 1 and 4), hermetic: listeners and the Chat Completions stub on 127.0.0.1.

- a visitor's URL gets no server key: through the web app's own ``run`` handler, the real
  :func:`deepcritical.api.research` behind it, and a listener that records every
  ``Authorization`` header and answers 401 with an internal-looking body;
- that body never reaches the visitor's events or page;
- a visitor's URL to a private address is refused before any request (and allowed when the
  operator allow-lists the host);
- a password in the model URL appears in no report, JSON, stored column, database byte or log.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from structlog.testing import capture_logs

from deepcritical.api import research
from deepcritical.config import Settings
from deepcritical.events import ResearchEvent
from deepcritical.testing.chat import ChatCompletionsStub, ManagerScript, RoleScript
from deepcritical.testing.embedders import HashingEmbedder
from deepcritical.ui.app import build_app
from deepcritical.ui.session import VISITOR_URL_NEEDS_KEY
from tests.conftest import hashed_corpus
from tests.integration.error_listener import ErrorListener
from tests.integration.test_magentic_openai_stub import QUESTION, RECORDS

SERVER_KEY = "sk-server-key-0f9e8d"
VISITOR_KEY = "sk-visitor-key-1a2b3c"
BODY = "INTERNAL-BODY-7f3: db=postgres://admin:hunter2@10.0.0.3/prod"
PASSWORD = "PASSWORD-9x8y7z"


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("keys-corpus")
    return hashed_corpus(root, RECORDS)


@pytest.fixture
def listener() -> Iterator[ErrorListener]:
    """Records each request's ``Authorization`` header; answers 401 with :data:`BODY`."""
    with ErrorListener(401, BODY, "internal") as server:
        yield server


def server_settings(corpus: Path, tmp: Path, **update: Any) -> Settings:
    """The operator's settings: extractive default, a server key for openai-compatible."""
    values: dict[str, Any] = {
        "llm": "none",
        "openai_compatible_api_key": SecretStr(SERVER_KEY),
        "sources": ["local"],
        "data_dir": tmp,
        "corpus_dir": corpus,
        "persist_runs": False,
        "max_rounds": 1,
        "results_per_query": 4,
        "llm_retries": 0,
        "llm_timeout_seconds": 30,
        "time_budget_seconds": 120,
        "grounding": False,
        **update,
    }
    return Settings(**values, _env_file=None)


class RecordingResearch:
    """The real :func:`research` (hashing embedder), recording every event it yields."""

    def __init__(self) -> None:
        self.events: list[ResearchEvent] = []
        self.calls = 0

    def __call__(
        self,
        question: str,
        settings: Settings,
        *,
        context: str | None = None,
        owner: str | None = None,
    ) -> AsyncIterator[ResearchEvent]:
        self.calls += 1
        return self._stream(question, settings, context, owner)

    async def _stream(
        self, question: str, settings: Settings, context: str | None, owner: str | None
    ) -> AsyncIterator[ResearchEvent]:
        async for event in research(
            question, settings, context=context, embedder=HashingEmbedder(), owner=owner
        ):
            self.events.append(event)
            yield event


def run_handler(demo: Any) -> Any:
    found = [fn.fn for fn in demo.fns.values() if getattr(fn.fn, "__name__", "") == "run"]
    assert found
    return found[0]


async def visit(settings: Settings, llm: str, key: str) -> tuple[str, RecordingResearch]:
    """One visitor's run through the web app's handler: (all outputs as text, the research)."""
    fake = RecordingResearch()
    demo = build_app(settings, research_fn=fake)
    outs = [o async for o in run_handler(demo)(QUESTION, "", llm, key, [], 1, 10, "iterative")]
    return str(outs), fake


async def test_a_visitor_url_never_receives_the_server_key(
    listener: ErrorListener, corpus_dir: Path, tmp_path: Path
) -> None:
    settings = server_settings(corpus_dir, tmp_path, model_host_allowlist=["127.0.0.1"])
    spec = f"openai-compatible:gpt-4o@{listener.base_url}"

    page, fake = await visit(settings, spec, "")  # blank key: refused, nothing sent
    assert VISITOR_URL_NEEDS_KEY.split(":", 1)[0] in page
    assert fake.calls == 0
    assert listener.seen == []

    page, fake = await visit(settings, spec, VISITOR_KEY)  # own key: only that key is sent
    assert fake.calls == 1
    assert listener.seen
    assert {auth for _, auth in listener.seen} == {f"Bearer {VISITOR_KEY}"}
    assert SERVER_KEY not in page
    assert fake.events[-1].type == "done"
    # the listener's 401 body is echoed nowhere: not in events, not on the page
    shown = json.dumps([e.model_dump(mode="json") for e in fake.events])
    assert "INTERNAL-BODY" not in shown
    assert "hunter2" not in shown
    assert "INTERNAL-BODY" not in page
    assert "HTTP 401" in shown


async def test_a_visitor_url_to_a_private_address_is_refused(
    listener: ErrorListener, corpus_dir: Path, tmp_path: Path
) -> None:
    settings = server_settings(corpus_dir, tmp_path)
    spec = f"openai-compatible:gpt-4o@{listener.base_url}"
    page, fake = await visit(settings, spec, VISITOR_KEY)
    assert "is refused" in page
    assert "not a public address" in page
    assert "MODEL_HOST_ALLOWLIST" in page
    assert fake.calls == 0
    assert listener.seen == []


async def test_the_operators_own_endpoint_keeps_the_server_key(
    listener: ErrorListener, corpus_dir: Path, tmp_path: Path
) -> None:
    """The operator configured this URL: a visitor choosing it uses the server's key, no
    allow-list needed (the CLI and the operator's default keep working with local URLs)."""
    spec = f"openai-compatible:gpt-4o@{listener.base_url}"
    settings = server_settings(corpus_dir, tmp_path, llm=spec)
    page, fake = await visit(settings, spec, "")
    assert fake.calls == 1
    assert {auth for _, auth in listener.seen} == {f"Bearer {SERVER_KEY}"}
    assert SERVER_KEY not in page


@pytest.mark.parametrize("orchestrator", ["iterative", "magentic"])
async def test_a_url_password_is_in_no_output(
    corpus_dir: Path, tmp_path: Path, orchestrator: str
) -> None:
    data = tmp_path / "data"
    with ChatCompletionsStub(ManagerScript(), RoleScript()) as stub:
        host_and_path = stub.base_url.removeprefix("http://")
        spec = f"openai-compatible:stub@http://user:{PASSWORD}@{host_and_path}"
        settings = server_settings(
            corpus_dir, data, llm=spec, persist_runs=True, orchestrator=orchestrator
        )
        with capture_logs() as logs:
            events = [e async for e in research(QUESTION, settings, embedder=HashingEmbedder())]
        assert stub.requests  # the model was really used, credentials and all
    assert events[-1].type == "done"
    result = events[-1].result
    assert result is not None
    assert result.report.metadata.llm == f"openai-compatible:stub@{stub.base_url}"
    outputs = {
        "markdown": result.report.to_markdown(),
        "json": result.model_dump_json(),
        "events": json.dumps([e.model_dump(mode="json") for e in events]),
        "public_dict": json.dumps(settings.public_dict()),
        "logs": json.dumps(logs, default=str),
    }
    for name, text in outputs.items():
        assert PASSWORD not in text, name
    for path in data.rglob("*"):
        if path.is_file():
            assert PASSWORD.encode() not in path.read_bytes(), path
