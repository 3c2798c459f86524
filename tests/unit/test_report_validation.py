"""Citation validation of reports (deepcritical.report.validation)."""

from __future__ import annotations

import random
import re

import pytest

from deepcritical.models import (
    CITATION_MARKER,
    Citation,
    Evidence,
    Hypothesis,
    Reference,
    ReportSection,
    ResearchReport,
    marker_ids,
)
from deepcritical.report import citation_problems, validate_report
from deepcritical.text.sentences import CITATION_GROUP

Evidence_ = dict[str, Evidence]


def _evidence() -> Evidence_:
    """Five stored items with the identifiers the alternative marker forms refer to."""
    items = [
        Evidence(
            id="E1",
            content="Metformin use was associated with lower dementia incidence.",
            citation=Citation(
                source="pubmed",
                id="31000001",
                pmid="31000001",
                title="Metformin and dementia in a national cohort",
                authors=["Lee A", "Kim B"],
                journal="Diabetes Care",
                year=2019,
            ),
        ),
        Evidence(
            id="E2",
            content="AMPK activation reduced tau phosphorylation in mice.",
            citation=Citation(
                source="pubmed",
                id="123",
                pmid="123",
                pmcid="PMC777",
                title="AMPK and tau",
                year=2016,
            ),
        ),
        Evidence(
            id="E3",
            content="A meta-analysis of cognitive outcomes.",
            citation=Citation(
                source="europepmc",
                id="10.1016/S0140-6736(20)30183-5",
                doi="10.1016/s0140-6736(20)30183-5",
                title="Cognition meta-analysis",
            ),
        ),
        Evidence(
            id="E4",
            content="A randomised trial of metformin in mild cognitive impairment.",
            citation=Citation(
                source="trials",
                id="NCT01234567",
                nct_id="NCT01234567",
                title="MAP trial",
            ),
        ),
        Evidence(
            id="E5",
            content="Lactic acidosis is rare.",
            citation=Citation(source="openalex", id="W42", title="Safety review"),
        ),
    ]
    return {e.id: e for e in items}


@pytest.fixture
def ev() -> Evidence_:
    return _evidence()


def _report(**fields: object) -> ResearchReport:
    base: dict[str, object] = {"title": "Metformin and AD", "research_question": "Does it help?"}
    base.update(fields)
    return ResearchReport.model_validate(base)


def _fake_citation(title: str = "Invented paper") -> Citation:
    return Citation(source="pubmed", id="99999999", pmid="99999999", title=title, year=2031)


# --- references -------------------------------------------------------------------------------


def test_fabricated_reference_is_removed_and_counted(ev: Evidence_) -> None:
    report = _report(
        executive_summary="Metformin lowered risk [E1].",
        references=[
            Reference(evidence_id="E1", citation=ev["E1"].citation),
            Reference(evidence_id="E999", citation=_fake_citation()),
        ],
    )
    out = validate_report(report, ev)
    assert [r.evidence_id for r in out.references] == ["E1"]
    cv = out.metadata.citation_validation
    assert cv.references_checked == 2
    assert cv.references_removed == 1
    assert cv.removed_reference_ids == ["E999"]
    assert not cv.valid
    assert "Invented paper" not in out.to_markdown()


def test_real_id_with_fabricated_metadata_gets_the_stores_citation(ev: Evidence_) -> None:
    forged = Citation(source="pubmed", id="1", pmid="1", title="A landmark trial", year=2030)
    report = _report(
        executive_summary="It helps [E2].",
        references=[Reference(evidence_id="E2", citation=forged)],
    )
    out = validate_report(report, ev)
    assert out.references[0].citation == ev["E2"].citation
    assert out.references[0].citation is not ev["E2"].citation  # no shared state with the store
    assert "A landmark trial" not in out.to_markdown()
    assert out.metadata.citation_validation.references_removed == 0
    assert report.references[0].citation == forged  # input untouched


def test_duplicate_references_collapse_without_counting_as_removed(ev: Evidence_) -> None:
    report = _report(
        executive_summary="It helps [E1].",
        references=[
            Reference(evidence_id="E1", citation=ev["E1"].citation),
            Reference(evidence_id="E1", citation=_fake_citation()),
            Reference(evidence_id="e1", citation=_fake_citation()),
        ],
    )
    out = validate_report(report, ev)
    assert [r.evidence_id for r in out.references] == ["E1"]
    assert out.metadata.citation_validation.references_removed == 0


