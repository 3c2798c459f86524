"""The report parts the orchestrator builds itself: conflicting findings, verdict, study-design
summary, run limitations, and the supporting-quotes appendix of the markdown."""

from __future__ import annotations

import pytest

from deepcritical.models import (
    Citation,
    Evidence,
    GroundedClaim,
    Hypothesis,
    Reference,
    ReportSection,
    ResearchReport,
    Screening,
    Stance,
    SupportingQuote,
)
from deepcritical.report.sections import (
    CONFLICT_HEADING,
    VerdictDecision,
    add_run_context,
    add_run_findings,
    add_verdict,
    conflicting_findings_section,
    decide_verdict,
    design_summary,
    extra_limitations,
    is_yes_no_question,
    verdict_of,
    verdict_sentence,
)
from deepcritical.report.validation import citation_problems
from deepcritical.testing.embedders import HashingEmbedder


def ev(n: int, text: str, types: list[str] | None = None) -> Evidence:
    return Evidence(
        id=f"E{n}",
        content=f"BACKGROUND: Metformin is widely used.\nRESULTS: {text}",
        citation=Citation(source="pubmed", id=str(n), pmid=str(n), title=f"Study {n}"),
        publication_types=types or [],
    )


EVIDENCE = {
    "E1": ev(
        1, "Metformin lowered dementia risk in a large cohort.", ["Randomized Controlled Trial"]
    ),
    "E2": ev(2, "Metformin did not change cognitive scores in older adults."),
    "E3": ev(3, "Metformin reduced tau phosphorylation in mice.", ["Journal Article"]),
}


def hyp(supporting: list[str], contradicting: list[str]) -> Hypothesis:
    return Hypothesis(
        id="H1",
        statement="Metformin protects against dementia.",
        supporting_evidence_ids=supporting,
        contradicting_evidence_ids=contradicting,
    )


@pytest.mark.parametrize(
    ("question", "supporting", "contradicting", "verdict"),
    [
        ("Does metformin protect?", ["E1", "E3"], [], "yes"),
        ("Does metformin protect?", ["E1", "E3"], ["E2"], "uncertain"),  # 2:1 is not decisive
        ("Does metformin protect?", ["E1", "E3", "E4"], ["E2"], "yes"),  # 3:1 is
        ("Does metformin protect?", ["E1"], ["E2", "E3", "E4"], "no"),
        ("Is metformin protective?", ["E1"], ["E2"], "uncertain"),
        ("Can metformin protect?", [], ["E2"], "no"),
        ("Should we use metformin?", [], [], "uncertain"),
        ("Biliary atresia: should all patients undergo surgery?", ["E1"], [], "yes"),
        ("Inhibin: a new marker of hydatidiform mole?", [], ["E2"], "no"),
        ("How does metformin act on tau?", ["E1"], [], None),
        ("Metformin in dementia: what is known?", ["E1"], [], None),
        ("Metformin and dementia", ["E1"], [], None),
    ],
)
def test_verdict_needs_decisive_evidence(
    question: str, supporting: list[str], contradicting: list[str], verdict: str | None
) -> None:
    assert verdict_of(question, [hyp(supporting, contradicting)]) == verdict
    assert is_yes_no_question(question) == (verdict is not None)


def screened(
    eid: str, screening: Screening | None, stance: Stance | None = None, reason: str = ""
) -> Evidence:
    return EVIDENCE["E1"].model_copy(
        update={"id": eid, "screening": screening, "stance": stance, "stance_reason": reason}
    )


R, P, OFF = Screening.RELEVANT, Screening.PARTIAL, Screening.OFF_TOPIC


