"""The programmatic entry point: ``async for event in research(question, settings): ...``,
``await clarify(question, settings)``, the clarification a question needs before planning,
``await ask(run_id, question, settings)``, a follow-up question on a finished run, and
``await revise(run_id, instruction, settings)``, a new version of its report;
``research(..., review_plan=True, review_evidence=True)`` stops for the researcher's reviews,
which ``approve_plan(run_id, plan)`` and ``approve_evidence(run_id, decisions)`` decide
(then continue the run) and ``cancel_review(run_id)`` cancels.
Living reviews: ``await watch_run(run_id, settings, every="7d")`` (or ``watch(question,
...)``, which researches first) and ``await update_watch(watch_id, settings)``.

Opens the run's record, has its parts assembled
(:mod:`deepcritical.orchestrators.assembly`: models, HTTP client, sources, evidence store,
agents), runs the orchestrator, streams its events and closes what was opened, also when the
consumer stops early or the task is cancelled.

Every run is recorded in the run database unless ``Settings.persist_runs`` is false
(:mod:`deepcritical.state`): the ``started`` event's ``data["run_id"]`` names it, it is
checkpointed after every event, and :func:`resume` continues an interrupted run.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, aclosing
from typing import TYPE_CHECKING, Any, TypeVar, cast

from deepcritical.config import Settings
from deepcritical.events import ResearchEvent
from deepcritical.evidence.embeddings import Embedder
from deepcritical.evidence.store import EvidenceStore
from deepcritical.llm.instrumentation import instrument_frameworks
from deepcritical.llm.llm_errors import describe_error
from deepcritical.llm.probe import resolve_endpoint
from deepcritical.llm.providers import build_model
from deepcritical.models import (
    Clarification,
    EvidenceDecision,
    FollowUp,
    ReportPreferences,
    ReportVersion,
    ResearchPlan,
    RunReview,
    SearchFilters,
    Watch,
    WatchUpdate,
)
from deepcritical.orchestrators.agent_set import build_clarifier
from deepcritical.orchestrators.assembly import GivenParts, build_run_deps, resolve_models
from deepcritical.orchestrators.deps import check_context, check_question, requested_filters
from deepcritical.orchestrators.iterative import IterativeOrchestrator
from deepcritical.report.finish import GroundingOptions
from deepcritical.sources.base import SearchSource
from deepcritical.sources.fulltext import FullTextReader
from deepcritical.state.errors import run_not_found, run_not_resumable, run_without_report
from deepcritical.state.syllabus import Syllabus
from deepcritical.telemetry.run_trace import RunObserver
from deepcritical.telemetry.tracing import configure_tracing
from deepcritical.writing.follow_up import answer_follow_up
from deepcritical.writing.revision import revise_report
from deepcritical.writing.revision_instructions import check_instruction, parse_instruction

if TYPE_CHECKING:
    from agent_framework import SupportsChatGetResponse
    from pydantic_ai.models import Model

    from deepcritical.orchestrators.magentic import MagenticOrchestrator
    from deepcritical.state.lifecycle import PersistentRun
    from deepcritical.state.run_store import RunStore

T = TypeVar("T")


async def research(
    question: str,
    settings: Settings | None = None,
    *,
    context: str | None = None,
    preferences: ReportPreferences | None = None,
    filters: SearchFilters | None = None,
    model: Model | None = None,
    sources: Sequence[SearchSource] | None = None,
    full_text: FullTextReader | None = None,
    embedder: Embedder | None = None,
    chat_client: SupportsChatGetResponse[Any] | None = None,
    syllabus: Syllabus | None = None,
    owner: str | None = None,
    review_plan: bool = False,
    review_evidence: bool = False,
) -> AsyncIterator[ResearchEvent]:
    """Research ``question`` and stream :class:`ResearchEvent`; the last is ``done`` (its
    ``result`` holds the report and the evidence) or ``error``, or, when a review is asked
    for, ``plan_ready`` / ``evidence_ready`` (the run waits: :func:`approve_plan`,
    :func:`approve_evidence`).

    Args:
        question: the research question (at most ``settings.max_question_chars`` characters).
        settings: run settings; defaults to :class:`Settings` read from the environment.
        context: optional background from the user, passed to the planner.
        preferences: the user's report preferences (audience, length, focus), given to the
            report writer; defaults: scientists, standard length, no particular focus.
        filters: the plan's search filters (:class:`~deepcritical.models.SearchFilters`),
            applied by each source's API where it can, the rest screened out; ``None``:
            ``settings.search_filters``.
        model: a pydantic-ai model to use instead of the one ``settings.llm`` names (tests
            pass scripted models here).
        sources: search sources to use instead of those ``settings.sources`` names.
        full_text: the full-text fetcher to use instead of the one built from ``settings``
            (:func:`~deepcritical.sources.factory.build_full_text`); with ``sources`` given
            and no ``full_text``, the run reads no full text.
        embedder: embedder to use instead of all-MiniLM-L6-v2.
        chat_client: the Magentic manager's agent-framework chat client, instead of the one
            :func:`~deepcritical.llm.providers.build_chat_client` makes from ``settings.llm`` (tests
            pass scripted clients here); used when ``settings.orchestrator`` is ``magentic``.
        syllabus: a fixed syllabus whose questions replace the planner's checklist.
        owner: the user the recorded run belongs to (the web app passes its signed-in user,
            ``user:alice`` or ``hf:alice``); ``None``, the default, is the local user, whose
            runs the CLI's ``deepcritical runs`` commands show.
        review_plan: stop after planning with ``plan_ready`` until the user approves the
            plan (``Settings.review_plan`` too).
        review_evidence: stop after gathering with ``evidence_ready`` until the user decides
            on the screened evidence (``Settings.review_evidence`` too).

    Recording (``settings.persist_runs``, default on): the run is stored in the run database
    (``settings.database_url`` or ``<data_dir>/deepcritical.db``) and checkpointed after every
    event; ``data["run_id"]`` of the ``started`` event is its id. Sources and models built
    from ``settings`` are wrapped in the call cache (sources and models passed in are not).

    Raises:
        QuestionError: empty or too long question (before any event).
        ModelSpecError: a bad ``settings.llm`` or a missing API key, or the ``magentic``
            orchestrator without a model (before any event).
        deepcritical.corpus.index.CorpusNotFoundError: ``local`` source with no corpus.
        sqlalchemy.exc.SQLAlchemyError: the run database cannot be opened (before any event).
        pydantic.ValidationError: invalid ``settings.search_filters`` (before any event).
        ValueError: a review asked for on a run that is not recorded (``persist_runs`` off).
    """
    async with aclosing(
        _research(
            question,
            _run_settings(settings or Settings(), filters, review_plan, review_evidence),
            context=context,
            preferences=preferences,
            given=GivenParts(model, sources, full_text, embedder, chat_client),
            syllabus=syllabus,
            owner=owner,
        )
    ) as events:
        async for event in events:
            yield event


async def clarify(
    question: str, settings: Settings | None = None, *, model: Model | None = None
) -> Clarification | None:
    """The clarification ``question`` needs before planning, or ``None`` when it already
    states what its type needs (one message of at most three questions, each with 2-4
    suggested answers: :class:`~deepcritical.models.Clarification`).

    Without a model (``settings.llm`` ``none``) the offline rules decide
    (:func:`~deepcritical.text.clarify_rules.clarify_by_rules`: the question's type and PICO
    elements); with one the model proposes it, validated, and the rules decide when its
    answer stays invalid or the call fails. Nothing is recorded and nothing is searched.

    The user's answer goes to :func:`research` as its ``context``:
    ``context=clarified_context(context, clarification.answer({"population": "adults over
    65"}))`` (:func:`~deepcritical.models.clarified_context`); the plan records it
    (``ResearchPlan.clarified``) and the methodology says "The question was clarified by the
    user before planning: population = adults over 65". Skipping is calling
    :func:`research` with the context unchanged.

    Args:
        question: the research question (at most ``settings.max_question_chars`` characters).
        settings: the model and its limits; defaults to :class:`Settings` from the
            environment.
        model: a pydantic-ai model to use instead of the one ``settings.llm`` names.

    Raises:
        QuestionError: empty or too long question.
        ModelSpecError: a bad ``settings.llm`` or a missing API key.
    """
    base = settings or Settings()
    question = check_question(question, base.max_question_chars)
    if model is not None:
        return await build_clarifier(base, model).clarify(question)
    base = await resolve_endpoint(base)
    built = build_model(base)
    if built is None:
        return await build_clarifier(base, None).clarify(question)
    async with built:  # its provider's HTTP client is ours to close
        return await build_clarifier(base, built).clarify(question)


def _run_settings(
    settings: Settings, filters: SearchFilters | None, plan: bool, evidence: bool
) -> Settings:
    """``settings`` with ``filters`` as its search filters (when given) and the reviews
    asked for switched on (kept with the run, so a resumed run stops at them too).

    Raises:
        ValueError: a review asked for while ``persist_runs`` is off.
    """
    if filters is not None:
        settings = settings.model_copy(update={"search_filters": filters.key()})
    if not (plan or evidence):
        return settings
    if not settings.persist_runs:
        raise ValueError("a review needs a recorded run: persist_runs is off")
    return settings.model_copy(
        update={
            "review_plan": settings.review_plan or plan,
            "review_evidence": settings.review_evidence or evidence,
        }
    )


async def resume(
    run_id: str,
    settings: Settings | None = None,
    *,
    model: Model | None = None,
    sources: Sequence[SearchSource] | None = None,
    full_text: FullTextReader | None = None,
    embedder: Embedder | None = None,
    chat_client: SupportsChatGetResponse[Any] | None = None,
    owner: str | None = None,
    time_budget_seconds: float | None = None,
) -> AsyncIterator[ResearchEvent]:
    """Continue the stored run ``run_id`` of ``owner`` (``None``, the default: the local user)
    to its report, streaming events as :func:`research`.

    The stored question, context, report preferences, syllabus and settings are used again;
    API keys and the database location come from ``settings`` (default: the environment) at
    resume time. The completed steps replay from the call cache with no search (or cached
    LLM) call, the run continues live where it stopped, sources are saved idempotently (none
    lost, none duplicated) and the same run row is updated (``in_progress`` again, then
    ``completed``). Full texts fetched before come from the call cache too. ``model``,
    ``sources``, ``full_text``, ``embedder`` and ``chat_client`` replace what ``settings``
    builds, as in :func:`research`.

    The time budget starts afresh at the resume: the stored ``time_budget_seconds``, or
    ``time_budget_seconds`` when given (seconds, > 0). A run that stopped on its time budget
    (status ``time_budget``, with a report) can be resumed to search on with a new budget.

    Only one process continues a run (the resume lease,
    :func:`deepcritical.state.lease.claim_run`): a run whose heartbeat is younger than 60 s
    is refused; an older one (its process died) is taken over.

    Raises:
        RunNotFoundError: no run with this id among ``owner``'s runs (a unique prefix of 6+
            characters is accepted; another owner's run is not found).
        RunNotResumableError: the run already completed (its report is stored).
        RunInProgressError: the run is still running in another process (on the first
            iteration, before any event).
        pydantic.ValidationError: ``time_budget_seconds`` is not > 0.
    """
    from deepcritical.state.run_store import RunStore

    base = settings or Settings()
    store = await asyncio.to_thread(RunStore.open, base)
    try:
        record = await asyncio.to_thread(lambda: store.get_run(run_id, owner=owner))
    finally:
        store.close()
    if record is None:
        raise run_not_found(run_id)
    if not record.resumable:
        raise run_not_resumable(record.id, record.status)
    stored = {k: v for k, v in record.settings.items() if k in Settings.model_fields}
    stored.update(data_dir=base.data_dir, database_url=base.database_url, persist_runs=True)
    if time_budget_seconds is not None:
        stored["time_budget_seconds"] = time_budget_seconds
    run_settings = Settings(**stored)
    syllabus = (
        Syllabus.model_validate(record.syllabus)
        if record.syllabus_fixed and record.syllabus
        else None
    )
    async with aclosing(
        _research(
            record.question,
            run_settings,
            context=record.context,
            preferences=(
                ReportPreferences.model_validate(record.preferences) if record.preferences else None
            ),
            given=GivenParts(model, sources, full_text, embedder, chat_client),
            syllabus=syllabus,
            run_id=record.id,
            owner=owner,
            earlier_traces=_earlier_traces(record.metrics),
        )
    ) as events:
        async for event in events:
            yield event


async def ask(
    run_id: str,
    question: str,
    settings: Settings | None = None,
    *,
    owner: str | None = None,
    embedder: Embedder | None = None,
) -> FollowUp:
    """Answer a follow-up ``question`` about ``owner``'s finished run ``run_id`` from that
    run's evidence only, and keep it with the run.

    The answer is extractive (no model, no search): at most three of the run's on-topic
    sources quoted verbatim with their ``[E3]`` markers, through the report's citation
    validation and grounding (:func:`deepcritical.writing.follow_up.answer_follow_up`); when
    nothing fits, ``answered`` is false, the answer says "The evidence of this run does not
    answer this question." and ``suggestion`` gives the command that starts a new run seeded
    with the question. Every follow-up is stored with the run (``RunStore.follow_ups``,
    ``deepcritical runs show``).

    Args:
        run_id: the run's id (a unique prefix of 6+ characters is accepted).
        question: the follow-up question (at most ``settings.max_question_chars`` characters).
        settings: where the run database is (``database_url`` / ``data_dir``), the embedding
            model and the grounding threshold; defaults to :class:`Settings` from the
            environment.
        owner: the user the run belongs to (``None``, the default: the local user).
        embedder: the embedder to use instead of the run embedder of
            ``settings.embedding_model`` (loaded in a worker thread).

    Raises (each before anything is stored):
        QuestionError: empty or too long question.
        RunNotFoundError: no run with this id among ``owner``'s runs.
        RunWithoutReportError: the run failed, was cancelled or has not written its report.
        sqlalchemy.exc.SQLAlchemyError: the run database cannot be opened.
    """
    from deepcritical.state.run_store import RunStore

    base = settings or Settings()
    question = check_question(question, base.max_question_chars)
    store = await asyncio.to_thread(RunStore.open, base)
    try:
        record = await asyncio.to_thread(lambda: store.require_run(run_id, owner=owner))
        result = await asyncio.to_thread(lambda: store.result(record.id, owner=owner))
        if result is None:
            raise run_without_report(record.id, record.status, record.error)
        if embedder is None:
            from deepcritical.evidence.onnx_embeddings import run_embedder

            embedder = await asyncio.to_thread(
                run_embedder, base.embedding_model, base.embedding_backend
            )
        follow_up = await asyncio.to_thread(
            answer_follow_up, question, result, embedder, threshold=base.grounding_threshold
        )
        await asyncio.to_thread(lambda: store.add_follow_up(record.id, follow_up, owner=owner))
    finally:
        store.close()
    return follow_up


async def revise(
    run_id: str,
    instruction: str,
    settings: Settings | None = None,
    *,
    owner: str | None = None,
    embedder: Embedder | None = None,
) -> ReportVersion:
    """A new version of the report of ``owner``'s finished run ``run_id``, written at the
    user's ``instruction`` from that run's evidence only (no new search), and kept with the
    run.

    The instruction is read by rules, without a model
    (:func:`deepcritical.writing.revision_instructions.parse_instruction`): "shorter" /
    "longer", "for patients" / "for clinicians", "focus on X" / "add a section on X", "only
    randomised trials" / "only systematic reviews" / "only clinical trials" / "only
    observational studies", several at once. It changes the newest version's report
    preferences and design filter; the extractive writer writes the new version, which goes
    through the report's checks (citation validation, grounding when ``settings.grounding``)
    (:func:`deepcritical.writing.revision.revise_report`). Version 1 is the run's own report;
    every version is kept (``RunStore.report_versions``, ``RunStore.report_version``,
    ``deepcritical runs versions``).

    Args:
        run_id: the run's id (a unique prefix of 6+ characters is accepted).
        instruction: what to change (at most 300 characters).
        settings: where the run database is (``database_url`` / ``data_dir``), the embedding
            model, the grounding settings and ``report_max_evidence``; defaults to
            :class:`Settings` from the environment.
        owner: the user the run belongs to (``None``, the default: the local user).
        embedder: the embedder to use instead of the run embedder of
            ``settings.embedding_model`` (loaded in a worker thread).

    Returns:
        The new :class:`~deepcritical.models.ReportVersion` (``version`` 2, 3, ...).

    Raises (each before anything is stored):
        RevisionError: the instruction is empty, too long or not understood (the message
            lists what works), or no on-topic source of the designs asked for remains.
        RunNotFoundError: no run with this id among ``owner``'s runs.
        RunWithoutReportError: the run failed, was cancelled or has not written its report.
        StateError: another revision of the run was kept meanwhile.
        sqlalchemy.exc.SQLAlchemyError: the run database cannot be opened.
    """
    from deepcritical.state.run_store import RunStore

    base = settings or Settings()
    instruction = check_instruction(instruction)
    store = await asyncio.to_thread(RunStore.open, base)
    try:
        record = await asyncio.to_thread(lambda: store.require_run(run_id, owner=owner))
        previous = await asyncio.to_thread(lambda: store.report_version(record.id, owner=owner))
        if previous is None:
            raise run_without_report(record.id, record.status, record.error, action="revise")
        result = await asyncio.to_thread(lambda: store.result(record.id, owner=owner))
        if result is None:  # the run's report went away meanwhile
            raise run_without_report(record.id, record.status, record.error, action="revise")
        request = parse_instruction(instruction, llm=result.report.metadata.llm)
        if embedder is None:
            from deepcritical.evidence.onnx_embeddings import run_embedder

            embedder = await asyncio.to_thread(
                run_embedder, base.embedding_model, base.embedding_backend
            )
        version = await revise_report(
            result,
            previous,
            request,
            instruction,
            embedder,
            GroundingOptions(enabled=base.grounding, threshold=base.grounding_threshold),
            max_evidence=base.report_max_evidence,
        )
        await asyncio.to_thread(lambda: store.add_report_version(record.id, version, owner=owner))
    finally:
        store.close()
    return version


async def approve_plan(
    run_id: str,
    plan: ResearchPlan | Mapping[str, Any] | None = None,
    settings: Settings | None = None,
    *,
    owner: str | None = None,
    model: Model | None = None,
    sources: Sequence[SearchSource] | None = None,
    embedder: Embedder | None = None,
) -> AsyncIterator[ResearchEvent]:
    """Approve the plan ``owner``'s run ``run_id`` waits with (its ``plan_ready`` event),
    possibly edited, then continue the run in this process, streaming its events as
    :func:`resume` (the same run id; planning replays, the search runs the reviewed plan).

    Args:
        run_id: the run's id (a unique prefix of 6+ characters is accepted).
        plan: the user's edit of the plan (a :class:`~deepcritical.models.ResearchPlan` or
            its JSON: refined question, checklist, queries, MeSH terms, scope, ``sources``
            a subset of the run's); ``None``: the plan as proposed.
        settings: where the run database is, API keys; default: the environment.
        owner: the user the run belongs to (``None``: the local user).
        model, sources, embedder: as for :func:`resume`.

    Raises (on the first iteration, before any event; nothing is stored):
        RunNotFoundError: no such run among ``owner``'s runs.
        RunNotAwaitingReviewError: the run does not wait for a plan review (running,
            finished, failed, cancelled, waiting for its evidence review, decided already).
        InvalidPlanError: no checklist item, an unknown source, an empty query...
    """
    await record_plan_review(run_id, plan, settings, owner=owner)
    async with aclosing(
        _continue(run_id, settings, owner, GivenParts(model, sources, None, embedder))
    ) as events:
        async for event in events:
            yield event


async def approve_evidence(
    run_id: str,
    decisions: Sequence[EvidenceDecision | Mapping[str, Any]] = (),
    settings: Settings | None = None,
    *,
    more_search: bool = False,
    owner: str | None = None,
    model: Model | None = None,
    sources: Sequence[SearchSource] | None = None,
    embedder: Embedder | None = None,
) -> AsyncIterator[ResearchEvent]:
    """Decide on the screened evidence ``owner``'s run ``run_id`` waits with (its
    ``evidence_ready`` event), then continue the run in this process as :func:`resume`:
    ``decisions`` exclude included records (each with a reason) or include records screening
    excluded; ``more_search`` runs one more search round, after which the run waits for an
    evidence review again. An excluded record is never cited; the report's flow of records
    counts the reviewer's decisions apart and its methodology states them.

    Raises (on the first iteration, before any event; nothing is stored):
        RunNotFoundError: no such run among ``owner``'s runs.
        RunNotAwaitingReviewError: the run does not wait for an evidence review.
        UnknownRecordError: a decision names a record the review did not show.
        InvalidReviewError: an exclusion without a reason, a record decided twice, or a
            decision that changes nothing.
    """
    await record_evidence_review(run_id, decisions, settings, more_search=more_search, owner=owner)
    async with aclosing(
        _continue(run_id, settings, owner, GivenParts(model, sources, None, embedder))
    ) as events:
        async for event in events:
            yield event


async def record_plan_review(
    run_id: str,
    plan: ResearchPlan | Mapping[str, Any] | None,
    settings: Settings | None = None,
    *,
    owner: str | None = None,
) -> RunReview:
    """Store the approval of the plan ``owner``'s run ``run_id`` waits with (``plan``: the
    user's edit; ``None``: as proposed) without continuing the run: for a job, whose worker
    continues it once woken (``deepcritical.jobs.wake_review``), or a caller that resumes it
    later. The stored review, with what the edit changed. Raises as :func:`approve_plan`."""
    from deepcritical.state.reviews import decide_plan

    return await _on_store(settings, lambda store: decide_plan(store, run_id, plan, owner=owner))


async def record_evidence_review(
    run_id: str,
    decisions: Sequence[EvidenceDecision | Mapping[str, Any]],
    settings: Settings | None = None,
    *,
    more_search: bool = False,
    owner: str | None = None,
) -> RunReview:
    """Store the decisions on the evidence ``owner``'s run ``run_id`` waits with, without
    continuing the run (see :func:`record_plan_review`). Raises as
    :func:`approve_evidence`."""
    from deepcritical.state.reviews import decide_evidence

    return await _on_store(
        settings,
        lambda store: decide_evidence(
            store, run_id, decisions, more_search=more_search, owner=owner
        ),
    )


async def cancel_review(
    run_id: str, settings: Settings | None = None, *, owner: str | None = None
) -> RunReview:
    """Cancel ``owner``'s run ``run_id`` at the review it waits for: the review and the run
    are stored ``cancelled`` (a last ``error`` event in its log says so). The review.

    Raises (nothing stored):
        RunNotFoundError: no such run among ``owner``'s runs.
        RunNotAwaitingReviewError: the run waits for no review.
    """
    from deepcritical.state.reviews import cancel_review as cancel

    return await _on_store(settings, lambda store: cancel(store, run_id, owner=owner))


async def run_reviews(
    run_id: str, settings: Settings | None = None, *, owner: str | None = None
) -> list[RunReview]:
    """The reviews of ``owner``'s run ``run_id``, oldest first (the last one ``waiting``
    when the run waits for it).

    Raises:
        RunNotFoundError: no such run among ``owner``'s runs.
    """
    from deepcritical.state.reviews import run_reviews as reviews

    return await _on_store(
        settings, lambda store: reviews(store, store.require_run(run_id, owner=owner).id)
    )


async def _on_store(settings: Settings | None, work: Callable[[RunStore], T]) -> T:
    """``work(store)`` on the run database of ``settings``, in a worker thread."""
    from deepcritical.state.run_store import RunStore

    store = await asyncio.to_thread(RunStore.open, settings or Settings())
    try:
        return await asyncio.to_thread(work, store)
    finally:
        store.close()


async def _continue(
    run_id: str,
    settings: Settings | None,
    owner: str | None,
    given: GivenParts,
) -> AsyncGenerator[ResearchEvent, None]:
    """The run continued after its review was decided (:func:`resume`)."""
    parts: dict[str, Any] = {
        "model": given.model,
        "sources": given.sources,
        "embedder": given.embedder,
    }  # only the parts given, so a caller's defaults (tests' partials) stay
    continued = resume(run_id, settings, owner=owner, **{k: v for k, v in parts.items() if v})
    async with aclosing(cast("AsyncGenerator[ResearchEvent, None]", continued)) as events:
        async for event in events:
            yield event


async def _research(
    question: str,
    settings: Settings,
    *,
    context: str | None,
    preferences: ReportPreferences | None = None,
    given: GivenParts,
    syllabus: Syllabus | None,
    run_id: str | None = None,
    owner: str | None = None,
    earlier_traces: Sequence[dict[str, str]] = (),
) -> AsyncGenerator[ResearchEvent, None]:
    question = check_question(question, settings.max_question_chars)
    context = check_context(context)
    requested_filters(settings)  # bad filters fail here, before any event
    models = await resolve_models(settings, given)
    configure_tracing()
    instrument_frameworks()
    observer = RunObserver(models.settings.orchestrator, question=question, earlier=earlier_traces)
    async with AsyncExitStack() as stack:
        stack.callback(observer.end)
        persisted: PersistentRun | None = None
        if models.settings.persist_runs:
            from deepcritical.state.lifecycle import PersistentRun

            persisted = await PersistentRun.open(
                models.settings,
                question,
                context,
                syllabus,
                run_id,
                preferences=preferences.model_dump(mode="json") if preferences else None,
                owner=owner,
            )
            stack.push_async_callback(persisted.aclose)
            persisted.trace = observer.trace_record()
            observer.set_run_id(persisted.run_id)
        deps, manager = await build_run_deps(
            models, given, stack, syllabus=syllabus, persisted=persisted
        )
        deps = dataclasses.replace(deps, trace_parent=observer.span)
        orchestrator: IterativeOrchestrator | MagenticOrchestrator
        if manager is not None:
            from deepcritical.orchestrators.magentic import MagenticOrchestrator

            orchestrator = MagenticOrchestrator(deps, chat_client=manager)
        else:
            orchestrator = IterativeOrchestrator(deps)
        async with aclosing(
            _recorded(
                orchestrator.run(question, context, preferences), deps.store, persisted, observer
            )
        ) as events:
            async for event in events:
                yield event


async def _recorded(
    events: AsyncGenerator[ResearchEvent, None],
    store: EvidenceStore,
    persisted: PersistentRun | None,
    observer: RunObserver,
) -> AsyncGenerator[ResearchEvent, None]:
    """``events`` passed on, each recorded (checkpointed when ``persisted``, whose evidence
    is in ``store``; its outcome seen by ``observer``), and how the run ended when it ends
    without a report."""
    if persisted is not None:
        await persisted.attach(store)
    try:
        async with aclosing(events) as stream:
            async for event in stream:
                observer.observe(event)
                warning = await persisted.record(event) if persisted is not None else None
                yield event
                if warning is not None:
                    yield warning
    except (GeneratorExit, asyncio.CancelledError, KeyboardInterrupt):
        observer.fail("cancelled")
        if persisted is not None:
            persisted.end("cancelled", "the run was stopped before its report")
        raise
    except Exception as exc:
        observer.fail("failed")
        if persisted is not None:
            persisted.end("failed", describe_error(exc)[:2000])
        raise
    if persisted is not None:
        persisted.end("failed", "the run ended without a report")


def _earlier_traces(metrics: dict[str, Any]) -> list[dict[str, str]]:
    """The traces of a stored run's attempts so far (its metrics' ``earlier_traces`` and
    ``trace_id``/``trace_span_id``), which the resumed run's span links to."""
    earlier = [dict(e) for e in metrics.get("earlier_traces", []) if isinstance(e, dict)]
    if metrics.get("trace_id") and metrics.get("trace_span_id"):
        earlier.append({"trace_id": metrics["trace_id"], "span_id": metrics["trace_span_id"]})
    return earlier


