"""The LLM report writer: outline, then one section at a time, then the summary.

Three kinds of model call:

1. outline (``prompts/writer_outline.md``): from the compressed findings (one short fenced
   digest per evidence item, :mod:`deepcritical.evidence.digest`) the model gives a title and
   2-6 sections (the count follows the report length the user asked for), each with a
   heading, what it must cover and the ids of the evidence it uses. Headings adapt to the
   question type (:func:`~deepcritical.writing.prompts.question_type`): a
   drug-repurposing question gets "Mechanistic findings", "Clinical findings" and
   "Hypotheses and candidates"; a general question gets the outline's own headings.
2. one call per section (``prompts/writer_section.md``) with *only that section's evidence*
   in the prompt (full snippets, fenced);
3. summary (``prompts/writer_summary.md``): executive summary, limitations, conclusion, from
   the sections written and the compressed findings.

Every text the model writes is cleaned before it is returned: markers are normalised
(``[e3]``, ``[E3; E7]``, ``[PMID: n]`` of a shown source -> ``[E3, E7]``), ids the call was
not shown are removed (a section may cite only its own evidence) and a sentence citing only
such ids is dropped. What was removed is stated in ``report.metadata.notes`` and kept in
:attr:`LLMReportWriter.last_cleanup`. The orchestrator still validates and grounds the draft
(:mod:`deepcritical.report.validation`, :mod:`deepcritical.report.grounding`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, Field

from deepcritical.evidence.embeddings import Embedder
from deepcritical.evidence.mmr import unit_rows
from deepcritical.evidence.passages import rank_passages
from deepcritical.llm.agent_config import LLMConfig
from deepcritical.llm.choices import with_choices
from deepcritical.llm.fencing import new_fence
from deepcritical.llm.lenient import EvidenceIdList, LenientStrList
from deepcritical.llm.runner import ModelRetry, StructuredAgent
from deepcritical.llm.structured import GRAMMAR_STRATEGIES
from deepcritical.llm.templates import render_prompt
from deepcritical.models import (
    CitationValidation,
    Evidence,
    Hypothesis,
    JudgeAssessment,
    ReportSection,
    ResearchPlan,
    ResearchReport,
    marker_ids,
)
from deepcritical.report.citation_markers import (
    MarkerCleanup,
    PaperIds,
    references_for,
    restrict_markers,
)
from deepcritical.report.drafts import gap_limitations, no_evidence_report
from deepcritical.text.sentences import split_sentences
from deepcritical.writing.prompts import (
    SECTION_RANGE,
    outline_prompt,
    required_headings,
    section_prompt,
    summary_prompt,
)

__all__ = [
    "CitedSectionOutput",
    "CitedSentence",
    "LLMReportWriter",
    "OutlineOutput",
    "OutlineSection",
    "SectionOutput",
    "SummaryOutput",
    "cleanup_note",
]

MAX_SECTIONS = 6
CONTENT_FORM = (
    "Write the `content` of the section named in the message, from the sources shown (and "
    "only those): markdown paragraphs, no headings inside.",
    ", as inline markers placed before the sentence's final punctuation: `Metformin lowered "
    "tau phosphorylation in mice [E3].` or, for several sources, `[E3, E7]`",
)
"""The section prompt's ``form`` and ``how`` (citing) for :class:`SectionOutput`."""
SENTENCES_FORM = (
    "Write the section named in the message, from the sources shown (and only those), as "
    "`sentences`: each one sentence of the section, in order.",
    ": a sentence's `text` carries no marker, its `evidence_ids` list the ids "
    '(`["E3"]`, or `["E3", "E7"]` for several sources)',
)
"""The section prompt's ``form`` and ``how`` for :class:`CitedSectionOutput`."""
SECTION_PASSAGES = 3
"""Passages of each full-text source shown to a section call."""


class OutlineSection(BaseModel):
    """One planned findings section."""

    heading: str
    purpose: str = Field(default="", description="what the section must cover (one line)")
    evidence_ids: LenientStrList = Field(
        default_factory=list,
        description="ids of the sources the section uses, e.g. E3",
        json_schema_extra={"minItems": 1},  # a grammar's bound; the validator reads []
    )


class OutlineOutput(BaseModel):
    """Output of the outline call."""

    title: str = ""
    outline: list[OutlineSection] = Field(min_length=1)


class SectionOutput(BaseModel):
    """Output of one section call."""

    content: str = Field(description="markdown paragraphs; every factual sentence cited [E3]")


class CitedSentence(BaseModel):
    """One sentence of a section written as :class:`CitedSectionOutput`: its ``text`` (no
    marker inside) and the ids of the shown sources that state it (an enum per call, 1-3)."""

    text: str = Field(json_schema_extra={"maxLength": 300})
    evidence_ids: EvidenceIdList = Field(
        default_factory=list, json_schema_extra={"minItems": 1, "maxItems": 3}
    )

    def marked(self) -> str:
        """The text with its markers before the final punctuation of each of its sentences
        ("... [E1, E3]."): a ``text`` holding several sentences leaves none of them uncited
        (grounding checks cited sentences only)."""
        text = " ".join(self.text.split())
        if not self.evidence_ids:
            return text
        marker = f"[{', '.join(self.evidence_ids)}]"
        marked = []
        for sentence in split_sentences(text):
            body = sentence.rstrip(".!? ")
            end = sentence[len(body) :].strip()[:1] or "."
            marked.append(f"{body} {marker}{end}")
        return " ".join(marked)


