"""The extractive report writer: a report made only of verbatim, cited sentences.

No model. For each evidence item of the slice (chosen by the orchestrator with MMR), the one or
two sentences most similar to the refined question are picked (conclusions and results
preferred, background and methods avoided) and quoted verbatim with the item's marker, placed
before the final punctuation: ``Metformin use was associated with lower risk [E3].`` Items
whose best sentence is not close enough to the question are left out (and counted in the
limitations).

- findings, grouped (``group_by``):

  - ``"checklist"``: one section per checklist item (heading = its description) holding the
    items assigned to it (an item assigned to several goes where its quotes fit best), plus
    "Other relevant findings";
  - ``"design"``: one section per group of study designs (meta-analyses, randomised
    trials, ...), designs read by :func:`deepcritical.evidence.grading.grade_evidence`;
  - ``"auto"`` (default): by design for the extractive planner's generic checklist (its items
    do not separate evidence well), by checklist for any other plan;

- executive summary: the three best quotes, from three different items;
- conclusion: the best conclusion-type quote(s), then a fixed statement that the report is an
  extractive summary with no model interpretation;
- limitations: the run's real gaps (:func:`~deepcritical.report.drafts.gap_limitations`), the
  items left out, and the limits of the method;
- hypotheses: passed through; references: the cited items.

With ``follow_preferences`` (a revision of a finished report,
:mod:`deepcritical.writing.revision`), the plan's report preferences shape the draft: a
``brief`` report quotes one sentence of each of its best few items, a ``detailed`` one a
sentence more of every item; a ``focus`` gets a first findings section of its own (the
sentences that mention it); an audience gets a fixed reader's note in the conclusion. A run's
own report keeps the defaults (the benchmarks measure them).

Every sentence that states a finding is a quote with a marker; the only other sentences are
the fixed statements above (they state no finding and cite nothing).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from deepcritical.agents.planner import EXTRACTIVE_KEYS
from deepcritical.evidence.design import DESIGN_ORDER, classify_design
from deepcritical.evidence.embeddings import Embedder
from deepcritical.evidence.keysentences import (
    KeySentence,
    mentioning_terms,
    rank_sentences,
    relevant_items,
    top_per_item,
)
from deepcritical.models import (
    Evidence,
    Hypothesis,
    JudgeAssessment,
    ReportPreferences,
    ReportSection,
    ResearchPlan,
    ResearchReport,
)
from deepcritical.report.citation_markers import add_marker, references_for
from deepcritical.report.drafts import gap_limitations, no_evidence_report
from deepcritical.text.terms import extract_key_terms, matched_terms

__all__ = [
    "AUDIENCE_NOTES",
    "BRIEF_ITEMS",
    "EXTRACTIVE_NOTE",
    "FOCUS_HEADING",
    "MIN_KEY_TERMS",
    "OTHER_HEADING",
    "ExtractiveReportWriter",
    "GroupBy",
]

GroupBy = Literal["auto", "checklist", "design"]

OTHER_HEADING = "Other relevant findings"
EXTRACTIVE_NOTE = (
    "This report is an extractive summary: every finding above is quoted verbatim from the "
    "cited sources, selected by similarity to the question, with no model interpretation."
)
METHOD_LIMITATION = (
    "Sentences were selected automatically by their similarity to the question; relevant "
    "findings phrased differently may have been missed, and quotes are shown without their "
    "full context."
)
DESIGN_LIMITATION = (
    "Study designs were read from publication types, MeSH headings and keywords "
    "(deepcritical.evidence.grading); sample sizes and effect estimates were read by "
    "patterns from the abstracts, and certainty was rated by an automated GRADE-style rating, "
    "not a formal GRADE assessment: risk of bias was judged only from what the text states."
)
HYPOTHESIS_LIMITATION = (
    "Supporting and contradicting evidence for the hypothesis was classified by cue words "
    '(such as "no significant" or "did not") in the quoted conclusions, not by expert reading.'
)


BRIEF_ITEMS = 4
"""The most items a ``brief`` report (report preferences) quotes, best first."""
FOCUS_QUOTES = 4
"""The most quotes (one per item) of a focus's own section."""
FOCUS_HEADING = "Focus: {focus}"
"""The heading of the section on the report's focus (report preferences)."""
AUDIENCE_NOTES = {
    "patients and the public": (
        "Written for patients and the public: the findings are quoted word for word from "
        "research papers and keep their technical terms; they are not medical advice, so talk "
        "them over with a doctor before acting on them."
    ),
    "clinicians": (
        "Written for clinicians: the findings are quoted word for word from the studies; check "
        "each study's population and setting against your patient before applying it."
    ),
}
"""The fixed reader's note of an audience (report preferences); other audiences get
:data:`OTHER_AUDIENCE_NOTE`."""
OTHER_AUDIENCE_NOTE = (
    "Written for {audience}: the findings are quoted word for word from the cited sources."
)


