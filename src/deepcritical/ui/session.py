"""Per-session choices of the web app (model, API key, sources, depth, orchestrator) and the
per-run :class:`~deepcritical.config.Settings` built from them.

The API key typed in the browser lives only in that browser's textbox and in the run's
settings copy, as a :class:`~pydantic.SecretStr` (its ``repr`` is ``'**********'``); it is
never stored, logged, put in a trace or a download, and it is sent only to the provider the
model spec names.

A visitor is not the operator (see ``docs/security.md``). The server's own keys go only to the
endpoints its operator configured (:mod:`deepcritical.llm.endpoints`): an
``openai-compatible`` base URL a visitor types is used only with the visitor's own key, and
only when it passes the SSRF guard of the web source (public addresses only, unless the
operator allow-lists the host in ``model_host_allowlist``): :func:`visitor_settings`.
"""

from __future__ import annotations

from typing import Literal

import httpx
from pydantic import BaseModel, Field, SecretStr, ValidationError

from deepcritical.config import ALL_SOURCES, REDACTED, Settings, redact_model_spec, redact_url
from deepcritical.llm.endpoints import operator_endpoint
from deepcritical.llm.providers import ModelSpecError, parse_model_spec
from deepcritical.sources.netguard import Resolver, UnsafeURLError, check_public_url_async

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

VISITOR_URL_NEEDS_KEY = (
    "A model URL you type needs your own API key (give it in the API key field): the "
    "server's keys are used only with the model servers its operator configured."
)


class SettingsError(ValueError):
    """The session's choices do not make valid settings (message safe to show)."""


class SessionChoice(BaseModel):
    """What one browser session chose in the settings panel.

    ``llm``: a model spec (``none``, ``openai:gpt-4o``, ``anthropic:...``,
    ``openai-compatible:MODEL@BASE_URL``); empty means the server's default. ``api_key``:
    the key for that model's provider, or ``None`` to use the server's (environment
    variables / Space secrets). ``max_rounds``: search rounds; ``max_sources``: evidence items
    that end gathering. ``review_plan`` / ``review_evidence``: stop the run for the user's
    review of its plan (before the search) / its screened evidence (before the writing);
    both need recorded runs (``Settings.persist_runs``); ``None``: the server's setting.
    """

    llm: str = ""
    api_key: SecretStr | None = None
    sources: list[str] = Field(default_factory=list)
    max_rounds: int | None = None
    max_sources: int | None = None
    orchestrator: Literal["iterative", "magentic"] | None = None
    review_plan: bool | None = None
    review_evidence: bool | None = None


REVIEW_NEEDS_RECORDS = (
    "Reviews need recorded runs, and this server does not record them (persist_runs is off)."
)


def run_settings(base: Settings, choice: SessionChoice) -> Settings:
    """A validated copy of ``base`` with ``choice`` applied (``base`` is not modified).

    The model part follows the visitor policy of :func:`model_update`; the base URL's SSRF
    guard is async and separate (:func:`check_model_url`, both in :func:`visitor_settings`).

    Raises:
        SettingsError: an unparsable model spec, a visitor's model URL without the visitor's
            key, unknown sources, out-of-range limits, or a review asked for on a server that
            does not record runs.
    """
    update: dict[str, object] = {}
    reviews = {"review_plan": choice.review_plan, "review_evidence": choice.review_evidence}
    update.update({name: wanted for name, wanted in reviews.items() if wanted is not None})
    if (choice.review_plan or choice.review_evidence) and not base.persist_runs:
        raise SettingsError(REVIEW_NEEDS_RECORDS)
    llm = choice.llm.strip()
    if llm:
        update.update(model_update(base, llm, choice.api_key))
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


def model_update(base: Settings, llm: str, api_key: SecretStr | None) -> dict[str, object]:
    """The settings fields for the model spec ``llm`` a visitor chose, with ``api_key``.

    The operator's default, shown to visitors redacted, maps back to ``base.llm``. An
    ``openai-compatible`` URL that names one of the operator's endpoints gets the operator's
    configured URL (and may use the server's key when ``api_key`` is empty); any other URL
    needs ``api_key``, which replaces the server's ``openai_compatible_api_key``. Returns
    ``{"llm": spec, <key field>: SecretStr}`` (the key field only when a key is used).

    Raises:
        SettingsError: an unparsable spec, or a visitor's URL without ``api_key``.
    """
    if llm == redact_model_spec(base.llm):
        llm = base.llm
    try:
        spec = parse_model_spec(llm)
    except ModelSpecError as exc:
        raise SettingsError(str(exc)) from None
    key = api_key.get_secret_value().strip() if api_key else ""
    update: dict[str, object] = {"llm": llm}
    if spec.provider == "openai-compatible" and spec.base_url is not None:
        configured = operator_endpoint(base, spec.base_url)
        if configured is not None:
            update["llm"] = f"openai-compatible:{spec.model}@{configured}"
        elif not key:
            raise SettingsError(VISITOR_URL_NEEDS_KEY)
    if key and spec.provider in KEY_FIELD:
        update[KEY_FIELD[spec.provider]] = SecretStr(key)
    return update


