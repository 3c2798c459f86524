"""The living reviews' Atom feeds and webhooks (issue 33, item 5): the web app serves a
watch's feed, and the feed of all of a user's watches, to their owner only (another user, a
forged or absent sign-in get 404); the feed is valid Atom with one entry per update; a
webhook URL in a private, loopback, link-local or local range is refused when it is set and
again at delivery (nothing is sent); a delivery POSTs the change summary as JSON, and a
failed one names the host only."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from lxml import etree
from pydantic import SecretStr
from sqlalchemy.orm import Session
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from deepcritical.api import watch_run
from deepcritical.config import Settings
from deepcritical.formats.atom_feed import ATOM_NS
from deepcritical.models import (
    ChangedRecord,
    ReportMetadata,
    ResearchReport,
    RunResult,
    WatchChange,
    WatchUpdate,
    utc_now,
)
from deepcritical.sources.netguard import UnsafeURLError
from deepcritical.sources.webhook import (
    WebhookError,
    check_webhook_url,
    post_webhook,
    shown_url,
)
from deepcritical.state import RunStore
from deepcritical.state.watch_store import WatchStore
from deepcritical.ui.auth import Access
from deepcritical.ui.feed_route import FeedRoute, watch_feed_path

PRIVATE_URLS = (
    "http://127.0.0.1:8080/hook",
    "http://10.1.2.3/hook",
    "http://192.168.1.1/hook",
    "http://169.254.169.254/latest/meta-data",
    "http://[::1]/hook",
    "http://localhost/hook",
    "http://hooks.internal/x",
    "ftp://example.org/hook",
    "http://2130706433/hook",
)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, database_url=f"sqlite:///{tmp_path / 'runs.db'}")


def stored_run(runs: RunStore, owner: str | None) -> str:
    result = RunResult(
        report=ResearchReport(
            title="Review", research_question="Does X help Y?", metadata=ReportMetadata()
        )
    )
    run_id = runs.create_run("Does X help Y?", {}, owner=owner)

    def finish(session: Session) -> None:
        row = runs.require_row(session, run_id)
        row.status, row.result = "completed", result.model_dump(mode="json")

    runs.transact(finish)
    return run_id


def record_update(watches: WatchStore, watch_id: str) -> WatchUpdate:
    now = utc_now()
    change = WatchChange(
        since=now - timedelta(days=7),
        until=now,
        new_included=[ChangedRecord(evidence_id="E9", title="A new trial", identifier="PMID 1")],
        removed=[ChangedRecord(evidence_id="E2", title="Old", identifier="PMID 2", reason="x")],
    )
    update = WatchUpdate(
        watch_id=watch_id,
        number=1,
        started_at=now,
        finished_at=now,
        outcome="nothing_new",
        summary=change.summary(),
        change=change,
    )
    assert watches.claim(watch_id, "test") is not None
    return watches.commit_update(watch_id, "test", update)


def app_with(access: Access, settings: Settings) -> Starlette:
    app = Starlette(
        routes=[Route("/", lambda request: PlainTextResponse("page"))],
        middleware=[Middleware(FeedRoute, settings=settings, access=access)],
    )
    app.cookie_id = "cid"  # type: ignore[attr-defined]  # Gradio's App has both
    app.tokens = {"tok-alice": "alice", "tok-bob": "bob"}  # type: ignore[attr-defined]
    return app


def get(app: Starlette, url: str, token: str | None) -> httpx.Response:
    cookies = {"access-token-cid": token} if token else {}

    async def fetch() -> httpx.Response:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://app", cookies=cookies
        ) as client:
            return await client.get(url)

    return asyncio.run(fetch())


def test_a_watch_feed_is_served_to_its_owner_only(settings: Settings) -> None:
    runs = RunStore.open(settings)
    try:
        watches = WatchStore(runs)
        watch = watches.create(stored_run(runs, "user:alice"), owner="user:alice")
        update = record_update(watches, watch.id)
    finally:
        runs.close()
    access = Access("password", {"alice": SecretStr("a"), "bob": SecretStr("b")})
    app = app_with(access, settings)
    one, mine = "/" + watch_feed_path(watch.id), "/" + watch_feed_path()

    answer = get(app, one, "tok-alice")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("application/atom+xml")
    feed = etree.fromstring(answer.content)
    assert feed.tag == f"{{{ATOM_NS}}}feed"
    assert feed.findtext(f"{{{ATOM_NS}}}title", "").endswith("Does X help Y?")
    entries = feed.findall(f"{{{ATOM_NS}}}entry")
    assert [e.findtext(f"{{{ATOM_NS}}}title") for e in entries] == [update.summary]
    assert entries[0].findtext(f"{{{ATOM_NS}}}id") == f"urn:deepcritical:watch:{watch.id}:update:1"
    assert feed.find(f"{{{ATOM_NS}}}author/{{{ATOM_NS}}}name") is not None
    assert len(etree.fromstring(get(app, mine, "tok-alice").content)) > 0

    for token in ("tok-bob", "tok-forged", None):
        refused = get(app, one, token)
        assert refused.status_code == 404, token
        assert b"Does X help Y?" not in refused.content
    bobs = etree.fromstring(get(app, mine, "tok-bob").content)
    assert bobs.findall(f"{{{ATOM_NS}}}entry") == []  # bob has no watch
    assert get(app, mine, None).status_code == 404
    assert get(app, "/", "tok-alice").text == "page"  # other routes pass on


@pytest.mark.parametrize("url", PRIVATE_URLS)
def test_a_private_range_webhook_is_refused(url: str) -> None:
    with pytest.raises(UnsafeURLError):
        check_webhook_url(url)
    with pytest.raises(UnsafeURLError):
        asyncio.run(post_webhook(url, {"summary": "x"}))


def test_watching_with_a_private_webhook_stores_nothing(settings: Settings) -> None:
    runs = RunStore.open(settings)
    try:
        run_id = stored_run(runs, None)
        with pytest.raises(UnsafeURLError) as refused:
            asyncio.run(watch_run(run_id, settings, webhook_url="http://10.0.0.7/h/s3cr3t"))
        assert "s3cr3t" not in str(refused.value)  # the URL is shown redacted
        assert WatchStore(runs).list_watches() == []
    finally:
        runs.close()


class Receiver:
    """A local HTTP server that keeps what it is POSTed."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        bodies = self.bodies

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                bodies.append(json.loads(self.rfile.read(length)))
                self.send_response(204)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook/s3cr3t"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver()
    yield made
    made.server.shutdown()
    made.server.server_close()


def test_a_delivery_posts_the_summary_once_the_guard_allows(receiver: Receiver) -> None:
    allowed: list[str] = []

    async def allow_loopback(url: str) -> None:  # the tests' receiver is on 127.0.0.1
        allowed.append(url)

    status = asyncio.run(post_webhook(receiver.url, {"summary": "2 new"}, guard=allow_loopback))
    assert status == 204
    assert receiver.bodies == [{"summary": "2 new"}]
    assert allowed == [receiver.url]
    with pytest.raises(UnsafeURLError):  # the default guard refuses the same receiver
        asyncio.run(post_webhook(receiver.url, {"summary": "2 new"}))
    assert len(receiver.bodies) == 1
    receiver.server.shutdown()
    receiver.server.server_close()
    with pytest.raises(WebhookError) as failed:
        asyncio.run(post_webhook(receiver.url, {"summary": "x"}, guard=allow_loopback))
    assert "s3cr3t" not in str(failed.value)
    assert shown_url(receiver.url).endswith("/hook/...")
