"""``deepcritical doctor``: probe what a run would use and say plainly what works.

Checks, in order (one table row each; exit code 1 when any check fails, else 0):

- the model endpoint (``--llm`` / ``DEEPCRITICAL_LLM``): for an openai-compatible server,
  reachable and the models it lists, the structured-output strategy that works
  (:func:`deepcritical.llm.probe.check_endpoint`), its context window and the completion
  tokens per second of a short call; OpenAI and Anthropic: whether the API key is set (no call);
- each live source in ``--sources``: reachable or not (one ``HEAD`` of its API root, 5 s; the
  web app's check, :mod:`deepcritical.sources.reachability`);
- the embedding paths this machine gets (:mod:`deepcritical.evidence.embedding_paths`: CPU
  model and flags, CUDA) and the run path's measured rate (:data:`RATE_TEXTS` texts of about
  250 word pieces embedded after a warm-up);
- the local corpus: its documents, the embedding model and the path it was built with (one
  text embedded), with the rate its last import recorded;
- the run database: opened (and migrated) and its runs counted.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Annotated, Literal

import typer
from rich.table import Table

from deepcritical.cli.context import out_console, settings_from_options
from deepcritical.config import ASSUMED_CONTEXT_TOKENS, Settings, redact_url

__all__ = ["doctor"]

Status = Literal["OK", "FAIL", "SKIP"]


@dataclass(frozen=True)
class Check:
    """One row of the doctor's table."""

    name: str
    status: Status
    detail: str


def _model_checks(settings: Settings) -> list[Check]:
    from deepcritical.llm.probe import check_endpoint  # model libraries: imported on use
    from deepcritical.llm.providers import ModelSpecError, parse_model_spec

    try:
        spec = parse_model_spec(settings.llm)
    except ModelSpecError as exc:
        return [Check("model endpoint", "FAIL", str(exc))]
    if spec.provider == "none":
        return [Check("model endpoint", "SKIP", "--llm none: extractive roles, no model")]
    if spec.provider in {"openai", "anthropic"}:
        key = settings.openai_api_key if spec.provider == "openai" else settings.anthropic_api_key
        status: Status = "OK" if key is not None else "FAIL"
        detail = "API key set (not called)" if key is not None else "no API key set"
        return [Check("model endpoint", status, f"{spec}: {detail}")]
    found = asyncio.run(check_endpoint(settings))
    if found.models is None:
        return [Check("model endpoint", "FAIL", f"{spec}: unreachable ({found.models_error})")]
    checks = [
        Check("model endpoint", "OK", f"{spec}: reachable; models: {', '.join(found.models)}")
    ]
    probe = found.probe
    if probe is not None and probe.strategy is not None:
        failed = {k: v for k, v in probe.tried.items() if v != "ok"}
        others = "; ".join(f"{k}: {v}" for k, v in failed.items())
        checks.append(
            Check("structured output", "OK", probe.strategy + (f" ({others})" if others else ""))
        )
    else:
        tried = "; ".join(f"{k}: {v}" for k, v in (probe.tried if probe else {}).items())
        checks.append(Check("structured output", "FAIL", f"no strategy validated ({tried})"))
    bound = settings.model_copy(update={"llm_context_tokens": found.context_tokens})
    answer = f"answers bounded to {bound.output_token_bound()} tokens"
    if found.context_tokens is not None:
        checks.append(Check("context window", "OK", f"{found.context_tokens} tokens; {answer}"))
    else:
        checks.append(
            Check(
                "context window",
                "SKIP",
                f"the server does not say: {ASSUMED_CONTEXT_TOKENS} tokens assumed, {answer}; "
                "set DEEPCRITICAL_LLM_CONTEXT_TOKENS",
            )
        )
    if found.tokens_per_second is not None:
        checks.append(
            Check("speed", "OK", f"{found.tokens_per_second:.1f} tokens/s (short structured call)")
        )
    return checks


async def _source_checks(settings: Settings) -> list[Check]:
    from deepcritical.sources.reachability import api_roots, probe_reasons

    roots = api_roots(settings, settings.sources)  # local has no root: left out
    problems = await probe_reasons(roots, seconds=5.0)
    checks: list[Check] = []
    for name, url in roots.items():
        problem = problems[name]
        if problem is None:
            checks.append(Check(f"source {name}", "OK", f"reachable: {redact_url(url)}"))
        else:
            checks.append(Check(f"source {name}", "FAIL", f"unreachable: {problem}"))
    return checks


