"""End-to-end research benchmark on PubMedQA: citations, grounding, answers, cost.

Run: ``.venv/bin/python -m benchmarks.bench_pubmedqa [--n N] [--halves tuning,test]
[--scripted | --scripted-only] [--llm MODEL [--orchestrator iterative|magentic]]
[--arms full,withheld] [--details FILE] [--write-accuracy] [--calibrate]``.

``--llm MODEL`` runs the same questions through any model the CLI accepts (its key from the
environment), printed next to the offline arm with the same figures, tokens per report
included: how a capable model compares, measured by whoever can reach one.

Data: ``../shared/data/pubmedqa`` (1000 abstracts without titles; 500 dev questions, each
written from one "gold" abstract, with a yes/no/maybe answer; PubMedQA, Jin et al. 2019, MIT
licence). Exits 0 with a message when the data is absent. The whole corpus is imported once
into a temporary data directory, as ``deepcritical corpus add`` does (the default corpus
embedder).

The dev questions are split once, at random, into a tuning half and a test half
(``benchmarks/verdict_split.json``, :mod:`benchmarks.verdict_split`): rules that read
conclusions are tuned on the first only. Each half is run and reported apart (``--n N``: its
first N questions); the targets are printed for the test half, and the tuning half's figures
beside them without targets. ``--details FILE`` writes the tuning half's outcomes, one JSON
line per question (never the test half's); ``--write-accuracy`` writes the test half's
verdict figures (all 250 questions, extractive, full corpus) to
``src/deepcritical/report/verdict_accuracy.json``, which the answer card shows.

Two arms (``--arms``, default both), each with its own corpus in its own data directory:

- ``full``: the 1000 abstracts; each question's gold abstract answers it.
- ``withheld`` (gold withheld): the corpus minus the gold abstracts of the N questions run, so
  nothing in it answers them; a good report abstains (see below).

In each arm, for each question run, every configuration runs
``deepcritical.api.research(question, Settings(llm="none", sources=["local"], data_dir=<tmp>,
max_rounds=2), embedder=run_embedder())`` (the embedder the command line uses); the run
grounds its own report (``Settings.grounding``, default threshold), so the figures are those
of the report a user gets. Configurations:

- ``extractive``: no model (``--llm none``).
- ``scripted`` (``--scripted``): a pydantic-ai ``FunctionModel`` plays every LLM role
  (:mod:`benchmarks.misattributing_script`). Its
  writer quotes one sentence of each source it is shown and cites every second quote with the
  id of *another* shown source of the same section (a misattributed citation to a real,
  retrieved, on-topic paper: the hardest case for grounding); its outline splits the sources
  shown into two sections; its search agent screens each round through the source tools
  (``save_source`` for every record whose text names the question's key terms, then
  ``get_progress`` and ``check_completion``; the others are off-topic). It measures the LLM
  path, screening and grounding against a known truth, not the quality of a language model.

Printed per configuration (means over questions):

- gold retrieved: the gold abstract is among the run's evidence;
- gold cited: the gold abstract is among the report's references, before grounding (the
  final references plus those grounding removed) / after grounding (the final report);
- references (before / after grounding);
- grounding score: share of cited sentences supported by a passage of a cited source;
  sentences and citations removed by grounding;
- answer agreement, verdict stated in the report: PubMedQA questions are yes/no questions,
  so the report states a verdict (``metadata.verdict``: yes / no / uncertain; yes/no only
  when the relevant sources' stances on the first hypothesis are decisive, see
  :mod:`deepcritical.report.sections`); "uncertain" is compared with "maybe".
  The always-"yes" baseline is printed next to the hypothesis-stance proxy (more supporting
  than contradicting items -> "yes", more contradicting -> "no", otherwise "maybe"). For the
  extractive hypothesis generator an item's stance is read from cue words in its
  conclusions (:mod:`deepcritical.evidence.stance`, calibrated by ``benchmarks/fit_stance``),
  so this measures cue words, not understanding (the scripted hypothesis always has two
  supporting ids and one contradicting, so its verdict says nothing: ignore it);
- wall time per question (research, of which grounding), and prompt tokens per run (0
  without a model; the scripted model's counts are pydantic-ai's estimates).

Then, next to its target (issues 12 and 28; the targets are for the extractive arm on the
test half, offline, and are printed for the scripted arm too):

- gold cited: the gold abstract is among the final report's references (>= 95%);
- off-topic references per report: final references other than the gold abstract (the
  corpus covers unrelated topics), mean (<= 0.5) and median (0);
- verdict precision: share right among the reports stating "yes" or "no" (against the
  PubMedQA gold ``final_decision``; a stated yes/no on a "maybe" question is wrong), >= 85%;
  verdict coverage: share of reports stating "yes" or "no", >= 30%;
- median wall time per run (< 10 s).

In the gold-withheld arm: the abstention rate (>= 90%), the share of reports that abstain:
they state that the sources hold no evidence
(:func:`~benchmarks.pubmedqa_outcomes.states_no_evidence`), cite at most one
source and state no yes/no verdict (``metadata.verdict`` None or "uncertain"); with each
condition's count, the off-topic references and the median wall time.

``--calibrate`` instead measures, on all 500 dev questions, the cosine similarities that set
:data:`deepcritical.report.grounding.DEFAULT_THRESHOLD` (takes a few minutes): a verbatim
quote against its abstract; a paraphrase written by the authors (the question turned into a
claim) against its own abstract and against the most similar other abstract (a real but
irrelevant source); the first sentence of the conclusions against the rest of its own
abstract (results and methods) and against the most similar other abstract.

The modules: this one is the command line; :mod:`benchmarks.pubmedqa_outcomes` runs one
question (:func:`~benchmarks.pubmedqa_outcomes.run_one`); :mod:`benchmarks.pubmedqa_figures`
scores and prints the outcomes; :mod:`benchmarks.misattributing_script` is the scripted model;
:mod:`benchmarks.grounding_calibration` is ``--calibrate``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.offline import use_offline_environment
from benchmarks.pubmedqa_data import (
    DEFAULT_DATA,
    corpus_lines_without,
    pubmedqa_files,
    read_dev_questions,
)
from benchmarks.pubmedqa_figures import (
    report_configuration,
    report_withheld,
    target_figures,
    write_accuracy,
    write_details,
)
from benchmarks.pubmedqa_outcomes import Outcome, run_one
from benchmarks.verdict_split import HALVES, Half, questions_of

if TYPE_CHECKING:
    from benchmarks.misattributing_script import MisattributingScript

ARMS = ("full", "withheld")

Configuration = tuple[str, "MisattributingScript | None", str | None]
"""``(name, scripted model, --llm spec)`` of one configuration run in each arm."""


def parse_arms(value: str) -> tuple[str, ...]:
    """The arms named in a comma-separated ``--arms`` value, in :data:`ARMS` order.

    Raises:
        argparse.ArgumentTypeError: an unknown or no arm.
    """
    names = {part.strip() for part in value.split(",") if part.strip()}
    unknown = names - set(ARMS)
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"arms are a comma-separated subset of {', '.join(ARMS)}; got {value!r}"
        )
    return tuple(arm for arm in ARMS if arm in names)


def _parser() -> argparse.ArgumentParser:
    """The benchmark's command line."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="PubMedQA directory")
    parser.add_argument(
        "--n", type=int, default=0, help="first N questions of each half (default: all 250)"
    )
    parser.add_argument(
        "--halves",
        default="tuning,test",
        help="comma-separated halves of the dev questions (benchmarks/verdict_split.json):"
        " tuning, test; default both (the targets are for the test half)",
    )
    parser.add_argument("--rounds", type=int, default=2, help="max search rounds (default 2)")
    parser.add_argument("--scripted", action="store_true", help="also run the scripted LLM")
    parser.add_argument(
        "--scripted-only", action="store_true", help="run the scripted LLM only (no extractive)"
    )
    parser.add_argument(
        "--arms",
        type=parse_arms,
        default=ARMS,
        help="comma-separated arms: full (the whole corpus), withheld (the corpus minus the"
        " gold abstracts of the questions run); default full,withheld",
    )
    parser.add_argument(
        "--calibrate", action="store_true", help="measure the grounding threshold instead"
    )
    parser.add_argument(
        "--llm",
        help="also run the questions through this model (any value --llm of the CLI takes:"
        " openai:gpt-4o, anthropic:..., openai-compatible:MODEL@URL); its API key from the"
        " environment, as for the CLI",
    )
    parser.add_argument(
        "--orchestrator",
        choices=["iterative", "magentic"],
        default="iterative",
        help="the orchestrator of the --llm runs (default iterative)",
    )
    parser.add_argument(
        "--details",
        type=Path,
        help="write the tuning half's outcomes, one JSON line per question (never the test"
        " half's: it is not read question by question)",
    )
    parser.add_argument(
        "--write-accuracy",
        action="store_true",
        help="write the test half's verdict figures (extractive, full corpus, all 250"
        " questions) to src/deepcritical/report/verdict_accuracy.json, which the answer card"
        " shows",
    )
    parser.add_argument(
        "--work-dir",
        type=Path,
        help="keep the imported corpora here and reuse them on the next run (default: a"
        " temporary directory); a corpus already imported adds nothing",
    )
    return parser


