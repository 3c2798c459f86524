"""Prometheus metrics of a DeepCritical process (``prometheus-client``, its default registry),
served on ``/metrics`` by the web app and by each worker (``worker --metrics-port``).

Counted where it happens: runs by :class:`~deepcritical.telemetry.run_trace.RunObserver`
(started, finished by stop reason, failed or cancelled; duration; model tokens by role from
the run's usage report), source requests by ``SourceHttp`` (by source and final status, with
their latency). Jobs by state (queued, running) are read from the run database, and the
local corpus's size from its document store, when ``/metrics`` is scraped
(:class:`StateCollector`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TypeVar

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

T = TypeVar("T")

__all__ = [
    "MODEL_TOKENS",
    "RUNS_FAILED",
    "RUNS_FINISHED",
    "RUNS_STARTED",
    "RUN_SECONDS",
    "SOURCE_REQUESTS",
    "SOURCE_SECONDS",
    "STATE_GAUGES",
    "StateCollector",
    "metrics_payload",
    "observe_source_request",
]

RUNS_STARTED = Counter(
    "deepcritical_runs_started", "Research runs started (resumes included).", ["orchestrator"]
)
RUNS_FINISHED = Counter(
    "deepcritical_runs_finished",
    "Research runs that delivered their report, by why gathering stopped.",
    ["orchestrator", "stop_reason"],
)
RUNS_FAILED = Counter(
    "deepcritical_runs_failed",
    "Research runs that ended without a report: failed (an error) or cancelled.",
    ["orchestrator", "status"],
)
RUN_SECONDS = Histogram(
    "deepcritical_run_duration_seconds",
    "Wall-clock seconds of a run in this process, however it ended.",
    ["orchestrator"],
    buckets=(5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, float("inf")),
)
SOURCE_REQUESTS = Counter(
    "deepcritical_source_requests",
    "Search-source HTTP requests (retries included in one), by final HTTP status or error.",
    ["source", "status"],
)
SOURCE_SECONDS = Histogram(
    "deepcritical_source_request_duration_seconds",
    "Seconds of a source request, retries and rate-limit waits included.",
    ["source"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 60, float("inf")),
)
MODEL_TOKENS = Counter(
    "deepcritical_model_tokens",
    "Model tokens spent, by role and kind (input, output).",
    ["role", "kind"],
)


def observe_source_request(source: str, status: str, seconds: float) -> None:
    """Count one request of ``source`` that ended with ``status`` after ``seconds``."""
    SOURCE_REQUESTS.labels(source=source, status=status).inc()
    SOURCE_SECONDS.labels(source=source).observe(max(seconds, 0.0))


class StateCollector(Collector):
    """Gauges read at scrape time (:data:`STATE_GAUGES`, registered once): the jobs by state
    (``deepcritical_jobs{state}``) from :attr:`jobs` (e.g. ``{"queued": 2, "running": 1}``)
    and the documents of the local corpus (``deepcritical_corpus_documents``) from
    :attr:`corpus_documents` (``None``: no local corpus); a reader that is not set or raises
    shows nothing that scrape."""

    def __init__(self) -> None:
        self.jobs: Callable[[], Mapping[str, int]] | None = None
        self.corpus_documents: Callable[[], int | None] | None = None

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """The gauges (see the class docstring)."""
        counts = _read(self.jobs)
        if counts is not None:
            family = GaugeMetricFamily(
                "deepcritical_jobs", "Runs by job state in the run database.", labels=["state"]
            )
            for state, count in sorted(counts.items()):
                family.add_metric([state], count)
            yield family
        documents = _read(self.corpus_documents)
        if documents is not None:
            yield GaugeMetricFamily(
                "deepcritical_corpus_documents",
                "Documents in the local corpus (records and full texts imported).",
                value=documents,
            )


def _read(reader: Callable[[], T] | None) -> T | None:
    if reader is None:
        return None
    try:
        return reader()
    except Exception:  # noqa: BLE001 - a database that is down shows no gauge; /readyz says why
        return None


STATE_GAUGES = StateCollector()
REGISTRY.register(STATE_GAUGES)


def metrics_payload() -> tuple[bytes, str]:
    """The registry in Prometheus's text format, and its content type."""
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