def _every_seconds(every: str | float | None) -> float | None:
    """A schedule given as ``"7d"`` or seconds, in seconds (``None``: by hand only).

    Raises:
        ValueError: a schedule not understood or too short.
    """
    from deepcritical.models import parse_every

    if every is None:
        return None
    return parse_every(every) if isinstance(every, str) else parse_every(f"{float(every)}s")


async def watch_run(
    run_id: str,
    settings: Settings | None = None,
    *,
    every: str | float | None = None,
    webhook_url: str | None = None,
    owner: str | None = None,
) -> Watch:
    """Keep ``owner``'s finished run ``run_id`` up to date: a watch (living review) on it.

    The watch holds the run's question, reviewed plan, public settings and queries; its
    versions are the run's report versions. Each update (:func:`update_watch`, or a worker on
    schedule) searches only the records added to the sources since the last one. See
    ``docs/watches.md``.

    Args:
        run_id: the run (a unique prefix of 6+ characters is accepted).
        settings: where the run database is; defaults to :class:`Settings` from the
            environment.
        every: the schedule, ``"7d"``, ``"30d"``, ``"12h"`` or seconds (``None``: updated by
            hand only); workers (``deepcritical worker``) run the scheduled updates.
        webhook_url: where each new version's change summary is POSTed (public http(s)
            hosts only).
        owner: the user the run belongs to (``None``, the default: the local user).

    Raises:
        ValueError: ``every`` not understood or shorter than a second.
        UnsafeURLError: ``webhook_url`` is not http(s) or names a private or local host.
        RunNotFoundError: no such run among ``owner``'s runs.
        RunWithoutReportError: the run has no report.
    """
    from deepcritical.sources.webhook import check_webhook_url
    from deepcritical.state.run_store import RunStore
    from deepcritical.state.watch_store import WatchStore

    base = settings or Settings()
    seconds = _every_seconds(every)
    url = check_webhook_url(webhook_url) if webhook_url else None
    store = await asyncio.to_thread(RunStore.open, base)
    try:
        return await asyncio.to_thread(
            lambda: WatchStore(store).create(
                run_id, owner=owner, every_seconds=seconds, webhook_url=url
            )
        )
    finally:
        store.close()


