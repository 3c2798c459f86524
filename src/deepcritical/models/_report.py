"""The report: sections, references, citation validation, grounding, usage, metadata, the
report itself and the result of a run."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, computed_field

from deepcritical.models._appraisal import Certainty, StudyRecord
from deepcritical.models._evidence import Citation, Evidence, StudyDesign, utc_now
from deepcritical.models._flow import RecordFlow
from deepcritical.models._markdown import render_markdown
from deepcritical.models._markers import marker_ids
from deepcritical.models._plan import Hypothesis, JudgeAssessment, ResearchPlan

__all__ = [
    "INTEGRITY_HEADING",
    "CitationValidation",
    "FlaggedRecord",
    "GroundedClaim",
    "GroundingCheck",
    "LLMUsage",
    "Reference",
    "ReportMetadata",
    "ReportSection",
    "ResearchReport",
    "RunResult",
    "SoftwareEnvironment",
    "SourceUsage",
    "StopReason",
    "SupportingQuote",
    "UsageReport",
]


class ReportSection(BaseModel):
    """A titled section of a report; ``content`` is markdown with ``[E3]`` citation markers."""

    heading: str
    content: str
    certainty: Certainty | None = None
    """The automated GRADE-style certainty of the evidence the section cites
    (:mod:`deepcritical.evidence.certainty`); ``None`` when not rated."""


class Reference(BaseModel):
    """A reference of a report: the evidence id and the citation copied from the store."""

    evidence_id: str
    citation: Citation
    study_design: StudyDesign | None = None
    """The cited item's study design, when the report was graded (shown in the list)."""
    study: StudyRecord | None = None
    """The cited item's study record (sample size, effect estimates with their proof), when
    it was appraised."""


INTEGRITY_HEADING = "Retracted or flagged records found"
"""The heading of the report section listing :attr:`ResearchReport.flagged_records`."""


class FlaggedRecord(BaseModel):
    """A record of the run that carries integrity flags (``citation.integrity_flags``), as
    the report's "Retracted or flagged records found" section lists it: ``cited`` is False
    for a retracted record (never cited as support), True for a cited record with an
    expression of concern, erratum or correction (its reference shows the flag too)."""

    evidence_id: str
    citation: Citation
    cited: bool = False


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
    "insufficient_evidence",
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
    reasoning_tokens: int = Field(
        default=0, description="Part of output_tokens spent reasoning (0: not reported)."
    )

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
    content or of a passage of its full text, or its title); ``locator`` says where a full
    text's passage lies (``"Results › Adverse events, paragraph 4"``; ``""`` for the title
    and abstract); ``similarity`` is the cosine similarity of its embedding to the
    sentence's; ``entailment`` is the NLI entailment probability when an NLI model was used;
    ``supports`` says whether this source counts as supporting the sentence.
    """

    evidence_id: str
    quote: str
    locator: str = ""
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


class SoftwareEnvironment(BaseModel):
    """The software a report was made with, so that it can be made again (collected by
    :mod:`deepcritical.environment`).

    ``deepcritical``: the DeepCritical version from its package metadata (``"unknown"`` when
    it is not installed); ``git_commit``: the commit (40 hex digits) of the source checkout it
    ran from, or of the source an image was built from; ``None`` when neither is known;
    ``git_dirty``: the checkout had uncommitted changes to tracked files (``None`` when not
    known); ``python``: the interpreter's version; ``embedding_model``: the embedder the run
    used (its model name, else its class name); ``packages``: distribution name -> installed
    version, for the installed packages that shape results (the embedding model's weights,
    its libraries, the corpus index, the model frameworks).
    """

    deepcritical: str = "unknown"
    git_commit: str | None = None
    git_dirty: bool | None = None
    python: str = ""
    embedding_model: str = ""
    packages: dict[str, str] = Field(default_factory=dict)


class ReportMetadata(BaseModel):
    """How a report was made."""

    sources_searched: list[str] = Field(default_factory=list)
    source_failures: dict[str, str] = Field(default_factory=dict)
    papers_reviewed: int = 0
    off_topic_excluded: int = 0
    """Records screened off-topic: kept in the store and the export, never cited."""
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
    """Explicit answer to a yes/no question, from the stances of the relevant sources on the
    first hypothesis (yes/no only when they are decisive; see
    :mod:`deepcritical.report.sections`); ``None`` for other questions."""
    verdict_reason: str = ""
    """Why that verdict, in words ("sources disagree: 1 supporting, 1 contradicting");
    ``""`` with no verdict."""
    verdict_method: str = ""
    """How the verdict was reached and how often such verdicts were right on held-out
    questions (:func:`deepcritical.report.verdict_method.verdict_method`); ``""`` with no
    verdict."""
    environment: SoftwareEnvironment | None = None
    """The software the report was made with; ``None`` in reports made before it was
    recorded."""
    flow: RecordFlow | None = None
    """How many records were identified per source, de-duplicated, screened, excluded as
    off-topic, included and cited (PRISMA-style); ``None`` in reports made before it was
    recorded."""
    certainty: Certainty | None = None
    """The automated GRADE-style certainty of the evidence the verdict (or, for other
    questions, the report's references) rests on; ``None`` when not rated."""
    values_dropped: int = Field(default=0, ge=0)
    """Extracted study values dropped because no verbatim proof was found in their source
    (summed over the references' study records)."""
    trace_id: str | None = None
    """The OpenTelemetry trace id (32 hex digits) of the run attempt that wrote the report;
    ``None`` when tracing was off (see docs/operations.md)."""


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
    flagged_records: list[FlaggedRecord] = Field(default_factory=list)
    """Retracted records the run found (never cited) and cited records with other integrity
    flags, built from the run's data (:func:`deepcritical.report.sections.
    add_integrity_section`); shown as the "Retracted or flagged records found" section."""

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

    def to_markdown(self) -> str:
        """The report as markdown, citations numbered ``[1]`` and references listed in order
        (see :func:`deepcritical.models.render_markdown`)."""
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
