"""What an OpenAI-compatible endpoint can do, found by asking it once per process.

- :func:`probe_structured_output`: a tiny structured call per strategy, in the order
  ``json_schema``, ``json_object``, ``tool``, ``prompted``
  (:mod:`deepcritical.llm.structured`); the first whose output validates wins.
- :func:`probe_context_tokens`: the context window the server reports: llama.cpp's
  ``llama-server`` ``GET /props`` (``default_generation_settings.n_ctx``), else
  ``GET /v1/models`` (``data[].meta.n_ctx`` or ``n_ctx_train`` of llama.cpp servers,
  ``data[].max_model_len`` of vLLM), else Ollama's ``POST /api/show`` (the model's
  ``num_ctx`` parameter). When none says, 4,096 tokens are assumed for the answers' bound
  (:meth:`~deepcritical.config.Settings.output_token_bound`).
- :func:`check_endpoint` (``deepcritical doctor``): all of the above, plus the models the
  server lists and the completion tokens per second of the probe call.
- :func:`resolve_endpoint`: ``settings`` with ``structured_output="auto"`` and an unset
  ``llm_context_tokens`` filled in from those probes, cached per endpoint (base URL and
  model) for the life of the process.

The probes send the request the run would send (same URL, same key: the one
:func:`~deepcritical.llm.providers.build_model` would use), nowhere else.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
from pydantic import BaseModel, Field

from deepcritical.config import Settings
from deepcritical.llm.llm_errors import AgentError
from deepcritical.llm.providers import ModelSpec, ModelSpecError, build_model, parse_model_spec
from deepcritical.llm.runner import StructuredAgent
from deepcritical.llm.structured import OUTPUT_STRATEGIES, OutputStrategy
from deepcritical.llm.usage import UsageTracker
from deepcritical.logs import get_logger

__all__ = [
    "EndpointCheck",
    "ProbeOutput",
    "StructuredProbe",
    "check_endpoint",
    "list_models",
    "probe_context_tokens",
    "probe_structured_output",
    "resolve_endpoint",
]

log = get_logger(__name__)

PROBE_INSTRUCTIONS = "Answer in JSON with the fields asked for, and nothing else."
PROBE_PROMPT = (
    "Is 7 greater than 3? Give the answer (yes or no) and the number of letters in 'cat'."
)

PROBE_MAX_TOKENS = 128
"""The probe's ``max_tokens``: its answer is about 15 tokens; a model that runs on is cut
here (and retried once), never left generating."""


class ProbeOutput(BaseModel):
    """The probe's tiny structured answer (an enum and a bounded integer)."""

    answer: Literal["yes", "no"] = Field(description="yes or no")
    letters: int = Field(ge=0, le=20, description="number of letters")


@dataclass
class StructuredProbe:
    """What :func:`probe_structured_output` found.

    Attributes:
        strategy: the first strategy whose output validated (``None``: none did).
        tried: strategy -> ``"ok"`` or why it failed (an error summary, no server text).
        seconds: wall time of each strategy's call.
        output_tokens: completion tokens of the successful call (0 when none).
    """

    strategy: OutputStrategy | None = None
    tried: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    output_tokens: int = 0


_STRATEGIES: dict[tuple[str, str], OutputStrategy] = {}
_CONTEXTS: dict[tuple[str, str], int | None] = {}


async def probe_structured_output(
    settings: Settings, strategies: tuple[OutputStrategy, ...] = OUTPUT_STRATEGIES
) -> StructuredProbe:
    """Try ``strategies`` in order against ``settings.llm`` (one call each, one retry, the
    run's timeout) until one validates.

    Raises:
        ModelSpecError: ``settings.llm`` is not a model spec with a model.
    """
    found = StructuredProbe()
    for strategy in strategies:
        model = build_model(settings.model_copy(update={"structured_output": strategy}))
        if model is None:
            raise ModelSpecError("the structured-output probe needs a model, not 'none'")
        usage = UsageTracker()
        agent = StructuredAgent(
            "probe",
            model,
            ProbeOutput,
            type(None),
            retries=1,
            timeout_seconds=settings.llm_timeout_seconds,
            usage=usage,
            output=strategy,
            max_output_tokens=min(PROBE_MAX_TOKENS, settings.output_token_bound()),
        )
        started = time.monotonic()
        async with model:
            try:
                await agent.run(PROBE_INSTRUCTIONS, PROBE_PROMPT, None)
            except AgentError as exc:
                found.tried[strategy] = exc.reason
            else:
                found.tried[strategy] = "ok"
        found.seconds[strategy] = time.monotonic() - started
        if found.tried[strategy] == "ok":
            found.strategy = strategy
            found.output_tokens = usage.total().output_tokens
            return found
    return found


def _server_root(base_url: str) -> str:
    """``http://host:port`` of ``http://host:port/v1`` (llama.cpp's ``/props`` lives there)."""
    return base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url


def _context_from_models(data: Any) -> int | None:
    """The context window a ``/v1/models`` answer states: llama.cpp's ``meta.n_ctx`` (or
    ``n_ctx_train``), vLLM's ``max_model_len``."""
    for entry in (data or {}).get("data") or []:
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("max_model_len"), int) and entry["max_model_len"] > 0:
            return int(entry["max_model_len"])
        meta = entry.get("meta")
        if isinstance(meta, dict):
            for key in ("n_ctx", "n_ctx_train"):
                if isinstance(meta.get(key), int) and meta[key] > 0:
                    return int(meta[key])
    return None


_NUM_CTX = re.compile(r"(?m)^\s*num_ctx\s+(\d+)\s*$")