def _configurations(args: argparse.Namespace) -> list[Configuration]:
    """The configurations the arguments ask for."""
    out: list[Configuration] = []
    if not args.scripted_only:
        out.append(("extractive (--llm none)", None, None))
    if args.scripted or args.scripted_only:
        from benchmarks.misattributing_script import MisattributingScript

        out.append(("scripted FunctionModel, misattributing writer", MisattributingScript(), None))
    if args.llm:
        out.append((f"--llm {args.llm} ({args.orchestrator})", None, args.llm))
    return out


def _import_arm(
    arm: str, args: argparse.Namespace, corpus_file: Path, questions: int, gold: set[str], tmp: Path
) -> Any:
    """Import the corpus of ``arm`` (for the withheld arm, without the ``gold`` PMIDs of the
    ``questions`` run) into its own data directory under ``tmp``; print what was imported and
    return the arm's settings."""
    from deepcritical.config import Settings
    from deepcritical.corpus.embedding import corpus_embedder
    from deepcritical.corpus.index import LocalCorpus

    settings = Settings(
        llm="none",
        sources=["local"],
        # the withheld corpus depends on the questions run (a reused corpus only grows)
        data_dir=tmp / (arm if arm == "full" else f"{arm}-{args.n}"),
        max_rounds=args.rounds,
    )
    source = corpus_file
    if arm == "withheld":
        source = tmp / f"corpus-gold-withheld-{len(gold)}.jsonl"
        lines = corpus_lines_without(corpus_file.read_text(encoding="utf-8"), gold)
        source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    start = time.perf_counter()
    # imported as `deepcritical corpus add` does (the default corpus embedder)
    with LocalCorpus(settings.resolved_corpus_dir, corpus_embedder(settings)) as corpus:
        imported = corpus.add_file(source)
    print(
        ("" if arm == "full" else f"\ngold withheld ({len(gold)} gold abstracts left out), ")
        + f"corpus: {imported.added} abstracts imported in "
        f"{time.perf_counter() - start:.0f} s; {questions} dev questions;"
        f" max_rounds={args.rounds}; grounding threshold {settings.grounding_threshold}"
        " (all-MiniLM-L6-v2)"
    )
    return settings


