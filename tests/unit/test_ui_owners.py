"""The web app's handlers check the caller themselves (issue 13, item 2), without a server:
each research run is recorded for the signed-in user, History's refresh, open, export and
resume see only the caller's runs, and with sign-in on a request without a user gets nothing,
whether it comes from the page, the API or the MCP tool."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import gradio as gr
import pytest
from pydantic import SecretStr

from deepcritical.config import Settings
from deepcritical.ui.app import build_app
from deepcritical.ui.auth import Access
from deepcritical.ui.downloads import DownloadShelf
from deepcritical.ui.mcp_tool import parse_output
from tests.unit.test_ui_app import handler
from tests.unit.test_ui_history import FakeStore, Record
from tests.unit.ui_fixtures import OPEN_STATUS, FakeResearch, run_result, script

PASSWORDS = Access("password", {"alice": SecretStr("a"), "bob": SecretStr("b")})
ALICE = gr.Request(username="alice")
BOB = gr.Request(username="bob")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, sources=["local"], _env_file=None)


@pytest.fixture
def store() -> FakeStore:
    return FakeStore(
        [
            Record("a1", "Alice's question", owner="user:alice"),
            Record("b1", "Bob's question", owner="user:bob"),
            Record("l1", "A local question"),
        ]
    )


def hf_profile(username: str) -> gr.OAuthProfile:
    return gr.OAuthProfile(
        {"name": username, "preferred_username": username, "profile": "", "picture": ""}
    )


async def collect(stream: AsyncIterator[tuple[object, ...]]) -> list[tuple[object, ...]]:
    return [out async for out in stream]


def ids(table: tuple[list[list[str]], list[str]]) -> list[str]:
    """The run ids of the History table ``refresh`` returned (rows, ids)."""
    rows, run_ids = table
    assert [row[2] for row in rows] == run_ids  # short ids of short ids are the ids
    return run_ids


async def opened(open_run: Any, *args: Any) -> str:
    """The status line of History's open handler."""
    outs = await collect(open_run(*args))
    return str(outs[-1][OPEN_STATUS])


async def test_history_shows_each_user_only_their_runs(
    settings: Settings, store: FakeStore
) -> None:
    shelf = DownloadShelf(settings.data_dir / "dl")
    demo = build_app(
        settings,
        research_fn=FakeResearch([]),
        store_opener=lambda s: store,
        access=PASSWORDS,
        downloads=shelf,
    )
    refresh, open_run, export = (handler(demo, n) for n in ("refresh", "open_run", "export"))
    assert ids(refresh(ALICE, None)) == ["a1"]
    assert ids(refresh(BOB, None)) == ["b1"]
    assert refresh(None, None) == ([], [])  # no signed-in user: nothing, and no store opened
    assert refresh(gr.Request(username=None), hf_profile("alice")) == ([], [])
    opened_stores = store.closed
    assert opened_stores == 2

    seen_by_bob = await opened(open_run, "a1", BOB, None)
    assert "no stored run" in seen_by_bob
    assert "Alice" not in seen_by_bob
    assert "completed" in await opened(open_run, "a1", ALICE, None)
    assert "sign in" in await opened(open_run, "a1", None, None)
    assert store.closed == opened_stores + 2  # no store opened without a user

    assert "no stored run" in export("a1", BOB, None)
    assert "dc/download" not in export("a1", BOB, None)
    assert "sign in" in export("a1", None, None)
    link = re.search(r'href="dc/download/([^/"]+)/([^"]+)"', export("a1", ALICE, None))
    assert link is not None
    assert link.group(2) == "run-a1.json"
    assert shelf.find(link.group(1), link.group(2), "user:alice") is not None
    assert shelf.find(link.group(1), link.group(2), "user:bob") is None  # the URL is Alice's


async def test_without_sign_in_everyone_is_the_local_user(
    settings: Settings, store: FakeStore
) -> None:
    demo = build_app(settings, research_fn=FakeResearch([]), store_opener=lambda s: store)
    refresh, open_run = handler(demo, "refresh"), handler(demo, "open_run")
    # a user name Gradio might carry changes nothing: there is no sign-in to trust
    assert ids(refresh(ALICE, None)) == ["l1"]
    assert ids(refresh()) == ["l1"]
    assert "no stored run" in await opened(open_run, "a1", ALICE, None)


