"""The Magentic participants: SearchAgent, HypothesisAgent, JudgeAgent and ReportAgent.

Each participant is an agent-framework agent (:class:`agent_framework.BaseAgent`) that holds
the run's shared context (:class:`~deepcritical.orchestrators.run.ResearchRun`: question,
plan, evidence store, limits, the role implementations, the search agent) from its
constructor: Magentic participants see only the messages since they last spoke, never the
task. Each does its work through the evidence store and the existing role
implementations (LLM or extractive, with the extractive fallback), emits the run's usual
events, and answers the manager with a short summary (< 500 characters) of what it added and
what is still missing. The manager's instruction is a request, not a search query: the
SearchAgent turns it into queries with the query generator.

``run`` is a plain ``def`` returning a coroutine (``stream=False``) or a
:class:`~agent_framework.ResponseStream` (``stream=True``), as agent-framework expects
.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from typing import Any, ClassVar, Literal, overload

from agent_framework import (
    AgentResponse,
    AgentResponseUpdate,
    AgentRunInputs,
    AgentSession,
    BaseAgent,
    Message,
    ResponseStream,
)

from deepcritical.agents.search import SearchRound
from deepcritical.models import JudgeAssessment, StopReason
from deepcritical.orchestrators.progress import gathering_stop_rule, judged_stop
from deepcritical.orchestrators.run import ResearchRun

__all__ = [
    "MAX_SUMMARY_CHARS",
    "HypothesisParticipant",
    "JudgeParticipant",
    "ReportParticipant",
    "ResearchParticipant",
    "SearchParticipant",
    "build_participants",
    "instruction_of",
    "search_closed",
]

MAX_SUMMARY_CHARS = 499
"""Longest answer a participant gives the manager."""

MAX_REQUEST_CHARS = 500
"""Longest manager request passed on to the query generator."""


def _short(text: str, limit: int = MAX_SUMMARY_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def instruction_of(messages: AgentRunInputs | None) -> str:
    """The manager's instruction: the text of the last user message of ``messages`` (the
    orchestrator sends it last), else of the last message, else ``""``."""
    if messages is None:
        return ""
    if isinstance(messages, str):
        return messages
    if isinstance(messages, Message):
        return messages.text
    items = list(messages) if isinstance(messages, Sequence) else []
    texts: list[tuple[str, str]] = []
    for item in items:
        if isinstance(item, str):
            texts.append(("user", item))
        elif isinstance(item, Message):
            texts.append((str(item.role), item.text))
    for role, text in reversed(texts):
        if role == "user" and text.strip():
            return text
    return texts[-1][1] if texts else ""


def stop_reason_text(reason: StopReason, run: ResearchRun) -> str:
    """Why gathering is closed, in words for the manager."""
    s = run.settings
    return {
        "sufficient": "the judge found the evidence sufficient",
        "all_satisfied": "every checklist item is satisfied",
        "max_sources": f"the evidence limit of {s.max_sources} items is reached",
        "max_rounds": f"all {s.max_rounds} search rounds are used",
        "no_new_evidence": "the last search found nothing new",
        "no_sources": "every source failed",
        "time_budget": "the time budget is spent",
        "insufficient_evidence": (
            f"{run.state.rounds} search round(s) found nothing on-topic for the question"
        ),
    }.get(reason, reason.replace("_", " "))


def search_closed(run: ResearchRun) -> str | None:
    """Why no search may run any more, in words for the manager (the report is drafted, or a
    stop rule fired); ``None`` while the search is open."""
    state = run.state
    if state.draft is not None:
        return "the report has been written"
    if state.stop_reason is not None:
        return stop_reason_text(state.stop_reason, run)
    return None


class ResearchParticipant(BaseAgent):
    """Base of the participants: turns the manager's instruction into :meth:`work` on the
    shared run context and wraps the summary as the agent's answer.

    Attributes:
        research: the run's shared context.
        calls: how many times the manager called this participant.
    """

    agent_name: ClassVar[str] = "Participant"
    agent_description: ClassVar[str] = ""

    def __init__(self, research: ResearchRun) -> None:
        super().__init__(name=self.agent_name, description=self.agent_description)
        self.research = research
        self.calls = 0

    @overload
    def run(
        self,
        messages: AgentRunInputs | None = None,
        *,
        stream: Literal[False] = ...,
        session: AgentSession | None = None,
        function_invocation_kwargs: Mapping[str, Any] | None = None,
        client_kwargs: Mapping[str, Any] | None = None,
    ) -> Awaitable[AgentResponse[Any]]: ...

    @overload
    def run(
        self,
        messages: AgentRunInputs | None = None,
        *,
        stream: Literal[True],
        session: AgentSession | None = None,
        function_invocation_kwargs: Mapping[str, Any] | None = None,
        client_kwargs: Mapping[str, Any] | None = None,
    ) -> ResponseStream[AgentResponseUpdate, AgentResponse[Any]]: ...

    def run(
        self,
        messages: AgentRunInputs | None = None,
        *,
        stream: bool = False,
        session: AgentSession | None = None,
        function_invocation_kwargs: Mapping[str, Any] | None = None,
        client_kwargs: Mapping[str, Any] | None = None,
    ) -> Awaitable[AgentResponse[Any]] | ResponseStream[AgentResponseUpdate, AgentResponse[Any]]:
        """Do this participant's work for the manager's instruction (the last message).

        A plain ``def``: returns a coroutine, or with ``stream=True`` a ResponseStream of one
        update (the summary), finalised into the same :class:`AgentResponse`.
        """
        instruction = instruction_of(messages)
        if not stream:
            return self._respond(instruction)

        async def updates() -> AsyncIterator[AgentResponseUpdate]:
            response = await self._respond(instruction)
            for message in response.messages:
                yield AgentResponseUpdate(
                    contents=list(message.contents),
                    role="assistant",
                    author_name=self.name,
                    message_id=message.message_id,
                )

        return ResponseStream(updates(), finalizer=AgentResponse.from_updates)

    async def _respond(self, instruction: str) -> AgentResponse[Any]:
        self.calls += 1
        summary = _short(await self.work(instruction))
        return AgentResponse(
            messages=[Message(role="assistant", contents=[summary], author_name=self.name)]
        )

    async def work(self, instruction: str) -> str:
        """Do the work for ``instruction``; the summary for the manager."""
        raise NotImplementedError

    def _missing(self) -> str:
        plan = self.research.plan
        unsatisfied = plan.unsatisfied()
        if not unsatisfied:
            return "Every checklist item has evidence."
        return "Still missing: " + "; ".join(
            f"{c.description} ({c.status.value})" for c in unsatisfied[:3]
        )


class SearchParticipant(ResearchParticipant):
    """Searches every source for what the manager asks for (one search round per call)."""

    agent_name = "SearchAgent"
    agent_description = (
        "Searches the literature (all configured sources) and adds what it finds to the shared "
        "evidence store. Tell it in words what evidence is still missing; it writes the search "
        "queries itself. It reports what it added and which checklist items still lack "
        "evidence, and says when the search is closed."
    )

    def _request(self, instruction: str) -> JudgeAssessment:
        """The last assessment, carrying the manager's request to the query generator (its
        prompt shows the judge's reasoning)."""
        state = self.research.state
        request = _short(instruction, MAX_REQUEST_CHARS)
        last = state.assessments[-1] if state.assessments else None
        reasoning = f"Request from the research manager: {request}" if request else ""
        if last is None:
            return JudgeAssessment(reasoning=reasoning)
        joined = " | ".join(t for t in (last.reasoning, reasoning) if t)
        return last.model_copy(update={"reasoning": joined})

    async def work(self, instruction: str) -> str:
        run, state = self.research, self.research.state
        closed = search_closed(run)
        if closed is not None:
            return (
                f"Search is closed: {closed}. The store holds {len(run.store)} items. "
                "Ask ReportAgent to write the report."
            )
        round_no = state.rounds + 1
        queries = await run.write_queries(round_no, self._request(instruction))
        if not queries:
            state.stop_reason = "no_new_evidence"
            return (
                "No new search query could be written for this request (all were tried). "
                f"The store holds {len(run.store)} items. Search is closed; ask ReportAgent "
                "to write the report."
            )
        await run.begin_round(round_no, queries)
        result = await run.run_search(round_no, queries)
        stop = self._stop_rule(result, round_no)
        if stop is not None and state.stop_reason is None:
            state.stop_reason = stop
        return self._summary(round_no, queries, result)

    def _stop_rule(self, result: SearchRound, round_no: int) -> StopReason | None:
        run = self.research
        if len(run.store) == 0 and len(result.failures) == len(run.source_names):
            return "no_sources"
        return gathering_stop_rule(
            sufficient=False,
            on_topic=len(run.on_topic_ids()),
            empty_rounds=run.empty_round_limit,
            store_size=len(run.store),
            max_sources=run.settings.max_sources,
            round_no=round_no,
            added=len(result.added_ids),
            max_rounds=run.settings.max_rounds,
        )

    def _summary(self, round_no: int, queries: Sequence[str], result: SearchRound) -> str:
        """What the round did, the collection check of the search agent's source tools
        (``check_completion``: when its model screened the round), what is missing, and what
        comes next; at most :data:`MAX_SUMMARY_CHARS` characters, the last part never cut."""
        run, state = self.research, self.research.state
        text = (
            f"Round {round_no}: {len(queries)} queries ({'; '.join(queries)[:120]}): "
            f"{len(result.added_ids)} new items, {len(run.on_topic_ids())} on-topic of "
            f"{len(run.store)} in store, checklist coverage {run.plan.coverage():.0%}."
        )
        if result.failures:
            text += " Unavailable: " + ", ".join(result.failures) + "."
        if state.collection_note:
            text += f" Collection check: {state.collection_note}"
        else:
            text += " " + self._missing()
        if state.stop_reason is not None:
            tail = (
                f" Search is now closed: {stop_reason_text(state.stop_reason, run)}; "
                "ask ReportAgent to write the report."
            )
        else:
            tail = " Next: HypothesisAgent and JudgeAgent can assess the new evidence."
        return _short(text, MAX_SUMMARY_CHARS - len(tail)) + tail


