"""The one way both orchestrators stream a run's events: :class:`EventChannel`.

The run's steps emit events synchronously (:meth:`EventChannel.emit`, from anywhere in a step,
warnings included); at the end of each step the run publishes them
(:meth:`EventChannel.publish`), which hands them to the consumer and waits until the consumer
has taken every one: a step's events are recorded (checkpointed, shown) before the next step
starts, as the run's evidence store is not touched by the consumer and the steps at once.
:meth:`EventChannel.stream` runs the orchestrator's work as one task and yields its events;
when the consumer stops early or is cancelled, that task is cancelled and awaited, so no work
goes on behind a closed stream.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass

from deepcritical.events import ResearchEvent

__all__ = ["EventChannel"]


@dataclass
class _Closed:
    """The work ended: ``error`` is what it raised (``None``: it returned)."""

    error: Exception | None = None


class EventChannel:
    """The event stream of one run (see the module docstring).

    Outside :meth:`stream` (a run driven step by step, as tests do), published events stay in
    :attr:`pending` and :meth:`publish` does not wait.
    """

    def __init__(self) -> None:
        self.pending: list[ResearchEvent] = []
        self._queue: asyncio.Queue[ResearchEvent | _Closed] | None = None

    def emit(self, event: ResearchEvent) -> None:
        """Queue ``event``; the consumer gets it at the next :meth:`publish`."""
        self.pending.append(event)

    async def publish(self) -> None:
        """Hand the pending events to the consumer and wait until it has taken them all."""
        queue = self._queue
        if queue is None:
            return
        for event in self.pending:
            queue.put_nowait(event)
        self.pending.clear()
        await queue.join()

    async def stream(
        self, work: Callable[[], Awaitable[None]]
    ) -> AsyncGenerator[ResearchEvent, None]:
        """Run ``work()`` as one task and yield the events it emits, in order; every event
        left pending when it ends is yielded too.

        Raises:
            Exception: whatever ``work`` raised, after the events emitted before it.
        """
        queue: asyncio.Queue[ResearchEvent | _Closed] = asyncio.Queue()
        self._queue = queue

        async def drive() -> None:
            closed = _Closed()
            try:
                await work()
            except Exception as exc:  # noqa: BLE001 - handed to the consumer, raised there
                closed.error = exc
            for event in self.pending:
                queue.put_nowait(event)
            self.pending.clear()
            queue.put_nowait(closed)

        task = asyncio.create_task(drive(), name="deepcritical-run")
        end = _Closed()
        try:
            while True:
                item = await queue.get()
                if isinstance(item, _Closed):
                    end = item
                    break
                yield item
                queue.task_done()
        finally:
            if not task.done():
                task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            self._queue = None
        if end.error is not None:
            raise end.error
