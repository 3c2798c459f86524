"""Tracing is off by default and costs no span; what leaves holds no credentials."""

from __future__ import annotations

import pytest

from deepcritical.telemetry.span_redaction import scrub_attributes
from deepcritical.telemetry.tracing import configure_tracing, span, tracer_provider


def test_without_an_endpoint_tracing_is_off_and_makes_no_span(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    assert configure_tracing() is False
    assert tracer_provider() is None
    with span("searching") as current:
        assert current is None


def test_attributes_leave_without_passwords_keys_or_tokens() -> None:
    scrubbed = scrub_attributes(
        {
            "server.url": "http://user:hunter2pw@models.example:8080/v1?api_key=k-123&x=1",
            "http.request.header.authorization": "anything at all",
            "gen_ai.prompt": "use sk-abcdefghijklmnop and Bearer abc.def.ghi.jkl please",
            "gen_ai.usage.input_tokens": 12,
            "deepcritical.source": "pubmed",
        }
    )
    text = repr(scrubbed)
    for secret in ("hunter2pw", "k-123", "anything at all", "sk-abcdefghijklmnop", "abc.def"):
        assert secret not in text
    assert scrubbed["server.url"] == "http://models.example:8080/v1?api_key=%5Bredacted%5D&x=1"
    assert scrubbed["gen_ai.usage.input_tokens"] == 12
    assert scrubbed["deepcritical.source"] == "pubmed"