def visitor_base_url(base: Settings, settings: Settings) -> str | None:
    """The base URL of ``settings.llm`` when a visitor typed it (an ``openai-compatible``
    URL that is none of the operator's endpoints of ``base``), else ``None``."""
    try:
        spec = parse_model_spec(settings.llm)
    except ModelSpecError:
        return None
    if spec.provider != "openai-compatible" or spec.base_url is None:
        return None
    return None if operator_endpoint(base, spec.base_url) is not None else spec.base_url


def host_allow_listed(url: str, allowlist: list[str]) -> bool:
    """Whether the host of ``url`` is in ``allowlist`` (entries ``host`` for any port, or
    ``host:port``; IPv6 as ``[::1]:8080`` or ``::1``). Case-insensitive; never raises."""
    try:
        parsed = httpx.URL(url)
        host = parsed.raw_host.decode("ascii").lower().rstrip(".")
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
    except (httpx.InvalidURL, UnicodeError, TypeError):
        return False
    for entry in allowlist:
        text = entry.strip()
        if text.count(":") > 1 and not text.startswith("["):
            text = f"[{text}]"
        try:
            allowed = httpx.URL(f"http://{text}")
            allowed_host = allowed.raw_host.decode("ascii").lower().rstrip(".")
        except (httpx.InvalidURL, UnicodeError, TypeError):
            continue
        if allowed_host == host and allowed.port in (None, port):
            return True
    return False


async def check_model_url(
    base: Settings, settings: Settings, *, resolver: Resolver | None = None
) -> None:
    """Refuse a visitor's model base URL in ``settings`` that points at a non-public address.

    Only a URL that is none of the operator's endpoints of ``base`` is checked, by the web
    source's SSRF guard (:func:`~deepcritical.sources.netguard.check_public_url_async`:
    public addresses only), unless its host is in ``base.model_host_allowlist``.

    Raises:
        SettingsError: the URL is refused (the message names the URL without credentials
            and the reason).
    """
    url = visitor_base_url(base, settings)
    if url is None or host_allow_listed(url, base.model_host_allowlist):
        return
    try:
        await check_public_url_async(url, resolver=resolver)
    except UnsafeURLError as exc:
        raise SettingsError(
            f"The model URL {redact_url(url)} is refused: {exc.reason}. A model URL must "
            "point at a public address (the operator can allow private model hosts with "
            "DEEPCRITICAL_MODEL_HOST_ALLOWLIST)."
        ) from None


async def visitor_settings(
    base: Settings, choice: SessionChoice, *, resolver: Resolver | None = None
) -> Settings:
    """:func:`run_settings`, then :func:`check_model_url`: the per-run settings of a web
    visitor's choice, checked before any request is sent.

    Raises:
        SettingsError: as :func:`run_settings` and :func:`check_model_url`.
    """
    settings = run_settings(base, choice)
    await check_model_url(base, settings, resolver=resolver)
    return settings


def secret_values(settings: Settings) -> list[str]:
    """The values of every secret field of ``settings`` (API keys) and the password of the
    model URL, longest first."""
    values = [
        v.get_secret_value()
        for name in type(settings).model_fields
        if isinstance(v := getattr(settings, name), SecretStr)
    ]
    values.extend(_url_credentials(settings.llm))
    return sorted({v for v in values if len(v) >= 4}, key=len, reverse=True)


def redact(text: str, secrets: list[str]) -> str:
    """``text`` with each of ``secrets`` replaced by ``[redacted]`` (error messages of
    providers or sources must not show a key on the page or in a download)."""
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text


def _url_credentials(llm: str) -> list[str]:
    """The user name and password in the base URL of the model spec ``llm`` (if any)."""
    try:
        spec = parse_model_spec(llm)
        url = httpx.URL(spec.base_url) if spec.base_url else None
    except (ModelSpecError, httpx.InvalidURL, UnicodeError, TypeError):
        return []
    return [] if url is None else [v for v in (url.username, url.password) if v]


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
