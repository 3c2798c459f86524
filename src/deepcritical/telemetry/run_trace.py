"""One run seen from outside: :class:`RunObserver`, its trace span and its metrics."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from opentelemetry.trace import Span, Status, StatusCode

from deepcritical.events import DoneData, ResearchEvent
from deepcritical.telemetry.run_metrics import (
    MODEL_TOKENS,
    RUN_SECONDS,
    RUNS_FAILED,
    RUNS_FINISHED,
    RUNS_STARTED,
)
from deepcritical.telemetry.tracing import current_trace, link_to, start_span, trace_content

__all__ = ["RunObserver"]

Outcome = Literal["finished", "failed", "cancelled"]


class RunObserver:
    """The ``run`` span of one run (the parent of its stages; ``None`` when tracing is off)
    and its Prometheus metrics: counted started at once, then finished (with the stop
    reason and the model tokens by role of its ``done`` event), failed (an ``error`` event
    or an exception) or cancelled, and its duration, when :meth:`end` is called.

    Args:
        orchestrator: ``iterative`` or ``magentic`` (a label of every run metric).
        question: the question, an attribute of the span only with
            ``DEEPCRITICAL_TRACE_CONTENT=1``.
        earlier: the traces of the run's earlier attempts (``{"trace_id", "span_id"}``), which
            a resumed run's span links to.
        clock: monotonic seconds.
    """

    def __init__(
        self,
        orchestrator: str,
        *,
        question: str,
        earlier: Sequence[Mapping[str, str]] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.orchestrator = orchestrator
        self.earlier = [dict(e) for e in earlier]
        links = [link for e in self.earlier if (link := link_to(e)) is not None]
        self.span: Span | None = start_span(
            "run",
            {
                "deepcritical.orchestrator": orchestrator,
                "deepcritical.question": question if trace_content() else None,
                "deepcritical.resumed": bool(self.earlier),
            },
            links=links,
        )
        self.clock = clock
        self.started = clock()
        self.outcome: Outcome | None = None
        self.stop_reason = ""
        self.ended = False
        RUNS_STARTED.labels(orchestrator=orchestrator).inc()

    def trace_record(self) -> dict[str, Any]:
        """What the run database keeps of the trace (in the run's metrics): ``trace_id``,
        ``trace_span_id`` and ``earlier_traces``; empty when tracing is off."""
        now = current_trace(self.span) if self.span is not None else None
        if now is None:
            return {}
        out: dict[str, Any] = {"trace_id": now["trace_id"], "trace_span_id": now["span_id"]}
        if self.earlier:
            out["earlier_traces"] = self.earlier
        return out

    def set_run_id(self, run_id: str) -> None:
        """Name the run on its span."""
        if self.span is not None:
            self.span.set_attribute("deepcritical.run_id", run_id)

    def observe(self, event: ResearchEvent) -> None:
        """Take the outcome from a ``done`` or ``error`` event."""
        if isinstance(event.data, DoneData) and self.outcome is None:
            self.outcome = "finished"
            self.stop_reason = event.data.stop_reason or "unknown"
            for role, used in event.data.usage.llm.items():
                for kind, tokens in (("input", used.input_tokens), ("output", used.output_tokens)):
                    if tokens:
                        MODEL_TOKENS.labels(role=role, kind=kind).inc(tokens)
        elif event.type == "error":
            self.fail("failed")

    def fail(self, outcome: Literal["failed", "cancelled"]) -> None:
        """Record that the run failed or was cancelled (unless its outcome is known)."""
        if self.outcome is None:
            self.outcome = outcome

    def end(self) -> None:
        """Count the run's outcome (a run that ended with none failed) and duration; end its
        span. Idempotent."""
        if self.ended:
            return
        self.ended = True
        outcome = self.outcome or "failed"
        labels = {"orchestrator": self.orchestrator}
        if outcome == "finished":
            RUNS_FINISHED.labels(stop_reason=self.stop_reason, **labels).inc()
        else:
            RUNS_FAILED.labels(status=outcome, **labels).inc()
        RUN_SECONDS.labels(**labels).observe(max(self.clock() - self.started, 0.0))
        if self.span is not None:
            self.span.set_attribute("deepcritical.outcome", outcome)
            if self.stop_reason:
                self.span.set_attribute("deepcritical.stop_reason", self.stop_reason)
            if outcome != "finished":
                self.span.set_status(Status(StatusCode.ERROR, outcome))
            self.span.end()
