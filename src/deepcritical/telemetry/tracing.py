"""OpenTelemetry traces of DeepCritical's runs, off by default.

Tracing is on when :func:`configure_tracing` found an OTLP endpoint in the environment
(``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``; the exporter reads
every other ``OTEL_EXPORTER_OTLP_*`` variable itself, the resource ``OTEL_SERVICE_NAME`` and
``OTEL_RESOURCE_ATTRIBUTES``; ``OTEL_SDK_DISABLED=true`` keeps it off), or when a test
installed a provider (:func:`install_provider`). Off, :func:`span` is a bare ``yield`` and no
span object is made: no cost.

The spans DeepCritical makes itself: the run (``api``), each stage of it
(``RunAccounting.stage``), each source request (``SourceHttp``) and a job's execution in a
worker. The frameworks' own spans (pydantic-ai's model calls, agent-framework's agents and
workflow) are switched on by ``deepcritical.llm.instrumentation``. Prompt and completion text
is recorded only with ``DEEPCRITICAL_TRACE_CONTENT=1`` (:func:`trace_content`); every span
leaves through :class:`~deepcritical.telemetry.span_redaction.RedactingSpanExporter`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.trace import Link, Span, SpanContext, Status, StatusCode, TraceFlags
from opentelemetry.util.types import AttributeValue

from deepcritical.telemetry.span_redaction import RedactingSpanExporter

__all__ = [
    "CONTENT_ENV",
    "SERVICE_NAME",
    "attached",
    "build_provider",
    "configure_tracing",
    "current_trace",
    "extract_context",
    "inject_context",
    "install_provider",
    "link_to",
    "span",
    "start_span",
    "trace_content",
    "tracer_provider",
]

SERVICE_NAME = "deepcritical"
TRACER_NAME = "deepcritical"
CONTENT_ENV = "DEEPCRITICAL_TRACE_CONTENT"
_ENDPOINT_ENVS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")

Attributes = Mapping[str, AttributeValue | None]

_provider: TracerProvider | None = None
"""The provider DeepCritical's spans go to; ``None``: tracing is off."""


def build_provider(exporter: SpanExporter, *, batch: bool = True) -> TracerProvider:
    """An SDK provider exporting through ``exporter`` behind the redaction guard, in batches
    (``batch=False``: each span as it ends, as tests want), with the resource from
    ``OTEL_SERVICE_NAME``/``OTEL_RESOURCE_ATTRIBUTES`` (service name ``deepcritical`` by
    default)."""
    resource = Resource.create()  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": SERVICE_NAME}))
    provider = TracerProvider(resource=resource)
    guarded = RedactingSpanExporter(exporter)
    processor = BatchSpanProcessor(guarded) if batch else SimpleSpanProcessor(guarded)
    provider.add_span_processor(processor)
    return provider


def install_provider(provider: TracerProvider | None) -> None:
    """Send DeepCritical's spans to ``provider`` (``None``: tracing off). Tests install an
    in-memory one; :func:`configure_tracing` installs the OTLP one."""
    global _provider
    _provider = provider


def tracer_provider() -> TracerProvider | None:
    """The installed provider, ``None`` when tracing is off."""
    return _provider


def configure_tracing() -> bool:
    """Turn tracing on from the environment when an OTLP endpoint is set (module
    docstring): the OTLP exporter (gRPC) behind the redaction guard, made the global provider
    too so that agent-framework and other libraries trace into it. Idempotent; True when
    tracing is on."""
    if _provider is not None:
        return True
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if not any(os.environ.get(name) for name in _ENDPOINT_ENVS):
        return False
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

    provider = build_provider(OTLPSpanExporter())
    trace.set_tracer_provider(provider)
    install_provider(provider)
    return True


def trace_content() -> bool:
    """Whether prompt and completion text may be recorded (``DEEPCRITICAL_TRACE_CONTENT=1``)."""
    return os.environ.get(CONTENT_ENV, "").strip() == "1"


def _clean(attributes: Attributes | None) -> dict[str, AttributeValue]:
    return {k: v for k, v in (attributes or {}).items() if v is not None}


@contextmanager
def span(name: str, attributes: Attributes | None = None) -> Iterator[Span | None]:
    """A span ``name`` around the block, the current span inside it (``None`` and nothing
    made when tracing is off). An exception marks it as an error with its type only (an
    exception's text may hold a URL): the exception itself is not recorded."""
    if _provider is None:
        yield None
        return
    tracer = _provider.get_tracer(TRACER_NAME)
    with tracer.start_as_current_span(
        name, attributes=_clean(attributes), record_exception=False, set_status_on_exception=False
    ) as current:
        try:
            yield current
        except BaseException as exc:
            current.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise


def start_span(
    name: str, attributes: Attributes | None = None, links: list[Link] | None = None
) -> Span | None:
    """A span ``name`` started (not made current: see :func:`attached`) under the current
    context; ``None`` when tracing is off. The caller ends it."""
    if _provider is None:
        return None
    tracer = _provider.get_tracer(TRACER_NAME)
    return tracer.start_span(name, attributes=_clean(attributes), links=links or None)


@contextmanager
def attached(parent: Span | Context | None) -> Iterator[None]:
    """``parent`` (a span or a context) made current for the block, in this task only
    (nothing when ``None``)."""
    if parent is None:
        yield
        return
    ctx = trace.set_span_in_context(parent) if isinstance(parent, Span) else parent
    token = otel_context.attach(ctx)
    try:
        yield
    finally:
        otel_context.detach(token)


def current_trace(target: Span | None = None) -> dict[str, str] | None:
    """``{"trace_id", "span_id"}`` (hex) of ``target`` or the current span, ``None`` when
    there is none (tracing off)."""
    ctx = (target or trace.get_current_span()).get_span_context()
    if not ctx.is_valid:
        return None
    return {"trace_id": format(ctx.trace_id, "032x"), "span_id": format(ctx.span_id, "016x")}


def link_to(earlier: Mapping[str, str]) -> Link | None:
    """A link to the span ``earlier`` (:func:`current_trace`'s form); ``None`` when it is
    malformed."""
    try:
        ctx = SpanContext(
            trace_id=int(earlier["trace_id"], 16),
            span_id=int(earlier["span_id"], 16),
            is_remote=True,
            trace_flags=TraceFlags(TraceFlags.SAMPLED),
        )
    except (KeyError, TypeError, ValueError):
        return None
    return Link(ctx, {"deepcritical.link": "earlier attempt"}) if ctx.is_valid else None


def inject_context() -> dict[str, str]:
    """The current trace context as W3C headers (``traceparent``...), to carry with a job;
    empty when tracing is off."""
    carrier: dict[str, str] = {}
    if _provider is not None:
        propagate.inject(carrier)
    return carrier


def extract_context(carrier: Mapping[str, str] | None) -> Context | None:
    """The trace context carried in ``carrier`` (:func:`inject_context`), ``None`` without
    one."""
    if not carrier:
        return None
    return propagate.extract(dict(carrier))