def test_missing_reference_is_added_from_the_evidence(ev: Evidence_) -> None:
    report = _report(
        executive_summary="It helps [E1]. Tau fell [E3, E2].",
        references=[Reference(evidence_id="E1", citation=ev["E1"].citation)],
    )
    out = validate_report(report, ev)
    assert [r.evidence_id for r in out.references] == ["E1", "E3", "E2"]
    assert out.references[1].citation == ev["E3"].citation
    cv = out.metadata.citation_validation
    assert cv.references_added == 2
    assert cv.valid  # adding a real reference is not a removal


def test_reference_given_by_another_identifier_is_resolved(ev: Evidence_) -> None:
    report = _report(
        references=[
            Reference(evidence_id="PMID: 123", citation=_fake_citation()),
            Reference(evidence_id="NCT01234567", citation=_fake_citation()),
            Reference(evidence_id="1", citation=_fake_citation()),
        ]
    )
    out = validate_report(report, ev)
    assert [(r.evidence_id, r.citation) for r in out.references] == [
        ("E2", ev["E2"].citation),
        ("E4", ev["E4"].citation),
    ]
    assert out.metadata.citation_validation.removed_reference_ids == ["1"]


def test_uncited_real_reference_is_kept(ev: Evidence_) -> None:
    report = _report(references=[Reference(evidence_id="E5", citation=_fake_citation())])
    out = validate_report(report, ev)
    assert out.references == [Reference(evidence_id="E5", citation=ev["E5"].citation)]


# --- inline markers -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("[PMID: 123]", "[E2]"),
        ("[PMID:123]", "[E2]"),
        ("[pmid 123]", "[E2]"),
        ("(PMID: 123)", "[E2]"),
        ("[PMC777]", "[E2]"),
        ("[PMCID: PMC777]", "[E2]"),
        ("(PMC777)", "[E2]"),
        ("[NCT01234567]", "[E4]"),
        ("[doi:10.1016/S0140-6736(20)30183-5]", "[E3]"),
        ("[https://doi.org/10.1016/s0140-6736(20)30183-5]", "[E3]"),
        ("[e1]", "[E1]"),
        ("[E3; E4]", "[E3, E4]"),
        ("[E3][E4]", "[E3, E4]"),
        ("[E3] [E4]", "[E3, E4]"),
        ("[E3], [E4]", "[E3, E4]"),
        ("[E3,E4]", "[E3, E4]"),
        ("[E2-E4]", "[E2, E3, E4]"),
        ("[E1, E1]", "[E1]"),
        ("[PMID: 31000001, 123]", "[E1, E2]"),
        ("[E1 and E2]", "[E1, E2]"),
        ("[see E4]", "[E4]"),
    ],
)
def test_alternative_marker_forms_become_evidence_ids(
    ev: Evidence_, written: str, canonical: str
) -> None:
    report = _report(executive_summary=f"Metformin lowered tau {written}. Next sentence.")
    out = validate_report(report, ev)
    assert out.executive_summary == f"Metformin lowered tau {canonical}. Next sentence."
    cv = out.metadata.citation_validation
    assert cv.markers_removed == 0
    assert cv.sentences_removed == 0
    assert {r.evidence_id for r in out.references} == set(marker_ids(canonical))
    assert citation_problems(out, ev) == []


@pytest.mark.parametrize(
    "untouched",
    [
        "The estimate was 1.4 [95% CI] in adults.",
        "Calcium [Ca2+] rose after exposure.",
        "Serum estradiol (E2) and estriol (E3) levels rose.",
        "The [1,2,4]triazole analogue was inactive.",
        "Trial NCT09999999 and PMID 999 are mentioned in prose only.",
        "E3 ubiquitin ligases were upregulated [n = 12].",
    ],
)
def test_text_that_only_looks_like_a_citation_is_not_touched(ev: Evidence_, untouched: str) -> None:
    out = validate_report(_report(executive_summary=untouched), ev)
    assert out.executive_summary == untouched
    cv = out.metadata.citation_validation
    assert cv.markers_checked == 0
    assert cv.valid


def test_unresolvable_pmid_is_removed_with_its_sentence(ev: Evidence_) -> None:
    report = _report(
        executive_summary="Metformin lowered risk [E1]. Another fabricated claim [PMID: 999]."
    )
    out = validate_report(report, ev)
    assert out.executive_summary == "Metformin lowered risk [E1]."
    cv = out.metadata.citation_validation
    assert cv.markers_removed == 1
    assert cv.sentences_removed == 1
    assert cv.removed_marker_ids == ["PMID:999"]


