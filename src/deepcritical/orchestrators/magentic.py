"""The ``magentic`` orchestrator: Microsoft Agent Framework's Magentic manager picks the next
agent each round; the orchestrator guarantees the ending.

Flow: plan (the planner, as in ``iterative``) -> a fresh Magentic workflow per run whose
participants are SearchAgent, HypothesisAgent, JudgeAgent and ReportAgent
(:mod:`deepcritical.orchestrators.magentic_agents`), coordinated by the standard Magentic
manager on the run's model (:func:`deepcritical.llm.providers.build_chat_client`) -> the
report, built and validated by the orchestrator from the evidence store (the ``iterative``
report stage, :meth:`ResearchRun.finish`).

Guaranteed ending: whether the manager declares the request satisfied, hits its round limit
(whose output is canned text, not a report) or its reset limit, names an unknown
participant, fails, runs out of the time budget or never calls ReportAgent, the run ends
with a validated report whose metadata (``stop_reason``, ``notes``) and ``done`` event say
why. Stop rules stay in code, not in a prompt: the judge's ``sufficient``, the evidence
limit, the search-round limit and a search that finds nothing new close the search, whatever
the manager asks.

The manager is :class:`ResearchManager`, a :class:`StandardMagenticManager` whose progress
ledger is parsed leniently and whose booleans are coerced from strings (small models answer
"false", which ``bool`` reads as True), with ``max_round_count`` (< 45: agent-framework's
hidden superstep limit raises after about 50 rounds), ``max_stall_count`` and
``max_reset_count`` set. The workflow is followed inside the run's one task (its
:class:`~deepcritical.orchestrators.channel.EventChannel`) under ``asyncio.timeout`` (the
time budget); its stream is closed when the run stops for any reason, and cancelling the
consumer cancels that task, which closes the stream and stops every participant (merely
leaving the loop would not).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, cast

from agent_framework import (
    Agent,
    AgentContext,
    AgentMiddleware,
    AgentResponse,
    AgentResponseUpdate,
    Message,
    SupportsAgentRun,
    SupportsChatGetResponse,
    Workflow,
    WorkflowEvent,
)
from agent_framework.orchestrations import (
    MagenticBuilder,
    MagenticContext,
    MagenticOrchestratorEvent,
    MagenticOrchestratorEventType,
    MagenticProgressLedger,
    MagenticProgressLedgerItem,
    StandardMagenticManager,
)
from pydantic_ai.usage import RunUsage

from deepcritical.events import ManagerData, ResearchEvent, WorkflowSummary
from deepcritical.llm.llm_errors import describe_error
from deepcritical.llm.usage import UsageTracker
from deepcritical.logs import get_logger
from deepcritical.models import ReportPreferences, ResearchPlan, StopReason
from deepcritical.orchestrators.deps import RunDeps
from deepcritical.orchestrators.magentic_agents import (
    ResearchParticipant,
    SearchParticipant,
    build_participants,
    search_closed,
)
from deepcritical.orchestrators.progress import RunAccounting
from deepcritical.orchestrators.review_step import review_evidence, review_plan
from deepcritical.orchestrators.run import ResearchRun

__all__ = [
    "MANAGER_ROLE",
    "MAX_MANAGER_ROUNDS",
    "MagenticOrchestrator",
    "Overrule",
    "ResearchManager",
    "coerce_ledger_bool",
    "match_speaker",
    "overruled_ledger",
    "parse_progress_ledger",
]

log = get_logger(__name__)

MANAGER_ROLE = "manager"
"""Usage role (and stage) of the Magentic manager's own model calls."""

MAX_MANAGER_ROUNDS = 44
"""Upper bound of ``max_round_count``: below the workflow's hidden superstep limit (about 50)."""

ROUND_LIMIT_TEXT = "Workflow terminated due to reaching maximum round count"
RESET_LIMIT_TEXT = "Workflow terminated due to reaching maximum reset count"
WORKFLOW_ORCHESTRATOR_ID = "magentic_orchestrator"

