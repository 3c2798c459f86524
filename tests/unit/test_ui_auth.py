"""The web app's sign-in settings (:class:`Access`): accounts from the variable and the file,
errors that never quote a password, the constant-time password check, and the owner of a
caller's runs for each kind of sign-in."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import gradio as gr
import pytest
from pydantic import SecretStr

from deepcritical.ui.auth import Access, AuthConfigError, AuthSettings, SignInRequired

SECRET = "pw-Zq9:x"  # a password may hold ':'
NO_COLON = "pw-Wk4y"


def settings(**values: Any) -> AuthSettings:
    return AuthSettings(_env_file=None, **values)


def profile(username: str) -> gr.OAuthProfile:
    return gr.OAuthProfile(
        {"name": username.title(), "preferred_username": username, "profile": "", "picture": ""}
    )


def test_without_settings_there_is_no_sign_in() -> None:
    access = Access.from_settings(settings())
    assert access.mode == "none"
    assert not access.required
    assert access.gradio_auth() is None
    assert access.owner(gr.Request(username="alice"), profile("alice")) is None


def test_accounts_from_the_variable_and_the_file(tmp_path: Path) -> None:
    accounts = tmp_path / "accounts.txt"
    accounts.write_text("# operators\n\ncarol:c,with,commas\n", encoding="utf-8")
    access = Access.from_settings(
        settings(auth=SecretStr(f" alice:{SECRET} , bob:b2 ,"), auth_file=accounts)
    )
    assert access.mode == "password"
    assert access.required
    assert sorted(access.accounts) == ["alice", "bob", "carol"]
    assert access.check_password("alice", SECRET)
    assert access.check_password("carol", "c,with,commas")
    assert not access.check_password("alice", "b2")
    assert not access.check_password("mallory", SECRET)
    assert not access.check_password("alice", "")
    assert access.gradio_auth() == access.check_password
    assert SECRET not in repr(access)


def test_the_environment_is_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no .env of the checkout
    monkeypatch.setenv("DEEPCRITICAL_UI_AUTH", f"alice:{SECRET}")
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert Access.from_env().check_password("alice", SECRET)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (f"alice{NO_COLON}", "entry 1 is not user:password"),
        ("alice:", "entry 1 is not user:password"),
        (f"bob:b, al ice:{SECRET}", "entry 2: a user name is"),
        (f"alice:{SECRET},alice:other", "entry 2: its user is named twice"),
        (" , ", "name no account"),
    ],
)
def test_malformed_accounts_are_refused_without_quoting_passwords(value: str, message: str) -> None:
    with pytest.raises(AuthConfigError, match=message) as caught:
        Access.from_settings(settings(auth=SecretStr(value)))
    assert "pw-" not in str(caught.value)


def test_a_bad_file_names_its_line_only(tmp_path: Path) -> None:
    accounts = tmp_path / "accounts.txt"
    accounts.write_text(f"alice:a\n# comment\nbob{NO_COLON}\n", encoding="utf-8")
    with pytest.raises(AuthConfigError, match=r"accounts.txt line 3 is not") as caught:
        Access.from_settings(settings(auth_file=accounts))
    assert "pw-" not in str(caught.value)
    with pytest.raises(AuthConfigError, match="cannot read"):
        Access.from_settings(settings(auth_file=tmp_path / "absent.txt"))


def test_hugging_face_sign_in_and_its_switches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    assert Access.from_settings(settings(hf_oauth=True), space_oauth=True).mode == "huggingface"
    assert Access.from_settings(settings(), space_oauth=True).mode == "huggingface"
    assert Access.from_settings(settings()).mode == "none"
    assert Access.from_settings(settings(hf_oauth=False), space_oauth=True).mode == "none"
    # passwords on a Space with OAuth: the operator must switch Hugging Face sign-in off
    with pytest.raises(AuthConfigError, match="choose one sign-in"):
        Access.from_settings(settings(auth=SecretStr("alice:a")), space_oauth=True)
    both = settings(auth=SecretStr("alice:a"), hf_oauth=False)
    assert Access.from_settings(both, space_oauth=True).mode == "password"


def test_hugging_face_sign_in_needs_gradios_oauth_packages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name: None if name == "authlib" else object()
    )
    with pytest.raises(AuthConfigError, match=r"authlib missing\): pip install 'gradio\[oauth\]'"):
        Access.from_settings(settings(), space_oauth=True)


def test_hugging_face_sign_in_is_refused_off_a_space(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Off a Space, Gradio's mocked login makes every visitor the machine's Hugging Face user
    and signs sessions with a fixed key: asking for it fails at start-up."""
    monkeypatch.chdir(tmp_path)  # no .env of the checkout
    monkeypatch.delenv("DEEPCRITICAL_UI_AUTH", raising=False)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    with pytest.raises(AuthConfigError, match="works only on a Hugging Face Space"):
        Access.from_settings(settings(hf_oauth=True))
    monkeypatch.delenv("SYSTEM", raising=False)
    monkeypatch.setenv("SPACE_ID", "me/deepcritical")
    monkeypatch.setenv("OAUTH_CLIENT_ID", "id")
    monkeypatch.setenv("OAUTH_CLIENT_SECRET", "secret")
    monkeypatch.setenv("DEEPCRITICAL_UI_HF_OAUTH", "true")
    with pytest.raises(AuthConfigError, match="works only on a Hugging Face Space"):
        Access.from_env()  # SPACE_ID without SYSTEM=spaces: Gradio would mock the login
    monkeypatch.setenv("SYSTEM", "spaces")
    assert Access.from_env().mode == "huggingface"
    monkeypatch.delenv("OAUTH_CLIENT_SECRET")
    with pytest.raises(AuthConfigError, match="works only on a Hugging Face Space"):
        Access.from_env()


def test_the_owner_is_the_signed_in_user_with_its_kind() -> None:
    password = Access("password", {"alice": SecretStr("a")})
    assert password.owner(gr.Request(username="alice"), None) == "user:alice"
    # a Hugging Face profile is no password login
    for request in (None, gr.Request(username=None), gr.Request(username="  ")):
        with pytest.raises(SignInRequired, match="sign in"):
            password.owner(request, profile("alice"))

    hf = Access("huggingface")
    assert hf.owner(None, profile("alice")) == "hf:alice"
    assert hf.owner(gr.Request(username="alice"), profile("bob")) == "hf:bob"
    with pytest.raises(SignInRequired):
        hf.owner(gr.Request(username="alice"), None)
    with pytest.raises(SignInRequired, match="too long"):
        hf.owner(None, profile("a" * 300))
