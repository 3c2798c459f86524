"""The ``deepcritical`` command line (typer + rich).

``deepcritical corpus add FILE`` imports abstracts into the local corpus; ``deepcritical
research "QUESTION"`` runs a research question and writes the markdown report plus a JSON file
of the report, the plan and every evidence item.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from deepcritical.cli import serve as cli_serve
from deepcritical.config import Settings
from deepcritical.models import SOURCE_LABELS, ReportPreferences, RunResult

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

app = typer.Typer(
    name="deepcritical",
    help="Biomedical deep research with validated citations.",
    no_args_is_help=True,
    add_completion=False,
)
corpus_app = typer.Typer(help="Manage the local corpus of abstracts.", no_args_is_help=True)
app.add_typer(corpus_app, name="corpus")

console = Console(stderr=True)
out_console = Console()


class _Globals:
    data_dir: Path | None = None


def _configure_logging(verbose: bool) -> None:
    """Library warnings go to stderr only with --verbose (run events already report them)."""
    import logging

    import structlog

    level = logging.DEBUG if verbose else logging.ERROR
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    for noisy in ("bm25s", "chromadb", "httpx", "sentence_transformers", "transformers"):
        logging.getLogger(noisy).setLevel(logging.DEBUG if verbose else logging.WARNING)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(level))


def _settings(**overrides: Any) -> Settings:
    values = {k: v for k, v in overrides.items() if v is not None}
    if _Globals.data_dir is not None:
        values.setdefault("data_dir", _Globals.data_dir)
    try:
        return Settings(**values)
    except ValidationError as exc:
        msgs = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'settings'}: {e['msg']}" for e in exc.errors()
        )
        console.print(f"[red]Invalid settings:[/red] {msgs}")
        raise typer.Exit(2) from exc


def _fail(message: str, code: int = 1) -> typer.Exit:
    console.print(f"[red]Error:[/red] {message}")
    return typer.Exit(code)


@app.callback()
def _main(
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            help="Where the local corpus and run data live "
            "(default: $DEEPCRITICAL_DATA_DIR or ~/.local/share/deepcritical).",
        ),
    ] = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Show library log messages.")
    ] = False,
) -> None:
    _Globals.data_dir = data_dir
    _configure_logging(verbose)


@corpus_app.command("add")
def corpus_add(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="JSONL (PubMedQA format) or PubMed XML (.xml / .xml.gz) files.",
            exists=True,
            dir_okay=False,
            readable=True,
        ),
    ],
    corpus: Annotated[
        Path | None, typer.Option("--corpus", help="Corpus directory (default <data-dir>/corpus).")
    ] = None,
) -> None:
    """Import abstracts into the local corpus; records already there are skipped."""
    from deepcritical.corpus.index import LocalCorpus
    from deepcritical.corpus.readers import CorpusFormatError
    from deepcritical.evidence.embeddings import EmbeddingModelError, shared_embedder

    settings = _settings(corpus_dir=corpus)
    directory = settings.resolved_corpus_dir
    try:
        local = LocalCorpus(directory, shared_embedder(settings.embedding_model))
        for path in files:
            with console.status(f"Importing {path} (embedding abstracts)…"):
                result = local.add_file(path)
            console.print(
                f"[green]✓[/green] {path}: {result.read} records read, {result.added} added, "
                f"{result.skipped_existing} already in the corpus"
            )
        console.print(f"Corpus {directory}: {local.count()} documents")
    except (CorpusFormatError, EmbeddingModelError, OSError) as exc:
        raise _fail(str(exc)) from exc


@corpus_app.command("info")
def corpus_info(
    corpus: Annotated[
        Path | None, typer.Option("--corpus", help="Corpus directory (default <data-dir>/corpus).")
    ] = None,
) -> None:
    """Show how many documents the local corpus holds."""
    from deepcritical.corpus.index import LocalCorpus
    from deepcritical.evidence.embeddings import shared_embedder

    settings = _settings(corpus_dir=corpus)
    directory = settings.resolved_corpus_dir
    if not LocalCorpus.exists(directory):
        raise _fail(f"no corpus in {directory}: run `deepcritical corpus add FILE` first")
    local = LocalCorpus(directory, shared_embedder(settings.embedding_model))
    out_console.print(f"{directory}: {local.count()} documents")


@app.command()
def research(
    question: Annotated[str, typer.Argument(help="The research question.")],
    corpus: Annotated[
        Path | None,
        typer.Option(
            "--corpus",
            help="Search this local corpus directory (alone, unless --sources adds others).",
        ),
    ] = None,
    llm: Annotated[
        str | None,
        typer.Option(
            "--llm",
            help="none | openai:MODEL | anthropic:MODEL | openai-compatible:MODEL@BASE_URL.",
        ),
    ] = None,
    sources: Annotated[
        str | None,
        typer.Option(
            "--sources",
            help="Comma list of pubmed,trials,europepmc,openalex,web,local "
            "(default: local when a corpus exists, plus the live sources).",
        ),
    ] = None,
    max_rounds: Annotated[int | None, typer.Option("--max-rounds", min=1, max=20)] = None,
    max_sources: Annotated[
        int | None, typer.Option("--max-sources", min=1, help="Stop gathering at this many items.")
    ] = None,
    time_budget: Annotated[
        float | None, typer.Option("--time-budget", help="Seconds for gathering evidence.")
    ] = None,
    orchestrator: Annotated[
        str | None,
        typer.Option(
            "--orchestrator",
            help="iterative (deterministic loop; default, works with --llm none) or magentic "
            "(an LLM manager picks the next agent; needs --llm).",
        ),
    ] = None,
    context: Annotated[
        str | None, typer.Option("--context", help="Background for the planner.")
    ] = None,
    audience: Annotated[
        str | None,
        typer.Option("--audience", help="Who reads the report, e.g. 'clinicians'."),
    ] = None,
    length: Annotated[
        str | None,
        typer.Option("--length", help="Report length: brief | standard | detailed."),
    ] = None,
    focus: Annotated[
        str | None,
        typer.Option("--focus", help="An aspect the report should emphasise."),
    ] = None,
    out: Annotated[
        Path, typer.Option("--out", help="Markdown report path; JSON goes next to it (.json).")
    ] = Path("report.md"),
    syllabus_file: Annotated[
        Path | None,
        typer.Option(
            "--syllabus",
            help="YAML/JSON syllabus whose questions replace the planner's checklist "
            "(e.g. syllabi/drug_profile.yaml).",
        ),
    ] = None,
) -> None:
    """Research QUESTION and write a validated report (markdown + JSON).

    The run is recorded (its id is printed first): `deepcritical runs resume ID` continues it
    if it is interrupted."""
    from deepcritical.corpus.index import LocalCorpus
    from deepcritical.state import Syllabus, SyllabusError

    _check_out_path(out)
    syllabus = None
    if syllabus_file is not None:
        try:
            syllabus = Syllabus.from_file(syllabus_file)
        except SyllabusError as exc:
            raise _fail(str(exc), 2) from exc
    preferences = _preferences(audience, length, focus)
    source_list: list[str] | None = None
    if sources is not None:
        source_list = [s.strip() for s in sources.split(",") if s.strip()]
    settings = _settings(
        llm=llm,
        max_rounds=max_rounds,
        max_sources=max_sources,
        time_budget_seconds=time_budget,
        orchestrator=orchestrator.strip().lower() if orchestrator else None,
        corpus_dir=corpus,
        sources=source_list,
    )
    if source_list is None:
        if corpus is not None:
            chosen = ["local"]
        else:
            has_corpus = LocalCorpus.exists(settings.resolved_corpus_dir)
            chosen = (["local"] if has_corpus else []) + [
                s for s in settings.sources if s != "local"
            ]
        settings = settings.model_copy(update={"sources": chosen})
    if "local" in settings.sources and not LocalCorpus.exists(settings.resolved_corpus_dir):
        raise _fail(
            f"no local corpus in {settings.resolved_corpus_dir}: "
            "run `deepcritical corpus add FILE` first",
            2,
        )
    try:
        code, result = asyncio.run(
            _run_research(question, settings, context, syllabus, preferences)
        )
    except KeyboardInterrupt:
        console.print("[yellow]Interrupted.[/yellow]")
        raise typer.Exit(130) from None
    if result is not None:
        _write_outputs(result, out)
    raise typer.Exit(code)


def _write_outputs(result: RunResult, out: Path) -> None:
    """Write the markdown report to ``out`` and the JSON next to it; print the summary."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(result.report.to_markdown(), encoding="utf-8")
    json_path = out.with_suffix(".json")
    json_path.write_text(result.to_json(), encoding="utf-8")
    _print_summary(result, out, json_path)
    _print_usage(result)


