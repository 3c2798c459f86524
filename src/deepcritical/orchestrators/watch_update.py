"""One update of a living review (:func:`run_watch_update`), the same whether a worker runs
it on schedule or a user asks for it.

1. The watch's update lease is taken (one update at a time; a recovered workflow takes its own
   lease back).
2. Its window runs from ``checked_until`` (the last update's end, or when the run's report was
   written) to when the lease was taken (kept by a recovered attempt); every source is
   searched for the records added in it
   (:func:`~deepcritical.orchestrators.watch_search.find_new`), through the call cache keyed
   by the window (:class:`WindowCachedSource`), so an update that is run again after its
   worker died asks no source twice.
3. Retractions and corrections of the known records are checked again
   (:func:`~deepcritical.orchestrators.integrity_recheck.recheck_integrity`).
4. When a new record is included, or a known one was retracted or corrected, a new report
   version is written over the union of the evidence with its "What's new" section
   (:func:`~deepcritical.writing.update_version.write_update_version`); otherwise the update
   says so in one line and writes no version.
5. Everything is recorded in one transaction (:meth:`WatchStore.commit_update`); then the
   webhook, if any, is told (a failed delivery is logged, never retried, never fails the
   update).

An update in which every source failed records ``failed`` and keeps the window, so the next
update covers it again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import httpx

from deepcritical.config import Settings
from deepcritical.evidence.embeddings import Embedder
from deepcritical.llm.llm_errors import describe_error
from deepcritical.llm.model_cache import request_key
from deepcritical.logs import get_logger
from deepcritical.models import (
    ChangedRecord,
    Evidence,
    ReportVersion,
    RunResult,
    Screening,
    SearchFilters,
    Watch,
    WatchChange,
    WatchUpdate,
    utc_now,
)
from deepcritical.orchestrators.integrity_recheck import (
    IntegrityRecheck,
    RecordFetcher,
    recheck_integrity,
)
from deepcritical.orchestrators.watch_search import (
    KnownRecords,
    NewRecords,
    find_new,
    refresh_changed,
)
from deepcritical.report.finish import GroundingOptions
from deepcritical.sources.base import SearchSource
from deepcritical.sources.factory import build_pubmed, build_sources
from deepcritical.sources.http import new_http_client
from deepcritical.sources.netguard import UnsafeURLError
from deepcritical.sources.webhook import (
    WebhookError,
    WebhookGuard,
    post_webhook,
    shown_url,
    update_payload,
)
from deepcritical.state.cache import CachedSource, CallCache
from deepcritical.state.errors import StateError, run_without_report
from deepcritical.state.run_store import RunStore
from deepcritical.state.watch_store import WatchStore
from deepcritical.writing.update_version import write_update_version

__all__ = [
    "UpdateParts",
    "WatchBusyError",
    "WindowCachedSource",
    "run_watch_update",
    "watch_settings",
    "window_filters",
]

log = get_logger(__name__)

LEASE_RENEW_SECONDS = 20.0
"""How often a running update renews its lease."""


class WatchBusyError(StateError):
    """Another process is updating this watch now."""


class WindowCachedSource(CachedSource):
    """A :class:`~deepcritical.state.cache.CachedSource` whose keys also hold the end of the
    update's window (``until``): the attempt recovered after a worker died (same window) is
    answered by the cache; an update that runs again after a failure (a new window end)
    searches again, so no record added meanwhile is missed."""

    def __init__(self, source: SearchSource, cache: CallCache, until: datetime) -> None:
        super().__init__(source, cache)
        self.until = until

    def key(self, query: str, limit: int, filters: SearchFilters | None = None) -> str:
        """The cache key of the search within the window ending at :attr:`until`."""
        return request_key(
            "watch-search", {"search": super().key(query, limit, filters), "until": str(self.until)}
        )


@dataclass
class UpdateParts:
    """What an update uses instead of what it would build from the settings (tests): the
    search ``sources``, the ``pubmed`` client of the integrity re-check, the ``embedder``,
    and the webhook's ``guard`` and ``webhook_transport``; ``search_options`` go to the
    search agent."""

    sources: Sequence[SearchSource] | None = None
    pubmed: RecordFetcher | None = None
    embedder: Embedder | None = None
    guard: WebhookGuard | None = None
    webhook_transport: httpx.AsyncBaseTransport | None = None
    search_options: dict[str, Any] = field(default_factory=dict)


def watch_settings(watch: Watch, base: Settings) -> Settings:
    """The settings an update of ``watch`` runs with: the run's stored public settings, with
    the database, data directory, keys and source roots of ``base`` (the process's)."""
    stored = {k: v for k, v in watch.settings.items() if k in Settings.model_fields}
    stored.update(data_dir=base.data_dir, database_url=base.database_url, persist_runs=True)
    if base.source_base_urls:
        stored["source_base_urls"] = dict(base.source_base_urls)
    return Settings(**stored)


async def _embedder(settings: Settings, given: Embedder | None) -> Embedder:
    if given is not None:
        return given
    from deepcritical.evidence.onnx_embeddings import run_embedder

    return await asyncio.to_thread(
        run_embedder, settings.embedding_model, settings.embedding_backend
    )


@contextlib.asynccontextmanager
async def _renewing(watches: WatchStore, watch_id: str, holder: str) -> AsyncIterator[None]:
    """Renew ``holder``'s lease every :data:`LEASE_RENEW_SECONDS` while the block runs."""

    async def beat() -> None:
        while True:
            await asyncio.sleep(LEASE_RENEW_SECONDS)
            await asyncio.to_thread(watches.renew, watch_id, holder)

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def run_watch_update(
    watch: Watch,
    settings: Settings,
    *,
    holder: str,
    trigger: Literal["schedule", "manual"] = "manual",
    parts: UpdateParts | None = None,
) -> WatchUpdate:
    """Update ``watch`` now (see the module docstring); the recorded update.

    Args:
        watch: the watch (its owner already checked by the caller).
        settings: the process's settings (database, keys, source roots); the run's stored
            settings say what is searched (:func:`watch_settings`).
        holder: the lease holder's name (a worker's workflow id; a manual update's own).
        trigger: ``"schedule"`` or ``"manual"``.
        parts: replacements for what is built from the settings (tests).

    Raises:
        WatchBusyError: another process is updating the watch.
        RunWithoutReportError: the watch's run lost its report.
        Exception: what the update raised (recorded as a ``failed`` update first).
    """
    given = parts or UpdateParts()
    runs = await asyncio.to_thread(RunStore.open, settings)
    watches = WatchStore(runs)
    try:
        until = await asyncio.to_thread(watches.claim, watch.id, holder)
        if until is None:
            raise WatchBusyError(f"watch {watch.id} is being updated by another process")
        started = utc_now()
        try:
            async with _renewing(watches, watch.id, holder):
                made = await _update(watch, settings, runs, given, (started, until))
            made.update.trigger = trigger
            recorded = await asyncio.to_thread(
                lambda: watches.commit_update(
                    watch.id, holder, made.update, version=made.version, evidence=made.evidence
                )
            )
        except Exception as exc:
            failure = (watches, watch.id, holder, started, exc, trigger)
            await asyncio.to_thread(_record_failure, *failure)
            raise
    finally:
        runs.close()
    await _notify(watch, recorded, given)
    return recorded


def _record_failure(
    watches: WatchStore,
    watch_id: str,
    holder: str,
    started: datetime,
    exc: BaseException,
    trigger: Literal["schedule", "manual"],
) -> None:
    """Record a ``failed`` update (its window kept for the next one) and free the lease;
    nothing when this holder lost the lease meanwhile."""
    failed = WatchUpdate(
        watch_id=watch_id,
        number=1,
        started_at=started,
        finished_at=utc_now(),
        outcome="failed",
        summary=describe_error(exc)[:500],
        trigger=trigger,
    )
    try:
        watches.commit_update(watch_id, holder, failed)
    except Exception:  # noqa: BLE001 - the update's own error is what the caller sees
        log.warning("a failed update could not be recorded", watch=watch_id)


@dataclass
class _Made:
    update: WatchUpdate
    version: ReportVersion | None = None
    evidence: list[Evidence] | None = None


@dataclass
class _Found:
    """What an update's searches and re-check found (steps 2 and 3)."""

    new: NewRecords
    recheck: IntegrityRecheck
    updated: list[ChangedRecord]


async def _search_window(
    watch: Watch,
    settings: Settings,
    runs: RunStore,
    given: UpdateParts,
    result: RunResult,
    embedder: Embedder,
    until: datetime,
) -> _Found:
    """Steps 2 and 3 of the module docstring: the window searched on every source (through
    the call cache keyed by the window), the known records re-checked.

    Raises:
        StateError: every source failed (the window was not searched).
    """
    async with AsyncExitStack() as stack:
        sources, pubmed = given.sources, given.pubmed
        if sources is None:
            client = await stack.enter_async_context(new_http_client(settings.http_timeout_seconds))
            cache = CallCache(runs, settings.cache_ttl_seconds)
            built = await asyncio.to_thread(build_sources, settings, client, embedder)
            sources = [WindowCachedSource(s, cache, until) for s in built]
            pubmed = pubmed or build_pubmed(settings, client)
        question = result.plan.refined_question if result.plan else watch.question
        new = await find_new(
            sources,
            KnownRecords(result.evidence),
            watch.queries,
            question,
            embedder,
            results_per_query=settings.results_per_query,
            near_duplicate_threshold=settings.near_duplicate_threshold,
            filters=window_filters(result, watch.checked_until),
            pubmed_date_from=settings.pubmed_date_from,
            **given.search_options,
        )
        known, updated = refresh_changed(result.evidence, new.changed)
        recheck = await recheck_integrity(known, pubmed)
    searched = {s.name for s in sources}
    if searched and set(new.failures) >= searched:
        reasons = "; ".join(f"{k}: {v}" for k, v in new.failures.items())
        raise StateError(f"every source failed, so the window was not searched ({reasons})")
    return _Found(new, recheck, updated)


async def _update(
    watch: Watch,
    base: Settings,
    runs: RunStore,
    given: UpdateParts,
    times: tuple[datetime, datetime],
) -> _Made:
    """Steps 2 to 4 of the module docstring (nothing recorded); ``times``: when the update
    started and the end of its window (the lease's)."""
    started, until = times
    result = await asyncio.to_thread(lambda: runs.result(watch.run_id, owner=watch.owner))
    previous = await asyncio.to_thread(lambda: runs.report_version(watch.run_id, owner=watch.owner))
    if result is None or previous is None:
        raise run_without_report(watch.run_id, "missing", action="watch")
    settings = watch_settings(watch, base)
    embedder = await _embedder(settings, given.embedder)
    found = await _search_window(watch, settings, runs, given, result, embedder, until)
    new, recheck = found.new, found.recheck
    change = WatchChange(
        since=watch.checked_until,
        until=until,
        new_included=[
            ChangedRecord.of(e)
            for e in new.items
            if e.screening != Screening.OFF_TOPIC and not e.citation.retracted
        ],
        removed=recheck.removed,
        corrected=recheck.corrected,
        updated=found.updated,
        flow=new.flow,
        verdict_before=previous.report.metadata.verdict,
        verdict_after=previous.report.metadata.verdict,
    )
    union = [*recheck.items, *new.items]
    update = WatchUpdate(
        watch_id=watch.id,
        number=1,
        started_at=started,
        finished_at=until,
        outcome="nothing_new",
        summary=change.summary(),
        change=change,
    )
    if not change.relevant:
        return _Made(update, evidence=union if new.items else None)
    grounding = GroundingOptions(enabled=settings.grounding, threshold=settings.grounding_threshold)
    version = await write_update_version(
        result.model_copy(update={"evidence": union}),
        previous,
        change,
        embedder,
        grounding,
        max_evidence=settings.report_max_evidence,
    )
    update.outcome = "new_version"
    update.version = version.version
    update.summary = change.summary()
    update.finished_at = utc_now()
    return _Made(update, version=version, evidence=union)


def window_filters(result: RunResult, since: datetime) -> SearchFilters:
    """The filters of an update: the run's plan's (dates, languages, designs...) with
    ``added_since`` the window's start."""
    base = result.plan.filters if result.plan is not None else SearchFilters()
    return base.model_copy(update={"added_since": since})


async def _notify(watch: Watch, update: WatchUpdate, given: UpdateParts) -> None:
    """Tell the watch's webhook about ``update`` (only updates with a new version)."""
    if not watch.webhook_url or update.outcome != "new_version":
        return
    try:
        await post_webhook(
            watch.webhook_url,
            update_payload(watch, update),
            guard=given.guard,
            transport=given.webhook_transport,
        )
    except (UnsafeURLError, WebhookError) as exc:
        log.warning("webhook not delivered", url=shown_url(watch.webhook_url), reason=str(exc))