async def watch(
    question: str,
    settings: Settings | None = None,
    *,
    every: str | float | None = None,
    webhook_url: str | None = None,
    context: str | None = None,
    preferences: ReportPreferences | None = None,
    owner: str | None = None,
    sources: Sequence[SearchSource] | None = None,
    embedder: Embedder | None = None,
) -> Watch:
    """Research ``question`` (:func:`research`, to its report) and watch the run
    (:func:`watch_run`): the review is kept up to date on schedule ``every``.

    Raises:
        ValueError: ``every`` not understood; UnsafeURLError: a bad ``webhook_url`` (both
            before the research starts).
        RunWithoutReportError: the research ended without a report.
        Exception: what :func:`research` raises.
    """
    from deepcritical.sources.webhook import check_webhook_url

    base = settings or Settings()
    _every_seconds(every)
    if webhook_url:
        check_webhook_url(webhook_url)
    run_id: str | None = None
    events = research(
        question,
        base,
        context=context,
        preferences=preferences,
        owner=owner,
        sources=sources,
        embedder=embedder,
    )
    async for event in events:
        run_id = run_id or event.run_id
    if run_id is None:
        raise run_not_found("(none: the run was not recorded)")
    return await watch_run(run_id, base, every=every, webhook_url=webhook_url, owner=owner)


