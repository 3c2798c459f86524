"""The last guard before a span leaves the process: :class:`RedactingSpanExporter`.

Every exporter DeepCritical installs is wrapped in it (:func:`deepcritical.telemetry.tracing.
build_provider`), so whatever an instrumented library puts in an attribute, a span or an
event leaves without credentials: a URL loses its ``user:password@`` and the values of its
secret query parameters (:func:`deepcritical.config.redact_url`), a value that looks like a
key or a bearer token becomes ``[redacted]``, and an attribute whose name says it holds a
secret (``...api_key``, ``...authorization``, ``...password``, ``...secret``) is redacted
whatever its value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.util.types import AttributeValue

from deepcritical.config import REDACTED, redact_url

__all__ = ["RedactingSpanExporter", "scrub_attributes"]

_SECRET_NAME = re.compile(r"(api[_-]?key|authorization|password|passwd|secret|cookie)", re.I)
_SECRET_VALUE = re.compile(
    r"\b(sk-[A-Za-z0-9_-]{8,}|sk-ant-[A-Za-z0-9_-]{8,}|hf_[A-Za-z0-9]{8,}"
    r"|(?:Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,})"
)
_URL = re.compile(r"[a-z][a-z0-9+.-]*://[^\s\"'<>]+", re.I)


def _scrub_text(text: str) -> str:
    text = _URL.sub(lambda m: redact_url(m.group(0)), text)
    return _SECRET_VALUE.sub(REDACTED, text)


def _scrub_value(name: str, value: AttributeValue) -> AttributeValue:
    if _SECRET_NAME.search(name):
        return REDACTED
    if isinstance(value, str):
        return _scrub_text(value)
    if isinstance(value, Sequence) and value and isinstance(value[0], str):
        return [_scrub_text(str(v)) for v in value]
    return value


def scrub_attributes(attributes: Mapping[str, AttributeValue] | None) -> dict[str, AttributeValue]:
    """``attributes`` without credentials (see the module docstring); never raises."""
    return {k: _scrub_value(k, v) for k, v in (attributes or {}).items()}


def _redacted(span: ReadableSpan) -> ReadableSpan:
    events = [
        Event(e.name, scrub_attributes(e.attributes), timestamp=e.timestamp) for e in span.events
    ]
    return ReadableSpan(
        name=_scrub_text(span.name),
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=scrub_attributes(span.attributes),
        events=events,
        links=span.links,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


class RedactingSpanExporter(SpanExporter):
    """Exports through ``inner`` each span with its credentials taken out (module docstring).

    Args:
        inner: the exporter that sends the spans (OTLP, or the tests' in-memory one).
    """

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Export ``spans``, redacted."""
        return self.inner.export([_redacted(s) for s in spans])

    def shutdown(self) -> None:
        """Shut the inner exporter down."""
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush the inner exporter."""
        return self.inner.force_flush(timeout_millis)