@dataclass(frozen=True)
class _Shape:
    """How much the draft quotes: sentences per item, summary and conclusion quotes, and the
    most items quoted (``None``: every relevant one)."""

    sentences_per_item: int
    summary_quotes: int
    conclusion_quotes: int
    max_items: int | None = None


@dataclass(frozen=True)
class _Draft:
    """The chosen quotes, by item, best item first."""

    picks: dict[str, list[KeySentence]]
    ranked: list[KeySentence]
    left_out: int


@dataclass(frozen=True)
class _FocusPart:
    """The focus's own section (none, or one) and the limitation when nothing mentions it."""

    sections: list[ReportSection] = field(default_factory=list)
    limitations: list[str] = field(default_factory=list)


def _audience_note(preferences: ReportPreferences) -> list[str]:
    """The fixed reader's note of ``preferences.audience`` (``[]`` for scientists, the
    default)."""
    audience = " ".join(preferences.audience.split())
    if not audience or audience.lower() == "scientists":
        return []
    return [AUDIENCE_NOTES.get(audience.lower(), OTHER_AUDIENCE_NOTE.format(audience=audience))]


def _quote(sentences: Sequence[KeySentence]) -> str:
    """The sentences verbatim, each with its item's marker, joined by spaces."""
    return " ".join(add_marker(s.text, s.evidence_id) for s in sentences)


MIN_KEY_TERMS = 1
"""Key terms of the question (matched by stem, every word of a multi-word term) a source must
mention to be quoted. Two would drop more neighbouring-topic sources (an MRI study of another
disease) but also on-topic ones whose wording differs from the question's multi-word terms
("MEK inhibitor" for "MEK inhibition"), so one it is until terms match by concept."""


