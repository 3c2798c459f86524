"""The handlers of the review panel (:mod:`deepcritical.ui.review_panel`): show the review a
run waits for, decide it, and continue the run in the page.

- :meth:`ReviewHandlers.review_after_run` (after a run streamed in this page stopped at
  ``plan_ready`` / ``evidence_ready``) and :meth:`ReviewHandlers.review_after_open` (a run opened
  from History, e.g. in a new page after an app restart) read the review the caller's run
  waits for from the run database and fill the plan card or the evidence review.
- *Start search* (:meth:`ReviewHandlers.start_search`), *Write report* and *One more
  search round* (:meth:`ReviewHandlers.write_report`, :meth:`ReviewHandlers.more_search`)
  store the decision through :func:`deepcritical.api.record_plan_review` /
  :func:`~deepcritical.api.record_evidence_review` (the checks of
  :func:`deepcritical.api.approve_plan` / :func:`~deepcritical.api.approve_evidence`): an
  invalid edit (an empty checklist, a date range that ends before it starts, an exclusion
  without a reason) is one line in the panel and nothing is stored. Then
  :meth:`ReviewHandlers.continue_run` streams the run on into the page: resumed in this
  process (:func:`deepcritical.ui.history.resume_events`, as ``approve_plan`` does), or in
  jobs mode the job's waiting workflow is woken and its log followed
  (:func:`deepcritical.ui.jobs_mode.continued_events`).
- *Cancel* cancels the run at its review (:func:`deepcritical.api.cancel_review`; in jobs
  mode the job is cancelled, which ends its waiting workflow).

Every handler asks :meth:`~deepcritical.ui.auth.Access.owner` who the caller is and acts on
that caller's runs only (the API's ``owner`` checks: another owner's run is "not found").
A continued run uses the server's settings for what is not stored with the run (API keys),
as *Resume* does.
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any

import gradio as gr
from pydantic import ValidationError

from deepcritical.config import ALL_SOURCES, Settings
from deepcritical.logs import get_logger
from deepcritical.models import ResearchPlan, RunReview
from deepcritical.sources.query_syntax import source_queries
from deepcritical.state import RunStore, StateError
from deepcritical.state.run_store import AWAITING_REVIEW
from deepcritical.ui import history as hist
from deepcritical.ui.auth import Access, SignInRequired
from deepcritical.ui.jobs_mode import JobBackend, continued_events
from deepcritical.ui.live_run import RUN_OUTPUT_COUNT, RunOutputs, RunStreams
from deepcritical.ui.progress_view import ProgressView
from deepcritical.ui.review_forms import (
    FormError,
    edited_plan,
    evidence_decisions,
    evidence_html,
    plan_fields,
    record_choices,
)
from deepcritical.ui.review_panel import ReviewPanel, hidden_review

__all__ = ["Decided", "ReviewHandlers", "Shown", "shown"]

log = get_logger(__name__)

Decided = tuple[str, Any, Any, str]
"""What a decision sets: the status line, the plan card's and the evidence review's
visibility, and the run id to continue (``""``: none, the decision was refused)."""


@dataclass(frozen=True)
class Shown:
    """The review the panel shows: the run's full id, the waiting :class:`RunReview` and, for
    a plan review, the round-1 queries each source was to receive (source -> queries)."""

    run_id: str
    review: RunReview
    sent: dict[str, list[str]] = field(default_factory=dict)


def _line(text: str, *, error: bool = False) -> str:
    kind = "dc-error" if error else "dc-review-note"
    return f'<p class="{kind}" role="status">{html.escape(text)}</p>'


def _waiting(settings: Settings, run_id: str, owner: str | None) -> Shown | None:
    """The review ``owner``'s run ``run_id`` waits for, or ``None`` (no such run of the
    owner's, or it waits for none)."""
    from deepcritical.state.reviews import waiting_review

    store = RunStore.open(settings)
    try:
        record = store.get_run(run_id.strip(), owner=owner) if run_id.strip() else None
        if record is None or record.status != AWAITING_REVIEW:
            return None
        review = waiting_review(store, record.id)
    finally:
        store.close()
    if review is None:
        return None
    sent: dict[str, list[str]] = {}
    if review.plan is not None:
        year = record.settings.get("pubmed_date_from")
        sent = source_queries(review.plan, review.sources, year if isinstance(year, int) else None)
    return Shown(record.id, review, sent)


