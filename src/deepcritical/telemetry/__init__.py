"""Observability: OpenTelemetry traces of every run (:mod:`.tracing`, off by default; spans
leave through :mod:`.span_redaction`), Prometheus metrics (:mod:`.run_metrics`) and a run's
span and metrics together (:mod:`.run_trace`)."""
