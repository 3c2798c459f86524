"""Model endpoints and credentials (issue 13, items 1 and 4): URL redaction, the operator's
endpoints, a visitor's model URL (own key, SSRF guard, allow-list) and error texts without a
model server's answer."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from pydantic import SecretStr
from pydantic_ai.exceptions import ModelHTTPError, UsageLimitExceeded

from deepcritical.config import Settings, redact_model_spec, redact_url
from deepcritical.llm.endpoints import normalise_base_url, operator_endpoint
from deepcritical.llm.llm_errors import AgentModelError, describe_error
from deepcritical.llm.providers import ModelSpecError, parse_model_spec
from deepcritical.ui.session import (
    VISITOR_URL_NEEDS_KEY,
    SessionChoice,
    SettingsError,
    host_allow_listed,
    run_settings,
    secret_values,
    visitor_settings,
)

SERVER_KEY = "sk-server-secret-123"
VISITOR_KEY = "sk-visitor-456"
PASSWORD = "PASSWORD-s3cr3t"


@pytest.fixture
def base(tmp_path: Path) -> Settings:
    return Settings(
        data_dir=tmp_path,
        sources=["local"],
        openai_compatible_api_key=SecretStr(SERVER_KEY),
        _env_file=None,
    )


def choice(llm: str, key: str | None = None) -> SessionChoice:
    return SessionChoice(llm=llm, api_key=SecretStr(key) if key else None)


async def public_resolver(host: str, port: int) -> Sequence[str]:
    return ["93.184.216.34"]


async def private_resolver(host: str, port: int) -> Sequence[str]:
    return ["10.0.0.7"]


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://user:pw@host:8080/v1", "http://host:8080/v1"),
        ("https://host/v1?api_key=abc&x=1", "https://host/v1?api_key=%5Bredacted%5D&x=1"),
        ("https://host/v1?Token=abc", "https://host/v1?Token=%5Bredacted%5D"),
        ("http://a@127.0.0.1:80@evil.com/v1", "http://evil.com/v1"),
        ("http://host/v1", "http://host/v1"),
    ],
)
def test_redact_url(url: str, expected: str) -> None:
    assert redact_url(url) == expected


def test_redact_model_spec_and_the_parsed_spec() -> None:
    spec = f"openai-compatible:gpt-4o@http://user:{PASSWORD}@host/v1?key=k2"
    assert PASSWORD not in redact_model_spec(spec)
    assert "k2" not in redact_model_spec(spec)
    assert redact_model_spec("openai:gpt-4o") == "openai:gpt-4o"
    parsed = parse_model_spec(spec)
    assert parsed.base_url is not None
    assert PASSWORD in parsed.base_url  # the request needs it
    assert PASSWORD not in str(parsed)
    with pytest.raises(ModelSpecError) as err:
        parse_model_spec(f"openai-compatible:@http://u:{PASSWORD}@host/v1")
    assert PASSWORD not in str(err.value)


def test_public_dict_has_no_url_credentials(tmp_path: Path) -> None:
    s = Settings(
        llm=f"openai-compatible:m@http://u:{PASSWORD}@host/v1",
        model_base_urls=[f"http://u:{PASSWORD}@other/v1"],
        source_base_urls={"pubmed": f"http://u:{PASSWORD}@mirror/eutils"},
        data_dir=tmp_path,
        _env_file=None,
    )
    public = str(s.public_dict())
    assert PASSWORD not in public
    assert "http://host/v1" in public


def test_list_settings_read_comma_separated_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DEEPCRITICAL_MODEL_HOST_ALLOWLIST", "127.0.0.1:8080, llama.lan")
    monkeypatch.setenv("DEEPCRITICAL_MODEL_BASE_URLS", '["http://10.0.0.2:8000/v1"]')
    s = Settings(data_dir=tmp_path, _env_file=None)
    assert s.model_host_allowlist == ["127.0.0.1:8080", "llama.lan"]
    assert s.model_base_urls == ["http://10.0.0.2:8000/v1"]


def test_normalise_base_url() -> None:
    assert normalise_base_url("HTTP://U:p@Example.org/v1/?k=1") == "http://example.org:80/v1"
    assert normalise_base_url("https://example.org:443/v1") == "https://example.org:443/v1"
    assert normalise_base_url("ftp://example.org/") is None
    assert normalise_base_url("http://a@127.0.0.1:80@evil.com/v1") == "http://evil.com:80/v1"


def test_operator_endpoints(base: Settings) -> None:
    s = base.model_copy(
        update={
            "llm": f"openai-compatible:m@http://u:{PASSWORD}@127.0.0.1:8080/v1",
            "model_base_urls": ["https://models.example.org/v1/"],
        }
    )
    assert operator_endpoint(s, "http://127.0.0.1:8080/v1/") == (
        f"http://u:{PASSWORD}@127.0.0.1:8080/v1"
    )
    assert operator_endpoint(s, "HTTPS://models.example.org:443/v1") is not None
    assert operator_endpoint(s, "http://127.0.0.1:8081/v1") is None
    assert operator_endpoint(s, "http://127.0.0.1:8080/v2") is None


def test_visitor_url_without_a_key_is_refused(base: Settings) -> None:
    with pytest.raises(SettingsError) as err:
        run_settings(base, choice("openai-compatible:m@https://models.example.org/v1"))
    assert str(err.value) == VISITOR_URL_NEEDS_KEY


def test_visitor_url_with_a_key_replaces_the_server_key(base: Settings) -> None:
    s = run_settings(base, choice("openai-compatible:m@https://models.example.org/v1", VISITOR_KEY))
    assert s.openai_compatible_api_key is not None
    assert s.openai_compatible_api_key.get_secret_value() == VISITOR_KEY


def test_operator_endpoint_keeps_the_server_key(base: Settings) -> None:
    operator = base.model_copy(
        update={"llm": f"openai-compatible:m@http://u:{PASSWORD}@127.0.0.1:8080/v1"}
    )
    shown = redact_model_spec(operator.llm)
    assert PASSWORD not in shown
    s = run_settings(operator, choice(shown))  # the default, as the dropdown shows it
    assert s.llm == operator.llm
    assert s.openai_compatible_api_key == operator.openai_compatible_api_key
    other_model = run_settings(operator, choice("openai-compatible:other@http://127.0.0.1:8080/v1"))
    assert other_model.llm == f"openai-compatible:other@http://u:{PASSWORD}@127.0.0.1:8080/v1"
    assert PASSWORD in " ".join(secret_values(other_model))  # redacted from page and downloads


async def test_visitor_url_to_a_private_address_is_refused(base: Settings) -> None:
    for url in (
        "http://127.0.0.1:8080/v1",
        "http://[::1]:8080/v1",
        "http://169.254.169.254/v1",
        "http://localhost:11434/v1",
        "http://0x7f.1/v1",
    ):
        with pytest.raises(SettingsError) as err:
            await visitor_settings(base, choice(f"openai-compatible:m@{url}", VISITOR_KEY))
        assert "refused" in str(err.value)
        assert "MODEL_HOST_ALLOWLIST" in str(err.value)
    with pytest.raises(SettingsError) as err:
        await visitor_settings(
            base,
            choice(f"openai-compatible:m@http://u:{PASSWORD}@llm.example.org/v1", VISITOR_KEY),
            resolver=private_resolver,
        )
    assert "10.0.0.7" in str(err.value)
    assert PASSWORD not in str(err.value)


async def test_visitor_url_to_a_public_or_allow_listed_host_passes(base: Settings) -> None:
    public = choice("openai-compatible:m@https://llm.example.org/v1", VISITOR_KEY)
    s = await visitor_settings(base, public, resolver=public_resolver)
    assert s.llm == "openai-compatible:m@https://llm.example.org/v1"
    local = choice("openai-compatible:m@http://127.0.0.1:8080/v1", VISITOR_KEY)
    allowed = base.model_copy(update={"model_host_allowlist": ["127.0.0.1:8080"]})
    await visitor_settings(allowed, local)
    wrong_port = base.model_copy(update={"model_host_allowlist": ["127.0.0.1:9999"]})
    with pytest.raises(SettingsError):
        await visitor_settings(wrong_port, local)


async def test_the_operators_endpoint_skips_the_guard(base: Settings) -> None:
    operator = base.model_copy(update={"llm": "openai-compatible:m@http://127.0.0.1:8080/v1"})
    s = await visitor_settings(operator, choice("openai-compatible:m@http://127.0.0.1:8080/v1"))
    assert s.openai_compatible_api_key is not None
    assert s.openai_compatible_api_key.get_secret_value() == SERVER_KEY


@pytest.mark.parametrize(
    ("allowlist", "url", "expected"),
    [
        (["127.0.0.1"], "http://127.0.0.1:8080/v1", True),
        (["127.0.0.1:8080"], "http://127.0.0.1:8080/v1", True),
        (["127.0.0.1:8080"], "http://127.0.0.1:8081/v1", False),
        (["::1"], "http://[::1]:8080/v1", True),
        (["[::1]:8080"], "http://[::1]:8080/v1", True),
        (["Llama.LAN"], "http://llama.lan/v1", True),
        ([], "http://127.0.0.1/v1", False),
        (["127.0.0.1"], "http://a@127.0.0.1:80@evil.com/v1", False),
    ],
)
def test_host_allow_listed(allowlist: list[str], url: str, expected: bool) -> None:
    assert host_allow_listed(url, allowlist) is expected


def test_describe_error_never_shows_the_server_answer() -> None:
    body = {"error": {"message": "INTERNAL-BODY db=postgres://admin:hunter2@10.0.0.3"}}
    http = ModelHTTPError(502, "m", body)
    text = describe_error(http)
    assert "INTERNAL-BODY" not in text
    assert "HTTP 502" in text
    wrapped = RuntimeError(f"workflow failed: {http}")
    wrapped.__cause__ = http
    assert "INTERNAL-BODY" not in describe_error(wrapped)
    assert describe_error(ValueError("plain")) == "ValueError: plain"
    limit = UsageLimitExceeded("request_limit of 5")
    assert "request_limit of 5" in describe_error(limit)
    agent = AgentModelError("planner", describe_error(http))
    assert describe_error(agent) == f"AgentModelError: planner: {text}"