def _context_from_ollama(data: Any) -> int | None:
    """The context window Ollama serves a model with, from ``/api/show``: its ``num_ctx``
    parameter when the model sets one (else Ollama's own default applies, which it does not
    report: ``None``)."""
    parameters = (data or {}).get("parameters") if isinstance(data, dict) else None
    match = _NUM_CTX.search(parameters) if isinstance(parameters, str) else None
    return int(match.group(1)) if match else None


async def probe_context_tokens(
    spec: ModelSpec, api_key: str | None, timeout_seconds: float = 5.0
) -> int | None:
    """The context window (tokens) the server at ``spec.base_url`` reports, or ``None`` when
    it reports none (or cannot be reached: the run's first call will say so)."""
    if spec.base_url is None:
        return None
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    async with httpx.AsyncClient(timeout=timeout_seconds, headers=headers) as client:
        try:
            props = await client.get(_server_root(spec.base_url) + "/props")
            if props.status_code == 200:
                settings = props.json().get("default_generation_settings") or {}
                if isinstance(settings.get("n_ctx"), int) and settings["n_ctx"] > 0:
                    return int(settings["n_ctx"])
            models = await client.get(spec.base_url + "/models")
            if models.status_code == 200:
                found = _context_from_models(models.json())
                if found is not None:
                    return found
            show = await client.post(
                _server_root(spec.base_url) + "/api/show", json={"model": spec.model}
            )
            if show.status_code == 200:
                return _context_from_ollama(show.json())
        except (httpx.HTTPError, ValueError, AttributeError):
            # unreachable or not JSON: no context size known, the run's first call reports it
            return None
    return None


async def resolve_endpoint(settings: Settings) -> Settings:
    """``settings`` with ``structured_output="auto"`` and an unset ``llm_context_tokens``
    resolved for an ``openai-compatible`` model (probed once per endpoint and process, the
    choice logged); other providers are returned unchanged (``auto`` means tool calls there).

    When no strategy validates, ``prompted`` is used (the last resort; its outputs are
    retried with the validation error) and a warning is logged.
    """
    spec = parse_model_spec(settings.llm)
    if spec.provider != "openai-compatible" or spec.base_url is None:
        return settings
    key = (spec.base_url, spec.model)
    update: dict[str, Any] = {}
    # two runs starting together may both probe; their answers agree
    if settings.structured_output == "auto":
        if key not in _STRATEGIES:
            probe = await probe_structured_output(settings)
            _STRATEGIES[key] = probe.strategy or "prompted"
            report = log.info if probe.strategy else log.warning
            report(
                "structured output chosen",
                endpoint=str(spec),
                strategy=_STRATEGIES[key],
                tried=probe.tried,
            )
        update["structured_output"] = _STRATEGIES[key]
    if settings.llm_context_tokens is None:
        if key not in _CONTEXTS:
            secret = settings.openai_compatible_api_key
            _CONTEXTS[key] = await probe_context_tokens(
                spec, secret.get_secret_value() if secret is not None else None
            )
        update["llm_context_tokens"] = _CONTEXTS[key]
    return settings.model_copy(update=update) if update else settings


async def list_models(
    spec: ModelSpec, api_key: str | None, timeout_seconds: float = 30.0
) -> list[str]:
    """The model ids ``GET {base_url}/models`` lists.

    Raises:
        httpx.HTTPError: unreachable, or an HTTP error status.
        ValueError: the answer is not the OpenAI list form.
    """
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    async with httpx.AsyncClient(timeout=timeout_seconds, headers=headers) as client:
        answer = await client.get(f"{spec.base_url}/models")
        answer.raise_for_status()
        data = answer.json().get("data")
    if not isinstance(data, list):
        raise ValueError("GET /models did not answer an OpenAI model list")
    return [str(entry.get("id")) for entry in data if isinstance(entry, dict)]


@dataclass
class EndpointCheck:
    """What :func:`check_endpoint` found about an openai-compatible endpoint.

    Attributes:
        models: model ids the server lists (``None``: the list could not be read).
        models_error: why not (an error type, no server text).
        probe: the structured-output probe (``None`` when the server was unreachable).
        context_tokens: the context window the server reports (``None``: it does not say).
        tokens_per_second: completion tokens per second of the successful probe call.
    """

    models: list[str] | None = None
    models_error: str = ""
    probe: StructuredProbe | None = None
    context_tokens: int | None = None
    tokens_per_second: float | None = None


async def check_endpoint(settings: Settings) -> EndpointCheck:
    """Probe the openai-compatible endpoint of ``settings.llm`` as a run would
    (:func:`probe_structured_output` over every strategy unless ``structured_output`` names
    one), without the per-process cache.

    Raises:
        ModelSpecError: ``settings.llm`` is not an openai-compatible spec.
    """
    spec = parse_model_spec(settings.llm)
    if spec.provider != "openai-compatible":
        raise ModelSpecError(f"{spec} is not an openai-compatible endpoint")
    secret = settings.openai_compatible_api_key
    key = secret.get_secret_value() if secret is not None else None
    found = EndpointCheck()
    try:
        found.models = await list_models(spec, key)
    except (httpx.HTTPError, ValueError) as exc:
        found.models_error = type(exc).__name__
        return found
    chosen = settings.structured_output
    strategies: tuple[OutputStrategy, ...] = OUTPUT_STRATEGIES if chosen == "auto" else (chosen,)
    found.probe = await probe_structured_output(settings, strategies)
    found.context_tokens = settings.llm_context_tokens or await probe_context_tokens(spec, key)
    if found.probe.strategy is not None:
        seconds = found.probe.seconds[found.probe.strategy]
        if seconds > 0 and found.probe.output_tokens:
            found.tokens_per_second = found.probe.output_tokens / seconds
    return found