def _run_configuration(
    arm: str,
    configuration: Configuration,
    settings: Any,
    by_half: dict[Half, list[dict[str, str]]],
    embedder: Any,
    args: argparse.Namespace,
) -> None:
    """Run one configuration on each half's questions in ``arm`` and print its figures
    (writing the details and the accuracy file when asked)."""
    name, scripted, spec = configuration
    if spec is not None:
        settings = settings.model_copy(update={"llm": spec, "orchestrator": args.orchestrator})
    offline = scripted is None and spec is None
    for half, questions in by_half.items():
        outcomes: list[Outcome] = []
        failures: list[str] = []
        for q in questions:
            outcome = asyncio.run(run_one(q, settings, embedder, scripted))
            if isinstance(outcome, Outcome):
                outcomes.append(outcome)
            else:
                failures.append(f"{q['pmid']}: {outcome}")
        label = f"{name}, {half} half ({len(questions)} questions)"
        if arm != "full":
            report_withheld(label, outcomes, failures)
            continue
        report_configuration(label, outcomes, failures, targets=half == "test")
        if args.details and half == "tuning" and offline:
            write_details(args.details, outcomes)
        if args.write_accuracy and half == "test" and not args.n and offline:
            write_accuracy(target_figures(outcomes))


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the figures; returns the process exit code."""
    use_offline_environment()
    args = _parser().parse_args(argv)
    files = pubmedqa_files(args.data)
    if files is None:
        return 0
    corpus_file, questions_file = files
    if args.calibrate:
        from benchmarks.grounding_calibration import calibrate

        calibrate(args.data)
        return 0

    from deepcritical.logs import configure_logging

    configure_logging("ERROR", library_level="ERROR")  # errors only
    from deepcritical.evidence.onnx_embeddings import run_embedder

    every = read_dev_questions(questions_file, None)
    halves = [h for h in HALVES if h in args.halves.split(",")]
    by_half = {h: questions_of(every, h, args.n or None) for h in halves}
    count = sum(len(questions) for questions in by_half.values())
    gold = {str(q["pmid"]) for questions in by_half.values() for q in questions}
    embedder = run_embedder()
    configurations = _configurations(args)
    with tempfile.TemporaryDirectory(prefix="dc-bench-pubmedqa-") as tmp_dir:
        tmp = args.work_dir or Path(tmp_dir)
        for arm in args.arms:
            settings = _import_arm(arm, args, corpus_file, count, gold, Path(tmp))
            for configuration in configurations:
                _run_configuration(arm, configuration, settings, by_half, embedder, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