async def update_watch(
    watch_id: str,
    settings: Settings | None = None,
    *,
    owner: str | None = None,
    sources: Sequence[SearchSource] | None = None,
    embedder: Embedder | None = None,
) -> WatchUpdate:
    """Update ``owner``'s watch ``watch_id`` now: search the records added since its last
    update, check the known records' retractions again, and write a new report version when
    anything relevant changed (``outcome`` ``new_version``), else record ``nothing_new``
    (no version). See :mod:`deepcritical.orchestrators.watch_update`.

    Args:
        watch_id: the watch (a unique prefix of 6+ characters is accepted).
        settings: the database, keys and source roots; defaults to the environment's.
        owner: the user the watch belongs to (``None``: the local user).
        sources: search sources to use instead of those the run's settings name (they are
            given the window's filters; the re-check of retractions on PubMed is then not
            made: it is made with the PubMed client built from the settings only).
        embedder: the embedder to use instead of the run embedder.

    Raises:
        WatchNotFoundError: no such watch among ``owner``'s watches.
        WatchBusyError: another process is updating it now.
        Exception: what the update raised (recorded as a ``failed`` update).
    """
    import uuid

    from deepcritical.orchestrators.watch_update import UpdateParts, run_watch_update
    from deepcritical.state.run_store import RunStore
    from deepcritical.state.watch_store import WatchStore

    base = settings or Settings()
    store = await asyncio.to_thread(RunStore.open, base)
    try:
        found = await asyncio.to_thread(lambda: WatchStore(store).require(watch_id, owner=owner))
    finally:
        store.close()
    return await run_watch_update(
        found,
        base,
        holder=f"manual-{uuid.uuid4().hex}",
        trigger="manual",
        parts=UpdateParts(sources=sources, embedder=embedder),
    )