def _check_out_path(out: Path) -> None:
    """Refuse, before any work, an --out the report could not be written to."""
    if out.suffix.lower() == ".json":
        raise _fail(
            f"--out {out}: give the markdown path (e.g. report.md); the JSON is written next "
            "to it with the suffix .json",
            2,
        )
    if out.exists() and out.is_dir():
        raise _fail(f"--out {out} is a directory; give a file path such as {out}/report.md", 2)
    parent = out.parent
    for ancestor in [parent, *parent.parents]:
        if ancestor.exists():
            if not ancestor.is_dir():
                raise _fail(f"--out {out}: {ancestor} is a file, not a directory", 2)
            if not os.access(ancestor, os.W_OK):
                raise _fail(f"--out {out}: {ancestor} is not writable", 2)
            break


def _preferences(
    audience: str | None, length: str | None, focus: str | None
) -> ReportPreferences | None:
    """The report preferences of the --audience/--length/--focus options (``None`` when none
    is given); exits with code 2 on a bad --length."""
    if audience is None and length is None and focus is None:
        return None
    choice = (length or "standard").strip().lower()
    if choice not in ("brief", "standard", "detailed"):
        raise _fail(f"--length {length}: choose brief, standard or detailed", 2)
    try:
        return ReportPreferences(audience=audience or "", length=choice, focus=focus or "")
    except ValueError as exc:
        raise _fail(f"report preferences: {exc}", 2) from None