def test_sentence_citing_only_fabricated_ids_is_removed(ev: Evidence_) -> None:
    report = _report(
        executive_summary=(
            "Metformin is widely used. It cures Alzheimer's disease [E999]. "
            "It lowers tau [E2, E998]. Rodent data agree. [E997]"
        )
    )
    out = validate_report(report, ev)
    assert out.executive_summary == "Metformin is widely used. It lowers tau [E2]."
    cv = out.metadata.citation_validation
    assert cv.sentences_removed == 2
    assert cv.markers_checked == 4
    assert cv.markers_removed == 3
    assert cv.removed_marker_ids == ["E999", "E998", "E997"]
    assert [r.evidence_id for r in out.references] == ["E2"]


def test_bare_numeric_markers_are_removed_and_counted(ev: Evidence_) -> None:
    report = _report(
        executive_summary="Risk fell [E1] [2]. Tau fell [1-3]. Mixed [E2, 4].",
        methodology="We followed PRISMA [1].",
    )
    out = validate_report(report, ev)
    assert out.executive_summary == "Risk fell [E1]. Mixed [E2]."
    assert out.methodology == "We followed PRISMA."
    cv = out.metadata.citation_validation
    assert cv.markers_removed == 4
    assert cv.sentences_removed == 1
    assert cv.removed_marker_ids == ["2", "1-3", "4", "1"]


def test_empty_marker_disappears_with_the_space_before_it(ev: Evidence_) -> None:
    report = _report(
        methodology="Risk [E999], and benefit ([E998]) were assessed [E1]. [E996] Done.",
        limitations=["Small samples [E999].", "[E999]", "Short follow-up."],
    )
    out = validate_report(report, ev)
    assert out.methodology == "Risk, and benefit were assessed [E1]. Done."
    assert out.limitations == ["Small samples.", "Short follow-up."]
    assert out.metadata.citation_validation.sentences_removed == 0  # not droppable fields


def test_findings_and_conclusion_drop_fabricated_sentences(ev: Evidence_) -> None:
    report = _report(
        findings=[
            ReportSection(heading="Efficacy", content="Real claim [E1]. Fake claim [E50]."),
            ReportSection(heading="Invented", content="Only fake [E51]. Also fake [E52]."),
        ],
        conclusion="Fake conclusion [E53]. Real conclusion [E4].",
    )
    out = validate_report(report, ev)
    assert [s.heading for s in out.findings] == ["Efficacy"]
    assert out.findings[0].content == "Real claim [E1]."
    assert out.conclusion == "Real conclusion [E4]."
    assert out.metadata.citation_validation.sentences_removed == 4
    assert any("Invented" in note for note in out.metadata.notes)


def test_markdown_structure_is_kept(ev: Evidence_) -> None:
    content = (
        "Overview sentence [E1].\n"
        "Soft-wrapped second sentence\nthat continues [E2].\n"
        "\n"
        "### Mechanism [E2]\n"
        "\n"
        "- AMPK activation [E2]. Fabricated add-on [E77].\n"
        "- Only fabricated bullet [E78]\n"
        "  with a continuation line.\n"
        "  - Nested bullet [PMID: 123]\n"
        "1. Numbered item [E3]\n"
        "\n"
        "Closing paragraph without markers.\n"
        "\n"
        "| Study | Effect |\n"
        "| --- | --- |\n"
        "| Lee [E1] | fabricated [E79] |\n"
    )
    out = validate_report(_report(findings=[ReportSection(heading="H", content=content)]), ev)
    assert out.findings[0].content == (
        "Overview sentence [E1].\n"
        "Soft-wrapped second sentence\nthat continues [E2].\n"
        "\n"
        "### Mechanism [E2]\n"
        "\n"
        "- AMPK activation [E2].\n"
        "  - Nested bullet [E2]\n"
        "1. Numbered item [E3]\n"
        "\n"
        "Closing paragraph without markers.\n"
        "\n"
        "| Study | Effect |\n"
        "| --- | --- |\n"
        "| Lee [E1] | fabricated |\n"
    )
    assert out.metadata.citation_validation.sentences_removed == 2


