"""Prompt size of a source-gathering agent against the number of saved sources.

For 10, 100, 1,000 and 2,000 sources saved across the six questions of
``syllabi/drug_profile.yaml`` (SQLite file in a temporary directory), a pydantic-ai agent with
the source tools (:func:`deepcritical.agents.source_tools.source_toolset`) and a scripted
``FunctionModel`` saves one more source, asks for progress and checks completion; the benchmark
measures what the model is shown on its last turn: instructions, user prompt, tool definitions,
tool calls and tool answers.

Tokens are estimated as ``ceil(characters / 4)`` (the usual rule of thumb for English text with
GPT-style BPE tokenizers; no tokenizer is downloaded).
Run: ``python -m benchmarks.bench_state_prompt``.
"""

from __future__ import annotations

import json
import math
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from deepcritical.agents.source_tools import GATHERING_INSTRUCTIONS, source_toolset
from deepcritical.state.run_store import RunStore
from deepcritical.state.sources import SourceCollector
from deepcritical.state.syllabus import Syllabus

ROOT = Path(__file__).resolve().parents[1]
SYLLABUS = ROOT / "syllabi" / "drug_profile.yaml"
SIZES = (10, 100, 1000, 2000)


@dataclass
class PromptMeasure:
    """What the gathering agent saw on its last turn with ``sources`` saved."""

    sources: int
    prompt_chars: int
    tool_answers: list[str]

    @property
    def prompt_tokens(self) -> int:
        """Estimated tokens: ceil(characters / 4)."""
        return math.ceil(self.prompt_chars / 4)


def fill(collector: SourceCollector, n: int) -> None:
    """Save ``n`` sources, each assigned to one or two of the syllabus questions, in batches."""
    keys = collector.syllabus.keys if collector.syllabus else []
    for start in range(0, n, 500):

        def batch(session: Any, start: int = start) -> None:
            for i in range(start, min(start + 500, n)):
                questions = [keys[i % len(keys)]] + ([keys[(i + 1) % len(keys)]] if i % 3 else [])
                collector.save_in(
                    session,
                    "pubmed",
                    str(10_000_000 + i),
                    f"https://pubmed.ncbi.nlm.nih.gov/{10_000_000 + i}/",
                    f"Synthetic record {i} on the drug",
                    questions,
                    [f"Key finding number {i} about the drug."],
                )

        collector.runs.transact(batch)


def measure(collector: SourceCollector) -> PromptMeasure:
    """Run the scripted gathering agent once on ``collector``; measure its last prompt."""
    seen: list[str] = []

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(
                parts=[
                    ToolCallPart(
                        "save_source",
                        {
                            "source_type": "trials",
                            "external_id": "NCT09999999",
                            "url": "https://clinicaltrials.gov/study/NCT09999999",
                            "title": "A trial of the drug",
                            "relevant_questions": ["clinical.efficacy", "clinical.safety"],
                            "key_excerpts": ["The primary endpoint was met."],
                        },
                    ),
                    ToolCallPart("get_progress", {}),
                    ToolCallPart("check_completion", {}),
                ]
            )
        tools = json.dumps([t.__dict__ for t in info.function_tools], default=str)
        parts = [info.instructions or "", tools]
        for message in messages:
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    seen.append(str(part.content))
                    parts.append(str(part.content))
                elif isinstance(part, ToolCallPart):
                    parts.append(part.args_as_json_str())
                elif isinstance(message, ModelRequest):
                    parts.append(str(getattr(part, "content", "")))
        seen.append(str(sum(len(p) for p in parts)))
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(
        FunctionModel(script),
        instructions=GATHERING_INSTRUCTIONS,
        toolsets=[source_toolset(collector)],
    )
    agent.run_sync("Collect sources for the drug profile of drug X.")
    chars = int(seen.pop())
    return PromptMeasure(0, chars, seen)


def run_size(n: int, directory: Path) -> PromptMeasure:
    """Fill a fresh database with ``n`` sources and measure the agent's prompt."""
    runs = RunStore.open_url(f"sqlite:///{directory / f'bench_{n}.db'}")
    try:
        syllabus = Syllabus.from_file(SYLLABUS)
        run_id = runs.create_run("Profile of drug X", {}, syllabus=syllabus)
        collector = SourceCollector(runs, run_id, syllabus)
        fill(collector, n)
        result = measure(collector)
        result.sources = n
        return result
    finally:
        runs.close()


def main() -> None:
    """Print prompt characters and estimated tokens per number of saved sources."""
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'sources':>8} {'prompt chars':>13} {'~tokens':>8} {'longest tool answer':>20}")
        for n in SIZES:
            m = run_size(n, Path(tmp))
            longest = max(len(a) for a in m.tool_answers)
            print(f"{n:>8} {m.prompt_chars:>13} {m.prompt_tokens:>8} {longest:>20}")


if __name__ == "__main__":
    main()