def shown(waiting: Shown | None) -> tuple[Any, ...]:
    """:meth:`ReviewPanel.outputs` for ``waiting``: the plan card filled (a plan review) or
    the evidence review (an evidence review), the other box hidden; all hidden for
    ``None``."""
    if waiting is None:
        return hidden_review()
    review, skip = waiting.review, gr.skip()
    if review.stage == "evidence" or review.plan is None:
        records = review.records
        return (
            gr.update(visible=False),
            gr.update(visible=True),
            _line(f"Run {waiting.run_id} waits for your review of its screened evidence."),
            waiting,
            *(skip for _ in range(7 + len(ALL_SOURCES))),
            evidence_html(records),
            gr.update(choices=record_choices(records), value=[r.id for r in records if r.included]),
            "",
        )
    f = plan_fields(review.plan, review.sources, waiting.sent)
    return (
        gr.update(visible=True),
        gr.update(visible=False),
        _line(f"Run {waiting.run_id} waits for your review of its plan."),
        waiting,
        f.refined_question,
        f.checklist,
        gr.update(choices=f.sources, value=f.searched),
        *(gr.update(value=f.queries.get(s, ""), visible=s in f.sources) for s in ALL_SOURCES),
        f.published_from,
        f.published_to,
        f.languages,
        f.designs,
        skip,
        skip,
        skip,
    )


