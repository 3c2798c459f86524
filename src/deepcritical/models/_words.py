"""Run facts in plain words for people (the web app, the Markdown report, the command line):
why a run stopped, and counts with their nouns. No internal identifier reaches a reader."""

from __future__ import annotations

__all__ = ["STOP_REASON_TEXT", "error_text", "plural", "stop_reason_text"]

STOP_REASON_TEXT: dict[str, str] = {
    "sufficient": "the evidence was judged sufficient",
    "all_satisfied": "every checklist item was satisfied",
    "max_rounds": "all search rounds were used",
    "max_sources": "the evidence limit was reached",
    "time_budget": "the time budget ran out",
    "no_new_evidence": "no new evidence was found in the last round",
    "no_sources": "every source failed",
    "cancelled": "it was stopped",
    "error": "of an error",
    "manager_finished": "the research manager judged the request satisfied",
    "manager_round_limit": "the research manager reached its round limit",
    "manager_stalled": "the research manager stalled",
    "insufficient_evidence": "no on-topic evidence was found",
}
"""Each :data:`StopReason` as the words after "stopped because"."""


def stop_reason_text(reason: str | None) -> str:
    """ "stopped because no new evidence was found in the last round": a stop reason in
    plain words for people (the UI, the Markdown, the CLI); ``"not stopped"`` for none."""
    if reason is None:
        return "not stopped"
    return f"stopped because {STOP_REASON_TEXT.get(reason, reason.replace('_', ' '))}"


def plural(count: int, noun: str) -> str:
    """``"1 reference"``, ``"2 references"``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def error_text(exc: BaseException) -> str:
    """What went wrong, as a sentence for people: the error's own message (``"the question is
    empty"``), never its class name; a message-less error reads ``"an unexpected error
    (see the server log)"``."""
    message = " ".join(str(exc).split())
    return message if message else "an unexpected error (see the server log)"