RATE_TEXTS = 16
"""Abstract-length texts ``doctor`` embeds to measure the run path's rate."""
_RATE_TEXT = (
    "Metformin, a first-line treatment of type 2 diabetes, activates AMP-activated protein "
    "kinase and lowers hepatic glucose output; observational cohorts report fewer incident "
    "dementia diagnoses among its users. "
) * 5


def _embedding_check(settings: Settings) -> Check:
    import time

    from deepcritical.evidence.embedding_paths import detect_capabilities
    from deepcritical.evidence.embeddings import EmbeddingModelError, embedder_path
    from deepcritical.evidence.onnx_embeddings import machine_paths, run_embedder

    machine = detect_capabilities()
    choice = machine_paths(settings.embedding_backend)
    detail = (
        f"{machine.describe()} -> new corpora {choice.corpus}, runs {choice.run} ({choice.reason})"
    )
    try:
        embedder = run_embedder(settings.embedding_model, settings.embedding_backend)
        embedder.embed([_RATE_TEXT] * 2)  # loads and warms the model
        start = time.perf_counter()
        embedder.embed([_RATE_TEXT] * RATE_TEXTS)
        rate = RATE_TEXTS / (time.perf_counter() - start)
    except (EmbeddingModelError, OSError) as exc:
        return Check("embedding path", "FAIL", f"{detail}; run embedder: {exc}")
    used = embedder_path(embedder) or "?"
    return Check("embedding path", "OK", f"{detail}; {used} embeds {rate:.1f} abstracts/s")


def _corpus_check(settings: Settings) -> Check:
    from deepcritical.corpus.corpus_errors import CorpusError
    from deepcritical.corpus.embedding import corpus_embedder, describe_corpus_embedding
    from deepcritical.corpus.index import LocalCorpus
    from deepcritical.evidence.embeddings import EmbeddingModelError, embedder_name

    directory = settings.resolved_corpus_dir
    if not LocalCorpus.exists(directory):
        status: Status = "FAIL" if "local" in settings.sources else "SKIP"
        return Check("local corpus", status, f"no corpus in {directory}")
    try:
        embedder = corpus_embedder(settings, directory)
        embedder.embed(["doctor"])
        with LocalCorpus(directory, embedder, server_url=settings.corpus_server_url) as corpus:
            count = corpus.count()
    except (EmbeddingModelError, CorpusError, OSError) as exc:
        return Check("local corpus", "FAIL", f"{directory}: {exc}")
    return Check(
        "local corpus",
        "OK",
        f"{directory}: {count} documents; embedding model {embedder_name(embedder)}; "
        f"{describe_corpus_embedding(directory)}",
    )


def _database_check(settings: Settings) -> Check:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import SQLAlchemyError

    from deepcritical.state.db import database_url
    from deepcritical.state.run_store import RunStore

    shown = make_url(database_url(settings)).render_as_string(hide_password=True)
    try:
        store = RunStore.open(settings)
        try:
            runs = len(store.list_runs(limit=10_000))
        finally:
            store.close()
    except (SQLAlchemyError, OSError) as exc:
        return Check("run database", "FAIL", f"{shown}: {type(exc).__name__}")
    return Check("run database", "OK", f"{shown}: {runs} runs")


def doctor(
    llm: Annotated[
        str | None, typer.Option("--llm", help="Model spec to check (default: the settings').")
    ] = None,
    sources: Annotated[
        str | None,
        typer.Option("--sources", help="Comma-separated sources to check (default: settings)."),
    ] = None,
) -> None:
    """Check the model endpoint, the live sources, the local corpus and the run database;
    exit code 1 when a check fails."""
    overrides: dict[str, object] = {"llm": llm}
    if sources is not None:
        overrides["sources"] = sources
    settings = settings_from_options(**overrides)
    checks = _model_checks(settings)
    checks += asyncio.run(_source_checks(settings))
    checks.append(_embedding_check(settings))
    checks.append(_corpus_check(settings))
    checks.append(_database_check(settings))
    table = Table(title="deepcritical doctor")
    table.add_column("Check")
    table.add_column("Status")
    table.add_column("Detail")
    colours = {"OK": "green", "FAIL": "red", "SKIP": "yellow"}
    for check in checks:
        table.add_row(check.name, f"[{colours[check.status]}]{check.status}[/]", check.detail)
    out_console.print(table)
    if any(c.status == "FAIL" for c in checks):
        raise typer.Exit(1)
