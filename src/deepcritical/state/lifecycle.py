"""One run's link to the database: :class:`PersistentRun` (used by :mod:`deepcritical.api`).

It opens the run database, creates the run row (or reopens a run being resumed), wraps the
run's search sources in the call cache (its :attr:`PersistentRun.cache` is also the
:class:`~deepcritical.llm.model_cache.CallStore` of the model and chat-client caches the caller
builds, :attr:`PersistentRun.cached_model` the one it reports on), checkpoints
every event through a :class:`~deepcritical.state.recorder.RunRecorder`, touches the row every
:data:`~deepcritical.state.run_store.HEARTBEAT_SECONDS` while the run is alive, and records how
the run ended when it ends without a ``done``/``error`` event (cancelled, crashed). A resumed
run is taken over through the resume lease (:func:`~deepcritical.state.lease.claim_run`): a
run whose heartbeat is live is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any

from deepcritical.config import Settings
from deepcritical.events import ResearchEvent, StartedData
from deepcritical.evidence.store import EvidenceStore
from deepcritical.llm.model_cache import CachedModel
from deepcritical.sources.base import SearchSource
from deepcritical.sources.citation_graph import CitationLinker
from deepcritical.sources.fulltext import FullTextReader
from deepcritical.state.cache import CachedCitations, CachedFullText, CachedSource, CallCache
from deepcritical.state.lease import claim_run, release_run
from deepcritical.state.recorder import RunRecorder
from deepcritical.state.reviews import ReviewBook
from deepcritical.state.run_store import HEARTBEAT_SECONDS, RunStore
from deepcritical.state.sources import SourceCollector
from deepcritical.state.syllabus import Syllabus

__all__ = ["PersistentRun"]


class PersistentRun:
    """The database side of one run (see the module docstring).

    Build it with :meth:`open`; call :meth:`attach` once the run's evidence store exists,
    :meth:`record` for every event, :meth:`end` when the stream stops abnormally and
    :meth:`aclose` at the end.
    """

    def __init__(
        self,
        runs: RunStore,
        run_id: str,
        settings: Settings,
        syllabus: Syllabus | None,
        *,
        resuming: bool,
        resumed_progress: float = 0.0,
    ) -> None:
        self.runs = runs
        self.run_id = run_id
        self.settings = settings
        self.syllabus = syllabus
        self.resuming = resuming
        self.resumed_progress = resumed_progress
        self.cache = CallCache(runs, settings.cache_ttl_seconds)
        self.cached_sources: list[CachedSource] = []
        self.cached_model: CachedModel | None = None
        self.recorder: RunRecorder | None = None
        self.collector: SourceCollector | None = None
        self.trace: dict[str, Any] = {}
        """The run's trace (``trace_id``...: ``RunObserver.trace_record``), kept in its
        metrics; set before :meth:`attach`."""
        self._heartbeat: asyncio.Task[None] | None = None

    @classmethod
    async def open(
        cls,
        settings: Settings,
        question: str,
        context: str | None,
        syllabus: Syllabus | None,
        run_id: str | None = None,
        preferences: dict[str, Any] | None = None,
        owner: str | None = None,
    ) -> PersistentRun:
        """Open the database and create the run (``run_id=None``) or take ``run_id`` over for
        a resume (:func:`~deepcritical.state.lease.claim_run`); the run belongs to ``owner``
        (``None``: the local user), and a run reopened must be ``owner``'s. The heartbeat
        starts at once.

        Raises:
            RunNotFoundError: ``run_id`` is not in the database, or is another owner's.
            RunNotResumableError: run ``run_id`` already delivered its final report.
            RunInProgressError: run ``run_id`` is still running in another process (its
                heartbeat is live).
            sqlalchemy.exc.SQLAlchemyError, OSError: the database cannot be opened.
        """
        runs = await asyncio.to_thread(RunStore.open, settings)
        try:
            if run_id is None:
                new_id = await asyncio.to_thread(
                    runs.create_run,
                    question,
                    settings.public_dict(),
                    context=context,
                    syllabus=syllabus,
                    preferences=preferences,
                    owner=owner,
                )
                opened = cls(runs, new_id, settings, syllabus, resuming=False)
            else:
                record = await asyncio.to_thread(lambda: runs.get_run(run_id, owner=owner))
                if record is None:
                    from deepcritical.state.errors import RunNotFoundError

                    raise RunNotFoundError(f"no run with id {run_id!r}")
                await asyncio.to_thread(claim_run, runs, record.id)
                opened = cls(
                    runs,
                    record.id,
                    settings,
                    syllabus,
                    resuming=True,
                    resumed_progress=record.progress,
                )
        except BaseException:
            runs.close()
            raise
        opened._heartbeat = asyncio.create_task(opened._beat())
        return opened

    def wrap_sources(self, sources: Sequence[SearchSource]) -> list[SearchSource]:
        """``sources`` answered from the call cache when the same request was made before."""
        self.cached_sources = [CachedSource(s, self.cache) for s in sources]
        return list(self.cached_sources)

    def wrap_full_text(self, reader: FullTextReader) -> CachedFullText:
        """``reader`` answered from the call cache when the same full text was fetched before
        (a resumed run does not fetch it again)."""
        return CachedFullText(reader, self.cache)

    def wrap_citations(self, linker: CitationLinker) -> CachedCitations:
        """``linker`` answered from the call cache when the same citations were followed
        before (a resumed run does not ask again)."""
        return CachedCitations(linker, self.cache)

    @property
    def reviews(self) -> ReviewBook:
        """The run's reviews (the researcher's review of its plan and evidence)."""
        return ReviewBook(self.runs, self.run_id)

    def collector_for(self, store: EvidenceStore) -> SourceCollector:
        """The run's source collector over ``store`` (made once): the recorder saves every
        evidence item through it, and the search agent's source tools save into the same
        one (a source saved by both is merged: same source type and id, or citation id)."""
        if self.collector is None:
            self.collector = SourceCollector(
                self.runs, self.run_id, self.syllabus, citation_exists=lambda cid: cid in store
            )
        return self.collector

    async def attach(self, store: EvidenceStore) -> None:
        """Start recording the run whose evidence lives in ``store`` (marks it in progress)."""
        collector = self.collector_for(store)
        self.recorder = RunRecorder(
            self.runs,
            self.run_id,
            store,
            collector,
            max_rounds=self.settings.max_rounds,
            model=self.cached_model,
            sources=self.cached_sources,
            cache=self.cache,
            resumed_progress=self.resumed_progress,
            fixed_syllabus=self.syllabus is not None,
            trace=self.trace,
        )
        await asyncio.to_thread(self.recorder.begin)

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_SECONDS)
            with contextlib.suppress(Exception):
                await asyncio.to_thread(self.runs.touch, self.run_id)

    async def record(self, event: ResearchEvent) -> ResearchEvent | None:
        """Checkpoint after ``event`` (``started`` gets ``run_id`` in its data); a warning
        event to pass on when saving failed."""
        if isinstance(event.data, StartedData):
            event.data.run_id = self.run_id
        if self.recorder is None:
            return None
        return await self.recorder.record(event)

    def end(self, status: str, error: str | None = None) -> None:
        """Record an abnormal end (``failed``/``cancelled``) of a run still in progress."""
        if self.recorder is not None:
            self.recorder.end(status, error)

    async def aclose(self) -> None:
        """Stop the heartbeat and close the database; a resume that stopped before the run
        restarted (never attached) gives its claim back
        (:func:`~deepcritical.state.lease.release_run`)."""
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._heartbeat
        try:
            if self.resuming and self.recorder is None:
                with contextlib.suppress(Exception):  # the run stays claimed until stale
                    await asyncio.to_thread(
                        release_run,
                        self.runs,
                        self.run_id,
                        "the resume stopped before the run restarted",
                    )
        finally:
            self.runs.close()