@pytest.mark.parametrize(
    ("items", "supporting", "contradicting", "verdict", "reason"),
    [
        (
            [screened("E1", R)],
            ["E1"],
            [],
            "yes",
            "1 relevant source supports it, none contradicts it",
        ),
        (
            [screened("E1", R), screened("E2", R)],
            [],
            ["E1", "E2"],
            "no",
            "2 relevant sources contradict it, none supports it",
        ),
        (
            [screened("E1", R), screened("E2", P)],
            ["E1"],
            ["E2"],
            "yes",
            "1 relevant source supports it, none contradicts it",
        ),  # a partially relevant source does not outweigh a relevant one
        (
            [screened("E1", R), screened("E2", R)],
            ["E1"],
            ["E2"],
            "uncertain",
            "relevant sources disagree: 1 supporting, 1 contradicting",
        ),
        (
            [screened("E1", P), screened("E2", P)],
            ["E1", "E2"],
            [],
            "uncertain",
            "only partially relevant sources take a stance (2 supporting, 0 contradicting)",
        ),
        (
            [screened("E1", R, Stance.NEUTRAL, 'hedged conclusion: "unclear"')],
            [],
            [],
            "uncertain",
            'the one relevant source\'s conclusion is not decisive (hedged conclusion: "unclear")',
        ),
        (
            [screened("E1", R, Stance.NEUTRAL), screened("E2", None, Stance.NEUTRAL)],
            [],
            [],
            "uncertain",
            "none of the 2 relevant sources' conclusions is decisive",
        ),
        (
            [screened("E1", OFF), screened("E2", OFF)],
            ["E1", "E2"],
            [],
            "uncertain",
            "no relevant source takes a stance on it",
        ),  # off-topic sources never decide
        ([], ["E1"], [], "uncertain", "no relevant source takes a stance on it"),  # unknown ids
    ],
)
def test_verdict_comes_from_relevant_sources_only_and_gives_its_reason(
    items: list[Evidence],
    supporting: list[str],
    contradicting: list[str],
    verdict: str,
    reason: str,
) -> None:
    evidence = {e.id: e for e in items}
    decision = decide_verdict("Does metformin protect?", [hyp(supporting, contradicting)], evidence)
    assert decision is not None
    assert (decision.verdict, decision.reason) == (verdict, reason)
    sentence = verdict_sentence(decision, hyp(supporting, contradicting))
    assert sentence.startswith(f"Verdict: {verdict} — {reason}; derived from")
    assert "on hypothesis H1" in sentence


def test_verdict_without_hypothesis_says_why() -> None:
    decision = decide_verdict("Does metformin protect?", [], {})
    assert decision is not None
    assert decision.verdict == "uncertain"
    assert verdict_sentence(decision, None) == (
        "Verdict: uncertain (no hypothesis could be tested on the evidence)."
    )
    partial_only = {
        e.id: e for e in (screened("E1", P, Stance.NEUTRAL), screened("E2", P, Stance.NEUTRAL))
    }
    decision = decide_verdict("Does metformin protect?", [], partial_only)
    assert decision == VerdictDecision(
        "uncertain", "only partially relevant sources were found (2), none taking a stance on it"
    )
    hedged = {"E1": screened("E1", R, Stance.NEUTRAL, "no conclusion to read")}
    decision = decide_verdict("Does metformin protect?", [], hedged)
    assert decision is not None
    assert decision.reason == (
        "the one relevant source's conclusion is not decisive (no conclusion to read)"
    )


def test_add_verdict_reads_the_evidence_stances() -> None:
    out = report([])
    out.hypotheses_tested = [hyp([], [])]
    hedged = screened("E1", R, Stance.NEUTRAL, 'hedged conclusion: "remains to be"')
    out = add_verdict(out, "Does metformin protect?", {"E1": hedged})
    assert out.metadata.verdict == "uncertain"
    assert "not decisive (hedged conclusion" in out.metadata.verdict_reason
    assert "Verdict: uncertain — the one relevant source's conclusion" in out.conclusion


def test_conflicting_findings_quote_the_contradicting_sources_verbatim() -> None:
    section = conflicting_findings_section([hyp(["E1"], ["E2"])], EVIDENCE, HashingEmbedder())
    assert section is not None
    assert section.heading == CONFLICT_HEADING
    assert "Metformin protects against dementia." in section.content
    assert "- Metformin did not change cognitive scores in older adults [E2]." in section.content
    assert "- Metformin lowered dementia risk in a large cohort [E1]." in section.content
    assert conflicting_findings_section([hyp(["E1"], [])], EVIDENCE, HashingEmbedder()) is None
    # an id that is not in the store contradicts nothing
    assert conflicting_findings_section([hyp([], ["E99"])], EVIDENCE, HashingEmbedder()) is None


def report(findings: list[ReportSection]) -> ResearchReport:
    return ResearchReport(
        title="t",
        research_question="Does metformin protect?",
        findings=findings,
        conclusion="The evidence is mixed [E1].",
        references=[Reference(evidence_id=e, citation=EVIDENCE[e].citation) for e in ("E1", "E3")],
    )