def test_removing_a_whole_paragraph_keeps_one_blank_line(ev: Evidence_) -> None:
    report = _report(
        executive_summary=(
            "First [E1].\n\nFabricated [E99].\n\n- Last list [E2]\n- Fake [E98]\n\nEnd."
        )
    )
    out = validate_report(report, ev)
    assert out.executive_summary == "First [E1].\n\n- Last list [E2]\n\nEnd."


def test_hypothesis_ids_are_resolved_filtered_and_referenced(ev: Evidence_) -> None:
    report = _report(
        hypotheses_tested=[
            Hypothesis(
                statement="Metformin activates AMPK [E2], lowering tau [E90].",
                supporting_evidence_ids=["E2", "E999", "PMID:31000001", "E2"],
                contradicting_evidence_ids=["NCT01234567", "E5x"],
            )
        ]
    )
    out = validate_report(report, ev)
    h = out.hypotheses_tested[0]
    assert h.supporting_evidence_ids == ["E2", "E1"]
    assert h.contradicting_evidence_ids == ["E4"]
    assert h.statement == "Metformin activates AMPK [E2], lowering tau."
    assert {r.evidence_id for r in out.references} == {"E1", "E2", "E4"}
    cv = out.metadata.citation_validation
    assert cv.markers_removed == 3  # E90 in the statement, E999 and E5x in the id lists
    assert set(cv.removed_marker_ids) == {"E90", "E999", "E5x"}
    assert cv.sentences_removed == 0
    assert report.hypotheses_tested[0].supporting_evidence_ids[1] == "E999"  # input untouched


def test_sentences_without_markers_stay(ev: Evidence_) -> None:
    text = "Metformin is an old drug. No trial has reported cognitive endpoints yet."
    out = validate_report(_report(executive_summary=text, conclusion=text), ev)
    assert out.executive_summary == text
    assert out.conclusion == text
    assert out.metadata.citation_validation.sentences_removed == 0


def test_input_report_is_not_modified(ev: Evidence_) -> None:
    report = _report(
        executive_summary="A [E1]. B [E999].",
        findings=[ReportSection(heading="H", content="- x [PMID: 123]\n- y [E77]")],
        limitations=["L [E9]."],
        hypotheses_tested=[Hypothesis(statement="S", supporting_evidence_ids=["E8"])],
        references=[Reference(evidence_id="E1", citation=_fake_citation())],
    )
    before = report.model_dump()
    out = validate_report(report, ev)
    assert report.model_dump() == before
    assert out != report
    out.findings[0].content = "changed"
    out.hypotheses_tested[0].supporting_evidence_ids.append("E1")
    assert report.model_dump() == before


def test_empty_report_and_empty_evidence(ev: Evidence_) -> None:
    empty = _report()
    out = validate_report(empty, ev)
    assert out.model_dump(exclude={"metadata"}) == empty.model_dump(exclude={"metadata"})
    assert out.metadata.citation_validation.valid
    fabricated_only = _report(
        executive_summary="Claim [E1].",
        references=[Reference(evidence_id="E1", citation=ev["E1"].citation)],
    )
    out = validate_report(fabricated_only, {})
    assert out.executive_summary == ""
    assert out.references == []
    assert citation_problems(out, {}) == []


def test_validation_of_the_orchestrators_fabrications(ev: Evidence_) -> None:
    """The draft the iterative-orchestrator test writes: a fake id, a fake PMID, a bad title."""
    findings = "Metformin lowered risk [E1]. AMPK mediates it [E2]."
    report = _report(
        executive_summary=findings + " A made-up result was reported [E999].",
        findings=[
            ReportSection(
                heading="Efficacy", content=findings + " Another fabricated claim [PMID: 99999999]."
            )
        ],
        conclusion="Done.",
        references=[
            Reference(evidence_id="E999", citation=_fake_citation()),
            Reference(evidence_id="E1", citation=Citation(source="x", id="y", title="wrong")),
        ],
    )
    out = validate_report(report, ev)
    assert out.executive_summary == findings
    assert out.findings[0].content == findings
    assert [r.evidence_id for r in out.references] == ["E1", "E2"]
    cv = out.metadata.citation_validation
    assert (cv.references_removed, cv.markers_removed, cv.sentences_removed) == (1, 2, 2)
    assert (cv.references_added, cv.references_checked) == (1, 2)
    assert citation_problems(out, ev) == []


