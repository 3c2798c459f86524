"""``deepcritical corpus add FILE...`` and ``deepcritical corpus info``: the local corpus of
abstracts (default ``<data-dir>/corpus``) that the ``local`` source searches."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from deepcritical.cli.context import console, fail, out_console, settings_from_options
from deepcritical.config import Settings

if TYPE_CHECKING:
    from deepcritical.corpus.index import LocalCorpus
    from deepcritical.corpus.ingest import ImportResult

__all__ = ["corpus_app"]

corpus_app = typer.Typer(help="Manage the local corpus of abstracts.", no_args_is_help=True)

CorpusDir = Annotated[
    Path | None, typer.Option("--corpus", help="Corpus directory (default <data-dir>/corpus).")
]


class RateColumn(ProgressColumn):
    """Records imported per second (rich's running estimate over the last batches)."""

    def render(self, task: Task) -> Text:
        """``"123 records/s"``, or ``"– records/s"`` before the first batch."""
        speed = task.speed
        return Text(f"{speed:,.0f} records/s" if speed else "– records/s", style="cyan")


def _progress_bar() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )


@corpus_app.command("add")
def corpus_add(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="JSONL (PubMedQA format), PubMed XML (.xml / .xml.gz, baseline and update "
            "files) or JATS full-text (.nxml / .xml) files, directories of them, or quoted "
            "glob patterns ('baseline/*.xml.gz'); a directory's or pattern's files are "
            "imported in name order.",
        ),
    ],
    corpus: CorpusDir = None,
    skip_bad_lines: Annotated[
        bool,
        typer.Option(
            "--skip-bad-lines",
            help="JSONL: import the good lines of a file with bad ones, and list the line "
            "numbers skipped (default: a bad line imports nothing from its file).",
        ),
    ] = False,
) -> None:
    """Import abstracts and full texts into the local corpus; records already there are
    skipped. A JATS article (PMC / Europe PMC XML) is one document whose passages are
    searched one by one. PubMed XML is streamed: newer versions of a PMID replace the
    stored record, DeleteCitation removes records, and an import that was stopped resumes
    where it stopped when run again.

    A record over DEEPCRITICAL_MAX_RECORD_CHARS characters (default 200,000) is cut at a
    sentence or word boundary; control characters are removed."""
    from deepcritical.corpus.index import CorpusMismatchError
    from deepcritical.corpus.readers import CorpusFormatError, corpus_file_kind, corpus_files
    from deepcritical.evidence.embeddings import EmbeddingModelError

    settings = settings_from_options(corpus_dir=corpus)
    directory = settings.resolved_corpus_dir
    try:
        paths = corpus_files(files)
    except FileNotFoundError as exc:
        raise fail(str(exc), code=2) from exc
    except CorpusFormatError as exc:
        raise fail(str(exc)) from exc
    try:
        local = _open_corpus(settings)
        for path in paths:
            with _progress_bar() as bar:
                task = bar.add_task(f"Importing {path.name}", total=None)

                def advance(
                    done: int, total: int, task_id: TaskID = task, shown: Progress = bar
                ) -> None:
                    shown.update(task_id, completed=done, total=total)

                result = local.add_file(
                    path,
                    max_record_chars=settings.max_record_chars,
                    skip_bad_lines=skip_bad_lines,
                    progress=advance,
                )
            _report(path, result, settings.max_record_chars)
        console.print(f"Corpus {directory}: {local.count()} documents")
    except CorpusFormatError as exc:
        hint = ""
        if exc.line is not None and not skip_bad_lines and corpus_file_kind(exc.path) == "jsonl":
            hint = " (nothing was imported from it; --skip-bad-lines imports the other lines)"
        raise fail(f"{exc}{hint}") from exc
    except (EmbeddingModelError, CorpusMismatchError, OSError) as exc:
        raise fail(str(exc)) from exc


def _report(path: Path, result: ImportResult, max_record_chars: int) -> None:
    """Print what importing one file did."""
    if result.already_imported:
        console.print(f"[green]✓[/green] {path}: already imported (same content), skipped")
        return
    changes = [f"{result.read} records read", f"{result.added} added"]
    if result.replaced:
        changes.append(f"{result.replaced} replaced by a newer version")
    if result.deleted:
        changes.append(f"{result.deleted} deleted")
    changes.append(f"{result.skipped_existing} already in the corpus")
    resumed = f" (resumed after {result.resumed_from:,} items)" if result.resumed_from else ""
    console.print(f"[green]✓[/green] {path}{resumed}: {', '.join(changes)}")
    if result.truncated:
        console.print(
            f"[yellow]Warning:[/yellow] {path}: {result.truncated} record(s) over "
            f"{max_record_chars:,} characters truncated (DEEPCRITICAL_MAX_RECORD_CHARS)"
        )
    if result.bad_lines:
        console.print(
            f"[yellow]Warning:[/yellow] {path}: skipped {len(result.bad_lines)} bad "
            f"line(s): {_line_list(result.bad_lines)}"
        )


@corpus_app.command("info")
def corpus_info(corpus: CorpusDir = None) -> None:
    """Show how many documents the local corpus holds, its dense index, the embedding path it
    was built with and the embedding rate its last import measured."""
    from deepcritical.corpus.dense import DENSE_KINDS
    from deepcritical.corpus.embedding import describe_corpus_embedding
    from deepcritical.corpus.index import LocalCorpus

    settings = settings_from_options(corpus_dir=corpus)
    directory = settings.resolved_corpus_dir
    if not LocalCorpus.exists(directory):
        raise fail(f"no corpus in {directory}: run `deepcritical corpus add FILE` first")
    with _open_corpus(settings) as local:
        out_console.print(f"{directory}: {local.count()} documents")
        out_console.print(f"dense index {local.dense_kind} ({DENSE_KINDS[local.dense_kind]})")
    out_console.print(describe_corpus_embedding(directory))


def _line_list(lines: Sequence[int], shown: int = 20) -> str:
    """``"2, 5, 9"``: the first ``shown`` line numbers, then how many more there are."""
    text = ", ".join(str(n) for n in lines[:shown])
    return f"{text} and {len(lines) - shown} more" if len(lines) > shown else text


def _open_corpus(settings: Settings) -> LocalCorpus:
    """The corpus at ``settings.resolved_corpus_dir`` with the settings' embedding model and
    backend (:func:`~deepcritical.corpus.embedding.corpus_embedder`; the torch model loads on
    first use, :class:`EmbeddingModelError` when it cannot be)."""
    from deepcritical.corpus.embedding import corpus_embedder
    from deepcritical.corpus.index import LocalCorpus

    directory, url = settings.resolved_corpus_dir, settings.corpus_server_url
    return LocalCorpus(directory, corpus_embedder(settings), server_url=url)