class CitedSectionOutput(BaseModel):
    """Output of one section call under a grammar-constrained strategy
    (:data:`~deepcritical.llm.structured.GRAMMAR_STRATEGIES`): 1-6 :class:`CitedSentence`,
    each citing at least one shown id, which a grammar can enforce (a free ``content`` string
    cannot be held to carry markers). Joined into one paragraph (:meth:`content`)."""

    sentences: list[CitedSentence] = Field(
        default_factory=list, json_schema_extra={"minItems": 1, "maxItems": 6}
    )

    @property
    def content(self) -> str:
        """The sentences, each with its markers, as one paragraph."""
        return " ".join(s.marked() for s in self.sentences if s.text.strip())


class SummaryOutput(BaseModel):
    """Output of the summary call."""

    executive_summary: str
    limitations: LenientStrList = Field(default_factory=list)
    conclusion: str


@dataclass(frozen=True)
class _Shown:
    ids: frozenset[str]


def _check_outline(shown: _Shown, output: OutlineOutput) -> OutlineOutput:
    """Keep only shown ids (upper-cased, de-duplicated) and sections that still have
    evidence; at most :data:`MAX_SECTIONS`. Sends the outline back when none is left."""
    sections = []
    for section in output.outline:
        ids = [i.strip().upper() for i in section.evidence_ids]
        kept = [i for i in dict.fromkeys(ids) if i in shown.ids]
        heading = " ".join(section.heading.split())
        if kept and heading:
            sections.append(section.model_copy(update={"evidence_ids": kept, "heading": heading}))
    if not sections:
        raise ModelRetry(
            "no section of the outline lists ids of the sources shown; give every section "
            "the ids (E-numbers) of the shown sources it will use"
        )
    return output.model_copy(update={"outline": sections[:MAX_SECTIONS]})


def _check_section(
    shown: _Shown, output: SectionOutput | CitedSectionOutput
) -> SectionOutput | CitedSectionOutput:
    if shown.ids.isdisjoint(marker_ids(output.content)):
        raise ModelRetry(
            "the section cites none of its sources; cite every factual sentence with the ids "
            "of the sources shown, e.g. [E1] or [E1, E2]"
        )
    return output


def cleanup_note(cleanup: MarkerCleanup) -> str:
    """A sentence for the report notes saying what the writer's own check removed ("" if
    nothing)."""
    if not cleanup.removed_ids and not cleanup.dropped_sentences:
        return ""
    ids = ", ".join(cleanup.removed_ids) or "identifiers of papers it was not shown"
    return (
        f"The writing model cited sources it had not been shown ({ids}); those citations and "
        f"{len(cleanup.dropped_sentences)} sentence(s) supported only by them were removed "
        "before citation validation."
    )