async def test_resume_is_scoped_to_the_caller(
    settings: Settings, store: FakeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deepcritical import api

    owners: list[str | None] = []

    def fake_resume(run_id: str, settings: Settings, owner: str | None) -> Any:
        owners.append(owner)
        return FakeResearch(script(run_result()))(run_id, settings)

    monkeypatch.setattr(api, "resume", fake_resume)
    demo = build_app(
        settings, research_fn=FakeResearch([]), store_opener=lambda s: store, access=PASSWORDS
    )
    resume = handler(demo, "resume_run")
    outs = await collect(resume("a1", None, None))
    assert "sign in" in str(outs[-1][1])
    assert owners == []
    outs = await collect(resume("a1", BOB, None))
    assert owners == ["user:bob"]  # the store then finds no run a1 of bob's
    assert "Report ready" in str(outs[-1][1])


async def test_each_research_run_belongs_to_the_caller(settings: Settings) -> None:
    fake = FakeResearch(script(run_result()))
    demo = build_app(settings, research_fn=fake, access=PASSWORDS)
    run = handler(demo, "run")
    args = ("Q?", "", "none", "", ["local"], 1, 5, "iterative")
    refused = await collect(run(*args, None, None))
    assert "sign in" in str(refused[-1][1])
    assert fake.calls == []
    await collect(run(*args, ALICE, None))
    assert fake.owners == ["user:alice"]

    local = FakeResearch(script(run_result()))
    await collect(handler(build_app(settings, research_fn=local), "run")(*args, ALICE, None))
    assert local.owners == [None]


async def test_hugging_face_sign_in_owns_by_profile(
    settings: Settings, store: FakeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Gradio's OAuth routes need gradio[oauth]; the handlers do not: a plain button stands in
    monkeypatch.setattr(gr, "LoginButton", gr.Button)
    store.records.append(Record("h1", "HF question", owner="hf:alice"))
    fake = FakeResearch(script(run_result()))
    demo = build_app(
        settings, research_fn=fake, store_opener=lambda s: store, access=Access("huggingface")
    )
    refresh = handler(demo, "refresh")
    assert ids(refresh(None, hf_profile("alice"))) == ["h1"]
    assert refresh(ALICE, None) == ([], [])  # a password user name is no Hugging Face sign-in
    await collect(handler(demo, "run")("Q?", "", "none", "", [], 1, 5, "", None, hf_profile("bo")))
    assert fake.owners == ["hf:bo"]


def test_hugging_face_sign_in_shows_the_login_button(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a Space with hf_oauth: true (its OAuth client, as the Hub sets it; nothing is fetched
    # while the app is only built)
    import gradio.oauth

    monkeypatch.setenv("SYSTEM", "spaces")
    monkeypatch.setenv("SPACE_ID", "lab/deepcritical")
    for name, value in {
        "OAUTH_CLIENT_ID": "client-id",
        "OAUTH_CLIENT_SECRET": "client-secret",
        "OAUTH_SCOPES": "openid profile",
        "OPENID_PROVIDER_URL": "https://huggingface.co",
    }.items():
        monkeypatch.setattr(gradio.oauth, name, value)
    demo = build_app(settings, research_fn=FakeResearch([]), access=Access("huggingface"))
    assert login_buttons(demo) == ["Sign in with Hugging Face"]
    plain = build_app(settings, research_fn=FakeResearch([]), access=PASSWORDS)
    assert login_buttons(plain) == []


def login_buttons(demo: gr.Blocks) -> list[str]:
    """The labels of the app's login buttons (a ``gr.LoginButton`` is a template of
    ``gr.Button``: its config type is "button")."""
    components = demo.get_config_file()["components"]
    return [c["props"]["value"] for c in components if c["props"].get("elem_id") == "dc-login"]


async def test_the_api_and_mcp_tool_run_for_the_signed_in_caller_only(
    settings: Settings,
) -> None:
    fake = FakeResearch(script(run_result()))
    tool = handler(build_app(settings, research_fn=fake, access=PASSWORDS), "deep_research")
    with pytest.raises(gr.Error, match="sign in") as refused:  # an MCP result with isError
        await tool("Q?", None, 1, None, None)
    assert refused.value.print_exception is False
    assert fake.calls == []
    done = parse_output(await tool("Q?", None, 1, BOB, None))
    assert done["status"] == "completed"
    assert fake.owners == ["user:bob"]


def test_the_caller_is_no_api_parameter(settings: Settings) -> None:
    demo = build_app(settings, research_fn=FakeResearch([]), access=PASSWORDS)
    endpoint = demo.get_api_info()["named_endpoints"]["/deep_research"]
    names = [p["parameter_name"] for p in endpoint["parameters"]]
    assert names == ["question", "context", "max_iterations"]
