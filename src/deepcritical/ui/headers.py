"""Security headers on every response of the web app: a Content-Security-Policy that allows
only what the Gradio front end needs, framing limited to the configured ancestors,
``X-Content-Type-Options: nosniff`` and ``Referrer-Policy: no-referrer``.

:func:`security_middleware` is the Starlette middleware that :func:`deepcritical.ui.launch.
launch` puts on Gradio's FastAPI app (``demo.launch(app_kwargs={"middleware": [...]})``), so
the page, the ``/gradio_api/...`` routes (queue, files, MCP) and the static assets all carry
the headers. Responses made by Gradio's outer middlewares (its CORS check refusing a request,
an unhandled error's plain 500) are not wrapped.

The policy (Gradio 6.31):

- scripts and styles from the app only, plus inline ones (Gradio's page inlines its config
  and bootstrap scripts and sets styles inline) and ``eval`` (``gr.HTML``, which shows the
  progress, report and evidence, renders its template through ``Function``): the XSS
  protection of shown text stays the escaping and ``nh3`` sanitising of ``ui/render.py``;
- images, fonts and media from the app, ``data:`` and ``blob:``; no plug-ins (``object-src
  'none'``); ``<base>`` and form targets the app only;
- requests (``fetch``, server-sent events, WebSockets) to the app only, plus
  ``https://huggingface.co`` on a Hugging Face Space (Gradio's front end asks the Hub about
  the Space);
- ``frame-ancestors`` from ``DEEPCRITICAL_UI_FRAME_ANCESTORS`` (space- or comma-separated:
  ``none``, ``self`` and ``http(s)://host[:port]`` origins, ``*.`` allowed in front of a
  host); default ``'none'`` (no page may embed the app; ``X-Frame-Options: DENY`` too), and
  on a Space (``SPACE_ID`` set) ``'self' https://huggingface.co``, the Hub page that shows the
  Space in an iframe. ``X-Frame-Options`` is ``SAMEORIGIN`` for ``self`` alone and left out
  for origin lists (it cannot name origins; browsers follow ``frame-ancestors``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence

from starlette.datastructures import MutableHeaders
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "FRAME_ANCESTORS_VARIABLE",
    "SPACE_FRAME_ANCESTORS",
    "SecurityHeadersMiddleware",
    "content_security_policy",
    "frame_ancestors_from_env",
    "parse_frame_ancestors",
    "security_headers",
    "security_middleware",
]

FRAME_ANCESTORS_VARIABLE = "DEEPCRITICAL_UI_FRAME_ANCESTORS"
HUB = "https://huggingface.co"
"""The Hugging Face Hub: it frames a Space's app, and Gradio's front end asks it about it."""
SPACE_FRAME_ANCESTORS = ("'self'", HUB)
"""Who may frame the app on a Hugging Face Space: the Space page at huggingface.co."""

_KEYWORDS = {"none": "'none'", "self": "'self'"}
_ORIGIN = re.compile(r"https?://(\*\.)?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*(:\d{1,5})?")


def parse_frame_ancestors(value: str) -> tuple[str, ...]:
    """The CSP ``frame-ancestors`` sources named in ``value``: words separated by spaces or
    commas, each ``none``, ``self`` (quoted or not) or an origin ``http(s)://host[:port]``
    (``*.`` may precede the host; a trailing ``/`` is dropped).

    Raises:
        ValueError: ``value`` is empty, names anything else (a path, a ``;``, a scheme other
            than http/https), or combines ``none`` with other sources.
    """
    sources: list[str] = []
    for word in value.replace(",", " ").split():
        keyword = _KEYWORDS.get(word.strip("'").lower())
        origin = word.rstrip("/")
        if keyword is not None:
            sources.append(keyword)
        elif _ORIGIN.fullmatch(origin):
            sources.append(origin.lower())
        else:
            raise ValueError(
                f"{FRAME_ANCESTORS_VARIABLE}: {word!r} is not none, self or an origin such "
                "as https://huggingface.co"
            )
    if not sources:
        raise ValueError(f"{FRAME_ANCESTORS_VARIABLE} is empty: give none, self or origins")
    if "'none'" in sources and len(sources) > 1:
        raise ValueError(f"{FRAME_ANCESTORS_VARIABLE}: none cannot be combined with others")
    return tuple(dict.fromkeys(sources))


def _on_space(environ: Mapping[str, str]) -> bool:
    return bool(environ.get("SPACE_ID", "").strip())


def frame_ancestors_from_env(environ: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """``DEEPCRITICAL_UI_FRAME_ANCESTORS`` parsed (:func:`parse_frame_ancestors`) when set;
    else :data:`SPACE_FRAME_ANCESTORS` on a Hugging Face Space (``SPACE_ID`` set), else
    ``("'none'",)``.

    Raises:
        ValueError: the variable is set to something :func:`parse_frame_ancestors` refuses.
    """
    value = environ.get(FRAME_ANCESTORS_VARIABLE)
    if value is not None and value.strip():
        return parse_frame_ancestors(value)
    return SPACE_FRAME_ANCESTORS if _on_space(environ) else ("'none'",)


def content_security_policy(frame_ancestors: Sequence[str], connect: Sequence[str] = ()) -> str:
    """The policy of the module docstring, ``frame-ancestors`` set to ``frame_ancestors``
    and ``connect-src`` widened by the origins ``connect``."""
    directives = {
        "default-src": ["'self'"],
        "script-src": ["'self'", "'unsafe-inline'", "'unsafe-eval'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:", "blob:"],
        "font-src": ["'self'", "data:"],
        "media-src": ["'self'", "data:", "blob:"],
        "connect-src": ["'self'", *connect],
        "worker-src": ["'self'", "blob:"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": list(frame_ancestors),
    }
    return "; ".join(f"{name} {' '.join(sources)}" for name, sources in directives.items())


def security_headers(
    frame_ancestors: Sequence[str], connect: Sequence[str] = ()
) -> list[tuple[str, str]]:
    """``(name, value)`` of every header the app sends: ``Content-Security-Policy``
    (:func:`content_security_policy`), ``X-Frame-Options`` (``DENY`` for ``'none'``,
    ``SAMEORIGIN`` for ``'self'`` alone, absent for origin lists), ``X-Content-Type-Options:
    nosniff`` and ``Referrer-Policy: no-referrer``."""
    headers = [
        ("Content-Security-Policy", content_security_policy(frame_ancestors, connect)),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
    ]
    frame_options: dict[tuple[str, ...], str] = {("'none'",): "DENY", ("'self'",): "SAMEORIGIN"}
    frame_option = frame_options.get(tuple(frame_ancestors))
    if frame_option is not None:
        headers.append(("X-Frame-Options", frame_option))
    return headers


class SecurityHeadersMiddleware:
    """Pure ASGI middleware that sets ``headers`` on every HTTP response (replacing a header
    of the same name) and takes the ``removed`` headers out; streamed bodies (server-sent
    events, files) pass through untouched and WebSocket and lifespan traffic is not looked at.

    Args:
        app: the wrapped ASGI application.
        headers: ``(name, value)`` pairs, e.g. :func:`security_headers`.
        removed: names of headers no response may carry (e.g. an ``X-Frame-Options`` that
            would contradict ``frame-ancestors``).
    """

    def __init__(
        self, app: ASGIApp, headers: Sequence[tuple[str, str]], removed: Sequence[str] = ()
    ) -> None:
        self.app = app
        self.headers = list(headers)
        self.removed = list(removed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve ``scope`` with the wrapped app, adding the headers to its response."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                response_headers = MutableHeaders(scope=message)
                for name in self.removed:
                    del response_headers[name]
                for name, value in self.headers:
                    response_headers[name] = value
            await send(message)

        await self.app(scope, receive, send_with_headers)


def security_middleware(environ: Mapping[str, str] = os.environ) -> Middleware:
    """The :class:`SecurityHeadersMiddleware` for this deployment: frame ancestors from
    ``environ`` (:func:`frame_ancestors_from_env`), ``https://huggingface.co`` added to
    ``connect-src`` on a Space; any ``X-Frame-Options`` removed where the policy sets none.

    Raises:
        ValueError: ``DEEPCRITICAL_UI_FRAME_ANCESTORS`` is malformed (refused at start-up).
    """
    connect = (HUB,) if _on_space(environ) else ()
    headers = security_headers(frame_ancestors_from_env(environ), connect)
    names = {name.lower() for name, _ in headers}
    removed = [] if "x-frame-options" in names else ["X-Frame-Options"]
    return Middleware(SecurityHeadersMiddleware, headers=headers, removed=removed)
