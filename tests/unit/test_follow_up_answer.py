"""Follow-up questions on a finished run (issue 32 item 4): the answer is made from the run's
on-topic evidence only, verbatim and cited, and passes the report's citation check; a question
the evidence does not answer gets the fixed message and the suggestion of a new run; the
answer's markdown numbers its markers as the report's does."""

from __future__ import annotations

import re

from deepcritical.models import (
    Citation,
    Evidence,
    FollowUp,
    IntegrityFlag,
    IntegrityKind,
    ResearchReport,
    RunResult,
    Screening,
    marker_ids,
)
from deepcritical.report.validation import citation_problems
from deepcritical.testing.embedders import HashingEmbedder
from deepcritical.writing.follow_up import (
    MAX_SOURCES,
    NOT_ANSWERED,
    answer_follow_up,
    on_topic,
)

METFORMIN = (
    "BACKGROUND: Diabetes is common.\n"
    "RESULTS: Metformin use was associated with a lower risk of colorectal cancer in adults "
    "with diabetes.\n"
    "CONCLUSIONS: Metformin lowers colorectal cancer risk in diabetic patients."
)


def item(eid: str, pmid: str, content: str, **extra: object) -> Evidence:
    return Evidence(
        id=eid,
        content=content,
        citation=Citation(source="pubmed", id=pmid, pmid=pmid, title=f"Study {pmid}"),
        **extra,
    )


def finished_run(*evidence: Evidence) -> RunResult:
    return RunResult(
        report=ResearchReport(title="Report", research_question="Does metformin help?"),
        evidence=list(evidence),
    )


RUN = finished_run(
    item("E1", "111", METFORMIN, screening=Screening.RELEVANT),
    item(
        "E2",
        "222",
        "RESULTS: Metformin did not change colorectal cancer risk in a large cohort of diabetes "
        "patients followed for ten years.",
    ),
    item("E3", "333", "RESULTS: Aspirin and colorectal cancer screening uptake rose."),
    item(
        "E4",
        "444",
        "RESULTS: Metformin use was associated with a lower risk of colorectal cancer here too.",
        screening=Screening.OFF_TOPIC,
    ),
)


def test_the_answer_quotes_the_runs_on_topic_evidence_and_its_citations_check() -> None:
    question = "Does metformin lower colorectal cancer risk in diabetes?"
    follow_up = answer_follow_up(question, RUN, HashingEmbedder())
    assert follow_up.answered
    cited = list(dict.fromkeys(marker_ids(follow_up.answer)))
    assert cited
    assert set(cited) <= {"E1", "E2", "E3"}
    assert "E1" in cited
    assert [r.evidence_id for r in follow_up.references] == cited
    by_id = {e.id: e for e in on_topic(RUN)}
    assert citation_problems(follow_up.as_report(), by_id) == []
    contents = {e.id: e.content for e in RUN.evidence}
    for paragraph in follow_up.answer.split("\n\n"):  # each quote verbatim from its item
        for m in re.finditer(r"(.+?) \[(E\d+)\]([.!?]?)", paragraph):
            assert m.group(1).strip() + m.group(3) in contents[m.group(2)]
    assert follow_up.grounding_check is not None
    assert follow_up.grounding_score == 1.0
    assert follow_up.suggestion == ""


def test_an_answer_cites_at_most_three_sources() -> None:
    many = finished_run(
        *[
            item(
                f"E{n}",
                str(100 + n),
                f"RESULTS: Metformin lowered colorectal cancer risk in diabetes cohort {n}.",
            )
            for n in range(1, 7)
        ]
    )
    follow_up = answer_follow_up(
        "Does metformin lower colorectal cancer risk in diabetes?", many, HashingEmbedder()
    )
    assert follow_up.answered
    assert len(follow_up.references) == MAX_SOURCES


def test_a_retracted_record_is_never_quoted() -> None:
    retracted = item("E1", "111", METFORMIN)
    retracted.citation.integrity_flags = [IntegrityFlag(kind=IntegrityKind.RETRACTED)]
    run = finished_run(retracted)
    assert retracted.citation.retracted
    follow_up = answer_follow_up(
        "Does metformin lower colorectal cancer risk in diabetes?", run, HashingEmbedder()
    )
    assert not follow_up.answered
    assert follow_up.references == []


def test_a_question_the_evidence_does_not_answer_gets_the_message_and_a_suggestion() -> None:
    question = "What is the boiling point of liquid nitrogen at altitude?"
    follow_up = answer_follow_up(question, RUN, HashingEmbedder())
    assert not follow_up.answered
    assert follow_up.answer == NOT_ANSWERED
    assert follow_up.references == []
    assert marker_ids(follow_up.answer) == []
    assert "deepcritical research 'What is the boiling point" in follow_up.suggestion
    markdown = follow_up.to_markdown()
    assert NOT_ANSWERED in markdown
    assert follow_up.suggestion in markdown
    assert "## References" not in markdown


def test_markdown_numbers_the_markers_in_order_of_first_citation() -> None:
    follow_up = answer_follow_up(
        "Does metformin lower colorectal cancer risk in diabetes?", RUN, HashingEmbedder()
    )
    markdown = follow_up.to_markdown()
    assert not re.search(r"\[E\d+\]", markdown)
    assert "[1]" in markdown
    assert "## References" in markdown
    assert "1. " in markdown.split("## References", 1)[1]
    assert "*Citation check:" in markdown
    assert "*Grounding check:" in markdown
    assert follow_up.first_line().startswith(follow_up.answer.split(" [E")[0][:30])
    assert "[1]" in follow_up.first_line()
    again = FollowUp.model_validate_json(follow_up.model_dump_json())
    assert again == follow_up