MANAGER_INSTRUCTIONS = (
    "You coordinate a biomedical literature research team. Delegate: never answer the "
    "research question from memory. When asked for a progress ledger, answer with one JSON "
    "object only, using the JSON booleans true and false."
)

_TRUE = {"true", "yes", "y", "1", "satisfied", "done", "complete", "completed"}
_FALSE = {"false", "no", "n", "0", "", "none", "null", "not satisfied", "incomplete"}


# --- progress ledger --------------------------------------------------------------------


def coerce_ledger_bool(value: object) -> bool:
    """A ledger answer as a bool: JSON booleans as they are; strings by meaning ("false",
    "no", "0", "" are False: ``bool("false")`` would be True); numbers by value; anything
    else False."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0
    if isinstance(value, str):
        text = value.strip().strip(".!").strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        first = re.split(r"[\s,;:]+", text, maxsplit=1)[0]
        return first in {"true", "yes"}
    return False


def _norm_name(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def match_speaker(answer: object, names: Sequence[str]) -> str | None:
    """The participant ``answer`` names: exact, then ignoring case and punctuation
    ("search_agent" -> "SearchAgent"), then the one participant whose name contains it or is
    contained in it ("Search" -> "SearchAgent"); ``None`` when none or several match."""
    if not isinstance(answer, str):
        return None
    text = answer.strip().strip("'\"`").strip()
    if text in names:
        return text
    key = _norm_name(text)
    if not key:
        return None
    exact = [n for n in names if _norm_name(n) == key]
    if len(exact) == 1:
        return exact[0]
    partial = [n for n in names if key in _norm_name(n) or _norm_name(n) in key]
    return partial[0] if len(partial) == 1 else None


def _json_object(text: str) -> dict[str, Any]:
    """The first JSON object in ``text`` (fenced or bare; Python-style ``True``/``False``/
    ``None`` tolerated), the outermost one when objects nest."""
    candidates: list[str] = re.findall(r"```(?:json)?\s*(\{.*?\})\s*```", text, flags=re.S)
    candidates.append(text)
    decoder = json.JSONDecoder()
    for candidate in candidates:
        # same-length replacements, so positions in both strings agree
        pythonic = re.sub(r"\bTrue\b", "true", re.sub(r"\bFalse\b", "false", candidate))
        pythonic = re.sub(r"\bNone\b", "null", pythonic)
        for start in [m.start() for m in re.finditer(r"\{", candidate)]:
            for variant in (candidate, pythonic):
                try:
                    value, _ = decoder.raw_decode(variant, start)
                except json.JSONDecodeError:
                    continue
                if isinstance(value, dict):
                    return value
    raise ValueError("no JSON object in the progress ledger")


def _item(data: dict[str, Any], key: str) -> tuple[str, object]:
    raw = data.get(key)
    if isinstance(raw, dict):
        return str(raw.get("reason", "")), raw.get("answer")
    return "", raw  # a flat answer ("is_in_loop": false), as small models write


def parse_progress_ledger(text: str, names: Sequence[str]) -> MagenticProgressLedger:
    """The progress ledger in ``text``, with every boolean coerced
    (:func:`coerce_ledger_bool`) and the next speaker matched to a participant
    (:func:`match_speaker`).

    Raises:
        ValueError: no JSON object, or an unknown next speaker while the request is not
            satisfied.
    """
    data = _json_object(text)
    flags: dict[str, MagenticProgressLedgerItem] = {}
    for key in ("is_request_satisfied", "is_in_loop", "is_progress_being_made"):
        reason, answer = _item(data, key)
        flags[key] = MagenticProgressLedgerItem(reason=reason, answer=coerce_ledger_bool(answer))
    speaker_reason, speaker_answer = _item(data, "next_speaker")
    speaker = match_speaker(speaker_answer, names)
    satisfied = bool(flags["is_request_satisfied"].answer)
    if speaker is None and not satisfied:
        raise ValueError(
            f"unknown next speaker {speaker_answer!r}; valid names: {', '.join(names)}"
        )
    instruction_reason, instruction = _item(data, "instruction_or_question")
    return MagenticProgressLedger(
        is_request_satisfied=flags["is_request_satisfied"],
        is_in_loop=flags["is_in_loop"],
        is_progress_being_made=flags["is_progress_being_made"],
        next_speaker=MagenticProgressLedgerItem(
            reason=speaker_reason, answer=speaker or str(speaker_answer or "")
        ),
        instruction_or_question=MagenticProgressLedgerItem(
            reason=instruction_reason, answer="" if instruction is None else str(instruction)
        ),
    )


def progress_ledger_schema(names: Sequence[str]) -> dict[str, Any]:
    """The JSON schema of a progress ledger over participants ``names``: three boolean
    items, the next speaker as one of ``names`` (an enum a grammar can enforce) and the
    instruction, each ``{"reason": str, "answer": ...}``."""

    def item(answer: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"reason": {"type": "string"}, "answer": answer},
            "required": ["reason", "answer"],
        }

    properties = {
        "is_request_satisfied": item({"type": "boolean"}),
        "is_in_loop": item({"type": "boolean"}),
        "is_progress_being_made": item({"type": "boolean"}),
        "next_speaker": item({"type": "string", "enum": list(names)}),
        "instruction_or_question": item({"type": "string"}),
    }
    return {"type": "object", "properties": properties, "required": list(properties)}


def progress_ledger_format(strategy: str, names: Sequence[str]) -> dict[str, Any] | None:
    """The Chat Completions ``response_format`` of a progress-ledger call under the run's
    structured-output strategy (:mod:`deepcritical.llm.structured`): OpenAI's ``json_schema``
    form, llama-cpp-python's ``json_object`` + ``schema`` form, or ``None`` (tool, prompted,
    auto: the prompt alone asks for the JSON, read leniently)."""
    schema = progress_ledger_schema(names)
    if strategy == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": "progress_ledger", "schema": schema, "strict": False},
        }
    if strategy == "json_object":
        return {"type": "json_object", "schema": schema}
    return None


@dataclass(frozen=True)
class Overrule:
    """What the run's code puts in place of a premature "the request is satisfied": the
    participant to call (``speaker``), the ``instruction`` it gets and the ``reason`` (shown
    in the ledger, the progress log and the methodology)."""

    speaker: str
    instruction: str
    reason: str


def overruled_ledger(ledger: MagenticProgressLedger, overrule: Overrule) -> MagenticProgressLedger:
    """``ledger`` with the request not satisfied, progress being made, no loop, and
    ``overrule``'s speaker and instruction (the model's reasons kept where they stay true)."""
    item = MagenticProgressLedgerItem
    return MagenticProgressLedger(
        is_request_satisfied=item(reason=f"overruled by the run: {overrule.reason}", answer=False),
        is_in_loop=item(reason=ledger.is_in_loop.reason, answer=False),
        is_progress_being_made=item(reason=ledger.is_progress_being_made.reason, answer=True),
        next_speaker=item(reason=overrule.reason, answer=overrule.speaker),
        instruction_or_question=item(reason=overrule.reason, answer=overrule.instruction),
    )


class ResearchManager(StandardMagenticManager):
    """The standard Magentic manager (its prompts, facts, plan, replan and final answer),
    with a lenient progress-ledger parser that coerces string booleans and matches
    loosely written participant names.

    ``structured_output`` (the run's resolved strategy) makes each progress-ledger call ask
    for the ledger's JSON schema through the chat client's ``response_format`` option
    (:func:`progress_ledger_format`), so a grammar-constrained server cannot answer with an
    unparsable ledger or an unknown speaker.

    ``finish_gate`` (set by the orchestrator) is asked, with the participants' names, whenever
    a ledger says the request is satisfied: ``None`` lets the workflow end; an
    :class:`Overrule` replaces the ledger (:func:`overruled_ledger`), so a model that declares
    victory before the search is closed (a small model does, after one round with nothing
    found) cannot end the research. When the request may end stays a rule in code, as the
    stop rules do.
    """

    structured_output: str = "tool"
    finish_gate: Callable[[Sequence[str]], Overrule | None] | None = None

    async def create_progress_ledger(
        self, magentic_context: MagenticContext
    ) -> MagenticProgressLedger:
        """Ask the model for the progress ledger (the standard prompt); retry on an
        unparsable ledger or an unknown speaker (an answer cut at its token bound included),
        at most ``progress_ledger_retry_count`` times, each retry naming what was wrong.

        Raises:
            RuntimeError: no usable ledger after the retries (the workflow then resets
                and replans, as with the standard manager).
        """
        names = list(magentic_context.participant_descriptions)
        if not names:
            raise RuntimeError("No participants configured; cannot determine next speaker.")
        team = "\n".join(
            f"- {name}: {desc}" for name, desc in magentic_context.participant_descriptions.items()
        )
        prompt = self.progress_ledger_prompt.format(
            task=magentic_context.task, team=team, names=", ".join(names)
        )
        response_format = progress_ledger_format(self.structured_output, names)
        last_error: Exception | None = None
        for attempt in range(1, max(1, self.progress_ledger_retry_count) + 1):
            # a retry says why the last answer was unusable (and is a new request, never the
            # cached unusable answer again)
            retry = (
                f"\n\n(Attempt {attempt}: the previous answer was unusable: {last_error}. "
                "Answer with the JSON object only.)"
                if last_error is not None
                else ""
            )
            request = Message(role="user", contents=[prompt + retry])
            messages = [*magentic_context.chat_history, request]
            raw = (
                await self._complete_as(messages, response_format)
                if response_format is not None
                else await self._complete(messages)
            )
            try:
                ledger = parse_progress_ledger(raw.text, names)
            except ValueError as exc:
                last_error = exc
                log.warning("progress ledger unusable", attempt=attempt, error=str(exc))
                continue
            gate = self.finish_gate
            if ledger.is_request_satisfied.answer and gate is not None:
                overrule = gate(names)
                if overrule is not None:
                    return overruled_ledger(ledger, overrule)
            return ledger
        raise RuntimeError(
            f"progress ledger unusable after {self.progress_ledger_retry_count} attempt(s): "
            f"{last_error}"
        )

    async def _complete_as(
        self, messages: list[Message], response_format: dict[str, Any]
    ) -> Message:
        """Like the standard ``_complete`` (a fresh session per call), with the chat client's
        ``response_format`` option set.

        Raises:
            RuntimeError: the agent returned no message.
        """
        agent = cast(Agent, self._agent)
        response = await agent.run(
            messages,
            session=agent.create_session(),
            options={"response_format": response_format},
        )
        if not response.messages:
            raise RuntimeError("the manager's model returned no message")
        return response.messages[-1]


class ManagerUsage(AgentMiddleware):
    """Records each manager call (requests, tokens, failures) and its wall time."""

    def __init__(self, tracker: UsageTracker, accounting: RunAccounting) -> None:
        self.tracker = tracker
        self.accounting = accounting

    async def process(
        self, context: AgentContext, call_next: Callable[[], Awaitable[None]]
    ) -> None:
        """Run the call; record what the provider reported (a failed call: one request)."""
        failed = True
        try:
            with self.accounting.stage(MANAGER_ROLE, role=MANAGER_ROLE):
                await call_next()
            failed = False
        finally:
            result = context.result
            details = result.usage_details if isinstance(result, AgentResponse) else None
            details = details or {}
            self.tracker.record(
                MANAGER_ROLE,
                RunUsage(
                    requests=1,
                    input_tokens=int(details.get("input_token_count") or 0),
                    output_tokens=int(details.get("output_token_count") or 0),
                    details={
                        "reasoning_tokens": int(details.get("reasoning_output_token_count") or 0)
                    },
                ),
                failed=failed,
            )


# --- the run --------------------------------------------------------------------------------


@dataclass
class _WorkflowEnd:
    """How the Magentic workflow ended (filled while its events stream)."""

    timed_out: bool = False
    error: BaseException | None = None
    finished: bool = False  # the pump saw the stream end


@dataclass
class _Progress:
    """What the manager did, read from the workflow events."""

    rounds: int = 0
    replans: int = 0
    overruled: int = 0
    satisfied: bool = False
    final_text: str = ""
    speakers: Counter[str] = field(default_factory=Counter)
    last_speaker: str = ""
    executor_failures: list[str] = field(default_factory=list)


ParticipantFactory = Callable[[ResearchRun], Sequence[ResearchParticipant]]


class MagenticOrchestrator:
    """Runs one research question with a Magentic manager to a validated report.

    Args:
        deps: the run's dependencies (settings with the limits: max_rounds (search rounds),
            max_sources, time_budget_seconds...; LLM roles: magentic needs a model; evidence
            store; search; sources; model label).
        chat_client: the manager's agent-framework chat client (from
            :func:`deepcritical.llm.providers.build_chat_client`; tests pass scripted clients).
        max_round_count: manager rounds (progress ledgers) before the workflow is stopped;
            default ``4 * max_rounds + 4``, at most :data:`MAX_MANAGER_ROUNDS`.
        max_stall_count: rounds without progress before the manager resets and replans.
        max_reset_count: resets before the workflow is stopped (agent-framework stops as soon
            as this many resets happened: 2 gives one replanned attempt).
        participants: builds the participants of a run (default
            :func:`~deepcritical.orchestrators.magentic_agents.build_participants`).

    Raises:
        ValueError: ``max_round_count`` outside 1..44, or negative stall/reset counts.
    """

    name = "magentic"

    def __init__(
        self,
        deps: RunDeps,
        *,
        chat_client: SupportsChatGetResponse[Any],
        max_round_count: int | None = None,
        max_stall_count: int = 2,
        max_reset_count: int = 2,
        participants: ParticipantFactory = build_participants,
    ) -> None:
        settings = deps.settings
        rounds = (
            max_round_count
            if max_round_count is not None
            else min(MAX_MANAGER_ROUNDS, 4 * settings.max_rounds + 4)
        )
        if not 1 <= rounds <= MAX_MANAGER_ROUNDS:
            raise ValueError(f"max_round_count must be in 1..{MAX_MANAGER_ROUNDS}, got {rounds}")
        if max_stall_count < 0 or max_reset_count < 0:
            raise ValueError("max_stall_count and max_reset_count must be >= 0")
        self.deps = deps
        self.settings = settings
        self.chat_client = chat_client
        self.max_round_count = rounds
        self.max_stall_count = max_stall_count
        self.max_reset_count = max_reset_count
        self.participants = participants

    # --- public -------------------------------------------------------------------------------

    async def run(
        self,
        question: str,
        context: str | None = None,
        preferences: ReportPreferences | None = None,
    ) -> AsyncGenerator[ResearchEvent, None]:
        """Research ``question`` (checked already:
        :func:`~deepcritical.orchestrators.deps.check_question`); yield events, the last being
        ``done`` (with the result) or ``error``. ``preferences``: the user's report
        preferences (audience, length, focus)."""
        manager_usage = UsageTracker()
        run = ResearchRun(
            self.deps,
            question,
            context,
            preferences,
            orchestrator=self.name,
            usage_trackers=[manager_usage],
        )
        async with aclosing(run.stream(lambda: self._work(run, manager_usage))) as events:
            async for event in events:
                yield event

    async def _work(self, run: ResearchRun, manager_usage: UsageTracker) -> None:
        await run.start(
            max_round_count=self.max_round_count,
            max_stall_count=self.max_stall_count,
            max_reset_count=self.max_reset_count,
        )
        if await run.make_plan() is None:  # both the LLM and the extractive planner failed
            return
        if not await review_plan(run):  # the run waits for the plan's review, or was cancelled
            return
        plan = run.plan  # the reviewed plan, when the user edited it

        # --- the Magentic workflow (fresh per run, its stream closed whatever happens) ------
        participants = list(self.participants(run))
        progress = _Progress()
        workflow = self._build_workflow(run, participants, manager_usage, progress)
        budget = max(self.settings.time_budget_seconds - run.elapsed(), 0.001)
        end = await self._follow(workflow, self._task(run, plan), budget, run, progress)

        # --- the ending: always a validated report ----------------------------------------
        self._conclude(run, end, progress, participants)
        if await self._review_evidence(run) == "stop":  # it waits for the review, or was cancelled
            return
        draft = run.state.draft
        if draft is not None and run.state.draft_store_size != len(run.store):
            run.state.notes.append(
                "evidence was added after ReportAgent's draft; the orchestrator rewrote the "
                "report from the whole store"
            )
            draft = None
        if draft is None:
            draft = await run.write_draft()
        await run.finish(draft, workflow=self._workflow_summary(end, progress))

    async def _review_evidence(self, run: ResearchRun) -> str:
        """The evidence review point after the workflow (``write`` or ``stop``; see
        :func:`~deepcritical.orchestrators.review_step.review_evidence`); a reviewer's
        decisions drop the ReportAgent's draft (the report is written again from the store).
        One more search round is not run by this orchestrator: it says so and writes."""
        verdict = await review_evidence(run, 1)
        if verdict != "stop" and run.settings.review_evidence and run.state.draft is not None:
            run.state.draft = None
        if verdict == "search":
            run.warn("one more search round is run by the iterative orchestrator only")
            verdict = "write"
        return verdict

    # --- workflow -----------------------------------------------------------------------------

    def _build_workflow(
        self,
        run: ResearchRun,
        participants: Sequence[ResearchParticipant],
        usage: UsageTracker,
        progress: _Progress,
    ) -> Workflow:
        manager_agent = Agent(
            client=self.chat_client,
            instructions=MANAGER_INSTRUCTIONS,
            name="ResearchManager",
            description="Coordinates the DeepCritical research team.",
            middleware=[ManagerUsage(usage, run.accounting)],
            default_options={"max_tokens": self.settings.output_token_bound()},
        )
        manager = ResearchManager(
            manager_agent,
            max_stall_count=self.max_stall_count,
            max_reset_count=self.max_reset_count,
            max_round_count=self.max_round_count,
            progress_ledger_retry_count=2,
        )
        manager.structured_output = self.settings.structured_output
        manager.finish_gate = lambda names: self._premature_finish(run, progress, names)
        members: list[SupportsAgentRun] = list(participants)
        return MagenticBuilder(participants=members, manager=manager, name="DeepCritical").build()

    async def _follow(
        self,
        workflow: Workflow,
        task: str,
        budget: float,
        run: ResearchRun,
        progress: _Progress,
    ) -> _WorkflowEnd:
        """Stream the workflow under the time budget, emitting the manager's decisions as
        research events (recorded in ``progress``); the stream is closed on every exit (end,
        timeout, error, cancellation). How it ended."""
        end = _WorkflowEnd()
        try:
            async with asyncio.timeout(budget), workflow.run(task, stream=True) as stream:
                async for event in stream:
                    translated = self._translate(event, progress, run)
                    if translated is not None:
                        run.emit(translated)
                        await run.events.publish()
            end.finished = True
        except TimeoutError:
            end.timed_out = True
        # a participant or the manager raised: the run goes on
        except Exception as exc:  # noqa: BLE001 (see above)
            log.warning("magentic workflow failed", error=describe_error(exc))
            end.error = exc
        return end

    def _premature_finish(
        self, run: ResearchRun, progress: _Progress, names: Sequence[str]
    ) -> Overrule | None:
        """The manager says the request is satisfied: ``None`` when the run may end (the
        report is drafted, or a stop rule closed the search: the orchestrator then writes the
        report; or no participant ``names`` is SearchAgent), else an :class:`Overrule`
        sending SearchAgent after what is still missing (counted in ``progress``, emitted as
        a ``manager`` event). A search that stays open ends at the round limit, so this
        cannot loop for ever."""
        search = SearchParticipant.agent_name
        if search_closed(run) is not None or search not in names:
            return None
        state = run.state
        progress.overruled += 1
        missing = "; ".join(c.description for c in run.plan.unsatisfied()[:3])
        reason = (
            f"the search is still open ({state.rounds} of {self.settings.max_rounds} search "
            "round(s) used, no stop rule has fired)"
        )
        run.emit(
            ResearchEvent(
                type="manager",
                round=state.rounds,
                message=f"Manager: 'the request is satisfied' overruled: {reason} → {search}",
                data=ManagerData(kind="overruled", reason=reason, next_speaker=search),
            )
        )
        return Overrule(
            search,
            f"Search for the evidence still missing: {missing or run.plan.refined_question}",
            reason,
        )

    def _task(self, run: ResearchRun, plan: ResearchPlan) -> str:
        s = self.settings
        checklist = "\n".join(f"- {c.key}: {c.description}" for c in plan.checklist)
        context = f"\nBackground from the user: {run.context[:500]}\n" if run.context else ""
        return (
            f"Research question: {plan.refined_question}\n{context}\n"
            "Produce a scientific report answering it from the biomedical literature. The team "
            "shares one evidence store; ReportAgent writes the report from it, and every "
            "citation is checked against it.\n\n"
            f"Checklist the evidence must cover:\n{checklist}\n\n"
            "Work in rounds: ask SearchAgent for the evidence still missing (describe what is "
            "missing; it writes the queries), then HypothesisAgent, then JudgeAgent. When the "
            "judge finds the evidence sufficient or SearchAgent says the search is closed, ask "
            "ReportAgent to write the report. The request is satisfied only after ReportAgent "
            "has written the report.\n"
            f"Limits: {s.max_rounds} search rounds, {s.max_sources} evidence items, "
            f"{s.time_budget_seconds:g} seconds."
        )

    def _translate(
        self, event: WorkflowEvent[Any], progress: _Progress, run: ResearchRun
    ) -> ResearchEvent | None:
        """A workflow event as a research event (manager decisions), or ``None``; records
        what the manager did in ``progress``."""
        data = event.data
        if event.type == "magentic_orchestrator" and isinstance(data, MagenticOrchestratorEvent):
            kind = data.event_type
            if kind == MagenticOrchestratorEventType.PROGRESS_LEDGER_UPDATED and isinstance(
                data.content, MagenticProgressLedger
            ):
                ledger = data.content
                progress.rounds += 1
                satisfied = bool(ledger.is_request_satisfied.answer)
                speaker = str(ledger.next_speaker.answer)
                instruction = str(ledger.instruction_or_question.answer)
                progress.satisfied = progress.satisfied or satisfied
                if not satisfied:
                    progress.speakers[speaker] += 1
                    progress.last_speaker = speaker
                message = (
                    "Manager: the request is satisfied"
                    if satisfied
                    else f"Manager → {speaker}: {instruction[:200]}"
                )
                return ResearchEvent(
                    type="manager",
                    round=run.state.rounds,
                    message=message,
                    data=ManagerData(
                        kind="progress",
                        manager_round=progress.rounds,
                        satisfied=satisfied,
                        next_speaker=speaker,
                        instruction=instruction,
                        in_loop=bool(ledger.is_in_loop.answer),
                        progress=bool(ledger.is_progress_being_made.answer),
                    ),
                )
            if isinstance(data.content, Message):
                replanned = kind == MagenticOrchestratorEventType.REPLANNED
                progress.replans += int(replanned)
                return ResearchEvent(
                    type="manager",
                    round=run.state.rounds,
                    message="Manager: stalled, replanned" if replanned else "Manager: plan ready",
                    data=ManagerData(
                        kind="replan" if replanned else "plan", plan=data.content.text[:4000]
                    ),
                )
            return None
        if event.type == "output" and event.executor_id == WORKFLOW_ORCHESTRATOR_ID:
            if isinstance(data, AgentResponseUpdate | AgentResponse):
                progress.final_text += data.text
            return None
        if event.type == "executor_failed" and event.details is not None:
            progress.executor_failures.append(
                f"{event.executor_id or 'an executor'}: {event.details.error_type}"
            )
        return None

    # --- ending -------------------------------------------------------------------------------

    def _conclude(
        self,
        run: ResearchRun,
        end: _WorkflowEnd,
        progress: _Progress,
        participants: Sequence[ResearchParticipant],
    ) -> None:
        """Set the stop reason, the notes and the methodology lines saying how the workflow
        ended (a warning event for every abnormal ending)."""
        state = run.state
        how, workflow_reason = self._ending(end, progress)
        closed_by_rule = state.stop_reason
        state.stop_reason = closed_by_rule or workflow_reason
        abnormal = workflow_reason not in {"manager_finished"}
        note = f"Magentic workflow: {how}"
        if abnormal:
            run.warn(note)
        else:
            state.notes.append(note)
        if state.draft is None and not any(
            p.calls for p in participants if p.agent_name == "ReportAgent"
        ):
            state.notes.append(
                "the manager never called ReportAgent: the orchestrator wrote the report from "
                "the evidence store"
            )
        calls = ", ".join(f"{p.agent_name} ×{p.calls}" for p in participants if p.calls)
        state.methodology.append(
            f"The search was coordinated by a Magentic manager ({run.llm_label}): "
            f"{progress.rounds} manager round(s) (limit {self.max_round_count}), "
            f"{progress.replans} replan(s)"
            + (
                f", {progress.overruled} premature 'request satisfied' overruled while the "
                "search was open"
                if progress.overruled
                else ""
            )
            + f"; participants called: {calls or 'none'}. "
            f"The workflow ended: {how}; the report was built and its citations validated by "
            "the orchestrator from the evidence store."
        )

    def _ending(self, end: _WorkflowEnd, progress: _Progress) -> tuple[str, StopReason]:
        if end.timed_out:
            return (
                f"the time budget of {self.settings.time_budget_seconds:g} s ran out after "
                f"{progress.rounds} manager round(s)",
                "time_budget",
            )
        if end.error is not None:
            failures = (
                f" ({'; '.join(progress.executor_failures)})"
                if (progress.executor_failures)
                else ""
            )
            return (
                f"stopped by an error: {describe_error(end.error)}{failures}",
                "error",
            )
        if progress.final_text.startswith(ROUND_LIMIT_TEXT):
            return (
                f"the manager reached its round limit ({self.max_round_count} rounds)",
                "manager_round_limit",
            )
        if progress.final_text.startswith(RESET_LIMIT_TEXT):
            return (
                f"the manager stalled and reached its reset limit ({self.max_reset_count})",
                "manager_stalled",
            )
        if progress.satisfied:
            return (
                f"the manager declared the request satisfied after {progress.rounds} round(s)",
                "manager_finished",
            )
        if progress.final_text:
            return (
                f"the manager named an unknown participant ({progress.last_speaker!r}) after "
                f"{progress.rounds} round(s)",
                "manager_finished",
            )
        return "the workflow ended without a final answer", "manager_finished"

    @staticmethod
    def _workflow_summary(end: _WorkflowEnd, progress: _Progress) -> WorkflowSummary:
        return WorkflowSummary(
            manager_rounds=progress.rounds,
            replans=progress.replans,
            overruled=progress.overruled,
            satisfied=progress.satisfied,
            timed_out=end.timed_out,
            error=None if end.error is None else describe_error(end.error),
            speakers=dict(progress.speakers),
            final_answer=progress.final_text[:2000],
        )
