"""Which sources can work from this server: the web app's default sources and the note next
to its *Sources* control.

The live sources' API roots are asked once, in a background thread (:class:`SourceCheck`),
by the one reachability check (:mod:`deepcritical.sources.reachability`: a short ``HEAD``,
nothing secret sent, any HTTP answer below 500 reachable). The local corpus is ticked
whenever one exists, live sources only when they answered (:func:`default_sources`); the
unreachable ones are named in the note (:func:`sources_note`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any

from deepcritical.config import Settings
from deepcritical.logs import get_logger
from deepcritical.models import SOURCE_LABELS
from deepcritical.sources.reachability import TIMEOUT, api_roots, probe

__all__ = ["Prober", "SourceCheck", "default_sources", "sources_note", "sources_on_md"]

log = get_logger(__name__)

Prober = Callable[[Mapping[str, str]], Coroutine[Any, Any, dict[str, bool]]]
"""Asks each ``name -> url`` and returns ``name -> reachable``."""


class SourceCheck:
    """The reachability of the live sources of ``settings``, asked once in a background
    thread (:meth:`start`, idempotent) and read with :meth:`wait`."""

    def __init__(self, settings: Settings, prober: Prober | None = None) -> None:
        self._roots = api_roots(settings)
        self._prober: Prober = prober or probe
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._started = False
        self._result: dict[str, bool] = {}

    def start(self) -> SourceCheck:
        """Start the check (once; later calls do nothing) and return ``self``."""
        with self._lock:
            if self._started:
                return self
            self._started = True
        threading.Thread(target=self._run, name="dc-source-check", daemon=True).start()
        return self

    def _run(self) -> None:
        try:
            self._result = asyncio.run(self._prober(self._roots))
        except Exception as exc:  # noqa: BLE001 - a failed check means "unreachable"
            log.warning("source reachability check failed", error=type(exc).__name__)
            self._result = dict.fromkeys(self._roots, False)
        finally:
            unreachable = sorted(n for n in self._roots if not self._result.get(n))
            if unreachable:
                log.info("sources unreachable from this server", sources=", ".join(unreachable))
            self._done.set()

    def wait(self, timeout: float) -> dict[str, bool] | None:
        """``name -> reachable`` once the check is done (starting it if needed), or ``None``
        when it is not done within ``timeout`` seconds."""
        self.start()
        if not self._done.wait(timeout):
            return None
        return dict(self._result)


def default_sources(
    configured: Sequence[str], reachable: Mapping[str, bool] | None, corpus_exists: bool
) -> list[str]:
    """The sources ticked by default: ``local`` when a corpus exists, then each live source of
    ``configured`` that answered the check (none while the check is not done); ``configured``
    itself when that leaves nothing (no corpus and no source answered)."""
    ticked = ["local"] if corpus_exists else []
    ticked += [s for s in configured if s != "local" and reachable and reachable.get(s)]
    return ticked or list(configured)


def _labels(names: Sequence[str]) -> str:
    return ", ".join(SOURCE_LABELS.get(n, n) for n in names)


def sources_note(reachable: Mapping[str, bool] | None, corpus_exists: bool) -> str:
    """The markdown note next to the *Sources* control: whether the local corpus exists and
    which live sources did not answer."""
    corpus = (
        "The local corpus is searched by default (the examples are answered from it)."
        if corpus_exists
        else "No local corpus on this server."
    )
    if reachable is None:
        return f"{corpus} Checking which live sources answer from this server…"
    down = [n for n, ok in reachable.items() if not ok]
    up = [n for n, ok in reachable.items() if ok]
    if not down:
        return f"{corpus} Live sources reachable: {_labels(up)}."
    note = (
        f"{corpus} **Unreachable from this server** (no answer within {TIMEOUT:g} s when "
        f"the app started): {_labels(down)}. They are left unticked; a run that searches "
        "them finds nothing there."
    )
    return note + (f" Reachable: {_labels(up)}." if up else "")


def sources_on_md(ticked: Sequence[str] | None) -> str:
    """The start page's line naming the sources a run will search (ticked in *Settings*):
    "**Searches:** Local corpus, PubMed (change them in Settings)"."""
    names = [SOURCE_LABELS.get(s, s) for s in ticked or []]
    shown = ", ".join(names) if names else "no source ticked: tick one in Settings"
    return f"**Searches:** {shown} (change them in Settings)"
