"""Domain models shared by every layer of DeepCritical.

Nothing here does I/O. Every other package imports from this module; this module imports
nothing from the rest of the project.

Identifiers follow the field's conventions: PMID (PubMed id, digits), PMCID (``PMC`` + digits),
DOI (lower-cased, without ``https://doi.org/``), NCT ID (``NCT`` + 8 digits).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, Field, computed_field


def utc_now() -> datetime:
    """Current time as an aware UTC datetime."""
    return datetime.now(UTC)


class SourceName(StrEnum):
    """The search sources DeepCritical knows; values are the names used on the CLI."""

    PUBMED = "pubmed"
    CLINICALTRIALS = "trials"
    EUROPEPMC = "europepmc"
    OPENALEX = "openalex"
    WEB = "web"
    LOCAL = "local"


SOURCE_LABELS: dict[str, str] = {
    SourceName.PUBMED: "PubMed",
    SourceName.CLINICALTRIALS: "ClinicalTrials.gov",
    SourceName.EUROPEPMC: "Europe PMC",
    SourceName.OPENALEX: "OpenAlex",
    SourceName.WEB: "Web",
    SourceName.LOCAL: "Local corpus",
}


class StudyDesign(StrEnum):
    """Study design of a source, as read by :mod:`deepcritical.evidence.grading`.

    Values are the labels shown in reports. Evidence levels (strongest first: meta-analysis,
    systematic review, randomised controlled trial, other clinical trial, cohort, case-control,
    cross-sectional/observational, case report or series, narrative review, preclinical) live in
    :data:`deepcritical.evidence.grading.EVIDENCE_LEVEL`. ``PREPRINT`` is given only when no
    design can be read from a preprint; a preprint whose design is recognised keeps that design
    (``Evidence.is_preprint`` says it is not peer reviewed).
    """

    META_ANALYSIS = "meta-analysis"
    SYSTEMATIC_REVIEW = "systematic review"
    RCT = "randomised controlled trial"
    CLINICAL_TRIAL = "clinical trial (non-randomised or phase)"
    COHORT = "cohort study"
    CASE_CONTROL = "case-control study"
    CROSS_SECTIONAL = "cross-sectional study"
    OBSERVATIONAL = "observational study (design not specified)"
    CASE_REPORT = "case report or case series"
    REVIEW = "narrative review"
    ANIMAL = "preclinical: animal study"
    IN_VITRO = "preclinical: in vitro study"
    PREPRINT = "preprint (design not recognised)"
    OTHER = "other or not recognised"


class Citation(BaseModel):
    """Bibliographic record of one source document.

    ``source`` is the :class:`SourceName` value of the source that produced it; ``id`` is that
    source's native identifier (a PMID for PubMed and the local PubMed corpus, an NCT ID for
    ClinicalTrials.gov, a DOI or OpenAlex id, a URL for the web). ``date`` is an ISO-8601
    prefix (``2019``, ``2019-03`` or ``2019-03-14``) when known.
    """

    source: str
    id: str
    title: str = ""
    authors: list[str] = Field(default_factory=list)
    journal: str | None = None
    year: int | None = None
    date: str | None = None
    url: str | None = None
    doi: str | None = None
    pmid: str | None = None
    pmcid: str | None = None
    nct_id: str | None = None

    def display_title(self) -> str:
        """Title, or a stand-in naming the identifier when the record has none (PubMedQA)."""
        if self.title.strip():
            return self.title.strip()
        if self.pmid:
            return f"PubMed record {self.pmid}"
        if self.nct_id:
            return f"Trial {self.nct_id}"
        return f"{SOURCE_LABELS.get(self.source, self.source)} record {self.id}"

    def format_reference(self) -> str:
        """One-line reference in a Vancouver-like style, with every identifier known."""
        parts: list[str] = []
        if self.authors:
            names = self.authors[:6]
            authors = ", ".join(names) + (", et al." if len(self.authors) > 6 else "")
            parts.append(authors.rstrip(".") + ".")
        parts.append(self.display_title().rstrip(".") + ".")
        venue = " ".join(p for p in [self.journal or "", str(self.year) if self.year else ""] if p)
        if venue:
            parts.append(venue.rstrip(".") + ".")
        ids = []
        if self.pmid:
            ids.append(f"PMID: {self.pmid}")
        if self.pmcid:
            ids.append(f"PMCID: {self.pmcid}")
        if self.doi:
            ids.append(f"doi: {self.doi}")
        if self.nct_id:
            ids.append(f"ClinicalTrials.gov: {self.nct_id}")
        if ids:
            parts.append("; ".join(ids) + ".")
        if self.url:
            parts.append(f"<{self.url}>")
        return " ".join(parts)


class Evidence(BaseModel):
    """One source document kept in a run's evidence store.

    ``id`` is the run-local evidence id (``E1``, ``E2``, ...) assigned by the evidence store;
    inline citations in reports use it as ``[E3]``. ``content`` is the text the source gave
    (an abstract, with structured-abstract labels kept as ``LABEL: text`` paragraphs; a trial
    summary; extracted web page text), in characters, possibly truncated by the source.
    ``relevance`` is in 0..1 (the source's own ranking, normalised). ``sources`` lists every
    source that returned this document (cross-source deduplication merges them).
    """

    id: str = ""
    content: str
    citation: Citation
    relevance: float = Field(default=0.0, ge=0.0, le=1.0)
    retrieved_at: datetime = Field(default_factory=utc_now)
    query: str | None = None
    sources: list[str] = Field(default_factory=list)
    mesh_terms: list[str] = Field(default_factory=list)
    publication_types: list[str] = Field(default_factory=list)
    is_preprint: bool = False
    checklist_keys: list[str] = Field(default_factory=list)
    study_design: StudyDesign | None = None
    """An explicit study design (set by whoever knows it); ``None``: read it with
    :func:`deepcritical.evidence.grading.grade_evidence`, which honours a value set here."""

    def model_post_init(self, __context: object) -> None:
        if not self.sources:
            self.sources = [self.citation.source]

    def snippet(self, max_chars: int = 300) -> str:
        """First ``max_chars`` characters of the content, cut at a word boundary."""
        text = " ".join(self.content.split())
        if len(text) <= max_chars:
            return text
        cut = text[:max_chars].rsplit(" ", 1)[0]
        return cut + " …"


class ChecklistStatus(StrEnum):
    """How far the collected evidence answers one checklist item."""

    UNSATISFIED = "unsatisfied"
    PARTIAL = "partial"
    SATISFIED = "satisfied"


class ChecklistItem(BaseModel):
    """One thing a complete answer must address, with the evidence assigned to it."""

    key: str
    description: str
    min_evidence: int = Field(default=2, ge=1)
    status: ChecklistStatus = ChecklistStatus.UNSATISFIED
    evidence_ids: list[str] = Field(default_factory=list)


ReportLength = Literal["brief", "standard", "detailed"]


class ReportPreferences(BaseModel):
    """What the user wants from the report (from the request: API, CLI, UI).

    ``audience``: who reads it ("clinicians", "drug-discovery scientists"; "" = scientists);
    ``length``: ``brief`` (2-3 findings sections), ``standard`` (3-5) or ``detailed`` (4-6);
    ``focus``: an aspect to emphasise ("safety in the elderly"; "" = none).
    """

    audience: str = Field(default="", max_length=200)
    length: ReportLength = "standard"
    focus: str = Field(default="", max_length=300)

    def lines(self) -> list[str]:
        """Plain-text lines for a prompt (``[]`` when everything is the default)."""
        out = []
        if self.audience.strip():
            out.append(f"Audience: {' '.join(self.audience.split())}")
        if self.length != "standard":
            out.append(f"Length: {self.length}")
        if self.focus.strip():
            out.append(f"Focus: {' '.join(self.focus.split())}")
        return out


class SubQuestion(BaseModel):
    """One sub-question of the plan and the queries that search for it."""

    question: str
    queries: list[str] = Field(default_factory=list)


class ResearchPlan(BaseModel):
    """The plan made before searching: refined question, scope, checklist, sub-questions and
    first queries, plus the user's report preferences.

    ``scope_in`` / ``scope_out``: what the answer covers and leaves out (one phrase each);
    ``mesh_terms``: MeSH descriptors of the question (for PubMed ``[MeSH Terms]`` queries);
    ``sub_questions``: at most ``Settings.max_questions``, each with its queries.
    """

    question: str
    refined_question: str
    checklist: list[ChecklistItem] = Field(min_length=1)
    queries: list[str] = Field(default_factory=list)
    key_terms: list[str] = Field(default_factory=list)
    scope_in: list[str] = Field(default_factory=list)
    scope_out: list[str] = Field(default_factory=list)
    mesh_terms: list[str] = Field(default_factory=list)
    sub_questions: list[SubQuestion] = Field(default_factory=list)
    preferences: ReportPreferences = Field(default_factory=ReportPreferences)

    def unsatisfied(self) -> list[ChecklistItem]:
        """Checklist items not yet satisfied, in plan order."""
        return [c for c in self.checklist if c.status != ChecklistStatus.SATISFIED]

    def coverage(self) -> float:
        """Share of checklist items satisfied, 0..1 (a partial item counts one half)."""
        weights = {
            ChecklistStatus.SATISFIED: 1.0,
            ChecklistStatus.PARTIAL: 0.5,
            ChecklistStatus.UNSATISFIED: 0.0,
        }
        return sum(weights[c.status] for c in self.checklist) / len(self.checklist)


class Hypothesis(BaseModel):
    """A mechanistic hypothesis: drug -> target -> pathway -> effect.

    For questions that are not about a drug, ``drug`` names the exposure or intervention and
    ``target``/``pathway`` may be empty. ``confidence`` is in 0..1. Evidence ids refer to the
    run's evidence store.
    """

    id: str = ""
    statement: str
    drug: str = ""
    target: str = ""
    pathway: str = ""
    effect: str = ""
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)
    supporting_evidence_ids: list[str] = Field(default_factory=list)
    contradicting_evidence_ids: list[str] = Field(default_factory=list)


class JudgeAssessment(BaseModel):
    """The judge's view of the evidence after a round.

    Scores are 0..10. ``sufficient`` is the judge's opinion only: stop rules in the orchestrator
    decide, whatever the judge says.
    """

    mechanism_score: int = Field(default=0, ge=0, le=10)
    clinical_evidence_score: int = Field(default=0, ge=0, le=10)
    coverage: float = Field(default=0.0, ge=0.0, le=1.0)
    sufficient: bool = False
    recommendation: Literal["continue", "synthesize"] = "continue"
    next_queries: list[str] = Field(default_factory=list)
    reasoning: str = ""


class ReportSection(BaseModel):
    """A titled section of a report; ``content`` is markdown with ``[E3]`` citation markers."""

    heading: str
    content: str


class Reference(BaseModel):
    """A reference of a report: the evidence id and the citation copied from the store."""

    evidence_id: str
    citation: Citation
    study_design: StudyDesign | None = None
    """The cited item's study design, when the report was graded (shown in the list)."""


class CitationValidation(BaseModel):
    """What citation validation changed in a report (counts of removed items)."""

    references_checked: int = 0
    references_removed: int = 0
    references_added: int = 0
    markers_checked: int = 0
    markers_removed: int = 0
    sentences_removed: int = 0
    removed_reference_ids: list[str] = Field(default_factory=list)
    removed_marker_ids: list[str] = Field(default_factory=list)
    writer_markers_removed: int = 0
    writer_sentences_removed: int = 0
    writer_removed_ids: list[str] = Field(default_factory=list)
    """Citations the LLM writer made to ids it was not shown, removed by the writer itself
    before validation (with the sentences that cited only them)."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def valid(self) -> bool:
        """True when nothing had to be removed, by validation or by the writer."""
        return (
            self.references_removed == 0
            and self.markers_removed == 0
            and self.sentences_removed == 0
            and self.writer_markers_removed == 0
            and self.writer_sentences_removed == 0
        )


StopReason = Literal[
    "sufficient",
    "all_satisfied",
    "max_rounds",
    "max_sources",
    "time_budget",
    "no_new_evidence",
    "no_sources",
    "cancelled",
    "error",
    "manager_finished",
    "manager_round_limit",
    "manager_stalled",
]
"""Why a run stopped gathering (``all_satisfied``: the reflection step found every
checklist item satisfied). The ``manager_*`` values come from the ``magentic``
orchestrator only: its manager declared the request satisfied before any stop rule in code
closed gathering, reached its round limit, or stalled beyond its reset limit."""


class LLMUsage(BaseModel):
    """LLM usage of one agent role (or of the Magentic manager), summed over its calls.

    Token counts are those the provider reported; ``requests`` counts model requests
    (retries included), ``runs`` agent calls, ``failures`` calls that raised.
    """

    runs: int = 0
    failures: int = 0
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


class SourceUsage(BaseModel):
    """Calls made to one search source during a run (``results``: items it returned)."""

    calls: int = 0
    failed_calls: int = 0
    results: int = 0


class UsageReport(BaseModel):
    """What a run consumed: LLM requests and tokens per agent role (``manager`` for the
    Magentic manager), search calls per source, and wall-clock seconds per stage
    (``planning``, ``query_generation``, ``searching``, ``hypotheses``, ``judging``,
    ``writing``, ``validation``; ``manager`` for the Magentic manager's model calls)."""

    llm: dict[str, LLMUsage] = Field(default_factory=dict)
    llm_total: LLMUsage = Field(default_factory=LLMUsage)
    search: dict[str, SourceUsage] = Field(default_factory=dict)
    stage_seconds: dict[str, float] = Field(default_factory=dict)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def search_calls(self) -> int:
        """Search calls over every source."""
        return sum(s.calls for s in self.search.values())


class SupportingQuote(BaseModel):
    """The passage of one cited source that best matches a report sentence.

    ``quote`` is verbatim source text (one sentence or two adjacent sentences of the item's
    content, or its title); ``similarity`` is the cosine similarity of its embedding to the
    sentence's; ``entailment`` is the NLI entailment probability when an NLI model was used;
    ``supports`` says whether this source counts as supporting the sentence.
    """

    evidence_id: str
    quote: str
    similarity: float
    entailment: float | None = None
    supports: bool = False


class GroundedClaim(BaseModel):
    """The grounding check of one cited sentence of a report.

    ``location``: ``"executive summary"``, ``"findings: <heading>"`` or ``"conclusion"``;
    ``sentence``: the sentence as written, markers included; ``evidence_ids``: the ids it
    cited; ``quotes``: the best passage of each cited source; ``supported``: at least one cited
    source supports it; ``score``: the best similarity (entailment with NLI) over its cited
    sources; ``kept_ids``: the ids it still cites after grounding; ``removed``: the sentence
    was removed; ``grounded_sentence``: the sentence as it reads after grounding ("" when
    removed); ``rewritten``: the sentence was unsupported and was replaced by a rewrite (in
    ``grounded_sentence``) that its cited sources support (``supported`` stays false: it is
    about the sentence as written; ``quotes`` and ``kept_ids`` are those of the rewrite).
    """

    location: str
    sentence: str
    evidence_ids: list[str] = Field(default_factory=list)
    quotes: list[SupportingQuote] = Field(default_factory=list)
    supported: bool = False
    score: float = 0.0
    kept_ids: list[str] = Field(default_factory=list)
    removed: bool = False
    grounded_sentence: str = ""
    rewritten: bool = False


class GroundingCheck(BaseModel):
    """What the grounding check did to a report (see :mod:`deepcritical.report.grounding`).

    ``citations_removed`` counts citations removed from sentences that were kept (the
    citations of a removed sentence go with it and are not counted again).
    """

    method: Literal["embedding", "embedding+nli"] = "embedding"
    threshold: float = 0.0
    nli_threshold: float | None = None
    sentences_checked: int = 0
    sentences_supported: int = 0
    sentences_removed: int = 0
    sentences_rewritten: int = 0
    citations_removed: int = 0
    references_removed: int = 0
    removed_reference_ids: list[str] = Field(default_factory=list)


class ReportMetadata(BaseModel):
    """How a report was made."""

    sources_searched: list[str] = Field(default_factory=list)
    source_failures: dict[str, str] = Field(default_factory=dict)
    papers_reviewed: int = 0
    iterations: int = 0
    confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    stop_reason: StopReason | None = None
    orchestrator: str = "iterative"
    llm: str = "none"
    generated_at: datetime = Field(default_factory=utc_now)
    duration_seconds: float = 0.0
    checklist_coverage: float = Field(default=0.0, ge=0.0, le=1.0)
    queries: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    citation_validation: CitationValidation = Field(default_factory=CitationValidation)
    usage: UsageReport = Field(default_factory=UsageReport)
    grounding_score: float | None = Field(default=None, ge=0.0, le=1.0)
    """Share of cited sentences supported by a passage of a cited source, before removal;
    ``None`` when the report was not grounded or cites nothing."""
    grounding_check: GroundingCheck | None = None
    verdict: Literal["yes", "no", "uncertain"] | None = None
    """Explicit answer to a yes/no question, from the balance of evidence on the first
    hypothesis (see :mod:`deepcritical.orchestrators.report_stage`); ``None`` for other
    questions."""


CITATION_MARKER = re.compile(r"\[(E\d+(?:\s*,\s*E\d+)*)\]")
"""Inline citation marker: ``[E3]`` or ``[E3, E7]``; group 1 holds the comma-separated ids."""


def marker_ids(text: str) -> list[str]:
    """Evidence ids cited in ``text``, in order of appearance, with repeats."""
    return [i.strip() for m in CITATION_MARKER.finditer(text) for i in m.group(1).split(",")]


class ResearchReport(BaseModel):
    """A structured scientific report whose citations refer to the run's evidence store.

    Text fields hold markdown with ``[E3]`` markers; :meth:`to_markdown` renumbers them as
    ``[1]``, ``[2]``... in order of first appearance and lists the references in that order.
    """

    title: str
    research_question: str
    executive_summary: str = ""
    methodology: str = ""
    hypotheses_tested: list[Hypothesis] = Field(default_factory=list)
    findings: list[ReportSection] = Field(default_factory=list)
    limitations: list[str] = Field(default_factory=list)
    conclusion: str = ""
    references: list[Reference] = Field(default_factory=list)
    metadata: ReportMetadata = Field(default_factory=ReportMetadata)
    grounding: list[GroundedClaim] = Field(default_factory=list)
    """One record per cited sentence checked by the grounding check, with its quotes."""

    def texts(self) -> list[str]:
        """Every text field that may hold citation markers, in reading order."""
        return [
            self.executive_summary,
            self.methodology,
            *[h.statement for h in self.hypotheses_tested],
            *[t for s in self.findings for t in (s.heading, s.content)],
            *self.limitations,
            self.conclusion,
        ]

    def cited_ids(self) -> list[str]:
        """Distinct evidence ids cited inline, in order of first appearance."""
        seen: dict[str, None] = {}
        for text in self.texts():
            for eid in marker_ids(text):
                seen.setdefault(eid, None)
        return list(seen)

    def reference_numbers(self) -> dict[str, int]:
        """Evidence id -> display number: cited ids first (reading order), then the rest.

        Only ids listed in ``references`` get a number (each once, however often listed).
        """
        order = self.cited_ids()
        listed = list(dict.fromkeys(r.evidence_id for r in self.references))
        ordered = [e for e in order if e in listed] + [e for e in listed if e not in order]
        return {eid: n for n, eid in enumerate(ordered, start=1)}

    def _numbered(self, text: str, numbers: dict[str, int]) -> str:
        def repl(m: re.Match[str]) -> str:
            ids = [i.strip() for i in m.group(1).split(",")]
            nums = sorted({numbers[i] for i in ids if i in numbers})
            return "[" + ", ".join(str(n) for n in nums) + "]" if nums else ""

        return CITATION_MARKER.sub(repl, text)

    def to_markdown(self) -> str:
        """The report as markdown, citations numbered ``[1]`` and references listed in order
        (see :func:`deepcritical.report.markdown.render_markdown`)."""
        from deepcritical.report.markdown import render_markdown  # report/ imports models

        return render_markdown(self)

    def to_json(self, indent: int | None = 2) -> str:
        """The report as JSON (pydantic serialisation; evidence ids kept as ``E3``)."""
        return self.model_dump_json(indent=indent)


class RunResult(BaseModel):
    """Everything a run produced: the report, the plan, and all evidence collected."""

    report: ResearchReport
    plan: ResearchPlan | None = None
    evidence: list[Evidence] = Field(default_factory=list)
    assessments: list[JudgeAssessment] = Field(default_factory=list)

    def to_json(self, indent: int | None = 2) -> str:
        """JSON of report, plan, assessments and evidence."""
        return json.dumps(self.model_dump(mode="json"), indent=indent, ensure_ascii=False)