class HypothesisParticipant(ResearchParticipant):
    """Forms or revises mechanistic hypotheses from a diverse slice of the store."""

    agent_name = "HypothesisAgent"
    agent_description = (
        "Forms and revises mechanistic hypotheses (drug -> target -> pathway -> effect) from "
        "the evidence store, each with supporting and contradicting evidence. Call it after "
        "SearchAgent has added evidence."
    )

    async def work(self, instruction: str) -> str:
        run, state = self.research, self.research.state
        if not run.on_topic_ids():
            return "Nothing on-topic in the evidence store to hypothesise from. Ask SearchAgent."
        await run.hypothesise(state.rounds, run.evidence_slice())
        if not state.hypotheses:
            return "No hypothesis could be formed from the evidence. " + self._missing()
        parts = [
            f"{h.id}: {_short(h.statement, 90)} (confidence {h.confidence:.2f}, "
            f"{len(h.supporting_evidence_ids)} supporting, "
            f"{len(h.contradicting_evidence_ids)} contradicting)"
            for h in state.hypotheses[:3]
        ]
        return f"{len(state.hypotheses)} hypotheses. " + "; ".join(parts) + ". " + self._missing()


class JudgeParticipant(ResearchParticipant):
    """Reflects on the checklist, then assesses the evidence (the judge sees the statuses the
    reflection wrote); the judge's ``sufficient`` verdict closes the search, or every
    checklist item satisfied when the judge failed (rules in code,
    :func:`~deepcritical.orchestrators.progress.gathering_stop_rule`); the reflection's
    follow-up searches go to the next search round."""

    agent_name = "JudgeAgent"
    agent_description = (
        "Judges whether the collected evidence suffices to answer the question (scores, "
        "coverage, what is missing). When it does, the search is closed by a rule in code. "
        "Call it after new evidence or hypotheses."
    )

    async def work(self, instruction: str) -> str:
        run, state = self.research, self.research.state
        if not run.on_topic_ids():
            return "Nothing on-topic in the evidence store to judge. Ask SearchAgent first."
        reflection = await run.reflect(state.rounds, run.evidence_slice())
        assessment = await run.judge(state.rounds, run.evidence_slice())
        if state.stop_reason is None:
            state.stop_reason = judged_stop(
                sufficient=None if assessment is None else assessment.sufficient,
                all_satisfied=reflection is not None and reflection.all_satisfied,
            )
        if assessment is None:
            return "The judge failed (see the run's warnings). " + self._missing()
        verdict = "sufficient" if assessment.sufficient else "not sufficient"
        text = (
            f"Evidence {verdict}"
            + (f" ({assessment.reason})" if assessment.reason else "")
            + f": mechanism {assessment.mechanism_score}/10, clinical "
            f"{assessment.clinical_evidence_score}/10, coverage {assessment.coverage:.0%}. "
            + self._missing()
        )
        suggested = [*state.follow_ups, *assessment.next_queries]
        if suggested and state.stop_reason is None:
            text += " Suggested searches: " + "; ".join(suggested[:3]) + "."
        if state.stop_reason is not None:
            text += " The search is closed; ask ReportAgent to write the report."
        else:
            text += " Ask SearchAgent for what is missing."
        return text


