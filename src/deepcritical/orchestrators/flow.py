"""The run's flow of records, counted from its own log (:class:`FlowLog`): what every search
round returned per source and what the evidence store folded away, then, when the report is
done, the screening status of every stored record and the report's references
(:class:`~deepcritical.models.RecordFlow`)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from deepcritical.agents.search import SearchRound
from deepcritical.models import (
    REVIEWER_EXCLUDED,
    REVIEWER_INCLUDED,
    Evidence,
    RecordFlow,
    ResearchReport,
    Screening,
)

__all__ = ["FlowLog", "exclusion_cause"]

MAX_CAUSE_CHARS = 80
"""Characters of a model's exclusion reason kept as its cause."""

_MENTIONS = re.compile(r"mentions (\d+) of (\d+) key concepts")


def exclusion_cause(reason: str) -> str:
    """The leading cause of an off-topic screening reason, to count exclusions by.

    Calibrated screening ("off-topic: similarity 0.12 to the question; mentions 0 of 3 key
    concepts") gives "no key concept of the question" or "low similarity to the question";
    the search agent's reasons give their text before the first colon (cut to
    :data:`MAX_CAUSE_CHARS`); an empty reason gives "no reason given".
    """
    text = " ".join(reason.split())
    if not text:
        return "no reason given"
    if text.startswith("off-topic") and "similarity" in text:
        found = _MENTIONS.search(text)
        if found is not None and found.group(1) == "0":
            return "no key concept of the question"
        return "low similarity to the question"
    head = text.split(":", 1)[0].strip()
    return head if len(head) <= MAX_CAUSE_CHARS else head[: MAX_CAUSE_CHARS - 1].rstrip() + "…"


@dataclass
class FlowLog:
    """What the search rounds (and citation tracking) of a run returned and folded away,
    summed over the rounds."""

    identified_per_source: dict[str, int] = field(default_factory=dict)
    identifier_duplicates: int = 0
    near_duplicates: int = 0
    beyond_limit: int = 0
    identified_by_citation_tracking: int = 0
    excluded_by_filters: dict[str, int] = field(default_factory=dict)

    def record(self, result: SearchRound) -> None:
        """Add one search round."""
        for source, hits in result.hits_per_source.items():
            self.identified_per_source[source] = self.identified_per_source.get(source, 0) + hits
        self.record_filtered(result.excluded_by_filters)
        self.identifier_duplicates += result.identifier_copies
        self.near_duplicates += result.near_duplicate_copies
        self.beyond_limit += result.beyond_limit

    def record_filtered(self, excluded: Mapping[str, int]) -> None:
        """Add records removed by the plan's search filters (cause -> count)."""
        for cause, n in excluded.items():
            self.excluded_by_filters[cause] = self.excluded_by_filters.get(cause, 0) + n

    def record_citations(
        self, identified: int, identifier_copies: int, near_duplicate_copies: int, beyond: int
    ) -> None:
        """Add the citation-tracking step: records identified, folded by identifier or as
        near duplicates, and left out beyond its cap."""
        self.identified_by_citation_tracking += identified
        self.identifier_duplicates += identifier_copies
        self.near_duplicates += near_duplicate_copies
        self.beyond_limit += beyond

    def flow(self, records: Sequence[Evidence], report: ResearchReport) -> RecordFlow:
        """The run's flow: the rounds so far, the screening of ``records`` (every record of
        the store), the on-topic records excluded as retracted (``Citation.retracted``), the
        user's decisions on records (read from their screening reasons) and the references
        of ``report``."""
        statuses = Counter(e.screening for e in records)
        excluded = [e for e in records if e.screening == Screening.OFF_TOPIC]
        causes = Counter(exclusion_cause(e.screening_reason) for e in excluded)
        retracted = sum(
            e.screening != Screening.OFF_TOPIC and e.citation.retracted for e in records
        )
        return RecordFlow(
            identified_per_source=dict(self.identified_per_source),
            identified_by_citation_tracking=self.identified_by_citation_tracking,
            excluded_by_filters=sum(self.excluded_by_filters.values()),
            filter_exclusion_reasons=dict(self.excluded_by_filters),
            identifier_duplicates=self.identifier_duplicates,
            near_duplicates=self.near_duplicates,
            beyond_limit=self.beyond_limit,
            unique=len(records),
            screened=len(records) - statuses[None],
            not_screened=statuses[None],
            excluded=len(excluded),
            exclusion_reasons=dict(causes.most_common()),
            included=len(records) - len(excluded) - retracted,
            relevant=statuses[Screening.RELEVANT],
            partial=statuses[Screening.PARTIAL],
            cited=len({r.evidence_id for r in report.references}),
            retracted=retracted,
            excluded_by_reviewer=sum(
                e.screening_reason.startswith(REVIEWER_EXCLUDED) for e in excluded
            ),
            included_by_reviewer=sum(
                e.screening != Screening.OFF_TOPIC
                and e.screening_reason.startswith(REVIEWER_INCLUDED)
                for e in records
            ),
        )