@dataclass(frozen=True)
class ReviewHandlers:
    """The review panel's handlers for runs of the server's ``settings``.

    Args:
        settings: the server's settings (the run database; a continued run's keys).
        access: the deployment's sign-in, which names each caller's owner.
        backend: the job engine in jobs mode, else ``None`` (runs in this process).
        streams: the app's run streams (a continued run renders as any run).
        panel: the review panel, whose plan fields *Start search* reads.
    """

    settings: Settings
    access: Access
    backend: JobBackend | None
    streams: RunStreams
    panel: ReviewPanel

    async def _show(
        self,
        run_id: str,
        request: gr.Request | None,
        profile: gr.OAuthProfile | None,
        current: Shown | None = None,
    ) -> tuple[Any, ...]:
        """The review ``run_id`` waits for, shown; left as it is (every output skipped) when
        it is ``current``, the one the panel already shows (the user may be editing it)."""
        try:
            owner = self.access.owner(request, profile)
            waiting = await asyncio.to_thread(_waiting, self.settings, run_id, owner)
        except (SignInRequired, StateError, ValidationError):
            waiting = None
        if (
            waiting is not None
            and current is not None
            and (current.run_id, current.review.number) == (waiting.run_id, waiting.review.number)
        ):
            return tuple(gr.skip() for _ in self.panel.outputs())
        return shown(waiting)

    async def review_after_run(
        self,
        view: ProgressView | None,
        current: Shown | None = None,
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
    ) -> tuple[Any, ...]:
        """After a run streamed in this page: the review it stopped for (untouched when it
        is ``current``, the one shown: a decision was refused and the user edits on), else
        hidden."""
        if view is None or not view.run_id or not view.awaiting:
            return hidden_review()
        return await self._show(view.run_id, request, profile, current)

    async def review_after_open(
        self, run_id: str, request: gr.Request | None = None, profile: gr.OAuthProfile | None = None
    ) -> tuple[Any, ...]:
        """After History opened ``run_id``: the review the caller's run waits for, else
        hidden."""
        return await self._show(run_id or "", request, profile)

    async def _decide(
        self,
        waiting: Shown | None,
        request: gr.Request | None,
        profile: gr.OAuthProfile | None,
        store: Callable[[str | None], Coroutine[Any, Any, RunReview]],
    ) -> Decided:
        """Store a decision with ``store(owner)``; the panel closed and the run to continue,
        or the refusal's message with the panel as it was."""
        if waiting is None:
            return _line("No review is shown.", error=True), gr.skip(), gr.skip(), ""
        try:
            owner = self.access.owner(request, profile)
            await store(owner)
        except (SignInRequired, StateError, FormError) as exc:
            return _line(str(exc), error=True), gr.skip(), gr.skip(), ""
        except ValidationError as exc:  # an evidence decision the model refuses
            message = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
            return _line(message, error=True), gr.skip(), gr.skip(), ""
        hide = gr.update(visible=False)
        what = "plan" if waiting.review.stage == "plan" else "evidence review"
        return _line(f"The {what} was approved; the run goes on."), hide, hide, waiting.run_id

    async def start_search(
        self,
        values: Mapping[Any, Any],
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
    ) -> Decided:
        """*Start search*: the plan as edited in the card (``values``: the panel's
        components -> their values) approved, or the refusal shown."""
        from deepcritical.api import record_plan_review

        p = self.panel
        waiting: Shown | None = values.get(p.waiting)

        async def store(owner: str | None) -> RunReview:
            assert waiting is not None
            assert waiting.review.plan is not None
            plan = _edited(waiting.review.plan, waiting.sent, values, p)
            return await record_plan_review(waiting.run_id, plan, self.settings, owner=owner)

        return await self._decide(waiting, request, profile, store)

    async def _evidence(
        self,
        waiting: Shown | None,
        included: list[str] | None,
        reasons: str,
        more: bool,
        request: gr.Request | None,
        profile: gr.OAuthProfile | None,
    ) -> Decided:
        from deepcritical.api import record_evidence_review

        async def store(owner: str | None) -> RunReview:
            assert waiting is not None
            decisions = evidence_decisions(waiting.review.records, included or [], reasons or "")
            return await record_evidence_review(
                waiting.run_id, decisions, self.settings, more_search=more, owner=owner
            )

        return await self._decide(waiting, request, profile, store)

    async def write_report(
        self,
        waiting: Shown | None,
        included: list[str] | None,
        reasons: str,
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
    ) -> Decided:
        """*Write report*: the toggles' decisions stored; the run writes its report."""
        return await self._evidence(waiting, included, reasons, False, request, profile)

    async def more_search(
        self,
        waiting: Shown | None,
        included: list[str] | None,
        reasons: str,
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
    ) -> Decided:
        """*One more search round*: the toggles' decisions stored; the run searches once more,
        then waits for an evidence review again."""
        return await self._evidence(waiting, included, reasons, True, request, profile)

    async def cancel(
        self,
        waiting: Shown | None,
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
    ) -> tuple[str, Any, Any, Any]:
        """*Cancel*: the caller's run cancelled at its review (in jobs mode its job); the
        panel closed with a line saying so, or the refusal shown."""
        from deepcritical.api import cancel_review

        if waiting is None:
            return _line("No review is shown.", error=True), gr.skip(), gr.skip(), gr.skip()
        try:
            owner = self.access.owner(request, profile)
            if self.backend is not None:
                await asyncio.to_thread(
                    self.backend.cancel, waiting.run_id, self.settings, owner=owner
                )
            else:
                await cancel_review(waiting.run_id, self.settings, owner=owner)
        except (SignInRequired, StateError) as exc:
            return _line(str(exc), error=True), gr.skip(), gr.skip(), gr.skip()
        hide = gr.update(visible=False)
        note = f"Run {waiting.run_id} was cancelled at its {waiting.review.stage} review."
        return _line(note), hide, hide, None

    async def continue_run(
        self,
        decided: str,
        waiting: Shown | None,
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
    ) -> AsyncIterator[RunOutputs]:
        """The run whose review was just decided (``decided``: its id; ``""``: the decision
        was refused, nothing changes), streamed on into the run's panels: resumed here, or
        in jobs mode woken on its worker and followed."""
        if not decided or waiting is None:
            yield tuple(gr.skip() for _ in range(RUN_OUTPUT_COUNT))
            return
        try:
            owner = self.access.owner(request, profile)
        except SignInRequired:
            yield tuple(gr.skip() for _ in range(RUN_OUTPUT_COUNT))
            return
        if self.backend is not None:
            events = continued_events(
                self.backend, decided, waiting.review.number, self.settings, owner
            )
        else:
            events = hist.resume_events(decided, self.settings, owner)
        async for out in self.streams.watched(events, self.settings, owner, request):
            yield out


def _edited(
    proposed: ResearchPlan,
    sent: Mapping[str, list[str]],
    values: Mapping[Any, Any],
    p: ReviewPanel,
) -> dict[str, Any]:
    """The plan the card's ``values`` make (:func:`~deepcritical.ui.review_forms.edited_plan`).

    Raises:
        FormError: a date the form cannot read.
    """
    return edited_plan(
        proposed,
        sent,
        refined_question=str(values.get(p.refined) or ""),
        checklist=str(values.get(p.checklist) or ""),
        searched=list(values.get(p.sources) or []),
        queries={s: str(values.get(p.queries[s]) or "") for s in ALL_SOURCES},
        published_from=str(values.get(p.published_from) or ""),
        published_to=str(values.get(p.published_to) or ""),
        languages=list(values.get(p.languages) or []),
        designs=list(values.get(p.designs) or []),
    )