class ExtractiveReportWriter:
    """Writes reports from verbatim key sentences (see the module docstring).

    Args:
        embedder: the run's sentence embedder.
        sentences_per_item: quotes per evidence item in the findings (1 or 2 recommended).
        summary_quotes: quotes in the executive summary.
        conclusion_quotes: quotes in the conclusion.
        min_similarity: an item is quoted only if its best sentence reaches this cosine
            similarity to the refined question (default 0.3, for all-MiniLM-L6-v2), and only if
            it mentions at least :data:`MIN_KEY_TERMS` of the question's key terms (words
            matched by stem; all of them when the question has fewer)...
        relative_to_best: ...and this share of the best item's similarity (0 disables).
        group_by: how findings are grouped (see the module docstring).
        follow_preferences: shape the draft by the plan's report preferences (see the module
            docstring); off for a run's own report.
    """

    def __init__(
        self,
        embedder: Embedder,
        *,
        sentences_per_item: int = 2,
        summary_quotes: int = 3,
        conclusion_quotes: int = 2,
        min_similarity: float = 0.3,
        relative_to_best: float = 0.5,
        group_by: GroupBy = "auto",
        follow_preferences: bool = False,
    ) -> None:
        self.embedder = embedder
        self.sentences_per_item = max(1, sentences_per_item)
        self.summary_quotes = max(1, summary_quotes)
        self.conclusion_quotes = max(1, conclusion_quotes)
        self.min_similarity = min_similarity
        self.relative_to_best = relative_to_best
        self.group_by = group_by
        self.follow_preferences = follow_preferences

    def _shape(self, preferences: ReportPreferences) -> _Shape:
        """The quotes the draft takes: the writer's own, or shaped by ``preferences.length``
        when it follows preferences."""
        shape = _Shape(self.sentences_per_item, self.summary_quotes, self.conclusion_quotes)
        if not self.follow_preferences or preferences.length == "standard":
            return shape
        if preferences.length == "brief":
            return _Shape(1, min(2, shape.summary_quotes), 1, BRIEF_ITEMS)
        return replace(
            shape,
            sentences_per_item=shape.sentences_per_item + 1,
            summary_quotes=shape.summary_quotes + 1,
            conclusion_quotes=shape.conclusion_quotes + 1,
        )

    def _select(self, plan: ResearchPlan, evidence: Sequence[Evidence], shape: _Shape) -> _Draft:
        # An item that mentions none of the question's key terms is on a neighbouring topic
        # at best: similarity of wording alone earns no quote.
        terms = plan.key_terms or extract_key_terms(plan.refined_question)
        needed = min(MIN_KEY_TERMS, len(terms))
        on_topic = mentioning_terms(evidence, terms, needed)
        ranked = rank_sentences(on_topic, plan.refined_question, self.embedder)
        relevant = relevant_items(ranked, self.min_similarity, self.relative_to_best)
        kept = [s for s in ranked if s.evidence_id in relevant]
        picks = top_per_item(kept, shape.sentences_per_item)
        if shape.max_items is not None:  # items come best first
            picks = dict(list(picks.items())[: shape.max_items])
            kept = [s for s in kept if s.evidence_id in picks]
        return _Draft(picks, kept, len(evidence) - len(picks))

    async def write(
        self,
        plan: ResearchPlan,
        evidence: Sequence[Evidence],
        hypotheses: Sequence[Hypothesis],
        assessment: JudgeAssessment | None,
    ) -> ResearchReport:
        """A draft report of cited verbatim quotes from ``evidence``.

        A fixed "no evidence found" report when ``evidence`` is empty or no item is relevant
        enough. Never raises for valid input (the embedder's own errors propagate).
        """
        if not evidence:
            return no_evidence_report(plan, hypotheses)
        shape = self._shape(plan.preferences)
        draft = await asyncio.to_thread(self._select, plan, evidence, shape)
        if not draft.picks:
            report = no_evidence_report(plan, hypotheses)
            report.limitations.append(
                f"None of the {len(evidence)} selected sources had a sentence close enough to "
                "the question to be quoted."
            )
            return report
        group_by = self._grouping(plan)
        if group_by == "checklist":
            section_of = await asyncio.to_thread(self._checklist_sections, plan, evidence, draft)
            headings = [(c.key, c.description) for c in plan.checklist] + [("", OTHER_HEADING)]
        else:
            by_id = {e.id: e for e in evidence}
            section_of = {eid: classify_design(by_id[eid]).value for eid in draft.picks}
            headings = [(d.value, d.value) for d in DESIGN_ORDER]
        findings = self._sections(draft, section_of, headings)
        best = {eid: max(group, key=lambda s: s.score) for eid, group in draft.picks.items()}
        by_score = sorted(best.values(), key=lambda s: -s.score)
        summary = _quote(by_score[: shape.summary_quotes])
        conclusion = [_quote(self._conclusion_sentences(draft, shape.conclusion_quotes))]
        limitations = [*gap_limitations(plan, evidence)]
        if self.follow_preferences:
            focus = await asyncio.to_thread(self._focus_section, plan.preferences, evidence)
            findings = [*focus.sections, *findings]
            limitations += focus.limitations
            conclusion += _audience_note(plan.preferences)
        conclusion.append(EXTRACTIVE_NOTE)
        if draft.left_out:
            limitations.append(
                f"{draft.left_out} of the {len(evidence)} selected sources were left out because "
                "they mention none of the question's key terms or none of their sentences was "
                "close enough to the question."
            )
        limitations.append(METHOD_LIMITATION)
        if group_by == "design":
            limitations.append(DESIGN_LIMITATION)
        if hypotheses:
            limitations.append(HYPOTHESIS_LIMITATION)
        report = ResearchReport(
            title=f"Evidence summary: {plan.refined_question}",
            research_question=plan.question,
            executive_summary=summary,
            hypotheses_tested=list(hypotheses),
            findings=findings,
            limitations=limitations,
            conclusion=" ".join(conclusion),
        )
        report.references = references_for(report.texts(), evidence)
        return report

    def _grouping(self, plan: ResearchPlan) -> Literal["checklist", "design"]:
        if self.group_by != "auto":
            return self.group_by
        generic = {c.key for c in plan.checklist} <= set(EXTRACTIVE_KEYS)
        return "design" if generic else "checklist"

    def _focus_section(
        self, preferences: ReportPreferences, evidence: Sequence[Evidence]
    ) -> _FocusPart:
        """The section on ``preferences.focus``: the sentences (one per item, at most
        :data:`FOCUS_QUOTES`) of ``evidence`` that mention the focus's key terms, most similar
        to it first; a limitation instead when none does; nothing without a focus."""
        focus = " ".join(preferences.focus.split())
        if not focus:
            return _FocusPart()
        terms = extract_key_terms(focus) or [focus]
        ranked = [
            s
            for s in rank_sentences(evidence, focus, self.embedder)
            if matched_terms(s.text, terms)
        ]
        picks = top_per_item(ranked, 1)
        chosen = sorted(picks.values(), key=lambda group: -group[0].score)[:FOCUS_QUOTES]
        if not chosen:
            return _FocusPart(
                limitations=[f"No sentence of the selected sources mentions {focus!r}."]
            )
        content = "\n\n".join(_quote(group) for group in chosen)
        heading = FOCUS_HEADING.format(focus=focus)
        return _FocusPart(sections=[ReportSection(heading=heading, content=content)])

    def _conclusion_sentences(self, draft: _Draft, count: int) -> list[KeySentence]:
        """Best conclusion-type sentences of distinct quoted items (best quote if none)."""
        chosen: list[KeySentence] = []
        seen: set[str] = set()
        for s in draft.ranked:
            if s.evidence_id in draft.picks and s.is_conclusion and s.evidence_id not in seen:
                chosen.append(s)
                seen.add(s.evidence_id)
                if len(chosen) >= count:
                    break
        return chosen or [draft.ranked[0]]

    def _checklist_sections(
        self, plan: ResearchPlan, evidence: Sequence[Evidence], draft: _Draft
    ) -> dict[str, str]:
        """Evidence id -> checklist key ("" for none): among the keys an item was assigned to,
        the one whose description is most similar to the item's quotes."""
        keys = {c.key for c in plan.checklist}
        options = {e.id: [k for k in e.checklist_keys if k in keys] for e in evidence}
        section_of = {
            eid: (options[eid][0] if len(options[eid]) == 1 else "") for eid in draft.picks
        }
        ambiguous = [eid for eid in draft.picks if len(options[eid]) > 1]
        if ambiguous:
            descriptions = [c.description for c in plan.checklist]
            texts = [" ".join(s.text for s in draft.picks[eid]) for eid in ambiguous]
            vectors = np.asarray(self.embedder.embed([*descriptions, *texts]), dtype=np.float32)
            desc, items = vectors[: len(descriptions)], vectors[len(descriptions) :]
            index = {c.key: i for i, c in enumerate(plan.checklist)}
            for eid, vector in zip(ambiguous, items, strict=True):
                sims = [float(desc[index[k]] @ vector) for k in options[eid]]
                section_of[eid] = options[eid][int(np.argmax(sims))]
        return section_of

    @staticmethod
    def _sections(
        draft: _Draft, section_of: dict[str, str], headings: Sequence[tuple[str, str]]
    ) -> list[ReportSection]:
        """Sections in ``headings`` order (key, heading), items by their best quote's score."""
        order = sorted(draft.picks, key=lambda eid: -max(s.score for s in draft.picks[eid]))
        sections: list[ReportSection] = []
        for key, heading in headings:
            members = [eid for eid in order if section_of.get(eid) == key]
            if members:
                content = "\n\n".join(_quote(draft.picks[eid]) for eid in members)
                sections.append(ReportSection(heading=heading, content=content))
        return sections
