"""Claim-level grounding, the "Conflicting findings" section and the verdict, end to end.

The scripted model of ``test_api_scripted_llm`` plays every role on the same real corpus
(PubMedQA subset), with a writer that quotes one sentence of each of two shown sources: the
first cited with its own id, the second cited with the id of the *first* source (a real,
retrieved, on-topic paper that does not say it). With grounding on (the default), the run
must remove the misattributed sentence, keep the right one with its supporting quote, and
still pass citation validation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from deepcritical.api import research
from deepcritical.events import PlanningData
from deepcritical.models import ReportPreferences
from deepcritical.testing.chat import FENCED_BLOCK
from tests.integration.test_api_scripted_llm import (
    Corpus,
    FirstNamesScript,
    assert_cites_only_stored_evidence,
    collect,
    corpus,  # noqa: F401  (module fixture)
    result_of,
    settings_for,
)

TEXT_LINE = re.compile(r"^Text: (.*)$", re.MULTILINE)
LABEL = re.compile(r"\b[A-Z][A-Z /&,()-]{2,60}:\s+")
SENTENCE = re.compile(r"(?<=[a-z0-9%)\]][.!?])\s+(?=[A-Z])")


def quotable(prompt: str) -> list[tuple[str, str]]:
    """(id, a full sentence of its text) for every fenced source with one."""
    out = []
    for sid, _nonce, body in FENCED_BLOCK.findall(prompt):
        m = TEXT_LINE.search(body)
        text = LABEL.sub("", m.group(1) if m else "").replace(" …", "")
        sentences = [s for s in SENTENCE.split(text) if len(s) > 50 and s.endswith(".")]
        if sentences:
            out.append((sid, sentences[0]))
    return out


@dataclass
class MisattributingLLM(FirstNamesScript):
    """Writes one right and one misattributed quote; optionally a contradicting id."""

    contradict: bool = False
    rewrites: bool = False
    right: tuple[str, str] = ("", "")
    wrong: tuple[str, str, str] = ("", "", "")  # (sentence, true id, cited id)

    def outline(self, prompt: str) -> dict[str, Any]:
        ids = [sid for sid, _nonce, _body in FENCED_BLOCK.findall(prompt)]
        return {
            "title": "Scripted grounding review",
            "outline": [{"heading": "Patient preference", "evidence_ids": ids}],
        }

    def findings(self, prompt: str) -> dict[str, Any]:
        shown = quotable(prompt)
        assert len(shown) >= 2, "the writer needs two quotable sources"
        (a_id, a_text), (b_id, b_text) = shown[0], shown[1]
        self.right = (a_text, a_id)
        self.wrong = (b_text, b_id, a_id)
        return {"content": f"{a_text[:-1]} [{a_id}]. {b_text[:-1]} [{a_id}]."}

    def rewriter(self, prompt: str) -> dict[str, Any]:
        """With ``rewrites``: the passage shown for the cited source, cited (a faithful
        rewrite); otherwise declines."""
        if not self.rewrites:
            return {"rewritten_sentence": ""}
        blocks = [
            (sid, body) for sid, _n, body in FENCED_BLOCK.findall(prompt) if sid != "sentence"
        ]
        sid, passage = blocks[0]
        return {"rewritten_sentence": f"{passage.strip().rstrip('.')} [{sid}]."}

    def summary(self, prompt: str) -> dict[str, Any]:
        return {
            "executive_summary": f"{self.right[0][:-1]} [{self.right[1]}].",
            "limitations": ["Few studies exist."],
            "conclusion": "The evidence is limited.",
        }

    def hypothesis(self, prompt: str) -> dict[str, Any]:
        shown = self._shown(prompt)
        return {
            "hypotheses": [
                {
                    "statement": "Patients prefer general practitioners to use their first names.",
                    "confidence": 0.6,
                    "supporting_evidence_ids": shown[:1],
                    "contradicting_evidence_ids": shown[1:3] if self.contradict else [],
                }
            ]
        }


@pytest.mark.parametrize("contradict", [False, True])
async def test_grounding_removes_a_sentence_citing_a_real_but_irrelevant_source(
    corpus: Corpus,  # noqa: F811
    tmp_path: Path,
    contradict: bool,
) -> None:
    llm = MisattributingLLM(contradict=contradict)
    events = await collect(
        research(
            corpus.question,
            settings_for(corpus, tmp_path, grounding=True),
            model=llm.model(),
            embedder=corpus.embedder,
        )
    )
    result = result_of(events)
    report = result.report
    assert_cites_only_stored_evidence(result)

    findings = "\n".join(s.content for s in report.findings)
    wrong_sentence, true_id, cited_id = llm.wrong
    assert true_id != cited_id
    assert wrong_sentence[:-1] not in findings, "the misattributed sentence survived"
    assert llm.right[0][:-1] in findings, "the correctly cited sentence was removed"

    check = report.metadata.grounding_check
    assert check is not None
    assert check.sentences_removed >= 1
    assert report.metadata.grounding_score is not None
    assert report.metadata.grounding_score < 1.0
    removed = [c for c in report.grounding if c.removed]
    assert any(c.sentence.startswith(wrong_sentence[:-1]) for c in removed)
    kept = next(c for c in report.grounding if c.sentence.startswith(llm.right[0][:-1]))
    assert kept.supported
    assert kept.kept_ids == [llm.right[1]]
    quote = next(q for q in kept.quotes if q.supports)
    by_id = {e.id: e for e in result.evidence}
    assert quote.quote in by_id[llm.right[1]].content  # verbatim source text

    markdown = report.to_markdown()
    assert "## Supporting quotes" in markdown
    assert "Grounding check:" in markdown
    assert all(r.study_design is not None for r in report.references)
    assert "Study designs of the" in report.methodology

    # a yes/no question gets an explicit verdict, derived from the hypothesis' evidence
    assert report.metadata.verdict in {"yes", "no", "uncertain"}
    assert f"Verdict: {report.metadata.verdict}" in report.conclusion

    headings = [s.heading for s in report.findings]
    hypothesis = report.hypotheses_tested[0]
    assert bool(hypothesis.contradicting_evidence_ids) == contradict
    if contradict:
        assert "Conflicting findings" in headings
        section = next(s for s in report.findings if s.heading == "Conflicting findings")
        assert "Evidence against it" in section.content
        assert set(re.findall(r"E\d+", section.content)) & set(
            hypothesis.contradicting_evidence_ids
        )
    else:
        assert "Conflicting findings" not in headings
        assert report.metadata.verdict == "yes"


async def test_report_preferences_reach_the_plan_and_every_writer_prompt(
    corpus: Corpus,  # noqa: F811
    tmp_path: Path,
) -> None:
    llm = MisattributingLLM()
    preferences = ReportPreferences(audience="clinicians", length="brief", focus="older adults")
    events = await collect(
        research(
            corpus.question,
            settings_for(corpus, tmp_path, grounding=True),
            model=llm.model(),
            embedder=corpus.embedder,
            preferences=preferences,
        )
    )
    result = result_of(events)
    assert result.plan is not None
    assert result.plan.preferences == preferences
    planning = next(e for e in events if e.type == "planning")
    assert planning.data_as(PlanningData).preferences.audience == "clinicians"
    writer_calls = [c for c in llm.calls if c.role in ("outline", "findings", "summary")]
    assert {c.role for c in writer_calls} == {"outline", "findings", "summary"}
    for call in writer_calls:
        assert "Audience: clinicians" in call.prompt
        assert "Focus: older adults" in call.prompt
    outline = next(c for c in llm.calls if c.role == "outline")
    assert "2 to 3 findings sections" in outline.instructions  # brief


async def test_with_a_rewriter_the_misattributed_sentence_is_rewritten_from_its_source(
    corpus: Corpus,  # noqa: F811
    tmp_path: Path,
) -> None:
    llm = MisattributingLLM(rewrites=True)
    events = await collect(
        research(
            corpus.question,
            settings_for(corpus, tmp_path, grounding=True),
            model=llm.model(),
            embedder=corpus.embedder,
        )
    )
    result = result_of(events)
    report = result.report
    assert_cites_only_stored_evidence(result)
    wrong_sentence, _true_id, cited_id = llm.wrong
    findings = "\n".join(s.content for s in report.findings)
    assert wrong_sentence[:-1] not in findings
    claim = next(c for c in report.grounding if c.sentence.startswith(wrong_sentence[:-1]))
    assert claim.rewritten
    assert not claim.removed
    assert claim.kept_ids == [cited_id]
    assert claim.grounded_sentence in findings  # the rewrite took the sentence's place
    source = {e.id: e for e in result.evidence}[cited_id]
    assert claim.quotes[0].quote in f"{source.citation.title}\n{source.content}"  # verbatim
    rewrites = [c for c in llm.calls if c.role == "rewriter"]
    assert rewrites
    assert wrong_sentence[:40] in rewrites[0].prompt  # the unsupported sentence, fenced
    check = report.metadata.grounding_check
    assert check is not None
    assert check.sentences_rewritten >= 1
