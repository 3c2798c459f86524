"""The one place that turns the ``llm`` setting into a model object.

Model specs (``Settings.llm``):

- ``none``: no model; agents use their extractive implementations.
- ``openai:<model>``: OpenAI (key from ``DEEPCRITICAL_OPENAI_API_KEY`` or ``OPENAI_API_KEY``).
- ``anthropic:<model>``: Anthropic (key from ``DEEPCRITICAL_ANTHROPIC_API_KEY`` or
  ``ANTHROPIC_API_KEY``).
- ``openai-compatible:<model>@<base_url>``: any Chat Completions server (Ollama, vLLM,
  llama.cpp server), e.g. ``openai-compatible:llama3.1@http://127.0.0.1:11434/v1``.

Nothing else in the project imports a provider SDK. Every agent obtains its model through
:func:`build_model` (pydantic-ai) and the Magentic manager its chat client through
:func:`build_chat_client` (agent-framework), both from the same parsed spec, so there is one
provider-selection path and no silent fallback.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from deepcritical.config import Settings, redact_model_spec, redact_url

if TYPE_CHECKING:
    from agent_framework import SupportsChatGetResponse
    from pydantic_ai.models import Model

Provider = Literal["none", "openai", "anthropic", "openai-compatible"]


class ModelSpecError(ValueError):
    """The ``llm`` setting cannot be parsed, or the provider's API key is missing."""


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model spec: provider, model name and (for OpenAI-compatible servers) base URL.

    ``base_url`` is the URL as given, credentials included (the request may need them);
    ``str(spec)`` is the public form, with :func:`~deepcritical.config.redact_url` applied:
    the only form to store, show or log.
    """

    provider: Provider
    model: str = ""
    base_url: str | None = None

    def __str__(self) -> str:
        if self.provider == "none":
            return "none"
        if self.provider == "openai-compatible":
            return f"openai-compatible:{self.model}@{redact_url(self.base_url or '')}"
        return f"{self.provider}:{self.model}"


def parse_model_spec(spec: str) -> ModelSpec:
    """Parse ``none`` / ``openai:<m>`` / ``anthropic:<m>`` / ``openai-compatible:<m>@<url>``.

    Raises:
        ModelSpecError: on an unknown provider, an empty model name, or a missing base URL.
    """
    text = spec.strip()
    shown = redact_model_spec(text)
    if text.lower() in {"none", "", "extractive"}:
        return ModelSpec("none")
    provider, sep, rest = text.partition(":")
    provider = provider.strip().lower()
    if not sep or not rest.strip():
        raise ModelSpecError(
            f"model spec {shown!r} needs the form provider:model "
            "(openai:gpt-4o, anthropic:claude-sonnet-4-5, openai-compatible:MODEL@BASE_URL or none)"
        )
    rest = rest.strip()
    if provider == "openai-compatible":
        model, at, base_url = rest.partition("@")
        if not at or not base_url.startswith(("http://", "https://")) or not model:
            raise ModelSpecError(
                f"model spec {shown!r}: use openai-compatible:MODEL@http(s)://host:port/v1"
            )
        return ModelSpec("openai-compatible", model, base_url.rstrip("/"))
    if provider in {"openai", "anthropic"}:
        return ModelSpec(provider, rest)  # type: ignore[arg-type]
    raise ModelSpecError(
        f"unknown model provider {provider!r} in {shown!r}; "
        "use openai, anthropic, openai-compatible or none"
    )


def build_model(settings: Settings) -> Model | None:
    """The pydantic-ai model for ``settings.llm``, or ``None`` for the extractive mode.

    The provider SDK's client (``AsyncOpenAI`` / ``AsyncAnthropic``, built by pydantic-ai's
    provider, which keeps managing its HTTP client) retries a failed request (connection
    error, HTTP 408/409/429/5xx) ``settings.llm_retries`` times, not the SDK's default 2:
    ``DEEPCRITICAL_LLM_RETRIES=0`` sends each request once. An openai-compatible server
    gets a :class:`~deepcritical.llm.structured.ConstrainedChatModel`: native structured output
    requires every property, and with ``settings.structured_output == "json_object"`` it is
    sent in llama-cpp-python's ``json_object`` + ``schema`` form.

    Raises:
        ModelSpecError: bad spec, or no API key for OpenAI/Anthropic.
    """
    spec = parse_model_spec(settings.llm)
    if spec.provider == "none":
        return None
    if spec.provider == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        if settings.anthropic_api_key is None:
            raise ModelSpecError(
                "anthropic models need an API key: set ANTHROPIC_API_KEY "
                "or DEEPCRITICAL_ANTHROPIC_API_KEY"
            )
        anthropic_provider = AnthropicProvider(
            api_key=settings.anthropic_api_key.get_secret_value()
        )
        anthropic_provider.client.max_retries = settings.llm_retries
        return AnthropicModel(spec.model, provider=anthropic_provider)

    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    if spec.provider == "openai":
        if settings.openai_api_key is None:
            raise ModelSpecError(
                "openai models need an API key: set OPENAI_API_KEY or DEEPCRITICAL_OPENAI_API_KEY"
            )
        provider = OpenAIProvider(api_key=settings.openai_api_key.get_secret_value())
    else:
        key = settings.openai_compatible_api_key
        # Local servers (Ollama, llama.cpp) accept any key; the client library needs one.
        provider = OpenAIProvider(
            base_url=spec.base_url,
            api_key=key.get_secret_value() if key is not None else "not-needed",
        )
    provider.client.max_retries = settings.llm_retries
    if spec.provider == "openai":
        return OpenAIChatModel(spec.model, provider=provider)
    from pydantic_ai.profiles.openai import OpenAIModelProfile

    from deepcritical.llm.structured import ConstrainedChatModel

    # `max_tokens`, which every compatible server reads; `max_completion_tokens` (OpenAI's
    # newer name, pydantic-ai's default) is ignored by llama-cpp-python: no answer cap at all
    model = ConstrainedChatModel(
        spec.model,
        provider=provider,
        profile=OpenAIModelProfile(openai_chat_supports_max_completion_tokens=False),
    )
    model.json_object_form = settings.structured_output == "json_object"
    return model


def build_chat_client(settings: Settings) -> SupportsChatGetResponse[Any]:
    """The agent-framework chat client for ``settings.llm`` (the Magentic manager's model).

    OpenAI and OpenAI-compatible servers get agent-framework's Chat Completions client over an
    ``AsyncOpenAI`` client configured here (base URL, key, ``llm_timeout_seconds``,
    ``llm_retries``), so no ``OPENAI_*``/``AZURE_*`` environment variable is consulted behind
    the settings' back. Anthropic needs the optional ``agent-framework-anthropic`` package;
    its client gets an ``AsyncAnthropic`` configured the same way when it accepts one
    (``anthropic_client``). Close the client with :func:`close_chat_client`.

    Raises:
        ModelSpecError: ``none`` (the manager needs a model), a bad spec, a missing API key,
            or an Anthropic model without ``agent-framework-anthropic`` installed.
    """
    spec = parse_model_spec(settings.llm)
    if spec.provider == "none":
        raise ModelSpecError(
            "the magentic orchestrator needs a model: give --llm (e.g. openai:gpt-4o or "
            "openai-compatible:MODEL@URL), or use --orchestrator iterative with --llm none"
        )
    if spec.provider == "anthropic":
        return _anthropic_chat_client(settings, spec)

    from agent_framework_openai import OpenAIChatCompletionClient
    from openai import AsyncOpenAI

    if spec.provider == "openai":
        if settings.openai_api_key is None:
            raise ModelSpecError(
                "openai models need an API key: set OPENAI_API_KEY or DEEPCRITICAL_OPENAI_API_KEY"
            )
        api_key = settings.openai_api_key.get_secret_value()
        base_url: str | None = None
    else:
        key = settings.openai_compatible_api_key
        api_key = key.get_secret_value() if key is not None else "not-needed"
        base_url = spec.base_url
    async_client = AsyncOpenAI(
        api_key=api_key,
        base_url=base_url,
        timeout=settings.llm_timeout_seconds,
        max_retries=settings.llm_retries,
    )
    client: OpenAIChatCompletionClient[Any] = OpenAIChatCompletionClient(
        model=spec.model, async_client=async_client
    )
    return client


def _anthropic_chat_client(settings: Settings, spec: ModelSpec) -> SupportsChatGetResponse[Any]:
    try:
        module = importlib.import_module("agent_framework_anthropic")
    except ModuleNotFoundError as exc:
        raise ModelSpecError(
            f"{spec} cannot drive the magentic orchestrator: its chat client needs the package "
            "agent-framework-anthropic, which is not installed. Use --orchestrator iterative "
            "(Anthropic works there), or an openai / openai-compatible model for magentic."
        ) from exc
    if settings.anthropic_api_key is None:
        raise ModelSpecError(
            "anthropic models need an API key: set ANTHROPIC_API_KEY "
            "or DEEPCRITICAL_ANTHROPIC_API_KEY"
        )
    client_class = module.AnthropicClient
    params = inspect.signature(client_class).parameters
    model_kw = "model" if "model" in params else "model_id"
    key = settings.anthropic_api_key.get_secret_value()
    options: dict[str, Any] = {model_kw: spec.model}
    if "anthropic_client" in params:  # the SDK client carries the retries and the timeout
        from anthropic import AsyncAnthropic

        options["anthropic_client"] = AsyncAnthropic(
            api_key=key,
            timeout=settings.llm_timeout_seconds,
            max_retries=settings.llm_retries,
        )
    else:
        options["api_key"] = key
    client: SupportsChatGetResponse[Any] = client_class(**options)
    return client


async def close_chat_client(client: object) -> None:
    """Close the HTTP client under a chat client from :func:`build_chat_client` (no-op for
    clients that hold none, such as test doubles)."""
    inner = getattr(client, "client", None)
    close = getattr(inner, "close", None)
    if close is not None and inspect.iscoroutinefunction(close):
        await close()
