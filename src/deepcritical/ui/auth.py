"""Who is calling the web app: the deployment's sign-in (:class:`Access`) and the owner of the
caller's runs (:meth:`Access.owner`).

Three modes, chosen by the operator in the environment (:class:`AuthSettings`, prefix
``DEEPCRITICAL_UI_``):

- ``password``: ``DEEPCRITICAL_UI_AUTH="alice:pw1,bob:pw2"`` and/or ``DEEPCRITICAL_UI_AUTH_FILE``
  (one ``user:password`` a line). Gradio's login page guards every page and API route
  (``launch(auth=...)``, checked by :meth:`Access.check_password`); a caller's runs belong to
  ``user:<name>``.
- ``huggingface``: "Sign in with Hugging Face" (``gr.LoginButton``, Gradio's OAuth), on a
  Space whose OAuth is enabled (``hf_oauth: true`` in its metadata sets ``OAUTH_CLIENT_ID``
  and ``OAUTH_CLIENT_SECRET``): by default there, or required by
  ``DEEPCRITICAL_UI_HF_OAUTH=true``. Anywhere else it is refused: Gradio then mocks the login
  (every visitor would be the machine's own Hugging Face user) and signs its session cookies
  with a fixed key (anyone could forge one). The page stays public; a caller's runs belong to
  ``hf:<username>`` and a caller who has not signed in gets nothing.
- ``none``: no sign-in. Each browser is its own anonymous owner, ``anon:<id>``, the id in a
  signed cookie (:mod:`deepcritical.ui.visitor`): a visitor sees only the runs it started.
  ``DEEPCRITICAL_SHARED_HISTORY=1`` keeps the single-user mode instead: every visitor is the
  local user (owner ``None``) and shares one run history with the CLI (the start page and
  the start-up warning of :func:`deepcritical.ui.launch.launch` say so).

The kind prefix keeps the names of the two kinds apart (``user:alice`` is not ``hf:alice``).
Passwords are ``SecretStr`` and never logged; an error in the list names its entry or line
number, never its text (a misplaced separator could put a password in a user name).
"""

from __future__ import annotations

import hmac
import importlib.util
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import gradio as gr
from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from deepcritical.config import Settings
from deepcritical.state.schema import MAX_OWNER_CHARS
from deepcritical.ui.visitor import load_visitor_key, visitor_id

__all__ = [
    "Access",
    "AuthConfigError",
    "AuthMode",
    "AuthSettings",
    "SignInRequired",
]

AuthMode = Literal["none", "password", "huggingface"]
ANON_PREFIX = "anon:"
"""The owner prefix of an anonymous browser's runs (``anon:<visitor id>``)."""
USERNAME = re.compile(r"[A-Za-z0-9._@+-]{1,100}")
"""A password user's name: no blanks, no ``:`` or ``,`` (the list's separators)."""
OAUTH_PACKAGES = ("authlib", "itsdangerous")
"""What Gradio's OAuth needs (``gradio[oauth]``)."""


class AuthConfigError(ValueError):
    """The sign-in settings are malformed (the message never quotes a password)."""


class SignInRequired(PermissionError):
    """The deployment requires a signed-in user and the request has none."""


class AuthSettings(BaseSettings):
    """The web app's sign-in settings, from the environment (and ``.env``).

    Attributes:
        auth: ``DEEPCRITICAL_UI_AUTH``, comma-separated ``user:password`` pairs (a password
            may hold ``:`` but not ``,``; use the file for those).
        auth_file: ``DEEPCRITICAL_UI_AUTH_FILE``, a UTF-8 file of ``user:password`` lines
            (blank lines and ``#`` comments ignored).
        hf_oauth: ``DEEPCRITICAL_UI_HF_OAUTH``: "Sign in with Hugging Face" required
            (``true``: start-up fails unless on a Space whose OAuth is enabled) or off
            (``false``); unset, it is on exactly when on such a Space.
        shared_history: ``DEEPCRITICAL_SHARED_HISTORY``: without sign-in, every visitor shares
            one run history (a single-user install); off by default (each browser its own).
    """

    model_config = SettingsConfigDict(
        env_prefix="DEEPCRITICAL_UI_", env_file=".env", extra="ignore"
    )

    auth: SecretStr | None = None
    auth_file: Path | None = None
    hf_oauth: bool | None = None
    shared_history: bool = Field(default=False, validation_alias="DEEPCRITICAL_SHARED_HISTORY")