class LLMReportWriter:
    """Draft reports written by a model: outline, sections, summary (see the module
    docstring).

    Args:
        config: model, retries, timeout, usage tracker.
        snippet_chars: characters of each source's content shown to a section call.
        embedder: chooses the passages of each full-text source shown to a section call
            (the :data:`SECTION_PASSAGES` that best match the question and the section's
            heading and purpose); ``None``: abstracts only.
    """

    role = "writer"

    def __init__(
        self, config: LLMConfig, snippet_chars: int = 1500, embedder: Embedder | None = None
    ) -> None:
        self.snippet_chars = snippet_chars
        self.embedder = embedder
        self.last_cleanup = MarkerCleanup()
        self._outline = config.structured(
            f"{self.role}.outline", OutlineOutput, _Shown, validator=_check_outline
        )
        self.cited_sentences = config.output in GRAMMAR_STRATEGIES
        """Sections are asked for as :class:`CitedSectionOutput` (a grammar-constrained
        strategy) rather than :class:`SectionOutput`."""
        section_type = CitedSectionOutput if self.cited_sentences else SectionOutput
        self._section: StructuredAgent[_Shown, SectionOutput | CitedSectionOutput] = (
            config.structured(
                f"{self.role}.section", section_type, _Shown, validator=_check_section
            )
        )
        self._summary = config.structured(f"{self.role}.summary", SummaryOutput)

    async def write(
        self,
        plan: ResearchPlan,
        evidence: Sequence[Evidence],
        hypotheses: Sequence[Hypothesis],
        assessment: JudgeAssessment | None,
    ) -> ResearchReport:
        """A draft report citing only ids of ``evidence`` (metadata left to the orchestrator).

        One outline call, one call per outlined section (sequential, each seeing only its
        own evidence), one summary call. With no evidence, a fixed "no evidence found"
        report is returned without calling the model.

        Raises:
            AgentOutputError: invalid output after the retries (any call).
            AgentModelError: a model call failed or timed out.
        """
        if not evidence:
            return no_evidence_report(plan, hypotheses)
        papers = PaperIds.of(evidence)
        cleanup = MarkerCleanup()
        by_id = {e.id: e for e in evidence}

        outline = await self._write_outline(plan, evidence, hypotheses, assessment)
        sections: list[ReportSection] = []
        for planned in outline.outline:
            own = [by_id[i] for i in planned.evidence_ids if i in by_id]
            content = await self._write_section(plan, planned, own, hypotheses, cleanup, papers)
            if content.strip():
                sections.append(ReportSection(heading=planned.heading, content=content))

        allowed = [e.id for e in evidence]
        summary = await self._write_summary(plan, evidence, sections)

        def clean(text: str) -> str:
            return restrict_markers(text, allowed, cleanup, papers)

        limitations = [clean(x) for x in summary.limitations]
        known = {x.lower() for x in limitations}
        limitations += [g for g in gap_limitations(plan, evidence) if g.lower() not in known]
        report = ResearchReport(
            title=" ".join(outline.title.split()) or f"Evidence review: {plan.refined_question}",
            research_question=plan.question,
            executive_summary=clean(summary.executive_summary),
            hypotheses_tested=list(hypotheses),
            findings=sections,
            limitations=[x for x in limitations if x.strip()],
            conclusion=clean(summary.conclusion),
        )
        report.references = references_for(report.texts(), evidence)
        note = cleanup_note(cleanup)
        if note:
            report.metadata.notes.append(note)
        report.metadata.citation_validation = CitationValidation(
            writer_markers_removed=len(cleanup.removed_ids),
            writer_sentences_removed=len(cleanup.dropped_sentences),
            writer_removed_ids=sorted(set(cleanup.removed_ids)),
        )
        self.last_cleanup = cleanup
        return report

    async def _write_section(
        self,
        plan: ResearchPlan,
        planned: OutlineSection,
        own: Sequence[Evidence],
        hypotheses: Sequence[Hypothesis],
        cleanup: MarkerCleanup,
        papers: PaperIds,
    ) -> str:
        """One outlined section written from its own evidence ``own`` (and the passages of
        its full texts that best match it), its markers restricted to those ids."""
        form, how = SENTENCES_FORM if self.cited_sentences else CONTENT_FORM
        fence = new_fence()
        instructions = render_prompt("writer_section", form=form, how=how, untrusted=fence.note())
        query = f"{plan.refined_question} {planned.heading}. {planned.purpose}"
        passages = await asyncio.to_thread(self._passages, own, query)
        prompt = section_prompt(
            plan,
            planned.heading,
            planned.purpose,
            own,
            hypotheses,
            fence,
            self.snippet_chars,
            passages,
        )
        ids = [e.id for e in own]
        bounded = (
            with_choices(CitedSectionOutput, {"sentences.evidence_ids": ids})
            if self.cited_sentences
            else None
        )
        written = await self._section.run(
            instructions, prompt, _Shown(frozenset(ids)), output_type=bounded
        )
        return restrict_markers(written.content, ids, cleanup, papers)

    def _passages(
        self, evidence: Sequence[Evidence], query: str
    ) -> dict[str, list[tuple[str, str]]]:
        """``(locator, text)`` of the passages of each full-text item that best match
        ``query`` (:func:`~deepcritical.evidence.passages.rank_passages`)."""
        full = [e for e in evidence if e.passages]
        if self.embedder is None or not full:
            return {}
        vector = unit_rows(np.asarray(self.embedder.embed([query]), dtype=np.float32))[0]
        return {
            e.id: [
                (p.passage.locator(), p.passage.text)
                for p in rank_passages(e, query, vector, self.embedder, SECTION_PASSAGES)
            ]
            for e in full
        }

    async def _write_outline(
        self,
        plan: ResearchPlan,
        evidence: Sequence[Evidence],
        hypotheses: Sequence[Hypothesis],
        assessment: JudgeAssessment | None,
    ) -> OutlineOutput:
        fence = new_fence()
        low, high = SECTION_RANGE[plan.preferences.length]
        instructions = render_prompt(
            "writer_outline",
            min_sections=low,
            max_sections=min(high, MAX_SECTIONS),
            required=required_headings(plan) or "none",
            untrusted=fence.note(),
        )
        prompt = outline_prompt(plan, evidence, hypotheses, assessment, fence)
        ids = [e.id for e in evidence]
        return await self._outline.run(
            instructions,
            prompt,
            _Shown(frozenset(ids)),
            output_type=with_choices(OutlineOutput, {"outline.evidence_ids": ids}),
        )

    async def _write_summary(
        self,
        plan: ResearchPlan,
        evidence: Sequence[Evidence],
        sections: Sequence[ReportSection],
    ) -> SummaryOutput:
        fence = new_fence()
        instructions = render_prompt("writer_summary", untrusted=fence.note())
        prompt = summary_prompt(plan, evidence, sections, fence)
        return await self._summary.run(instructions, prompt, None)