# --- citation_problems ----------------------------------------------------------------------


def test_citation_problems_names_each_problem(ev: Evidence_) -> None:
    report = _report(
        executive_summary="A [E1]. B [E999]. C [PMID: 123]. D [E3].",
        hypotheses_tested=[Hypothesis(statement="S", supporting_evidence_ids=["E77", "E4"])],
        references=[
            Reference(evidence_id="E1", citation=ev["E1"].citation),
            Reference(evidence_id="E1", citation=ev["E1"].citation),
            Reference(evidence_id="E2", citation=_fake_citation()),
            Reference(evidence_id="E404", citation=_fake_citation()),
        ],
    )
    problems = citation_problems(report, ev)
    assert problems == [
        "reference E1 is listed more than once",
        "reference E2 has a citation that differs from the evidence store's",
        "reference E404 is not an evidence item of this run",
        "citation-like text '[PMID: 123]' in executive summary is not an [E#] marker",
        "marker [E999] in executive summary cites E999, which is not an evidence item of this run",
        "E3 is cited in executive summary but has no reference",
        "hypothesis 1 supporting id E77 is not an evidence item of this run",
        "hypothesis 1 supporting id E4 has no reference",
    ]
    assert citation_problems(validate_report(report, ev), ev) == []


def test_citation_problems_is_empty_for_a_valid_report(ev: Evidence_) -> None:
    report = _report(
        executive_summary="A [E1, E2].",
        references=[
            Reference(evidence_id="E1", citation=ev["E1"].citation),
            Reference(evidence_id="E2", citation=ev["E2"].citation),
        ],
    )
    assert citation_problems(report, ev) == []
    assert validate_report(report, ev).metadata.citation_validation.valid


# --- idempotence and invariants on random reports -------------------------------------------

_WORDS = ["metformin", "lowered", "tau", "in", "mice", "ampk", "risk", "cohort", "(n = 40)"]
_FRAGMENTS = ["et al.", "e.g.", "i.e.", "vs.", "Fig. 2", "p < 0.05", "95% CI 1.2-3.4", "(E2)"]
_VALID = ["[E1]", "[E2, E3]", "[PMID: 123]", "[NCT01234567]", "[E4][E5]", "[e2]", "(PMC777)"]
_INVALID = ["[E999]", "[PMID: 999]", "[1]", "[2-4]", "[see E77]", "[NCT09999999]", "[E0]"]
_DECOYS = ["[95% CI]", "[Ca2+]", "(E3)"]


def _random_sentence(rng: random.Random, tag: str) -> tuple[str, str]:
    """A sentence carrying ``tag`` and its kind: 'plain', 'valid', 'mixed' or 'fabricated'."""
    body = [rng.choice(_WORDS) for _ in range(rng.randint(2, 6))]
    if rng.random() < 0.4:  # an abbreviation inside the sentence, never at its end
        body.insert(rng.randint(0, len(body) - 1), rng.choice(_FRAGMENTS))
    if rng.random() < 0.2:
        body.append(rng.choice(_DECOYS))
    body.insert(rng.randint(0, len(body)), tag)
    text = "Claim " + " ".join(body)
    kind = rng.choice(["plain", "valid", "mixed", "fabricated"])
    markers = {
        "plain": [],
        "valid": [rng.choice(_VALID)],
        "mixed": [rng.choice(_VALID), rng.choice(_INVALID)],
        "fabricated": rng.sample(_INVALID, rng.randint(1, 2)),
    }[kind]
    rng.shuffle(markers)
    marker = " ".join(markers)
    if not marker:
        return text + ".", kind
    placement = rng.choice(["{t} {m}.", "{t} {m}.", "{t}. {m}", "{t}.{m}", "{t}? {m}"])
    return placement.format(t=text, m=marker), kind


def _random_markdown(rng: random.Random, prefix: str, kinds: dict[str, str]) -> str:
    blocks = []
    for b in range(rng.randint(1, 4)):
        shape = rng.choice(["para", "para", "bullets", "heading"])
        if shape == "heading":
            blocks.append(f"### Heading {prefix}{b}")
            continue
        sentences = []
        for s in range(rng.randint(1, 3 if shape == "bullets" else 4)):
            tag = f"t{prefix}x{b}x{s}"
            sentence, kinds[tag] = _random_sentence(rng, tag)
            sentences.append(sentence)
        if shape == "bullets":
            marks = ["- ", *(rng.choice(["- ", "* ", "1. ", "  - "]) for _ in sentences[1:])]
            blocks.append("\n".join(m + s for m, s in zip(marks, sentences, strict=True)))
        else:
            joiner = rng.choice([" ", " ", "\n"])
            blocks.append(joiner.join(sentences))
    return "\n\n".join(blocks)


