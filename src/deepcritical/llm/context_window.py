"""Fit a prompt into the model's context window.

Token counts are estimated, not tokenised: :func:`estimate_tokens` charges one token per
3 characters, more than the ~4 characters per token of English text under BPE tokenisers, so
the estimate errs towards "too long". :data:`ANSWER_RESERVE_TOKENS` is kept free for the
answer (and the output schema or tool definition the provider adds).

:func:`fit_prompt` trims the evidence first: fenced source blocks
(:mod:`deepcritical.llm.fencing`) are dropped from the end of the prompt (prompt builders list
the best-ranked evidence first) until the prompt fits. A prompt that still does not fit raises
:class:`ContextWindowError`, which names the setting to change, so the provider never answers
HTTP 400 for a prompt we could have measured.
"""

from __future__ import annotations

import re

__all__ = [
    "ANSWER_RESERVE_TOKENS",
    "CONTEXT_SETTING",
    "ContextWindowError",
    "estimate_tokens",
    "fit_prompt",
]

ANSWER_RESERVE_TOKENS = 768
"""Tokens of the context window kept for the answer and the provider's schema/tool text."""

CHARS_PER_TOKEN = 3.0
"""Characters per token assumed by :func:`estimate_tokens` (conservative: real text ~4)."""

CONTEXT_SETTING = "DEEPCRITICAL_LLM_CONTEXT_TOKENS"
"""The environment variable of ``Settings.llm_context_tokens``, named in errors."""

_SOURCE_BLOCK = re.compile(
    r'<source id="[^"]+" nonce="([0-9a-fA-F]+)">\n.*?\n</source \1>\n?', re.DOTALL
)


class ContextWindowError(ValueError):
    """A prompt does not fit the model's context window even with its evidence trimmed."""


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text`` (``ceil(len / 3)``; see the module docstring)."""
    return -(-len(text) // int(CHARS_PER_TOKEN))


def fit_prompt(
    instructions: str,
    prompt: str,
    context_tokens: int | None,
    answer_tokens: int = ANSWER_RESERVE_TOKENS,
) -> tuple[str, int]:
    """``(prompt, dropped)``: ``prompt`` with its last fenced source blocks removed until
    ``instructions`` + ``prompt`` + the answer's room fit ``context_tokens``; the room is
    ``answer_tokens`` (the call's ``max_tokens``), at least :data:`ANSWER_RESERVE_TOKENS`;
    ``dropped`` is how many blocks went. ``context_tokens=None``: unchanged.

    Raises:
        ContextWindowError: it does not fit with every source block removed.
    """
    if context_tokens is None:
        return prompt, 0
    reserve = max(ANSWER_RESERVE_TOKENS, answer_tokens)
    budget = context_tokens - reserve - estimate_tokens(instructions)
    if estimate_tokens(prompt) <= budget:
        return prompt, 0
    blocks = list(_SOURCE_BLOCK.finditer(prompt))
    fitted = prompt
    for dropped, block in enumerate(reversed(blocks), start=1):
        fitted = fitted[: block.start()] + fitted[block.end() :]
        if estimate_tokens(fitted) <= budget and dropped < len(blocks):
            return fitted, dropped
    needed = estimate_tokens(instructions) + estimate_tokens(fitted) + reserve
    raise ContextWindowError(
        f"the prompt needs about {needed} tokens even with its evidence trimmed, more than the "
        f"model's context window of {context_tokens} tokens: serve the model with a larger "
        f"context (e.g. llama.cpp --ctx-size / --n_ctx) and set {CONTEXT_SETTING}, or lower "
        "the evidence per prompt (DEEPCRITICAL_REPORT_MAX_EVIDENCE, "
        "DEEPCRITICAL_MAX_EVIDENCE_CHARS)"
    )
