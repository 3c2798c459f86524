"""The ``ask_about_run`` MCP tool (and API endpoint) of the web app: a follow-up question about
a finished run, answered from that run's evidence only.

``deep_research`` (:mod:`deepcritical.ui.mcp_tool`) stays one call that runs a question to
its report; ``ask_about_run`` then asks that run more, by its ``trace_id``, through
:func:`deepcritical.api.ask` (no model, no search: the run's sources quoted verbatim, their
citations validated and grounded as the report's; the question and its answer kept with the
run). :func:`follow_up_output` maps the :class:`~deepcritical.models.FollowUp` onto the tool's
structure (:class:`FollowUpOutput`, returned as JSON text, as ``deep_research`` returns its
own: the answer with ``[n]`` markers and its sources numbered alike).

Runs belong to their caller (:meth:`deepcritical.ui.auth.Access.owner`, as for
``deep_research``): another owner's run is "not found", like one that does not exist. Bad
input (an empty or too long question, an unknown run, a run without its report) and a refused
caller are raised as ``gr.Error`` with a clear message, for the reason given in
:mod:`deepcritical.ui.mcp_tool`: the MCP client gets an ``isError: true`` result with that
text, a ``gradio_client`` caller an ``AppError``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import gradio as gr
from pydantic import BaseModel, Field

from deepcritical.config import Settings
from deepcritical.llm.llm_errors import describe_error
from deepcritical.logs import get_logger
from deepcritical.models import FollowUp, flag_labels, numbered
from deepcritical.orchestrators.deps import QuestionError
from deepcritical.state import RunNotFoundError, RunWithoutReportError
from deepcritical.ui.auth import Access, SignInRequired
from deepcritical.ui.mcp_tool import SNIPPET_CHARS, SourceOut
from deepcritical.ui.session import redact, secret_values

log = get_logger(__name__)

AskFn = Callable[..., Awaitable[FollowUp]]
"""``ask(run_id, question, settings, owner=...)``, as :func:`deepcritical.api.ask`."""

ASK_ERRORS = (QuestionError, RunNotFoundError, RunWithoutReportError)
"""What :func:`deepcritical.api.ask` raises on bad input: its message says what to do."""

MCP_SUGGESTION = (
    "This run's evidence does not cover the question: call deep_research with it to search "
    "the literature in a new run."
)
"""What an unanswered question's ``suggestion`` says to an MCP client (the stored one names
the command line's command)."""


def default_ask() -> AskFn:
    """:func:`deepcritical.api.ask` (imported on first use: it loads the answering code)."""
    from deepcritical.api import ask

    return ask


class FollowUpOutput(BaseModel):
    """What ``ask_about_run`` returns (as JSON): ``answer`` cites ``[n]``, the ``number`` of
    a source in ``sources``; each source's ``snippet`` is the passage of it that supports the
    answer (the grounding check's best quote)."""

    run_id: str
    question: str
    answered: bool
    answer: str
    sources: list[SourceOut] = Field(default_factory=list)
    suggestion: str = ""


def _best_quotes(follow_up: FollowUp) -> dict[str, str]:
    """Evidence id -> the best supporting quote of the answer's kept sentences."""
    best: dict[str, tuple[float, str]] = {}
    for claim in follow_up.grounding:
        if claim.removed:
            continue
        for q in claim.quotes:
            score = q.entailment or q.similarity
            if q.supports and q.quote.strip() and score > best.get(q.evidence_id, (-1.0, ""))[0]:
                best[q.evidence_id] = (score, q.quote)
    return {eid: quote for eid, (_, quote) in best.items()}


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1].rstrip() + "…"


def follow_up_output(run_id: str, follow_up: FollowUp) -> FollowUpOutput:
    """``follow_up`` (asked about the run ``run_id``) as the tool's structure: its answer with
    the markers numbered ``[1]``, ``[2]``... in order of first citation (as its markdown and
    the report number them), its references as sources under those numbers, and, when
    unanswered, :data:`MCP_SUGGESTION`."""
    numbers = follow_up.as_report().reference_numbers()
    quotes = _best_quotes(follow_up)
    sources: list[SourceOut] = []
    for ref in follow_up.references:
        n = numbers.get(ref.evidence_id)
        if n is None or any(s.number == n for s in sources):
            continue
        sources.append(
            SourceOut(
                number=n,
                id=ref.citation.id,
                type=ref.citation.source,
                title=ref.citation.display_title(),
                url=ref.citation.url,
                snippet=_snippet(quotes.get(ref.evidence_id, "")),
                flags=flag_labels(ref.citation.integrity_flags),
            )
        )
    sources.sort(key=lambda s: s.number)
    return FollowUpOutput(
        run_id=run_id,
        question=follow_up.question,
        answered=follow_up.answered,
        answer=numbered(follow_up.answer, numbers),
        sources=sources,
        suggestion="" if follow_up.answered else MCP_SUGGESTION,
    )


def _failed(message: str) -> gr.Error:
    return gr.Error(
        f"ask_about_run failed: {message}", title="ask_about_run failed", print_exception=False
    )


def make_ask_about_run_tool(
    settings: Settings, access: Access | None = None, ask_fn: AskFn | None = None
) -> Callable[..., Awaitable[str]]:
    """The ``ask_about_run`` function Gradio exposes as API endpoint and MCP tool: it asks
    the caller's run (under ``access``; default: no sign-in, the local user) with
    ``ask_fn`` (default :func:`deepcritical.api.ask`) over the run store and embedder of
    ``settings`` (the server's). Gradio injects the request and the Hugging Face profile;
    they are not parameters of the API or the tool."""
    sign_in = access or Access()

    async def ask_about_run(
        run_id: str,
        question: str,
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
    ) -> str:
        """Ask a follow-up question about a finished deep_research run; fast, no new search.

        Use it after deep_research, with the trace_id it returned, for a question the run's
        evidence may answer (a detail, a subgroup, a dose, an outcome). The answer quotes at
        most three of the run's own sources verbatim, each citation checked as the report's
        were; the question and answer are kept with the run. When the evidence does not
        answer it, answered is false: call deep_research for a new run instead.

        Args:
            run_id: the run's id: deep_research's trace_id (a unique prefix of 6+ characters works).
            question: the follow-up question in plain language (at most 2000 characters).

        Returns:
            JSON text of an object with: run_id; question; answered (true or false); answer
            (markdown, inline [n] citations, or "The evidence of this run does not answer
            this question."); sources (number n, id, type, title, url, snippet: the quoted
            passage that supports the answer, flags); suggestion (what to do when not
            answered). An unknown run, a run without a report or an empty question is an
            error result whose text says why.
        """
        try:
            owner = sign_in.owner(request, profile)
        except SignInRequired as exc:
            raise gr.Error(
                f"ask_about_run refused: {exc}", title="sign in first", print_exception=False
            ) from exc
        ask = ask_fn or default_ask()
        rid = (run_id or "").strip()
        try:
            follow_up = await ask(rid, question, settings, owner=owner)
        except ASK_ERRORS as exc:
            raise _failed(str(exc)) from exc
        # the tool reports failures as errors with their reason; it does not crash the server
        except Exception as exc:
            log.warning("ask_about_run failed", error=type(exc).__name__)
            raise _failed(redact(describe_error(exc), secret_values(settings))) from exc
        return follow_up_output(rid, follow_up).model_dump_json(indent=1)

    return ask_about_run