class ReportParticipant(ResearchParticipant):
    """Drafts the report from the store; the orchestrator validates it when the run ends."""

    agent_name = "ReportAgent"
    agent_description = (
        "Writes the final report from the evidence store, citing only collected evidence "
        "(every citation is validated afterwards). Call it once the judge finds the evidence "
        "sufficient or the search is closed; once it has written the report, the request is "
        "satisfied."
    )

    async def work(self, instruction: str) -> str:
        run, state = self.research, self.research.state
        if not run.on_topic_ids() and state.stop_reason is None:
            return (
                "The evidence store holds nothing on-topic: ask SearchAgent for evidence "
                "before the report."
            )
        draft = await run.write_draft()
        if draft is None:
            return (
                "The report could not be drafted (see the run's warnings); the orchestrator "
                "will write it from the evidence store when the run ends. The request is "
                "complete."
            )
        state.draft = draft
        state.draft_store_size = len(run.store)
        cited = len(draft.cited_ids())
        return (
            f"Report drafted: '{_short(draft.title, 80)}', {len(draft.findings)} finding "
            f"sections citing {cited} of {len(run.store)} evidence items. Every citation is "
            "checked against the store when the run ends. The request is complete."
        )


def build_participants(research: ResearchRun) -> list[ResearchParticipant]:
    """The four participants of one run, sharing ``research``."""
    return [
        SearchParticipant(research),
        HypothesisParticipant(research),
        JudgeParticipant(research),
        ReportParticipant(research),
    ]
