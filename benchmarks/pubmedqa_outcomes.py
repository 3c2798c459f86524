"""One research run of the PubMedQA benchmark and what it is scored on (:class:`Outcome`).

:func:`run_one` runs one dev question through :func:`deepcritical.api.research` (with the
scripted model of :mod:`benchmarks.misattributing_script` when given one) and reads from its
result the figures :mod:`benchmarks.pubmedqa_figures` aggregates: the gold abstract retrieved
and cited, references before and after grounding, the stated and proxy verdicts, time and
tokens, and with the scripted model whether grounding removed its misattributed citations.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchmarks.misattributing_script import Attribution, MisattributingScript

NO_EVIDENCE_STATEMENT = re.compile(
    r"no evidence could be collected for this question"
    r"|the sources searched\b.{0,400}?\bhold no evidence that addresses",
    re.IGNORECASE | re.DOTALL,
)


@dataclass
class Outcome:
    """What one run gave for one dev question (counts per report, seconds of wall time)."""

    gold_retrieved: bool
    gold_cited: bool
    gold_cited_grounded: bool
    references: int
    references_grounded: int
    grounding_score: float | None
    sentences_removed: int
    citations_removed: int
    proxy_verdict: str
    verdict: str | None
    answer: str
    seconds: float
    grounding_seconds: float
    prompt_tokens: int
    off_topic: int = 0
    """Final references other than the gold abstract."""
    states_no_evidence: bool = False
    """The report says the sources hold no evidence (:func:`states_no_evidence`)."""
    misattributed: int = 0
    misattributed_removed: int = 0
    correct: int = 0
    correct_kept: int = 0
    output_tokens: int = 0
    question: str = ""
    pmid: str = ""
    verdict_reason: str = ""


def states_no_evidence(text: str) -> bool:
    """Whether ``text`` clearly states that the sources hold no evidence for the question.

    Accepts today's no-evidence report ("No evidence could be collected for this question
    ...") and the opening issue 12 asks for ("The sources searched (...) hold no evidence
    that addresses ..."), case-insensitively; a limitation about one checklist item ("No
    evidence was found for the checklist item ...") does not count.
    """
    return NO_EVIDENCE_STATEMENT.search(text) is not None


def proxy_verdict(report: Any) -> str:
    """ "yes"/"no"/"maybe" from the first tested hypothesis (the hypothesis-stance proxy of
    :mod:`benchmarks.bench_pubmedqa`)."""
    if not report.hypotheses_tested:
        return "maybe"
    h = report.hypotheses_tested[0]
    s, c = len(h.supporting_evidence_ids), len(h.contradicting_evidence_ids)
    return "yes" if s > c else "no" if c > s else "maybe"


def prompt_tokens(report: Any) -> int:
    """The run's input tokens over every LLM call (0 without a model)."""
    usage = getattr(report.metadata, "usage", None)
    total = getattr(usage, "llm_total", None)
    return int(getattr(total, "input_tokens", 0) or 0)


async def run_one(
    question: dict[str, str],
    settings: Any,
    embedder: Any,
    scripted: MisattributingScript | None,
) -> Outcome | str:
    """Run ``question`` (a dev-question row: ``question``, ``pmid``, ``answer``) with
    ``settings`` and ``embedder``, and with ``scripted`` as the model when given; the outcome,
    or why the run gave none (an error, no result, citation problems, no grounding)."""
    from deepcritical.api import research
    from deepcritical.report.validation import citation_problems

    start = time.perf_counter()
    result = None
    kwargs: dict[str, Any] = {"embedder": embedder}
    if scripted is not None:
        scripted.attributions.clear()
        kwargs["model"] = scripted.model()
    async for event in research(question["question"], settings, **kwargs):
        if event.type == "done":
            result = event.result
        elif event.type == "error":
            return f"error: {event.message}"
    seconds = time.perf_counter() - start
    if result is None:
        return "no result"
    evidence = {e.id: e for e in result.evidence}
    if citation_problems(result.report, evidence):
        return "the final report has citation problems"
    if result.report.metadata.grounding_check is None:
        return "the report was not grounded (Settings.grounding is off?)"
    outcome = outcome_of(question, result, seconds)
    if scripted is not None:
        count_attributions(outcome, result.report, scripted.attributions)
    return outcome


def outcome_of(question: dict[str, str], result: Any, seconds: float) -> Outcome:
    """The figures of a grounded run's ``result`` for ``question`` (``seconds``: its wall
    time)."""
    report = result.report
    check = report.metadata.grounding_check
    gold = question["pmid"]
    gold_ids = {e.id for e in result.evidence if e.citation.pmid == gold}
    after = {r.evidence_id for r in report.references}
    before = after | set(check.removed_reference_ids)
    return Outcome(
        gold_retrieved=bool(gold_ids),
        gold_cited=bool(gold_ids & before),
        gold_cited_grounded=bool(gold_ids & after),
        references=len(before),
        references_grounded=len(after),
        grounding_score=report.metadata.grounding_score,
        sentences_removed=check.sentences_removed,
        citations_removed=check.citations_removed,
        proxy_verdict=proxy_verdict(report),
        verdict=report.metadata.verdict,
        answer=question["answer"],
        question=question["question"],
        pmid=str(question["pmid"]),
        verdict_reason=report.metadata.verdict_reason,
        seconds=seconds,
        grounding_seconds=report.metadata.usage.stage_seconds.get("grounding", 0.0),
        prompt_tokens=prompt_tokens(report),
        output_tokens=int(report.metadata.usage.llm_total.output_tokens),
        off_topic=len(after - gold_ids),
        states_no_evidence=states_no_evidence("\n".join([report.title, *report.texts()])),
    )


def count_attributions(outcome: Outcome, report: Any, attributions: list[Attribution]) -> None:
    """Add to ``outcome`` how grounding treated the scripted writer's ``attributions``: the
    misattributed citations it removed, the correct ones it kept (quotes whose sentence did
    not reach grounding are not counted)."""
    kept: dict[tuple[str, str], bool] = {}
    for claim in report.grounding:
        for eid in claim.evidence_ids:
            kept[(claim.sentence.split(" [")[0], eid)] = eid in claim.kept_ids
    for a in attributions:
        verdict = kept.get((a.sentence[:-1], a.cited_id))
        if verdict is None:
            continue  # the sentence did not survive the writer's own check / validation
        if a.cited_id == a.true_id:
            outcome.correct += 1
            outcome.correct_kept += verdict
        else:
            outcome.misattributed += 1
            outcome.misattributed_removed += not verdict
