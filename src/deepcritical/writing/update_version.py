"""A living review's new report version (:func:`write_update_version`): written over the
union of the evidence (the records the review held, their integrity flags checked again, and
the new records an update found), with a "What's new since DATE" section first.

The version is written like a revision (:mod:`deepcritical.writing.revision`): by the
extractive writer with the previous version's preferences and design filter, through the
report's checks (citation validation, grounding) with the run's facts. A record retracted
since is not evidence any more: it is listed under "Retracted or flagged records found",
never cited, and the hypotheses no longer count it. The writer draws first on what the
previous version cited (the removed records aside), then on the new included records, then
on the others by relevance. The "What's new" section names records by title and identifier
(no citation markers); it is added after the checks, so they neither cut nor ground it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from deepcritical.evidence.design import DesignGroup, classify_design
from deepcritical.evidence.embeddings import Embedder
from deepcritical.models import (
    Evidence,
    Hypothesis,
    ReportSection,
    ReportVersion,
    RunResult,
    WatchChange,
    on_topic_items,
    utc_now,
)
from deepcritical.report.finish import GroundingOptions, finish_report
from deepcritical.writing.extractive import ExtractiveReportWriter
from deepcritical.writing.revision import run_methodology, stored_facts
from deepcritical.writing.revision_instructions import RevisionError

__all__ = ["update_instruction", "write_update_version"]


def update_instruction(change: WatchChange) -> str:
    """The line a version made by an update is listed with: ``"living-review update: records
    added since 2026-11-28"``."""
    return f"living-review update: records added since {change.since.date().isoformat()}"


def _pool(
    previous: ReportVersion,
    evidence: Sequence[Evidence],
    new_ids: set[str],
    limit: int,
) -> list[Evidence]:
    """What the writer draws from (see the module docstring), at most ``limit`` items."""
    cited = {r.evidence_id: i for i, r in enumerate(previous.report.references)}

    def rank(e: Evidence) -> tuple[int, int, float]:
        if e.id in cited:
            return (0, cited[e.id], 0.0)
        return (1 if e.id in new_ids else 2, 0, -e.relevance)

    return sorted(evidence, key=rank)[:limit]


def _without(hypotheses: Sequence[Hypothesis], dropped: set[str]) -> list[Hypothesis]:
    """``hypotheses`` with the ``dropped`` evidence ids taken out of their support."""
    return [
        h.model_copy(
            update={
                "supporting_evidence_ids": [
                    i for i in h.supporting_evidence_ids if i not in dropped
                ],
                "contradicting_evidence_ids": [
                    i for i in h.contradicting_evidence_ids if i not in dropped
                ],
            }
        )
        for h in hypotheses
    ]


def _note(version: int, change: WatchChange, kept: int) -> str:
    """The methodology's note on an update."""
    return (
        f"This is version {version} of the report, a living-review update written on "
        f"{change.until.date().isoformat()} over the union of the evidence: the records the "
        f"review held, their retractions and corrections checked again, and the "
        f"{change.flow.new} records added to the sources since "
        f"{change.since.date().isoformat()} ({change.flow.included} included after "
        f"screening). {kept} on-topic sources were available to this version, written by "
        "the extractive writer."
    )


async def write_update_version(
    result: RunResult,
    previous: ReportVersion,
    change: WatchChange,
    embedder: Embedder,
    grounding: GroundingOptions,
    *,
    max_evidence: int = 12,
) -> ReportVersion:
    """Version ``previous.version + 1`` over ``result`` (whose ``evidence`` is already the
    union), with ``change``'s "What's new" section first; ``change``'s verdict and certainty
    after are filled in from the new version.

    Args:
        result: the run's result with the union of the evidence (report and plan: the run's).
        previous: the newest version so far; its preferences and design filter are kept.
        change: what the update found (new included, removed, corrected records; its flow).
        embedder: the run embedder (sentence ranking, grounding).
        grounding: the grounding check's settings.
        max_evidence: the most items the writer draws from (twice that for a detailed
            report).

    Raises:
        RevisionError: the run has no plan, or citation validation left problems.
    """
    plan = result.plan
    if plan is None:
        raise RevisionError("the stored run has no plan, so its review cannot be updated")
    designs = tuple(DesignGroup(d) for d in previous.designs)
    on_topic = on_topic_items(result.evidence)
    kept = [e for e in on_topic if not designs or classify_design(e) in designs]
    version = previous.version + 1
    methodology = "\n\n".join(
        p for p in (run_methodology(result), _note(version, change, len(kept))) if p
    )
    preferences = previous.preferences
    versioned_plan = plan.model_copy(update={"preferences": preferences})
    dropped = {r.evidence_id for r in change.removed}
    hypotheses = _without(result.report.hypotheses_tested, dropped)
    new_ids = {r.evidence_id for r in change.new_included}
    limit = max_evidence * (2 if preferences.length == "detailed" else 1)
    pool = _pool(previous, kept, new_ids, limit)
    assessment = result.assessments[-1] if result.assessments else None
    writer = ExtractiveReportWriter(embedder, follow_preferences=True)
    draft = await writer.write(versioned_plan, pool, hypotheses, assessment)
    facts = dataclasses.replace(
        stored_facts(result, versioned_plan, kept, methodology, embedder), hypotheses=hypotheses
    )
    finished = await finish_report(draft, facts, grounding)
    if finished.report is None:
        raise RevisionError(
            "citation validation left problems in the updated report: "
            + "; ".join(finished.problems)
        )
    report = finished.report
    meta = report.metadata
    meta.usage = result.report.metadata.usage.model_copy(deep=True)
    change.verdict_before = previous.report.metadata.verdict
    change.certainty_before = _level(previous)
    change.verdict_after = meta.verdict
    change.certainty_after = meta.certainty.level.value if meta.certainty else None
    change.verdict_reason = meta.verdict_reason if change.verdict_changed else ""
    report.findings.insert(0, ReportSection(heading=change.heading(), content=change.markdown()))
    return ReportVersion(
        version=version,
        instruction=update_instruction(change),
        created_at=utc_now(),
        report=report,
        preferences=preferences,
        designs=list(previous.designs),
    )


def _level(version: ReportVersion) -> str | None:
    certainty = version.report.metadata.certainty
    return certainty.level.value if certainty is not None else None
