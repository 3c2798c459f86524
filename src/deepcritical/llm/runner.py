"""One pydantic-ai structured-output call, with retries, a timeout, usage accounting and our
error types. Every LLM agent of this package runs its model through :class:`StructuredAgent`,
built by :meth:`deepcritical.llm.agent_config.LLMConfig.structured`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import date
from typing import Generic, TypeVar

from pydantic_ai import Agent, AgentRunResult, ModelRetry, RunContext
from pydantic_ai.exceptions import (
    AgentRunError,
    IncompleteToolCall,
    ModelAPIError,
    OutputTokenLimitExceeded,
    RunCancelled,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
)
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.usage import RunUsage

from deepcritical.llm.context_window import ContextWindowError, fit_prompt
from deepcritical.llm.llm_errors import (
    AgentModelError,
    AgentOutputError,
    describe_error,
    last_output_problem,
)
from deepcritical.llm.structured import (
    GRAMMAR_STRATEGIES,
    OutputStrategy,
    TolerantTextModel,
    output_spec,
)
from deepcritical.llm.usage import UsageTracker
from deepcritical.logs import get_logger

__all__ = ["TODAY_LINE", "ModelRetry", "StructuredAgent"]

log = get_logger(__name__)

TODAY_LINE = "Today's date is {date}."
"""The first line of every call's instructions (``{date}``: ISO date); the call cache
normalises it (:func:`deepcritical.llm.model_cache.stable_prompt_text`)."""

CUT_RETRY = (
    "\n\n(Your previous answer ran past its limit of {bound} tokens and was cut before it"
    " was complete. Answer again, briefly, with the structured answer only.)"
)
"""Added to the prompt of the one retry of an answer cut at its token bound."""

DepsT = TypeVar("DepsT")
OutputT = TypeVar("OutputT")


class StructuredAgent(Generic[DepsT, OutputT]):
    """A pydantic-ai agent returning ``output_type``, validated, retried, accounted.

    Args:
        role: name used in errors, logs and usage records (``"planner"``, ``"judge"``, ...).
        model: the pydantic-ai model (:func:`deepcritical.llm.providers.build_model`, or a
            test model).
        output_type: pydantic model the output must validate against.
        deps_type: type of the per-call context handed to ``validator``.
        retries: how many times an invalid output is sent back to the model (with the
            validation error) before giving up; at least 1.
        timeout_seconds: wall-clock limit of one call (all retries included); ``None``: none.
        usage: tracker receiving the usage of every call, failed calls included.
        validator: extra check ``(deps, output) -> output`` run after pydantic validation; it
            may fix the output or raise :class:`pydantic_ai.ModelRetry` to ask the model again
            (the message is shown to the model).
        today: the current date, put at the top of every call's instructions ("Today's date
            is 2026-11-22.") so that every role can reason about recency (injectable for tests).
        output: how the structured output is asked for (:mod:`deepcritical.llm.structured`);
            the model's text is read tolerantly (reasoning blocks removed, JSON repaired)
            whatever the strategy.
        context_tokens: the model's context window in tokens; a longer prompt loses its last
            fenced evidence blocks, or is refused (:mod:`deepcritical.llm.context_window`).
        max_output_tokens: most tokens of one answer (``max_tokens``; ``None``: the
            provider's default).
    """

    def __init__(
        self,
        role: str,
        model: Model,
        output_type: type[OutputT],
        deps_type: type[DepsT],
        *,
        retries: int = 2,
        timeout_seconds: float | None = None,
        usage: UsageTracker | None = None,
        validator: Callable[[DepsT, OutputT], OutputT] | None = None,
        today: Callable[[], date] = date.today,
        output: OutputStrategy = "tool",
        context_tokens: int | None = None,
        max_output_tokens: int | None = None,
    ) -> None:
        self.role = role
        self.today = today
        self.model = model
        self.timeout_seconds = timeout_seconds
        self.usage = usage
        self.output = output
        self.context_tokens = context_tokens
        self.output_type = output_type
        self._deps_type = deps_type
        self._retries = max(1, retries)
        self._validator = validator
        self.max_output_tokens = max_output_tokens
        self._settings = ModelSettings(max_tokens=max_output_tokens) if max_output_tokens else None
        self._agents = {output: self._build(output, output_type)}

    def _strategy(self, with_tools: bool) -> OutputStrategy:
        """The strategy of one call: a grammar-constrained answer can only be the JSON
        output, never a tool call, so calls that give the model tools (the screener's source
        tools) ask for a tool-call output."""
        return "tool" if with_tools and self.output in GRAMMAR_STRATEGIES else self.output

    def _build(self, strategy: OutputStrategy, output_type: type[OutputT]) -> Agent[DepsT, OutputT]:
        agent: Agent[DepsT, OutputT] = Agent(
            TolerantTextModel(self.model),
            output_type=output_spec(output_type, strategy),
            deps_type=self._deps_type,
            retries=self._retries,
            name=self.role,
            model_settings=self._settings,
        )
        if self._validator is not None:
            check = self._validator

            @agent.output_validator
            def _validate(ctx: RunContext[DepsT], output: OutputT) -> OutputT:
                return check(ctx.deps, output)

        return agent

    async def run(
        self,
        instructions: str,
        prompt: str,
        deps: DepsT,
        toolsets: Sequence[AbstractToolset[DepsT]] | None = None,
        output_type: type[OutputT] | None = None,
    ) -> OutputT:
        """Ask the model; return its validated output.

        Args:
            instructions: the system instructions of this call (the role's prompt template,
                rendered: fence nonce, ...); today's date is put before them.
            prompt: the user message (question, checklist, fenced evidence...).
            deps: context for the validator.
            toolsets: tools the model may call during this call (e.g. the source tools of
                one run, :func:`deepcritical.agents.source_tools.source_toolset`); their
                calls and the answers count in the same usage and timeout. Under a
                grammar-constrained strategy (``json_schema``, ``json_object``) such a call
                asks for its output as a tool call too (a grammar would forbid tool calls).
            output_type: this call's output model, a subclass of the agent's whose schema
                bounds the values of this call (:func:`deepcritical.llm.choices.with_choices`:
                the evidence ids shown, the checklist keys); ``None``: the agent's own.

        Raises:
            AgentOutputError: the output stayed invalid after all retries.
            AgentModelError: provider error, timeout, cancellation by pydantic-ai, usage limit,
                or a prompt too long for ``context_tokens`` even with its evidence trimmed.
        """
        usage = RunUsage()
        dated = TODAY_LINE.format(date=self.today().isoformat()) + f"\n\n{instructions}"
        try:
            prompt, dropped = fit_prompt(
                dated, prompt, self.context_tokens, self.max_output_tokens or 0
            )
        except ContextWindowError as exc:
            raise AgentModelError(self.role, str(exc)) from exc
        if dropped:
            log.info("prompt trimmed to the context window", role=self.role, sources=dropped)
        try:
            agent = self._agent_for(self._strategy(bool(toolsets)), output_type)
            result = await self._run_once_more_if_cut(agent, prompt, dated, deps, usage, toolsets)
        except UnexpectedModelBehavior as exc:
            self._record(usage, failed=True)
            problem = last_output_problem(exc)
            log.warning("agent output invalid", role=self.role, error=str(exc), last=problem)
            why = f"; last problem: {problem}" if problem else ""
            raise AgentOutputError(self.role, f"invalid model output: {exc.message}{why}") from exc
        except RunCancelled as exc:  # RunTimedOut included
            self._record(usage, failed=True)
            what = "timed out" if isinstance(exc, TimeoutError) else "was cancelled"
            raise AgentModelError(
                self.role, f"model call {what} after {self.timeout_seconds} s"
            ) from exc
        except (ModelAPIError, UsageLimitExceeded, AgentRunError) as exc:
            self._record(usage, failed=True)
            described = describe_error(exc)  # never the server's answer (docs/security.md)
            log.warning("agent model call failed", role=self.role, error=described)
            raise AgentModelError(self.role, described) from exc
        self._record(result.usage, failed=False)
        return result.output

    def _agent_for(
        self, strategy: OutputStrategy, output_type: type[OutputT] | None
    ) -> Agent[DepsT, OutputT]:
        """The pydantic-ai agent of ``strategy``: built for this call's bounded
        ``output_type``, else the cached one of the role's own output type."""
        if output_type is not None and output_type is not self.output_type:
            return self._build(strategy, output_type)  # this call's bounded schema
        if (cached := self._agents.get(strategy)) is not None:
            return cached
        agent = self._agents[strategy] = self._build(strategy, self.output_type)
        return agent

    async def _run_once_more_if_cut(
        self,
        agent: Agent[DepsT, OutputT],
        prompt: str,
        dated: str,
        deps: DepsT,
        usage: RunUsage,
        toolsets: Sequence[AbstractToolset[DepsT]] | None,
    ) -> AgentRunResult[OutputT]:
        """One run of ``agent``; a model that ran on until its token bound cut it gets one
        retry, told so (a new request, never a cached one: cut answers are not cached). A
        cut tool call was already retried by pydantic-ai (its arguments were invalid JSON):
        no more."""

        def run(asked: str) -> Awaitable[AgentRunResult[OutputT]]:
            return agent.run(
                asked,
                instructions=dated,
                deps=deps,
                usage=usage,
                timeout=self.timeout_seconds,
                toolsets=toolsets,
            )

        try:
            return await run(prompt)
        except OutputTokenLimitExceeded as exc:
            if isinstance(exc, IncompleteToolCall):
                raise
            log.warning("agent output cut at its token bound", role=self.role, error=str(exc))
        return await run(prompt + CUT_RETRY.format(bound=self.max_output_tokens or "its"))

    def _record(self, usage: RunUsage, *, failed: bool) -> None:
        if self.usage is not None:
            self.usage.record(self.role, usage, failed=failed)