def _random_report(rng: random.Random, ev: Evidence_) -> tuple[ResearchReport, dict[str, str]]:
    kinds: dict[str, str] = {}
    ids = [*ev, "E999", "E0", "PMID:123", "e3"]
    report = _report(
        executive_summary=_random_markdown(rng, "s", kinds),
        methodology=_random_markdown(rng, "m", kinds),
        findings=[
            ReportSection(heading=f"Section {i}", content=_random_markdown(rng, f"f{i}", kinds))
            for i in range(rng.randint(0, 3))
        ],
        limitations=[_random_sentence(rng, f"tlx{i}")[0] for i in range(rng.randint(0, 2))],
        conclusion=_random_markdown(rng, "c", kinds),
        hypotheses_tested=[
            Hypothesis(
                statement="H",
                supporting_evidence_ids=rng.sample(ids, rng.randint(0, 3)),
                contradicting_evidence_ids=rng.sample(ids, rng.randint(0, 2)),
            )
            for _ in range(rng.randint(0, 2))
        ],
        references=[
            Reference(
                evidence_id=rng.choice(ids),
                citation=_fake_citation() if rng.random() < 0.5 else ev["E1"].citation,
            )
            for _ in range(rng.randint(0, 5))
        ],
    )
    return report, kinds


def test_random_reports_validate_idempotently_and_keep_the_invariants(ev: Evidence_) -> None:
    rng = random.Random(1234)
    removals = 0
    for _ in range(120):
        report, kinds = _random_report(rng, ev)
        before = report.model_dump()
        once = validate_report(report, ev)
        twice = validate_report(once, ev)
        assert report.model_dump() == before
        # idempotent: nothing changes, nothing is counted as removed the second time
        assert twice.texts() == once.texts()
        assert twice.references == once.references
        assert twice.hypotheses_tested == once.hypotheses_tested
        cv2 = twice.metadata.citation_validation
        assert (cv2.references_removed, cv2.markers_removed, cv2.sentences_removed) == (0, 0, 0)
        assert cv2.references_added == 0
        assert citation_problems(once, ev) == []
        # every marker resolves to a stored item that has a reference
        listed = {r.evidence_id for r in once.references}
        for text in once.texts():
            assert set(marker_ids(text)) <= listed <= set(ev)
        # claims: uncited sentences stay, fabricated-only ones go from droppable fields
        droppable = " ".join(
            [once.executive_summary, *[s.content for s in once.findings], once.conclusion]
        )
        for tag, kind in kinds.items():
            if tag.startswith("tm"):
                continue  # methodology keeps every sentence
            present = re.search(rf"\b{tag}\b", droppable) is not None
            assert present == (kind != "fabricated"), (tag, kind, droppable)
        removals += once.metadata.citation_validation.sentences_removed
        # the output holds only canonical markers
        for text in once.texts():
            for m in CITATION_GROUP.finditer(text):
                assert CITATION_MARKER.fullmatch(m.group()), text
            for m in CITATION_MARKER.finditer(text):
                assert m.group() == "[" + ", ".join(marker_ids(m.group())) + "]"
    assert removals > 50  # the generator does exercise sentence removal


def test_adjacent_sentences_without_spaces_do_not_crash() -> None:
    """Regression: glued sentences ("found.[E1]B was") made the rebuild raise StopIteration."""
    from deepcritical.models import Citation, Evidence, ResearchReport
    from deepcritical.report.validation import citation_problems, validate_report

    evidence = {
        f"E{i}": Evidence(
            id=f"E{i}", content="x", citation=Citation(source="local", id=str(i), pmid=str(i))
        )
        for i in range(1, 4)
    }
    report = ResearchReport(
        title="t",
        research_question="q",
        executive_summary="A was found.[E1]B was seen [E2].C too.[E9]D ok.",
        conclusion="X [E1].Y [E2]",
    )
    checked = validate_report(report, evidence)
    assert citation_problems(checked, evidence) == []
    assert "A was found.[E1]" in checked.executive_summary
    assert "E9" not in checked.executive_summary