@dataclass(frozen=True)
class Access:
    """The deployment's sign-in: its ``mode`` and, in ``password`` mode, the ``accounts``
    (user name -> password). Build it with :meth:`from_env` or :meth:`from_settings`; the
    default is ``none``."""

    mode: AuthMode = "none"
    accounts: Mapping[str, SecretStr] = field(default_factory=dict, repr=False)
    visitor_key: bytes | None = field(default=None, repr=False)
    """Without sign-in: the key of the visitors' signed cookies (each browser its own runs);
    ``None``: the shared history of a single-user install."""

    @classmethod
    def from_env(cls, data_dir: Path | None = None) -> Access:
        """The sign-in the environment configures (see :class:`AuthSettings`); without
        sign-in, each browser its own runs (the visitor key from ``data_dir``, default the
        settings' data directory: :func:`deepcritical.ui.visitor.load_visitor_key`) unless
        ``DEEPCRITICAL_SHARED_HISTORY`` is set.

        Raises:
            AuthConfigError: malformed accounts, an unreadable file, both kinds of sign-in,
                Hugging Face sign-in without Gradio's OAuth packages, or a visitor key that
                can be neither read nor created.
        """
        on_space = os.environ.get("SYSTEM") == "spaces" and bool(os.environ.get("SPACE_ID"))
        oauth = all(os.environ.get(k) for k in ("OAUTH_CLIENT_ID", "OAUTH_CLIENT_SECRET"))
        settings = AuthSettings()
        access = cls.from_settings(settings, space_oauth=on_space and oauth)
        if access.required or settings.shared_history:
            return access
        directory = data_dir if data_dir is not None else Settings().data_dir
        try:
            key = load_visitor_key(directory)
        except OSError as exc:
            raise AuthConfigError(
                f"cannot keep the visitors' key in {directory}: {exc.strerror or exc}"
            ) from None
        return cls(visitor_key=key)

    @property
    def private(self) -> bool:
        """True when each anonymous browser sees only its own runs (no sign-in, no shared
        history)."""
        return self.mode == "none" and self.visitor_key is not None

    @classmethod
    def from_settings(cls, settings: AuthSettings, *, space_oauth: bool = False) -> Access:
        """The sign-in ``settings`` configure; ``space_oauth``: the app runs on a Hugging Face
        Space with OAuth enabled (Hugging Face sign-in unless ``settings.hf_oauth`` is false;
        the only place it is allowed).

        Raises:
            AuthConfigError: as :meth:`from_env`.
        """
        accounts: dict[str, SecretStr] = {}
        if settings.auth is not None:
            entries = settings.auth.get_secret_value().split(",")
            _add_accounts(accounts, entries, "DEEPCRITICAL_UI_AUTH entry")
        if settings.auth_file is not None:
            try:
                lines = settings.auth_file.read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeError) as exc:
                raise AuthConfigError(
                    f"cannot read DEEPCRITICAL_UI_AUTH_FILE {settings.auth_file}: "
                    f"{type(exc).__name__}"
                ) from None
            kept = ["" if line.lstrip().startswith("#") else line for line in lines]
            _add_accounts(accounts, kept, f"{settings.auth_file} line")
        hf = settings.hf_oauth if settings.hf_oauth is not None else space_oauth
        if accounts and hf:
            raise AuthConfigError(
                "choose one sign-in: passwords (DEEPCRITICAL_UI_AUTH / _AUTH_FILE) or Hugging "
                "Face (DEEPCRITICAL_UI_HF_OAUTH; set it to false to use passwords on a Space)"
            )
        if accounts:
            return cls("password", accounts)
        if hf and not space_oauth:
            raise AuthConfigError(
                "Sign in with Hugging Face works only on a Hugging Face Space with OAuth "
                "enabled (hf_oauth: true in its metadata); elsewhere Gradio mocks the login and "
                "signs sessions with a fixed key. Use DEEPCRITICAL_UI_AUTH instead"
            )
        if hf:
            missing = [p for p in OAUTH_PACKAGES if importlib.util.find_spec(p) is None]
            if missing:
                raise AuthConfigError(
                    "Sign in with Hugging Face needs Gradio's OAuth packages "
                    f"({', '.join(missing)} missing): pip install 'gradio[oauth]'"
                )
            return cls("huggingface")
        if settings.auth is not None or settings.auth_file is not None:
            raise AuthConfigError("the sign-in settings name no account")
        return cls()

    @property
    def required(self) -> bool:
        """True when callers must be signed in (``password`` or ``huggingface``)."""
        return self.mode != "none"

    def check_password(self, username: str, password: str) -> bool:
        """Gradio's ``auth`` callable: ``password`` is ``username``'s (compared in constant
        time; an unknown user costs the same comparison)."""
        expected = self.accounts.get(username)
        secret = expected.get_secret_value() if expected is not None else "\0" * len(password)
        same = hmac.compare_digest(secret.encode(), password.encode())
        return expected is not None and same

    def gradio_auth(self) -> Callable[[str, str], bool] | None:
        """What ``Blocks.launch(auth=...)`` takes: :meth:`check_password` in ``password``
        mode, else ``None`` (no login page)."""
        return self.check_password if self.mode == "password" else None

    def owner(self, request: gr.Request | None, profile: gr.OAuthProfile | None) -> str | None:
        """The owner of the caller's runs: ``user:<name>`` (the password login Gradio put on
        ``request.username``), ``hf:<username>`` (the Hugging Face ``profile`` Gradio
        injects from the signed session), ``anon:<id>`` (the browser's signed visitor cookie)
        without sign-in, or ``None`` (the local user) in a shared history.

        Raises:
            SignInRequired: sign-in is on and the request carries no user of its kind, or
                a private history's request carries no valid visitor cookie.
        """
        if self.mode == "none":
            key = self.visitor_key
            return self.owner_of(visitor_id(request, key) if key is not None else None)
        if self.mode == "password":
            name = getattr(request, "username", None) if request is not None else None
        else:
            name = profile.username if profile is not None else None
        return self.owner_of(name)

    def owner_of(self, name: object) -> str | None:
        """The owner a caller's credential ``name`` makes under this sign-in: the visitor id
        of the browser's cookie without sign-in (``anon:<id>``), the password login's user
        (``user:<name>``), the Hugging Face username (``hf:<username>``); ``None`` (the local
        user) in a shared history, whatever ``name``. :meth:`owner` reads ``name`` off an
        event's request, :func:`deepcritical.ui.download_route.http_owner` off an HTTP one.

        Raises:
            SignInRequired: ``name`` is missing or blank (no valid cookie, not signed in), or
                the owner would be longer than the run store keeps.
        """
        if self.mode == "none" and self.visitor_key is None:
            return None  # the shared history of a single-user install
        if not isinstance(name, str) or not name.strip():
            if self.mode == "none":
                raise SignInRequired(
                    "this server keeps each browser's runs apart with a cookie, and this request "
                    "carries none: allow cookies for this site"
                )
            raise SignInRequired("sign in first: this deployment keeps each user's runs apart")
        kind = {"none": ANON_PREFIX, "password": "user:", "huggingface": "hf:"}[self.mode]
        owner = f"{kind}{name.strip()}"
        if len(owner) > MAX_OWNER_CHARS:
            raise SignInRequired("the signed-in user name is too long")
        return owner


def _add_accounts(accounts: dict[str, SecretStr], entries: list[str], where: str) -> None:
    """Parse ``user:password`` ``entries`` into ``accounts`` (blank entries skipped).

    Raises:
        AuthConfigError: an entry without ``:``, a bad user name, an empty password or a
            user named twice; the message names ``where`` and the entry's number only.
    """
    for number, entry in enumerate(entries, start=1):
        if not entry.strip():
            continue
        user, sep, password = entry.strip().partition(":")
        if not sep or not password:
            raise AuthConfigError(f"{where} {number} is not user:password")
        if not USERNAME.fullmatch(user):
            raise AuthConfigError(
                f"{where} {number}: a user name is 1-100 letters, digits or . _ @ + -"
            )
        if user in accounts:
            raise AuthConfigError(f"{where} {number}: its user is named twice")
        accounts[user] = SecretStr(password)
