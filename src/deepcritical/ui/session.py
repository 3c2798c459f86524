"""Per-session choices of the web app (model, API key, sources, depth, orchestrator) and the
per-run :class:`~deepcritical.config.Settings` built from them.

The API key typed in the browser lives only in that browser's textbox and in the run's
settings copy, as a :class:`~pydantic.SecretStr` (its ``repr`` is ``'**********'``); it is
never stored, logged, put in a trace or a download, and it is sent only to the provider the
model spec names.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, SecretStr, ValidationError

from deepcritical.config import ALL_SOURCES, Settings
from deepcritical.llm.providers import ModelSpecError, parse_model_spec

EXTRACTIVE_NOTICE = (
    "No model is configured: this run uses the **extractive mode**. The plan, the judge and "
    "the report are built from the evidence itself (verbatim key sentences, each cited); "
    "choose a model and give its API key under *Settings* for written synthesis."
)

KEY_FIELD = {
    "openai": "openai_api_key",
    "anthropic": "anthropic_api_key",
    "openai-compatible": "openai_compatible_api_key",
}
"""Provider -> the :class:`Settings` field holding its API key."""


class SettingsError(ValueError):
    """The session's choices do not make valid settings (message safe to show)."""


class SessionChoice(BaseModel):
    """What one browser session chose in the settings panel.

    ``llm``: a model spec (``none``, ``openai:gpt-4o``, ``anthropic:...``,
    ``openai-compatible:MODEL@BASE_URL``); empty means the server's default. ``api_key``:
    the key for that model's provider, or ``None`` to use the server's (environment
    variables / Space secrets). ``max_rounds``: search rounds; ``max_sources``: evidence items
    that end gathering.
    """

    llm: str = ""
    api_key: SecretStr | None = None
    sources: list[str] = Field(default_factory=list)
    max_rounds: int | None = None
    max_sources: int | None = None
    orchestrator: Literal["iterative", "magentic"] | None = None


def run_settings(base: Settings, choice: SessionChoice) -> Settings:
    """A validated copy of ``base`` with ``choice`` applied (``base`` is not modified).

    Raises:
        SettingsError: an unparsable model spec, unknown sources or out-of-range limits.
    """
    update: dict[str, object] = {}
    llm = choice.llm.strip()
    if llm:
        try:
            spec = parse_model_spec(llm)
        except ModelSpecError as exc:
            raise SettingsError(str(exc)) from None
        update["llm"] = llm
        key = choice.api_key.get_secret_value().strip() if choice.api_key else ""
        if key and spec.provider in KEY_FIELD:
            update[KEY_FIELD[spec.provider]] = SecretStr(key)
    if choice.sources:
        update["sources"] = list(choice.sources)
    if choice.max_rounds is not None:
        update["max_rounds"] = choice.max_rounds
    if choice.max_sources is not None:
        update["max_sources"] = choice.max_sources
    if choice.orchestrator is not None:
        update["orchestrator"] = choice.orchestrator
    values = {name: getattr(base, name) for name in type(base).model_fields}
    values.update(update)
    try:
        # model_validate validates without reading the environment again (unlike __init__)
        return type(base).model_validate(values, by_name=True)
    except ValidationError as exc:
        msgs = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'settings'}: {e['msg']}" for e in exc.errors()
        )
        raise SettingsError(f"invalid settings: {msgs}") from None


REDACTED = "[redacted]"


def secret_values(settings: Settings) -> list[str]:
    """The values of every secret field of ``settings`` (API keys), longest first."""
    values = [
        v.get_secret_value()
        for name in type(settings).model_fields
        if isinstance(v := getattr(settings, name), SecretStr)
    ]
    return sorted({v for v in values if len(v) >= 4}, key=len, reverse=True)


def redact(text: str, secrets: list[str]) -> str:
    """``text`` with each of ``secrets`` replaced by ``[redacted]`` (error messages of
    providers or sources must not show a key on the page or in a download)."""
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text


def mode_notice(settings: Settings) -> str | None:
    """:data:`EXTRACTIVE_NOTICE` when ``settings`` name no model, else ``None``."""
    try:
        provider = parse_model_spec(settings.llm).provider
    except ModelSpecError:
        return None
    return EXTRACTIVE_NOTICE if provider == "none" else None


def source_choices() -> list[str]:
    """Every source name the settings accept (``pubmed``, ..., ``local``)."""
    return list(ALL_SOURCES)
