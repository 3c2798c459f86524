"""The sources the web app ticks by default: the local corpus when one exists, live sources
only when their API root answered a short check (a local server that answers, a closed port
that does not); the note names the unreachable ones; nothing secret is sent."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

import httpx
import pytest
import respx

from deepcritical.config import Settings
from deepcritical.sources.reachability import PUBLIC_ROOTS, api_roots, probe, probe_reasons
from deepcritical.ui.examples import CORPUS_EXAMPLES, LIVE_EXAMPLES, choose_examples
from deepcritical.ui.source_check import SourceCheck, default_sources, sources_note


class _Quiet(http.server.BaseHTTPRequestHandler):
    def do_HEAD(self) -> None:
        self.send_response(404)  # any answer below 500 is "reachable"
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def answering() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/api"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/api"  # nobody listens there now


def test_api_roots_follow_source_base_urls_without_credentials(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path,
        _env_file=None,
        source_base_urls={"pubmed": "http://user:pw@127.0.0.1:8080/eutils?api_key=SECRET#x"},
    )
    roots = api_roots(settings)
    assert set(roots) == set(PUBLIC_ROOTS)
    assert roots["pubmed"] == "http://127.0.0.1:8080/eutils"
    assert roots["openalex"] == "https://api.openalex.org/"
    bad = Settings(data_dir=tmp_path, _env_file=None, source_base_urls={"trials": "ftp://x"})
    assert "trials" not in api_roots(bad)


async def test_probe_answering_server_and_closed_port(answering: str, closed_port: str) -> None:
    result = await probe({"pubmed": answering, "trials": closed_port}, seconds=2.0)
    assert result == {"pubmed": True, "trials": False}
    assert await probe({}) == {}


@respx.mock
async def test_probe_sends_a_bare_head_and_treats_5xx_as_down() -> None:
    up = respx.head("https://up.example/api").respond(200)
    respx.head("https://down.example/api").respond(503)
    respx.head("https://slow.example/api").mock(side_effect=httpx.ConnectTimeout("slow"))
    result = await probe(
        {
            "pubmed": "https://up.example/api",
            "trials": "https://down.example/api",
            "web": "https://slow.example/api",
        }
    )
    assert result == {"pubmed": True, "trials": False, "web": False}
    request = up.calls.last.request
    assert request.method == "HEAD"
    assert not request.url.query
    assert not {"authorization", "api-key", "x-api-key"} & {k.lower() for k in request.headers}


@respx.mock
async def test_the_doctor_and_the_web_app_share_one_check_with_its_reasons(tmp_path: Path) -> None:
    """``deepcritical doctor`` asks the same roots the same way and says why a source is
    down: the error type or the HTTP status, and the URL asked (no credentials, no query)."""
    respx.head("https://up.example/api").respond(405)  # an API root refusing HEAD: it answered
    respx.head("https://down.example/api").respond(503)
    respx.head("https://proxy.example/api").respond(407)
    respx.head("https://gone.example/api").mock(side_effect=httpx.ConnectError("refused"))
    settings = Settings(
        data_dir=tmp_path,
        _env_file=None,
        source_base_urls={
            "pubmed": "https://up.example/api",
            "trials": "https://down.example/api",
            "europepmc": "https://proxy.example/api",
            "openalex": "https://me:pw@gone.example/api?api_key=SECRET",
        },
    )
    roots = api_roots(settings, ["pubmed", "trials", "europepmc", "openalex", "local"])
    assert set(roots) == {"pubmed", "trials", "europepmc", "openalex"}  # no web, no local
    assert await probe_reasons(roots) == {
        "pubmed": None,
        "trials": "HTTP 503 from https://down.example/api",
        "europepmc": "HTTP 407 from https://proxy.example/api",
        "openalex": "ConnectError for https://gone.example/api",
    }
    assert await probe(roots) == {
        "pubmed": True,
        "trials": False,
        "europepmc": False,
        "openalex": False,
    }


def test_source_check_runs_once_in_the_background(tmp_path: Path) -> None:
    calls: list[Mapping[str, str]] = []
    release = threading.Event()

    async def prober(roots: Mapping[str, str]) -> dict[str, bool]:
        calls.append(roots)
        release.wait(5)
        return {name: name == "pubmed" for name in roots}

    check = SourceCheck(Settings(data_dir=tmp_path, _env_file=None), prober)
    assert check.wait(0.05) is None  # still checking
    release.set()
    result = check.wait(5)
    assert result is not None
    assert result["pubmed"] is True
    assert result["web"] is False
    assert check.start().wait(1) == result
    assert len(calls) == 1

    async def broken(roots: Mapping[str, str]) -> dict[str, bool]:
        raise RuntimeError("no network")

    failed = SourceCheck(Settings(data_dir=tmp_path, _env_file=None), broken).wait(5)
    assert failed is not None
    assert not any(failed.values())


def test_default_sources_tick_what_can_work() -> None:
    live = ["pubmed", "europepmc", "web"]
    reach = {"pubmed": True, "europepmc": False, "web": False, "trials": True}
    assert default_sources(live, reach, corpus_exists=True) == ["local", "pubmed"]
    assert default_sources(live, None, corpus_exists=True) == ["local"]  # still checking
    assert default_sources(["local", *live], reach, corpus_exists=True) == ["local", "pubmed"]
    assert default_sources(live, reach, corpus_exists=False) == ["pubmed"]
    # nothing works: the configured sources stay (the note says why runs find little)
    nothing = dict.fromkeys(live, False)
    assert default_sources(live, nothing, corpus_exists=False) == live


def test_sources_note_names_the_unreachable() -> None:
    note = sources_note({"pubmed": False, "trials": False, "openalex": True}, True)
    assert "Unreachable from this server" in note
    assert "PubMed, ClinicalTrials.gov" in note
    assert "Reachable: OpenAlex" in note
    assert "local corpus is searched by default" in note
    assert "Checking" in sources_note(None, False)
    assert "No local corpus" in sources_note(None, False)
    assert "Unreachable" not in sources_note({"pubmed": True}, False)


def test_examples_follow_the_corpus() -> None:
    assert choose_examples(True) == [q for q, _, _ in CORPUS_EXAMPLES]
    assert choose_examples(False) == LIVE_EXAMPLES
    assert len(CORPUS_EXAMPLES) == 3
    assert all(pmid.isdigit() and answer in {"yes", "no"} for _, pmid, answer in CORPUS_EXAMPLES)


def test_corpus_examples_are_pubmedqa_questions_with_their_gold_answer() -> None:
    import json

    path = Path(__file__).resolve().parents[3] / "shared/data/pubmedqa/dev_questions.jsonl"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    gold = {
        (r["question"], r["pmid"], r["answer"])
        for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())
    }
    assert set(CORPUS_EXAMPLES) <= gold


def test_the_start_page_names_the_sources_a_run_searches() -> None:
    from deepcritical.ui.source_check import sources_on_md

    assert sources_on_md(["local", "pubmed"]) == (
        "**Searches:** Local corpus, PubMed (change them in Settings)"
    )
    assert "no source ticked" in sources_on_md([])
