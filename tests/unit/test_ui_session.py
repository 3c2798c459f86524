"""Per-session settings: the browser's API key goes into the run's settings copy only."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from deepcritical.config import Settings
from deepcritical.ui.session import (
    EXTRACTIVE_NOTICE,
    SessionChoice,
    SettingsError,
    mode_notice,
    redact,
    run_settings,
    secret_values,
)

KEY = "sk-session-secret-123"


@pytest.fixture
def base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "DEEPCRITICAL_LLM"):
        monkeypatch.delenv(var, raising=False)
    return Settings(data_dir=tmp_path, sources=["local"], _env_file=None)


@pytest.mark.parametrize(
    ("llm", "field"),
    [
        ("openai:gpt-4o", "openai_api_key"),
        ("anthropic:claude-sonnet-4-5", "anthropic_api_key"),
        ("openai-compatible:llama3@http://127.0.0.1:9/v1", "openai_compatible_api_key"),
    ],
)
def test_key_goes_to_the_provider_field_of_a_copy(base: Settings, llm: str, field: str) -> None:
    s = run_settings(base, SessionChoice(llm=llm, api_key=SecretStr(KEY)))
    assert s.llm == llm
    secret = getattr(s, field)
    assert isinstance(secret, SecretStr)
    assert secret.get_secret_value() == KEY
    assert getattr(base, field) is None
    assert base.llm == "none"
    assert KEY not in repr(s)
    assert KEY not in str(s.public_dict())
    others = {"openai_api_key", "anthropic_api_key", "openai_compatible_api_key"} - {field}
    assert all(getattr(s, f) is None for f in others)


def test_choices_apply_and_are_validated(base: Settings) -> None:
    s = run_settings(
        base,
        SessionChoice(
            sources=["pubmed", "local"], max_rounds=4, max_sources=30, orchestrator="magentic"
        ),
    )
    assert (s.sources, s.max_rounds, s.max_sources, s.orchestrator) == (
        ["pubmed", "local"],
        4,
        30,
        "magentic",
    )
    assert s.data_dir == base.data_dir
    with pytest.raises(SettingsError, match="max_rounds"):
        run_settings(base, SessionChoice(max_rounds=99))
    with pytest.raises(SettingsError, match="unknown source"):
        run_settings(base, SessionChoice(sources=["nature"]))
    with pytest.raises(SettingsError, match="provider"):
        run_settings(base, SessionChoice(llm="bogus:model"))


def test_empty_choice_keeps_the_server_settings(base: Settings) -> None:
    s = run_settings(base, SessionChoice(api_key=SecretStr(KEY)))
    assert s.model_dump() == base.model_dump()  # a key without a model spec is not applied


def test_extractive_notice(base: Settings) -> None:
    assert mode_notice(base) == EXTRACTIVE_NOTICE
    chosen = run_settings(base, SessionChoice(llm="openai:gpt-4o"))
    assert mode_notice(chosen) is None


def test_secret_values_and_redact(base: Settings) -> None:
    s = run_settings(base, SessionChoice(llm="openai:gpt-4o", api_key=SecretStr(KEY)))
    assert secret_values(s) == [KEY]
    assert redact(f"401 for key {KEY}!", secret_values(s)) == "401 for key [redacted]!"
    assert secret_values(base) == []
    assert redact("nothing", []) == "nothing"


def test_the_review_toggles_decide_the_run_s_reviews(base: Settings) -> None:
    asked = run_settings(base, SessionChoice(review_plan=True, review_evidence=False))
    assert (asked.review_plan, asked.review_evidence) == (True, False)
    server = base.model_copy(update={"review_evidence": True})
    assert run_settings(server, SessionChoice()).review_evidence  # untouched: the server's
    assert not run_settings(server, SessionChoice(review_evidence=False)).review_evidence
    unrecorded = base.model_copy(update={"persist_runs": False})
    with pytest.raises(SettingsError, match="Reviews need recorded runs"):
        run_settings(unrecorded, SessionChoice(review_plan=True))
    assert not run_settings(unrecorded, SessionChoice(review_plan=False)).review_plan
