"""The report's methodology: a factual account of a run, built from its record (numbers and
names the run kept, never by a model and never from the run object itself).

:func:`methodology_text` turns a :class:`MethodologyRecord` into the paragraphs of the
methodology section: the sources and rounds, the question type and the checklist with its
coverage, how evidence was chosen, how records were screened, the retracted ones kept out,
full texts, citation tracking, the orchestrator's own lines, the queries and the sources that
did not answer. The orchestrators' :class:`~deepcritical.orchestrators.run.ResearchRun`
fills the record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from deepcritical.models import SOURCE_LABELS, QuestionType, ResearchPlan
from deepcritical.sources.filter_syntax import unapplied_filters

__all__ = [
    "CitationCounts",
    "FullTextCounts",
    "MethodologyRecord",
    "ScreeningCounts",
    "methodology_text",
]

_TYPE_LABELS = {
    QuestionType.INTERVENTION: "intervention / therapy",
    QuestionType.DIAGNOSIS_PROGNOSIS: "diagnosis / prognosis",
    QuestionType.AETIOLOGY_RISK: "aetiology / risk",
    QuestionType.MECHANISM: "mechanism",
    QuestionType.PREVALENCE: "prevalence / epidemiology",
    QuestionType.REPURPOSING: "drug repurposing",
}


@dataclass(frozen=True)
class ScreeningCounts:
    """How the run's records were screened: ``by_model`` by the search agent's model
    (``model_tools``: through its tools, else in one structured answer per round),
    ``by_relevance`` by calibrated relevance (``off_topic_below``: its off-topic threshold;
    ``None``: no calibration holds for the run's embedder), ``off_topic`` the records kept
    out."""

    by_model: int
    model_tools: bool
    by_relevance: int
    off_topic_below: float | None
    off_topic: int


@dataclass(frozen=True)
class FullTextCounts:
    """Full texts: ``full`` of ``records`` read in full text; ``fetching`` whether the run
    fetched any (``fetched`` of at most ``per_run``); ``failed``: ``(PMCID, reason)`` of
    each that could not be read."""

    full: int
    records: int
    fetching: bool
    fetched: int
    per_run: int
    failed: Sequence[tuple[str | None, str]] = ()


@dataclass(frozen=True)
class CitationCounts:
    """What citation tracking did (see
    :class:`~deepcritical.orchestrators.citation_tracking.CitationLog`), with ``cap``, the
    run's ``citation_candidates``."""

    done: bool
    skipped: str
    seeds: Sequence[str]
    identified: int
    already_found: int
    duplicates: int
    beyond_limit: int
    cap: int
    added: int
    off_topic: int
    failures: Sequence[str]


@dataclass(frozen=True)
class MethodologyRecord:
    """What a run did, as its methodology tells it: the ``sources`` chosen (names),
    ``searched`` whether any answered, ``rounds``, ``queries``, ``records`` kept after
    de-duplication, the ``plan``, the MMR ``mmr_lambda``, the ``screening``, the
    ``retracted`` records kept out, ``full_text``, ``citations`` (``None``: no tracking in
    this run), the orchestrator's ``extra`` lines, ``unavailable`` sources (name ->
    reason) and ``filtered_out``: cause -> records removed by the plan's search filters
    after retrieval (``plan.filters`` are the filters)."""

    sources: Sequence[str]
    searched: bool
    rounds: int
    queries: Sequence[str]
    records: int
    plan: ResearchPlan
    mmr_lambda: float
    screening: ScreeningCounts
    retracted: int
    full_text: FullTextCounts
    citations: CitationCounts | None
    extra: Sequence[str] = ()
    unavailable: Mapping[str, str] = field(default_factory=dict)
    filtered_out: Mapping[str, int] = field(default_factory=dict)


_FILTER_FORMS = {
    "pubmed": "PubMed as [dp], [la] and [pt] in the esearch term and the Entrez date (edat)",
    "europepmc": "Europe PMC as FIRST_PDATE, LANG, PUB_TYPE and CREATION_DATE",
    "trials": "ClinicalTrials.gov as filter.overallStatus and filter.advanced (StartDate, "
    "Phase, design, LastUpdatePostDate)",
    "openalex": "OpenAlex as filter= (publication dates, language, type, from_created_date)",
    "local": "the local corpus by each record's date and the time it was imported",
}
"""How each source applies the plan's filters, for the methodology."""


def _filters_line(record: MethodologyRecord) -> str | None:
    """The plan's search filters, how each source applied them, the sources that could not,
    and the records removed after retrieval; ``None`` when the plan had none."""
    filters = record.plan.filters
    if filters.is_empty():
        return None
    forms = [_FILTER_FORMS[s] for s in record.sources if s in _FILTER_FORMS]
    line = "Search filters (in the plan): " + "; ".join(filters.lines()) + "."
    if forms:
        line += " Applied in each source's own request: " + "; ".join(forms) + "."
    for source in record.sources:
        fields = unapplied_filters(source, filters)
        if fields:
            line += f" {SOURCE_LABELS.get(source, source)} ignored {', '.join(fields)}."
    removed = sum(record.filtered_out.values())
    causes = "; ".join(f"{cause}: {n}" for cause, n in record.filtered_out.items())
    line += (
        f" {removed} record(s) returned outside the filters by their own date or study design "
        f"were removed before screening" + (f" ({causes})." if causes else ".")
    )
    return line


def methodology_text(record: MethodologyRecord) -> str:
    """The methodology section of ``record``'s run: paragraphs separated by blank lines."""
    plan = record.plan
    labels = [SOURCE_LABELS.get(s, s) for s in record.sources]
    lines = [
        f"{'Sources searched' if record.searched else 'Sources chosen (none was searched)'}: "
        f"{', '.join(labels)}. "
        f"{record.rounds} search round(s), {len(record.queries)} queries, "
        f"{record.records} distinct records kept after de-duplication by identifier "
        "(PMID, DOI, PMCID, NCT ID, URL) and by near-duplicate text.",
        *([filters] if (filters := _filters_line(record)) else []),
        _question_line(plan)
        + f"Checklist ({len(plan.checklist)} items, coverage {plan.coverage():.0%}): "
        + "; ".join(f"{c.description} — {c.status.value}" for c in plan.checklist)
        + ".",
        f"Evidence for the report was chosen by maximal marginal relevance "
        f"(λ = {record.mmr_lambda:g}) among all records; every citation was checked "
        "against the evidence collected in this run.",
    ]
    lines.extend(_screening_lines(record.screening))
    if record.retracted:
        lines.append(
            f"Integrity: {record.retracted} on-topic record(s) marked as retracted by their "
            "source (PubMed publication type or retraction notice, Europe PMC publication "
            "type, OpenAlex is_retracted) were kept out of the checklist, hypotheses, "
            "judgement, verdict and citations; they are listed in “Retracted or flagged "
            "records found”."
        )
    lines.append(_full_text_line(record.full_text))
    if record.citations is not None:
        lines.append(_citation_line(record.citations))
    lines.extend(record.extra)
    if record.queries:
        lines.append("Queries: " + "; ".join(f"“{q}”" for q in record.queries) + ".")
    for src, reason in record.unavailable.items():
        lines.append(f"{SOURCE_LABELS.get(src, src)} unavailable: {reason}.")
    return "\n\n".join(lines)


def _question_line(plan: ResearchPlan) -> str:
    """ "Question type: ... (population: ...; ...). " for the methodology; ``""`` for a plan
    with no question type (saved before question types)."""
    if plan.question_type is None:
        return ""
    pico = plan.pico
    parts = [
        f"{label}: {value}"
        for label, value in (
            ("population", pico.population),
            ("intervention, exposure or test", pico.intervention),
            ("comparator", pico.comparator),
            ("outcome or condition", pico.outcome),
        )
        if value
    ]
    elements = f" ({'; '.join(parts)})" if parts else ""
    return f"Question type (by rules): {_TYPE_LABELS[plan.question_type]}{elements}. "


def _screening_lines(s: ScreeningCounts) -> list[str]:
    """How the records were screened (by the search agent's model, by calibrated
    relevance, or not at all), with the number found off-topic."""
    kept_out = (
        f"{s.off_topic} off-topic record(s) were kept out of the checklist, hypotheses, "
        "judgement and report."
    )
    lines = []
    if s.by_model and not s.model_tools:
        lines.append(
            f"The search agent's model screened {s.by_model} record(s) against "
            "the question and the checklist in one structured answer per round (a status, "
            "the checklist questions it answers and a verbatim excerpt for each record); "
            "each record it kept was saved with those questions, and every record it "
            "called off-topic was screened out."
        )
    elif s.by_model:
        lines.append(
            f"The search agent's model screened {s.by_model} record(s) against "
            "the question and the checklist: it saved each record that helps answer a "
            "checklist question with the questions it answers and verbatim excerpts "
            "(save_source), checked what was still missing (get_progress, "
            "check_completion), and every record it did not save was screened out as "
            "off-topic."
        )
    if s.by_relevance and s.off_topic_below is not None:
        which = f"The other {s.by_relevance} record(s) were" if s.by_model else "Every record was"
        lines.append(
            f"{which} screened against the question by calibrated relevance (similarity "
            f"and key concepts; off-topic below {s.off_topic_below:g})."
        )
    elif s.by_relevance:
        lines.append(
            f"{s.by_relevance} record(s) were not screened for relevance: the "
            "relevance calibration holds for all-MiniLM-L6-v2 embeddings only."
        )
    if not lines:
        return []
    return [*lines[:-1], f"{lines[-1]} {kept_out}"]


def _full_text_line(f: FullTextCounts) -> str:
    """How many records were read in full text (fetched in this run or imported as JATS
    into the local corpus) against abstracts only, and the fetches that failed."""
    line = (
        f"Full texts: {f.full} of the {f.records} records were read in full text "
        "(open-access JATS, section by section); the others from their abstracts or "
        "summaries only."
    )
    if not f.fetching:
        line += " No full text was fetched in this run."
    else:
        line += (
            f" {f.fetched} full text(s) fetched from Europe PMC or PubMed Central "
            f"(at most {f.per_run} per run, the most relevant on-topic "
            "records with a PMCID first)."
        )
    if f.failed:
        line += (
            f" {len(f.failed)} could not be read and were used as abstracts: "
            + "; ".join(f"{pmcid} ({reason})" for pmcid, reason in f.failed)
            + "."
        )
    return line


def _citation_line(c: CitationCounts) -> str:
    """What citation tracking did (seeds, directions, records found, kept, screened)."""
    head = "Citation tracking (once per run, after the first search round with on-topic records)"
    if not c.done:
        why = c.skipped or "no on-topic record with a PMID or DOI to start from"
        return f"{head}: not done: {why}."
    line = (
        f"{head}: {len(c.seeds)} seed(s), the most relevant on-topic records with a PMID "
        f"or DOI: {', '.join(c.seeds)}. Followed backward (their references: OpenAlex "
        "referenced_works, PubMed elink pubmed_pubmed_refs, the JATS reference lists of "
        "full texts read) and forward (papers citing them: OpenAlex cites:, PubMed "
        "pubmed_pubmed_citedin)."
    )
    if c.skipped:
        return f"{line} No record was added: {c.skipped}."
    on_topic = c.added - c.off_topic
    line += (
        f" {c.identified} record(s) found, {c.already_found} already found by the "
        f"searches, {c.duplicates} duplicate(s) among them, {c.beyond_limit} beyond the "
        f"cap of {c.cap} (the most relevant to the question kept); "
        f"{c.added} new record(s) added and screened like search results: "
        f"{on_topic} on-topic, {c.off_topic} off-topic."
    )
    if c.failures:
        line += " Lookups that failed: " + "; ".join(c.failures) + "."
    return line
