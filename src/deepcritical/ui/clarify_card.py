"""The clarify card: before a run, one short message asking what the question lacks.

When a visitor presses *Research* (or Enter) with "Ask a clarifying question first" ticked
(default: ``Settings.ui_clarify``), :meth:`ClarifyHandlers.clarify` asks
:func:`deepcritical.api.clarify` (the offline rules, or the session's model) for the
question's clarification. ``None``: the run starts at once. Otherwise the card shows its
questions (at most three), each with its suggested answers as radio buttons and a box for an
answer of the visitor's own, and two buttons: *Continue* starts the run with the answers
appended to the run's context (:func:`~deepcritical.models.clarified_context`; the plan
records them and the report's methodology says "The question was clarified by the user
before planning: population = ..."), *Skip* starts it with the context unchanged.

The card's handlers are private like every UI handler; the runs they start are the form's own
(:meth:`~deepcritical.ui.run_handlers.RunHandlers.run`), which *Stop* cancels.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr
from pydantic import SecretStr, ValidationError

from deepcritical.config import Settings
from deepcritical.logs import get_logger
from deepcritical.models import (
    MAX_CLARIFYING_QUESTIONS,
    Clarification,
    ClarifyingQuestion,
    clarified_context,
)
from deepcritical.text.clarify_rules import clarify_by_rules
from deepcritical.ui.live_run import RunOutputs
from deepcritical.ui.session import SessionChoice, visitor_settings

__all__ = [
    "ClarifyCard",
    "ClarifyFn",
    "ClarifyHandlers",
    "clarify_card",
    "default_clarify",
    "wire_clarify",
]

log = get_logger(__name__)

ClarifyFn = Callable[[str, Settings], Awaitable[Clarification | None]]
"""``clarify(question, settings)``, as :func:`deepcritical.api.clarify`."""
RunFn = Callable[..., AsyncIterator[RunOutputs]]
"""The form's run handler: ``run(question, context, llm, key, sources, rounds, max sources,
orchestrator, request, profile)``."""

CLARIFY_TIMEOUT_SECONDS = 30.0
"""How long *Research* waits for a model's clarification before the rules decide (the run
has not started yet: the visitor sees nothing happen meanwhile)."""
CARD_TITLE = (
    "**Before the search: the question could be clearer.** Pick an answer, type your own, or skip."
)
OWN_ANSWER = "Or your own answer"


def default_clarify() -> ClarifyFn:
    """:func:`deepcritical.api.clarify` (imported on first use: it loads the agents)."""
    from deepcritical.api import clarify

    return clarify


@dataclass(frozen=True)
class ClarifyCard:
    """The card's components: ``enabled`` (the visitor's switch), the card ``group`` (a
    column, hidden until a clarification is asked), its ``title``, one ``choices`` radio
    and one ``texts`` box per question slot, the *Continue* (``go``) and *Skip* buttons,
    ``pending`` (the :class:`Clarification` shown, as a dict; ``None`` when none) and
    ``answered`` (the run's context after answering)."""

    enabled: gr.Checkbox
    group: gr.Column
    title: gr.Markdown
    choices: tuple[gr.Radio, ...]
    texts: tuple[gr.Textbox, ...]
    go: gr.Button
    skip: gr.Button
    pending: gr.State
    answered: gr.State

    def shown(self) -> list[Any]:
        """The outputs of :meth:`ClarifyHandlers.clarify`: group, title, radios, boxes, pending."""
        return [self.group, self.title, *self.choices, *self.texts, self.pending]


def clarify_card(settings: Settings) -> ClarifyCard:
    """Build the switch and the (hidden) card inside the current Blocks; the switch starts
    ticked when ``settings.ui_clarify``."""
    enabled = gr.Checkbox(
        value=settings.ui_clarify,
        label="Ask a clarifying question first (when the question lacks its population, "
        "outcome or time frame)",
        elem_id="dc-clarify-on",
    )
    with gr.Column(visible=False, elem_id="dc-clarify", variant="panel") as group:
        title = gr.Markdown(CARD_TITLE, elem_id="dc-clarify-title")
        choices: list[gr.Radio] = []
        texts: list[gr.Textbox] = []
        for n in range(MAX_CLARIFYING_QUESTIONS):
            choices.append(gr.Radio(choices=[], visible=False, elem_id=f"dc-clarify-choice-{n}"))
            texts.append(
                gr.Textbox(label=OWN_ANSWER, lines=1, visible=False, elem_id=f"dc-clarify-text-{n}")
            )
        with gr.Row():
            go = gr.Button("Continue", variant="primary", elem_id="dc-clarify-go")
            skip = gr.Button("Skip", variant="secondary", elem_id="dc-clarify-skip")
    return ClarifyCard(
        enabled,
        group,
        title,
        tuple(choices),
        tuple(texts),
        go,
        skip,
        gr.State(None),
        gr.State(None),
    )


def _slot_updates(questions: list[ClarifyingQuestion]) -> tuple[list[Any], list[Any]]:
    """The radio and box updates of the card's slots: one per question, the rest hidden."""
    radios: list[Any] = []
    boxes: list[Any] = []
    for n in range(MAX_CLARIFYING_QUESTIONS):
        if n < len(questions):
            q = questions[n]
            radios.append(gr.update(choices=q.choices, value=None, label=q.prompt, visible=True))
            boxes.append(gr.update(value="", visible=True))
        else:
            radios.append(gr.update(choices=[], value=None, visible=False))
            boxes.append(gr.update(value="", visible=False))
    return radios, boxes


def _pending(value: Any) -> Clarification | None:
    """The pending clarification of the card's state (``None`` when none or unreadable)."""
    if not value:
        return None
    try:
        return Clarification.model_validate(value)
    except ValidationError:
        return None


@dataclass(frozen=True)
class ClarifyHandlers:
    """The card's handlers for the server's ``settings``.

    Args:
        settings: the server's settings (the model of a session's choice is applied to a
            copy: :func:`~deepcritical.ui.session.visitor_settings`).
        clarify_fn: :data:`ClarifyFn` (default :func:`deepcritical.api.clarify`).
        run: the form's run handler, whose runs the card starts.
        outputs: how many outputs a run has (a run not started skips them all).
        timeout_seconds: how long to wait for the clarification before the rules decide.
    """

    settings: Settings
    clarify_fn: ClarifyFn
    run: RunFn
    outputs: int
    timeout_seconds: float = CLARIFY_TIMEOUT_SECONDS

    async def _clarification(self, question: str, llm: str, api_key: str) -> Clarification | None:
        """The clarification of ``question`` with the session's model, else (a bad model
        choice, a failure, no answer within ``timeout_seconds``) the rules'."""
        try:
            key = SecretStr(api_key) if api_key else None
            per_run = await visitor_settings(
                self.settings, SessionChoice(llm=llm or "", api_key=key)
            )
            async with asyncio.timeout(self.timeout_seconds):
                return await self.clarify_fn(question, per_run)
        except Exception as exc:  # noqa: BLE001 - clarifying is optional: the rules decide
            log.warning("clarify failed; the rules decide", error=f"{type(exc).__name__}: {exc}")
            return clarify_by_rules(question) if question.strip() else None

    async def clarify(
        self, enabled: bool, question: str, llm: str, api_key: str
    ) -> tuple[Any, ...]:
        """*Research*: show the card with the question's clarification (kept in ``pending``),
        or hide it (``pending`` ``None``, so the run starts) when the switch is off, the
        question is empty or it needs none."""
        clarification = (
            await self._clarification(question, llm, api_key)
            if enabled and question.strip()
            else None
        )
        questions = clarification.questions if clarification is not None else []
        radios, boxes = _slot_updates(questions)
        return (
            gr.update(visible=clarification is not None),
            CARD_TITLE,
            *radios,
            *boxes,
            clarification.model_dump(mode="json") if clarification is not None else None,
        )

    async def run_unless_asked(
        self,
        pending: Any,
        question: str,
        context: str,
        llm: str,
        api_key: str,
        sources: list[str],
        max_rounds: float,
        max_sources: float,
        orchestrator: str,
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
        review_plan: bool = False,
        review_evidence: bool = False,
    ) -> AsyncIterator[RunOutputs]:
        """After :meth:`clarify`: the run, unless the card is waiting for the visitor's answer
        (then nothing changes). The review toggles come after the injected ``request`` and
        ``profile``, as in the form's run handler."""
        if _pending(pending) is not None:
            yield tuple(gr.skip() for _ in range(self.outputs))
            return
        args = (question, context, llm, api_key, sources, max_rounds, max_sources, orchestrator)
        async for out in self.run(*args, request, profile, review_plan, review_evidence):
            yield out

    def answer_clarification(
        self, pending: Any, context: str, *values: str
    ) -> tuple[Any, Any, str]:
        """*Continue*: hide the card and give the run's context with the answers (each
        question's own answer if typed, else its chosen one; neither: skipped)."""
        clarification = _pending(pending)
        if clarification is None:
            return gr.update(visible=False), None, context.strip()
        chosen, typed = values[:MAX_CLARIFYING_QUESTIONS], values[MAX_CLARIFYING_QUESTIONS:]
        answers = {
            q.element: (typed[n] or "").strip() or (chosen[n] or "")
            for n, q in enumerate(clarification.questions)
        }
        given = clarification.answer(answers)
        return gr.update(visible=False), None, clarified_context(context, given) or ""

    def skip_clarification(self) -> tuple[Any, Any]:
        """*Skip*: hide the card; the run goes on with the context as it is."""
        return gr.update(visible=False), None


def wire_clarify(
    card: ClarifyCard,
    handlers: ClarifyHandlers,
    triggers: list[Any],
    question: gr.Textbox,
    context: gr.Textbox,
    run_inputs: list[Any],
    run_outputs: list[Any],
) -> list[Any]:
    """Wire the card: each of ``triggers`` (*Research*, Enter) asks, then runs unless the card
    waits; *Continue* and *Skip* run. ``run_inputs`` are the session's choices after the
    question and its context (model and key first). Returns the events that run a run."""
    llm, api_key = run_inputs[0], run_inputs[1]
    runs: list[Any] = []
    for trigger in triggers:
        asked = trigger(
            handlers.clarify,
            [card.enabled, question, llm, api_key],
            card.shown(),
            api_visibility="private",
            concurrency_limit=None,
        )
        runs.append(
            asked.then(
                handlers.run_unless_asked,
                [card.pending, question, context, *run_inputs],
                run_outputs,
                api_visibility="private",
            )
        )
    answered = card.go.click(
        handlers.answer_clarification,
        [card.pending, context, *card.choices, *card.texts],
        [card.group, card.pending, card.answered],
        queue=False,
        api_visibility="private",
    )
    runs.append(
        answered.then(
            handlers.run,
            [question, card.answered, *run_inputs],
            run_outputs,
            api_visibility="private",
        )
    )
    skipped = card.skip.click(
        handlers.skip_clarification,
        None,
        [card.group, card.pending],
        queue=False,
        api_visibility="private",
    )
    runs.append(
        skipped.then(
            handlers.run, [question, context, *run_inputs], run_outputs, api_visibility="private"
        )
    )
    return runs
