"""Settings parsing, secret handling and model-spec selection."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from deepcritical.config import Settings
from deepcritical.llm.providers import (
    ModelSpecError,
    build_chat_client,
    build_model,
    parse_model_spec,
)


def test_sources_accept_comma_list_and_reject_unknown() -> None:
    assert Settings(sources="pubmed, local,pubmed").sources == ["pubmed", "local"]
    with pytest.raises(ValidationError, match="unknown source"):
        Settings(sources="pubmed,scholar")
    with pytest.raises(ValidationError, match="at least one source"):
        Settings(sources="")


def test_env_prefix_and_key_aliases(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPCRITICAL_MAX_ROUNDS", "5")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-123")
    s = Settings()
    assert s.max_rounds == 5
    assert s.openai_api_key is not None
    assert s.openai_api_key.get_secret_value() == "sk-secret-123"
    assert "sk-secret-123" not in repr(s)


def test_public_dict_never_contains_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "ant-secret")
    monkeypatch.setenv("NCBI_API_KEY", "ncbi-secret")
    public = Settings(openai_api_key="sk-x").public_dict()
    text = repr(public)
    for secret in ("ant-secret", "ncbi-secret", "sk-x"):
        assert secret not in text
    assert not any(k.endswith("api_key") for k in public)
    assert public["max_rounds"] == Settings().max_rounds


@pytest.mark.parametrize(
    ("spec", "provider", "model", "base_url"),
    [
        ("none", "none", "", None),
        ("NONE", "none", "", None),
        ("openai:gpt-4o", "openai", "gpt-4o", None),
        ("anthropic:claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5", None),
        (
            "openai-compatible:llama3.1@http://127.0.0.1:11434/v1/",
            "openai-compatible",
            "llama3.1",
            "http://127.0.0.1:11434/v1",
        ),
    ],
)
def test_parse_model_spec(spec: str, provider: str, model: str, base_url: str | None) -> None:
    parsed = parse_model_spec(spec)
    assert (parsed.provider, parsed.model, parsed.base_url) == (provider, model, base_url)


@pytest.mark.parametrize(
    "spec",
    [
        "gpt-4o",
        "openai:",
        "cohere:command",
        "openai-compatible:llama3",
        "openai-compatible:@http://x",
    ],
)
def test_bad_model_specs_are_refused(spec: str) -> None:
    with pytest.raises(ModelSpecError):
        parse_model_spec(spec)


def test_missing_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("DEEPCRITICAL_OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelSpecError, match="OPENAI_API_KEY"):
        build_model(Settings(llm="openai:gpt-4o"))


def test_build_model_selects_provider() -> None:
    assert build_model(Settings(llm="none")) is None
    model = build_model(Settings(llm="openai-compatible:qwen2.5@http://127.0.0.1:9/v1"))
    assert model is not None
    assert model.model_name == "qwen2.5"
    assert "127.0.0.1:9" in str(model.base_url)
    anth = build_model(Settings(llm="anthropic:claude-x", anthropic_api_key="k"))
    assert anth is not None
    assert anth.system == "anthropic"


@pytest.mark.parametrize("retries", [0, 3])
@pytest.mark.parametrize(
    "llm", ["openai:gpt-4o", "openai-compatible:qwen2.5@http://127.0.0.1:9/v1", "anthropic:c"]
)
def test_the_provider_sdk_client_retries_llm_retries_times(llm: str, retries: int) -> None:
    """Issue 13: the SDK clients retried twice whatever DEEPCRITICAL_LLM_RETRIES said."""
    settings = Settings(llm=llm, llm_retries=retries, openai_api_key="k", anthropic_api_key="k")
    model = build_model(settings)
    assert model is not None
    assert model.client.max_retries == retries  # type: ignore[attr-defined]


class FakeAnthropicChatClient:
    """agent-framework-anthropic's ``AnthropicClient`` as far as its constructor goes."""

    def __init__(
        self, *, model_id: str | None = None, anthropic_client: object | None = None
    ) -> None:
        self.model_id = model_id
        self.anthropic_client = anthropic_client


def test_the_anthropic_chat_client_gets_an_sdk_client_with_the_settings_retries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys
    import types

    from anthropic import AsyncAnthropic

    module = types.ModuleType("agent_framework_anthropic")
    module.AnthropicClient = FakeAnthropicChatClient  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "agent_framework_anthropic", module)
    settings = Settings(
        llm="anthropic:claude-x", anthropic_api_key="k", llm_retries=0, llm_timeout_seconds=7
    )
    client = build_chat_client(settings)
    assert isinstance(client, FakeAnthropicChatClient)
    assert client.model_id == "claude-x"
    assert isinstance(client.anthropic_client, AsyncAnthropic)
    assert client.anthropic_client.max_retries == 0
    assert client.anthropic_client.timeout == 7
