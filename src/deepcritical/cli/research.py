"""``deepcritical research QUESTION``: run a research question and write the markdown report
plus a JSON file of the report, the plan and every evidence item (and, with ``--export``, the
report's references as RIS, BibTeX or CSL-JSON).

The run is recorded in the run database; its id is printed first, and ``deepcritical runs
resume ID`` continues it if it is interrupted. ``--review-plan`` / ``--review-evidence`` stop
it for the researcher's review (:mod:`deepcritical.cli.reviewing`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from deepcritical.cli.clarify_prompt import clarified_run_context
from deepcritical.cli.context import fail, settings_from_options
from deepcritical.cli.filter_options import (
    AddedSinceOption,
    DesignOption,
    LanguageOption,
    PublishedFromOption,
    PublishedToOption,
    TrialPhaseOption,
    TrialStatusOption,
    search_filters,
)
from deepcritical.cli.run_output import (
    ExportOption,
    ReportPath,
    check_out_path,
    parse_export_formats,
    run_to_report,
)
from deepcritical.config import Settings
from deepcritical.formats.references import ExportFormat
from deepcritical.models import ReportPreferences, SearchFilters
from deepcritical.state import Syllabus, SyllabusError

if TYPE_CHECKING:
    from deepcritical.events import ResearchEvent
    from deepcritical.formats.references import ExportFormat

__all__ = ["RunInputs", "research", "run_inputs", "with_reviews"]

REPORT_LENGTHS = ("brief", "standard", "detailed")


QuestionArg = Annotated[str, typer.Argument(help="The research question.")]
CorpusOption = Annotated[
    Path | None,
    typer.Option(
        "--corpus",
        help="Search this local corpus directory (alone, unless --sources adds others).",
    ),
]
LlmOption = Annotated[
    str | None,
    typer.Option(
        "--llm",
        help="none | openai:MODEL | anthropic:MODEL | openai-compatible:MODEL@BASE_URL.",
    ),
]
SourcesOption = Annotated[
    str | None,
    typer.Option(
        "--sources",
        help="Comma list of pubmed,trials,europepmc,openalex,web,local "
        "(default: local when a corpus exists, plus the live sources).",
    ),
]
MaxRoundsOption = Annotated[int | None, typer.Option("--max-rounds", min=1, max=20)]
MaxSourcesOption = Annotated[
    int | None, typer.Option("--max-sources", min=1, help="Stop gathering at this many items.")
]
TimeBudgetOption = Annotated[
    float | None, typer.Option("--time-budget", help="Seconds for gathering evidence.")
]
OrchestratorOption = Annotated[
    str | None,
    typer.Option(
        "--orchestrator",
        help="iterative (deterministic loop; default, works with --llm none) or magentic "
        "(an LLM manager picks the next agent; needs --llm).",
    ),
]
ContextOption = Annotated[str | None, typer.Option("--context", help="Background for the planner.")]
AudienceOption = Annotated[
    str | None, typer.Option("--audience", help="Who reads the report, e.g. 'clinicians'.")
]
LengthOption = Annotated[
    str | None, typer.Option("--length", help="Report length: brief | standard | detailed.")
]
FocusOption = Annotated[
    str | None, typer.Option("--focus", help="An aspect the report should emphasise.")
]
ClarifyOption = Annotated[
    bool,
    typer.Option(
        "--clarify",
        help="Before planning, ask what the question lacks (population, outcome, time "
        "frame...): one message, choices by number, Enter skips. Not on a terminal: the "
        "questions are printed and the run goes on.",
    ),
]
SyllabusOption = Annotated[
    Path | None,
    typer.Option(
        "--syllabus",
        help="YAML/JSON syllabus whose questions replace the planner's checklist "
        "(e.g. syllabi/drug_profile.yaml).",
    ),
]


ReviewPlanOption = Annotated[
    bool,
    typer.Option(
        "--review-plan",
        help="Stop after planning: the plan is shown (opened in $EDITOR on a terminal) to "
        "edit and approve, or cancel, before anything is searched.",
    ),
]
ReviewEvidenceOption = Annotated[
    bool,
    typer.Option(
        "--review-evidence",
        help="Stop after gathering: the screened evidence table is shown to exclude or "
        "include records (with reasons) or ask for one more search round before writing.",
    ),
]


def with_reviews(settings: Settings, plan: bool, evidence: bool) -> Settings:
    """``settings`` with the reviews of ``--review-plan`` / ``--review-evidence`` on."""
    if not (plan or evidence):
        return settings
    return settings.model_copy(
        update={
            "review_plan": settings.review_plan or plan,
            "review_evidence": settings.review_evidence or evidence,
        }
    )


@dataclass(frozen=True)
class RunInputs:
    """What the options of ``research`` (and ``runs submit``) make of a run."""

    settings: Settings
    preferences: ReportPreferences | None
    syllabus: Syllabus | None


def run_inputs(
    *,
    corpus: Path | None,
    llm: str | None,
    sources: str | None,
    max_rounds: int | None,
    max_sources: int | None,
    time_budget: float | None,
    orchestrator: str | None,
    audience: str | None,
    length: str | None,
    focus: str | None,
    syllabus_file: Path | None,
    filters: SearchFilters | None = None,
) -> RunInputs:
    """The settings, report preferences and syllabus of the run options; exits with code 2
    on a bad option, a bad syllabus, or the ``local`` source without a corpus. ``filters``
    (the search-filter options, :mod:`deepcritical.cli.filter_options`) go into the
    settings' ``search_filters``, which the run's plan starts with."""
    syllabus = None
    if syllabus_file is not None:
        try:
            syllabus = Syllabus.from_file(syllabus_file)
        except SyllabusError as exc:
            raise fail(str(exc), 2) from exc
    preferences = _preferences(audience, length, focus)
    source_list: list[str] | None = None
    if sources is not None:
        source_list = [s.strip() for s in sources.split(",") if s.strip()]
    settings = settings_from_options(
        llm=llm,
        max_rounds=max_rounds,
        max_sources=max_sources,
        time_budget_seconds=time_budget,
        orchestrator=orchestrator.strip().lower() if orchestrator else None,
        corpus_dir=corpus,
        sources=source_list,
    )
    if source_list is None:
        settings = _default_sources(settings, corpus_given=corpus is not None)
    if filters is not None:
        settings = settings.model_copy(update={"search_filters": filters.key()})
    _require_local_corpus(settings)
    return RunInputs(settings=settings, preferences=preferences, syllabus=syllabus)


def research(
    question: QuestionArg,
    corpus: CorpusOption = None,
    llm: LlmOption = None,
    sources: SourcesOption = None,
    max_rounds: MaxRoundsOption = None,
    max_sources: MaxSourcesOption = None,
    time_budget: TimeBudgetOption = None,
    orchestrator: OrchestratorOption = None,
    context: ContextOption = None,
    audience: AudienceOption = None,
    length: LengthOption = None,
    focus: FocusOption = None,
    out: ReportPath = Path("report.md"),
    export: ExportOption = None,
    syllabus_file: SyllabusOption = None,
    published_from: PublishedFromOption = None,
    published_to: PublishedToOption = None,
    language: LanguageOption = None,
    design: DesignOption = None,
    trial_phase: TrialPhaseOption = None,
    trial_status: TrialStatusOption = None,
    added_since: AddedSinceOption = None,
    review_plan: ReviewPlanOption = False,
    review_evidence: ReviewEvidenceOption = False,
    clarify: ClarifyOption = False,
) -> None:
    """Research QUESTION and write a validated report (markdown + JSON; with --export, its
    references as RIS, BibTeX or CSL-JSON next to it; with --clarify, first ask what it lacks).

    The search filters (--published-from/--published-to, --language, --design,
    --trial-phase, --trial-status, --added-since) go into the plan; every source applies
    them in its own query where its API can, and records outside them are screened out.

    The run is recorded (its id is printed first): `deepcritical runs resume ID` continues it
    if it is interrupted. With --review-plan / --review-evidence it stops for your review
    (see `deepcritical runs approve-plan --help`)."""
    exports = parse_export_formats(export)
    check_out_path(out, exports)
    filters = search_filters(
        published_from=published_from,
        published_to=published_to,
        languages=language,
        designs=design,
        trial_phases=trial_phase,
        trial_statuses=trial_status,
        added_since=added_since,
    )
    inputs = run_inputs(
        corpus=corpus,
        llm=llm,
        sources=sources,
        max_rounds=max_rounds,
        max_sources=max_sources,
        time_budget=time_budget,
        orchestrator=orchestrator,
        audience=audience,
        length=length,
        focus=focus,
        syllabus_file=syllabus_file,
        filters=filters,
    )
    settings = with_reviews(inputs.settings, review_plan, review_evidence)
    if clarify:  # before planning, ask what the question lacks
        context = clarified_run_context(question, settings, context)
    _research_to_report(question, settings, inputs, context, out, exports)


def _research_to_report(
    question: str,
    settings: Settings,
    inputs: RunInputs,
    context: str | None,
    out: Path,
    exports: tuple[ExportFormat, ...],
) -> None:
    """Run the research with ``settings`` and write its report to ``out`` (and ``exports``);
    with a review asked for, the user is asked at each review point
    (:func:`deepcritical.cli.reviewing.reviewed_run`)."""
    from deepcritical.api import research as run_research
    from deepcritical.cli.reviewing import reviewed_run
    from deepcritical.llm.providers import ModelSpecError
    from deepcritical.orchestrators.deps import QuestionError
    from deepcritical.state import StateError

    def start() -> AsyncIterator[ResearchEvent]:
        return run_research(
            question,
            settings,
            context=context,
            syllabus=inputs.syllabus,
            preferences=inputs.preferences,
        )

    reviewing = settings.review_plan or settings.review_evidence
    run_to_report(
        (lambda: reviewed_run(start, settings)) if reviewing else start,
        out,
        bad_input=(QuestionError, ModelSpecError, StateError),
        exports=exports,
    )


def _default_sources(settings: Settings, *, corpus_given: bool) -> Settings:
    """``settings`` with the sources used when --sources is not given: the local corpus alone
    with --corpus; else the local corpus when one exists, plus the live sources."""
    from deepcritical.corpus.index import LocalCorpus

    if corpus_given:
        chosen = ["local"]
    else:
        has_corpus = LocalCorpus.exists(settings.resolved_corpus_dir)
        chosen = (["local"] if has_corpus else []) + [s for s in settings.sources if s != "local"]
    return settings.model_copy(update={"sources": chosen})


def _require_local_corpus(settings: Settings) -> None:
    """Exit with code 2 when the ``local`` source is asked for but no corpus exists."""
    from deepcritical.corpus.index import LocalCorpus

    if "local" in settings.sources and not LocalCorpus.exists(settings.resolved_corpus_dir):
        raise fail(
            f"no local corpus in {settings.resolved_corpus_dir}: "
            "run `deepcritical corpus add FILE` first",
            2,
        )


def _preferences(
    audience: str | None, length: str | None, focus: str | None
) -> ReportPreferences | None:
    """The report preferences of the --audience/--length/--focus options (``None`` when none
    is given); exits with code 2 on a bad --length."""
    if audience is None and length is None and focus is None:
        return None
    choice = (length or "standard").strip().lower()
    if choice not in REPORT_LENGTHS:
        raise fail(f"--length {length}: choose brief, standard or detailed", 2)
    try:
        return ReportPreferences(audience=audience or "", length=choice, focus=focus or "")
    except ValueError as exc:
        raise fail(f"report preferences: {exc}", 2) from None