def test_run_findings_replace_a_writer_conflicts_section_and_state_the_verdict() -> None:
    draft = report(
        [
            ReportSection(heading="Efficacy", content="Risk fell [E1]."),
            ReportSection(heading="Conflicting findings", content="Invented conflict [E3]."),
        ]
    )
    hypotheses = [hyp(["E1"], ["E2"])]
    out = add_run_findings(draft, hypotheses, EVIDENCE, HashingEmbedder())
    out.hypotheses_tested = hypotheses
    out = add_verdict(out, "Does metformin protect?")
    assert [s.heading for s in out.findings] == ["Efficacy", CONFLICT_HEADING]
    assert "Invented conflict" not in out.findings[1].content
    assert out.metadata.verdict == "uncertain"
    assert out.metadata.verdict_reason == "relevant sources disagree: 1 supporting, 1 contradicting"
    assert out.conclusion.endswith(
        "Verdict: uncertain — relevant sources disagree: 1 supporting, 1 contradicting; "
        "derived from each relevant source's stated conclusion on hypothesis H1, not from a "
        "reading of effect sizes."
    )
    plain = add_run_findings(report([]), [hyp(["E1"], [])], EVIDENCE, HashingEmbedder())
    plain.hypotheses_tested = [hyp(["E1"], [])]
    plain = add_verdict(plain, "How does metformin act?")
    assert plain.metadata.verdict is None
    assert "Verdict" not in plain.conclusion
    assert plain.findings == []


def test_design_summary_and_run_limitations_come_from_the_cited_sources() -> None:
    summary = design_summary([EVIDENCE["E1"], EVIDENCE["E3"]])
    assert summary.startswith("Study designs of the 2 cited sources")
    assert "1 randomised controlled trial" in summary
    limits = extra_limitations([EVIDENCE["E3"]], {"pubmed": "HTTP 503"})
    assert limits[0].startswith("PubMed was unavailable during this run (HTTP 503)")
    assert any("No meta-analysis, systematic review or randomised" in x for x in limits)
    assert not any("No meta-analysis" in x for x in extra_limitations([EVIDENCE["E1"]], {}))

    out = add_run_context(report([]), EVIDENCE, {})
    assert "1 randomised controlled trial" in out.methodology
    assert not any("No meta-analysis" in x for x in out.limitations)


def test_markdown_shows_supporting_quotes_of_kept_sentences_only() -> None:
    r = report([ReportSection(heading="Efficacy", content="Risk fell [E1].")])
    r.grounding = [
        GroundedClaim(
            location="findings: Efficacy",
            sentence="Risk fell [E1].",
            evidence_ids=["E1"],
            quotes=[
                SupportingQuote(
                    evidence_id="E1",
                    quote="Metformin lowered dementia risk in a large cohort.",
                    similarity=0.81,
                    supports=True,
                )
            ],
            supported=True,
            kept_ids=["E1"],
            grounded_sentence="Risk fell [E1].",
        ),
        GroundedClaim(
            location="findings: Efficacy",
            sentence="Tau vanished [E3].",
            evidence_ids=["E3"],
            quotes=[SupportingQuote(evidence_id="E3", quote="unrelated", similarity=0.2)],
            removed=True,
        ),
    ]
    # the same sentence again (conclusion): listed once
    r.grounding.append(r.grounding[0].model_copy(update={"location": "conclusion"}))
    md = r.to_markdown()
    appendix = md[md.index("## Supporting quotes") :]
    assert appendix.count("- Risk fell [1].") == 1
    assert "  - [1] “Metformin lowered dementia risk in a large cohort.” (similarity 0.81)" in (
        appendix
    )
    assert "Tau vanished" not in appendix
    assert "unrelated" not in appendix


async def test_a_failing_grounding_check_degrades_the_report_instead_of_losing_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from deepcritical.config import Settings
    from deepcritical.report import finish as finishing
    from tests.unit.test_iterative_orchestrator import (
        CountingSource,
        collect,
        final,
        orchestrator,
    )

    def broken(*args: object, **kwargs: object) -> ResearchReport:
        raise RuntimeError("embedder crashed")

    monkeypatch.setattr(finishing, "ground_report", broken)
    settings = Settings(max_rounds=1, results_per_query=3, sources=["local"])
    orch, store = orchestrator([CountingSource()], settings=settings)
    events = await collect(orch)
    report = final(events)  # the run still ends with its report
    assert report.metadata.grounding_check is None
    assert report.metadata.grounding_score is None
    assert any("grounding check failed" in n for n in report.metadata.notes)
    assert any("grounding check failed" in e.message for e in events if e.type == "warning")
    assert citation_problems(report, {e.id: e for e in store.all()}) == []