async def _run_research(
    question: str,
    settings: Settings,
    context: str | None,
    syllabus: Any = None,
    preferences: ReportPreferences | None = None,
) -> tuple[int, RunResult | None]:
    from deepcritical.api import research as run_research
    from deepcritical.llm.providers import ModelSpecError
    from deepcritical.orchestrators.deps import QuestionError

    return await _consume(
        lambda: run_research(
            question, settings, context=context, syllabus=syllabus, preferences=preferences
        ),
        extra_errors=(QuestionError, ModelSpecError),
    )


async def _consume(
    start: Callable[[], AsyncIterator[Any]], extra_errors: tuple[type[Exception], ...]
) -> tuple[int, RunResult | None]:
    """Print the events of ``start()``; (exit code, result). ``extra_errors`` exit with 2."""
    result: RunResult | None = None
    try:
        with console.status("Starting…") as status:
            async for event in start():
                status.update(f"[bold]{event.type}[/bold]: {event.message[:100]}")
                _print_event(event)
                if event.type == "started" and event.data.get("run_id"):
                    run_id = event.data["run_id"]
                    console.print(
                        f"{'run id':>16} {run_id} (resume: deepcritical runs resume {run_id})"
                    )
                if event.type == "done":
                    result = event.result
                elif event.type == "error":
                    return 1, None
    except extra_errors as exc:
        console.print(f"[red]Error:[/red] {exc}")
        return 2, None
    if result is None:
        console.print("[red]Error:[/red] the run ended without a report")
        return 1, None
    return 0, result


_STYLE = {"warning": "yellow", "error": "red", "done": "green"}


def _print_event(event: Any) -> None:
    if event.type in {"report_section"}:
        return
    style = _STYLE.get(event.type, "cyan")
    prefix = f"[round {event.round}] " if event.round else ""
    console.print(f"[{style}]{event.type:>16}[/{style}] {prefix}{event.message}")
    if event.type == "searching":
        for q in event.data.get("queries", []):
            console.print(f"{'':>17} · {q}")


def _print_summary(result: RunResult, md_path: Path, json_path: Path) -> None:
    report = result.report
    meta = report.metadata
    table = Table(title="Run summary", show_header=False)
    table.add_row("Report", str(md_path))
    table.add_row("JSON (report + evidence)", str(json_path))
    table.add_row("Evidence items", str(meta.papers_reviewed))
    table.add_row("References", str(len(report.references)))
    table.add_row("Rounds", str(meta.iterations))
    table.add_row("Checklist coverage", f"{meta.checklist_coverage:.0%}")
    table.add_row("Stopped because", str(meta.stop_reason))
    cv = meta.citation_validation
    table.add_row(
        "Citation check",
        f"{cv.references_checked} refs / {cv.markers_checked} citations checked; "
        f"removed {cv.references_removed} refs, {cv.markers_removed} citations, "
        f"{cv.sentences_removed} sentences"
        + (
            f"; the writer itself dropped {cv.writer_markers_removed} citations of sources it "
            f"was not shown and {cv.writer_sentences_removed} sentences"
            if cv.writer_markers_removed or cv.writer_sentences_removed
            else ""
        ),
    )
    table.add_row("Time", f"{meta.duration_seconds:.1f} s")
    console.print(table)


def _print_usage(result: RunResult) -> None:
    """The run's usage accounting: LLM requests and tokens per agent, search calls per source,
    wall time per stage."""
    usage = result.report.metadata.usage
    table = Table(title="Usage")
    table.add_column("What")
    table.add_column("Requests / calls", justify="right")
    table.add_column("Input tokens", justify="right")
    table.add_column("Output tokens", justify="right")
    for role, used in usage.llm.items():
        failed = f" ({used.failures} failed)" if used.failures else ""
        table.add_row(
            f"LLM {role}",
            f"{used.requests}{failed}",
            str(used.input_tokens),
            str(used.output_tokens),
        )
    total = usage.llm_total
    table.add_row(
        "LLM total", str(total.requests), str(total.input_tokens), str(total.output_tokens)
    )
    for source, calls in usage.search.items():
        failed = f" ({calls.failed_calls} failed)" if calls.failed_calls else ""
        table.add_row(
            f"search {SOURCE_LABELS.get(source, source)}",
            f"{calls.calls}{failed}",
            f"{calls.results} results",
            "",
        )
    console.print(table)
    if usage.stage_seconds:
        stages = " · ".join(f"{stage} {sec:.1f} s" for stage, sec in usage.stage_seconds.items())
        console.print(f"Time per stage: {stages}")


from deepcritical.cli.runs import runs_app  # noqa: E402 - needs the helpers above

app.add_typer(runs_app, name="runs")
app.command("serve")(cli_serve.serve)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:  # pragma: no cover - interactive
        sys.exit(130)
