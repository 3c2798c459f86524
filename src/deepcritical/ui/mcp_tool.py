"""The ``deep_research`` MCP tool (and API endpoint) of the web app.

:func:`run_deep_research` runs one research question to the end and maps the run onto the
tool's return structure (:class:`DeepResearchOutput`); :func:`make_deep_research_tool` wraps
it in the function Gradio exposes, whose name and docstring become the MCP tool's name and
description. The tool returns the structure as JSON text: Gradio hands an MCP client the
``str()`` of a returned value, and a JSON string is what a calling model can read back.

Its runs belong to the caller (:meth:`deepcritical.ui.auth.Access.owner`): with password
sign-in, the user of the login cookie the API or MCP client sends (Gradio refuses a call
without one); with Hugging Face sign-in, the user of the signed browser session (an MCP client
has none: the call fails, asking to sign in); without sign-in, the local user, as every
visitor.

A failed run (bad question, missing key, an ``error`` event, no report) or a refused caller is
raised as a ``gr.Error``: Gradio's queue answers it as an error with its message, so an MCP
client gets a result with ``isError: true`` and the message as text (Gradio's MCP server turns
the raised error into the MCP error result), and a ``gradio_client`` caller gets an
``AppError``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal

import gradio as gr
from pydantic import BaseModel, Field

from deepcritical.config import Settings
from deepcritical.events import ResearchEvent
from deepcritical.llm.llm_errors import describe_error
from deepcritical.models import ChecklistStatus, RunResult, flag_labels
from deepcritical.ui.auth import Access, SignInRequired
from deepcritical.ui.session import redact, secret_values
from deepcritical.ui.streams import closing

Status = Literal["completed", "max_iterations_reached", "error"]
ResearchFn = Callable[..., AsyncIterator[ResearchEvent]]
"""``research(question, settings, context=..., owner=...)``, as
:func:`deepcritical.api.research`."""

MAX_ITERATIONS = 20
"""Upper bound of ``max_iterations`` (the settings' ``max_rounds`` limit)."""
SNIPPET_CHARS = 300


class SourceOut(BaseModel):
    """One cited source. ``number`` is its ``[n]`` in ``answer``; ``type`` the source it came
    from (``pubmed``, ``trials``, ``europepmc``, ``openalex``, ``web``, ``local``);
    ``flags`` its integrity flags (``"Expression of concern: ..."``; a retracted record is
    never cited)."""

    number: int
    id: str
    type: str
    title: str
    url: str | None = None
    snippet: str = ""
    flags: list[str] = Field(default_factory=list)


class CoverageOut(BaseModel):
    """Checklist items the evidence satisfied, and the gaps (partial or unsatisfied)."""

    satisfied: list[str] = Field(default_factory=list)
    gaps: list[str] = Field(default_factory=list)
    coverage: float = 0.0


class DeepResearchOutput(BaseModel):
    """What ``deep_research`` returns (as JSON)."""

    trace_id: str
    answer: str = ""
    sources: list[SourceOut] = Field(default_factory=list)
    checklist_coverage: CoverageOut = Field(default_factory=CoverageOut)
    iterations_used: int = 0
    status: Status = "completed"
    error: str | None = None


def default_research() -> ResearchFn:
    """:func:`deepcritical.api.research` (imported on first use: it loads the agents)."""
    from deepcritical.api import research

    return research


def _from_result(trace_id: str, result: RunResult) -> DeepResearchOutput:
    report = result.report
    numbers = report.reference_numbers()
    evidence = {e.id: e for e in result.evidence}
    sources: list[SourceOut] = []
    for ref in report.references:
        n = numbers.get(ref.evidence_id)
        if n is None or any(s.number == n for s in sources):
            continue
        item = evidence.get(ref.evidence_id)
        sources.append(
            SourceOut(
                number=n,
                id=ref.citation.id,
                type=ref.citation.source,
                title=ref.citation.display_title(),
                url=ref.citation.url,
                snippet=item.snippet(SNIPPET_CHARS) if item is not None else "",
                flags=flag_labels(ref.citation.integrity_flags),
            )
        )
    sources.sort(key=lambda s: s.number)
    coverage = CoverageOut()
    if result.plan is not None:
        for c in result.plan.checklist:
            target = coverage.satisfied if c.status == ChecklistStatus.SATISFIED else coverage.gaps
            target.append(c.description)
        coverage.coverage = round(result.plan.coverage(), 3)
    status: Status = (
        "max_iterations_reached" if report.metadata.stop_reason == "max_rounds" else "completed"
    )
    return DeepResearchOutput(
        trace_id=trace_id,
        answer=report.to_markdown(),
        sources=sources,
        checklist_coverage=coverage,
        iterations_used=report.metadata.iterations,
        status=status,
    )


async def run_deep_research(
    question: str,
    context: str | None,
    max_iterations: int,
    settings: Settings,
    research_fn: ResearchFn | None = None,
    owner: str | None = None,
) -> DeepResearchOutput:
    """Run ``question`` to the end with ``settings`` (``max_rounds`` = ``max_iterations``,
    clamped to 1..20) for ``owner`` (the user the recorded run belongs to; ``None``: the
    local user) and map the run onto :class:`DeepResearchOutput`.

    Never raises for a failed run: an ``error`` event or an exception (bad question, missing
    API key, no local corpus...) gives ``status="error"`` and its message in ``error``
    (:func:`~deepcritical.llm.llm_errors.describe_error`: no model server's answer; the values
    of the settings' secrets replaced by ``[redacted]``). ``trace_id`` is the durable run id
    from the ``started`` event when the run store gives one, else a fresh uuid4.
    """
    run = research_fn if research_fn is not None else default_research()
    trace_id = str(uuid.uuid4())
    rounds = max(1, min(int(max_iterations), MAX_ITERATIONS))
    run_settings = settings.model_copy(update={"max_rounds": rounds})
    try:
        stream = run(question, run_settings, context=context or None, owner=owner)
        async with closing(stream) as events:
            async for event in events:
                if event.run_id:
                    trace_id = event.run_id
                elif event.type == "error":
                    return DeepResearchOutput(
                        trace_id=trace_id, status="error", error=event.message
                    )
                elif event.type == "done" and event.result is not None:
                    return _from_result(trace_id, event.result)
    # the tool reports failures; it does not crash the server
    except Exception as exc:  # noqa: BLE001 (see above)
        return DeepResearchOutput(
            trace_id=trace_id,
            status="error",
            error=redact(describe_error(exc), secret_values(run_settings)),
        )
    return DeepResearchOutput(
        trace_id=trace_id, status="error", error="the run ended without a report"
    )


def make_deep_research_tool(
    settings: Settings, research_fn: ResearchFn | None = None, access: Access | None = None
) -> Callable[..., Awaitable[str]]:
    """The ``deep_research`` function Gradio exposes as API endpoint and MCP tool; runs use
    ``settings`` (the server's: model and keys from its environment) and belong to the
    caller under ``access`` (default: no sign-in, the local user). Gradio injects the
    request and the Hugging Face profile; they are not parameters of the API or the tool.
    It returns the JSON of :class:`DeepResearchOutput` and raises ``gr.Error``
    (``"deep_research failed: <why> (trace_id <id>)"``) when the caller must sign in first
    or :func:`run_deep_research` gives ``status="error"``."""
    sign_in = access or Access()

    async def deep_research(
        question: str,
        context: str | None = None,
        max_iterations: int = 10,
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
    ) -> str:
        """Deep biomedical literature research on one question; slow: it takes minutes.

        Use it when a question needs evidence from the biomedical literature (drug
        repurposing, mechanisms, clinical outcomes, trials) and a cited, checked answer, not
        for quick facts or general chat. It plans, searches the configured sources (PubMed,
        ClinicalTrials.gov, Europe PMC, OpenAlex, the web or a local corpus), forms and tests
        hypotheses and writes a report in which every citation is validated against the
        evidence collected. Expect one to several minutes per call.

        Args:
            question: the research question in plain language (at most 2000 characters).
            context: optional background for the planner (population, constraints, known facts).
            max_iterations: maximum search rounds, 1 to 20 (more rounds find more, slower).

        Returns:
            JSON text of an object with: trace_id; answer (markdown report, inline [n]
            citations); sources (number n, id, type, title, url, snippet); checklist_coverage
            (satisfied, gaps, coverage 0..1); iterations_used; status (completed or
            max_iterations_reached). A failed run is an error result whose text says why.
        """
        try:
            owner = sign_in.owner(request, profile)
        except SignInRequired as exc:
            raise gr.Error(
                f"deep_research refused: {exc}", title="sign in first", print_exception=False
            ) from exc
        out = await run_deep_research(
            question, context, max_iterations, settings, research_fn, owner=owner
        )
        if out.status == "error":
            raise gr.Error(
                f"deep_research failed: {out.error} (trace_id {out.trace_id})",
                title="deep_research failed",
                print_exception=False,
            )
        return out.model_dump_json(indent=1)

    return deep_research


def parse_output(text: str) -> dict[str, Any]:
    """The JSON text ``deep_research`` returned, as a dict (for clients and tests)."""
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError("deep_research returned JSON that is not an object")
    return value
