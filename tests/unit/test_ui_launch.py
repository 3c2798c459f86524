"""Starting the web app: the sign-in reaches Gradio's ``launch(auth=...)``, a deployment
without sign-in logs that all visitors share one history, and ``deepcritical serve`` refuses
malformed sign-in settings before it builds anything, without quoting a password."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from deepcritical.cli.main import app
from deepcritical.ui.auth import Access
from deepcritical.ui.downloads import DownloadShelf
from deepcritical.ui.launch import AUTH_MESSAGE, SHARED_HISTORY_WARNING, launch


class FakeBlocks:
    """Records the keyword arguments of ``launch``."""

    def __init__(self) -> None:
        self.launched: list[dict[str, Any]] = []

    def launch(self, **kwargs: Any) -> None:
        self.launched.append(kwargs)


def test_without_sign_in_a_warning_says_the_history_is_shared(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    demo = FakeBlocks()
    with caplog.at_level(logging.WARNING, logger="deepcritical.ui.launch"):
        launch(demo, access=Access(), downloads=DownloadShelf(tmp_path))  # type: ignore[arg-type]
    assert [r.getMessage() for r in caplog.records] == [SHARED_HISTORY_WARNING]
    assert "every visitor shares one run history" in SHARED_HISTORY_WARNING
    assert demo.launched[0]["auth"] is None
    assert demo.launched[0]["run_history"] is False


def test_passwords_reach_gradios_login(caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    demo = FakeBlocks()
    access = Access("password", {"alice": SecretStr("pw-alice")})
    with caplog.at_level(logging.DEBUG):
        launch(demo, access=access, downloads=DownloadShelf(tmp_path))  # type: ignore[arg-type]
    assert SHARED_HISTORY_WARNING not in caplog.text
    assert "pw-alice" not in caplog.text
    kwargs = demo.launched[0]
    assert kwargs["auth"]("alice", "pw-alice") is True
    assert kwargs["auth"]("alice", "wrong") is False
    assert kwargs["auth_message"] == AUTH_MESSAGE


def test_hugging_face_sign_in_has_no_password_login(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    demo = FakeBlocks()
    with caplog.at_level(logging.WARNING):
        shelf = DownloadShelf(tmp_path)
        launch(demo, access=Access("huggingface"), downloads=shelf)  # type: ignore[arg-type]
    assert SHARED_HISTORY_WARNING not in caplog.text
    assert demo.launched[0]["auth"] is None


def test_serve_refuses_malformed_sign_in_settings(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)  # no .env of the checkout
    monkeypatch.setenv("DEEPCRITICAL_UI_AUTH", "alice:pw-ok,bobpw-leaked")
    result = CliRunner().invoke(app, ["--data-dir", str(tmp_path), "serve"])
    assert result.exit_code == 2
    assert "DEEPCRITICAL_UI_AUTH entry 2 is not user:password" in result.output
    assert "pw-" not in result.output
