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


class ResearchPlan(BaseModel):
    """The plan made before searching: refined question, checklist and first queries."""

    question: str
    refined_question: str
    checklist: list[ChecklistItem] = Field(min_length=1)
    queries: list[str] = Field(default_factory=list)
    key_terms: list[str] = Field(default_factory=list)

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

    @computed_field  # type: ignore[prop-decorator]
    @property
    def valid(self) -> bool:
        """True when nothing had to be removed."""
        return (
            self.references_removed == 0
            and self.markers_removed == 0
            and self.sentences_removed == 0
        )


StopReason = Literal[
    "sufficient",
    "max_rounds",
    "max_sources",
    "time_budget",
    "no_new_evidence",
    "no_sources",
    "cancelled",
    "error",
]


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
        """The report as markdown, citations numbered ``[1]`` and references listed in order."""
        numbers = self.reference_numbers()

        def num(text: str) -> str:
            return self._numbered(text, numbers)

        md = self.metadata
        out: list[str] = [f"# {self.title}", "", f"**Research question:** {self.research_question}"]
        out += ["", "## Executive summary", "", num(self.executive_summary)]
        if self.methodology:
            out += ["", "## Methodology", "", num(self.methodology)]
        if self.hypotheses_tested:
            out += ["", "## Hypotheses tested", ""]
            for h in self.hypotheses_tested:
                chain = " → ".join(p for p in [h.drug, h.target, h.pathway, h.effect] if p)
                sup = ", ".join(
                    f"[{numbers[e]}]" for e in h.supporting_evidence_ids if e in numbers
                )
                con = ", ".join(
                    f"[{numbers[e]}]" for e in h.contradicting_evidence_ids if e in numbers
                )
                line = f"- **{num(h.statement)}** (confidence {h.confidence:.2f})"
                if chain:
                    line += f"  \n  Chain: {chain}"
                line += f"  \n  Supporting: {sup or 'none'}; contradicting: {con or 'none'}"
                out.append(line)
        if self.findings:
            out += ["", "## Findings"]
            for s in self.findings:
                out += ["", f"### {num(s.heading)}", "", num(s.content)]
        if self.limitations:
            out += ["", "## Limitations", ""]
            out += [f"- {num(lim)}" for lim in self.limitations]
        if self.conclusion:
            out += ["", "## Conclusion", "", num(self.conclusion)]
        out += ["", "## References", ""]
        by_id: dict[str, Reference] = {}
        for ref in self.references:
            by_id.setdefault(ref.evidence_id, ref)
        for eid, n in sorted(numbers.items(), key=lambda kv: kv[1]):
            out.append(f"{n}. {by_id[eid].citation.format_reference()}")
        if not numbers:
            out.append("No references.")
        cv = md.citation_validation
        searched = ", ".join(SOURCE_LABELS.get(s, s) for s in md.sources_searched) or "none"
        out += [
            "",
            "---",
            "",
            f"*Sources searched: {searched}"
            f" · papers reviewed: {md.papers_reviewed} · iterations: {md.iterations}"
            f" · confidence: {md.confidence:.2f} · checklist coverage: {md.checklist_coverage:.0%}"
            f" · stopped: {md.stop_reason or 'n/a'} · model: {md.llm}*  ",
            f"*Citation check: {cv.references_checked} references and {cv.markers_checked}"
            f" inline citations checked against the evidence store; {cv.references_removed}"
            f" references, {cv.markers_removed} citations and {cv.sentences_removed} sentences"
            " removed.*  ",
        ]
        out.extend(f"*Note: {note}*  " for note in md.notes)
        if md.source_failures:
            fails = "; ".join(
                f"{SOURCE_LABELS.get(s, s)}: {why}" for s, why in md.source_failures.items()
            )
            out.append(f"*Sources unavailable: {fails}.*")
        return "\n".join(out) + "\n"

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
