"""The flow of records through a run, PRISMA-style (:class:`RecordFlow`), and its markdown.

Recorded by the orchestrator from its own log (every search round's hits per source, the
copies the evidence store folded into other records, the screening status of every record,
the report's references); stored in ``ReportMetadata.flow`` and shown as the report's "Flow
of records" section and the web app's flow diagram.
"""

from __future__ import annotations

from pydantic import BaseModel, Field, computed_field

from deepcritical.models._evidence import SOURCE_LABELS

__all__ = ["RecordFlow", "flow_lines"]


class RecordFlow(BaseModel):
    """How many records a run found, kept, screened, excluded, included and cited.

    The counts add up (:meth:`problems` lists any that do not; records excluded as
    ``retracted`` are counted with the excluded ones there):
    ``identified + identified_by_citation_tracking - excluded_by_filters - identifier_duplicates
    - near_duplicates - beyond_limit == unique``;
    ``unique == screened + not_screened == excluded + retracted + included``;
    ``included + retracted == relevant + partial + not_screened``; ``cited <= included``;
    ``sum(exclusion_reasons.values()) == excluded``.
    """

    identified_per_source: dict[str, int] = Field(default_factory=dict)
    """Source -> records it returned, over every query of every round (before
    de-duplication)."""
    identified_by_citation_tracking: int = 0
    """Records identified through citation tracking (the references of the seed studies and
    the papers citing them, :mod:`deepcritical.orchestrators.citation_tracking`), before
    de-duplication; counted apart from the searches, as PRISMA counts "other methods"."""
    excluded_by_filters: int = 0
    """Records returned by a source but removed before screening because their own date or
    design puts them outside the plan's search filters (:class:`~deepcritical.models.
    SearchFilters`; what the API itself could not filter). PRISMA's "records removed before
    screening"."""
    filter_exclusion_reasons: dict[str, int] = Field(default_factory=dict)
    """Cause -> records removed by the plan's filters (``"publication date outside the
    range"``, ``"study design not asked for"``); sums to ``excluded_by_filters``."""
    identifier_duplicates: int = 0
    """Records folded into another by a shared identifier (PMID, DOI, PMCID, NCT ID, URL): the
    same paper from another source or query, or found again in a later round."""
    near_duplicates: int = 0
    """Records folded into another as near duplicates (embedding similarity)."""
    beyond_limit: int = 0
    """Records returned but not kept: they ranked below the room left under ``max_sources``
    (for citation tracking: below the ``citation_candidates`` cap or that room)."""
    unique: int = 0
    """Distinct records kept in the run's evidence store."""
    screened: int = 0
    """Records screened for relevance to the question (by calibrated relevance or the search
    agent's model)."""
    not_screened: int = 0
    """Records not screened (an embedder without a relevance calibration, or screening
    failed): they count as included."""
    excluded: int = 0
    """Records screened off-topic: kept in the store and the export, never cited."""
    exclusion_reasons: dict[str, int] = Field(default_factory=dict)
    """Cause -> off-topic records, by the leading cause of their screening reason."""
    included: int = 0
    """Records that reach the checklist, hypotheses, judge and writer (on-topic)."""
    relevant: int = 0
    """Records not off-topic screened ``relevant`` (the ``retracted`` ones among them)."""
    partial: int = 0
    """Records not off-topic screened ``partial`` (bear on part of the question; the
    ``retracted`` ones among them)."""
    cited: int = 0
    """Records the report cites (its references)."""
    retracted: int = 0
    """Records screening kept (not off-topic) but excluded because a source marks them as
    retracted (``Citation.retracted``): listed in the report's "Retracted or flagged records
    found" section, never cited. ``relevant``, ``partial`` and ``not_screened`` count them
    with the included records (by their screening status)."""

    excluded_by_reviewer: int = 0
    """Records the user excluded when reviewing the evidence (counted in ``excluded``, their
    cause "excluded by the reviewer")."""
    included_by_reviewer: int = 0
    """Records screening excluded that the user included when reviewing the evidence
    (counted in ``included``)."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def identified(self) -> int:
        """Records returned by every source together."""
        return sum(self.identified_per_source.values())

    def problems(self) -> list[str]:
        """The equations of the flow that do not hold (``[]`` when the counts add up)."""
        checks = {
            "identified - duplicates - beyond limit != unique": self.identified
            + self.identified_by_citation_tracking
            - self.excluded_by_filters
            - self.identifier_duplicates
            - self.near_duplicates
            - self.beyond_limit
            == self.unique,
            "screened + not screened != unique": self.screened + self.not_screened == self.unique,
            "excluded + included != unique": self.excluded + self.retracted + self.included
            == self.unique,
            "relevant + partial + not screened != included": self.relevant
            + self.partial
            + self.not_screened
            == self.included + self.retracted,
            "exclusion reasons do not sum to excluded": sum(self.exclusion_reasons.values())
            == self.excluded,
            "filter exclusion reasons do not sum to excluded by filters": sum(
                self.filter_exclusion_reasons.values()
            )
            == self.excluded_by_filters,
            "cited > included": self.cited <= self.included,
        }
        return [what for what, holds in checks.items() if not holds]


def _label(source: str) -> str:
    return SOURCE_LABELS.get(source, source)


def flow_lines(flow: RecordFlow) -> list[str]:
    """Markdown lines of the report's "Flow of records" section (heading included)."""
    per_source = ", ".join(f"{_label(s)} {n}" for s, n in flow.identified_per_source.items())
    duplicates = flow.identifier_duplicates + flow.near_duplicates
    by_filters = "; ".join(f"{cause}: {n}" for cause, n in flow.filter_exclusion_reasons.items())
    lines = [
        "",
        "## Flow of records",
        "",
        f"- Records identified: {flow.identified}" + (f" ({per_source})" if per_source else ""),
        *(
            [f"- Records identified through citation tracking: {n}"]
            if (n := flow.identified_by_citation_tracking)
            else []
        ),
        *(
            [
                f"- Removed by the plan's search filters: {n}"
                + (f" ({by_filters})" if by_filters else "")
            ]
            if (n := flow.excluded_by_filters)
            else []
        ),
        f"- Duplicates removed: {duplicates} ({flow.identifier_duplicates} by identifier,"
        f" {flow.near_duplicates} near-duplicate)",
    ]
    if flow.beyond_limit:
        lines.append(f"- Not kept (beyond the maximum number of sources): {flow.beyond_limit}")
    lines.append(f"- Unique records: {flow.unique}")
    screened = f"- Screened for relevance: {flow.screened}"
    if flow.not_screened:
        screened += f" (not screened: {flow.not_screened})"
    lines.append(screened)
    reasons = "; ".join(f"{cause}: {n}" for cause, n in flow.exclusion_reasons.items())
    lines.append(f"- Excluded as off-topic: {flow.excluded}" + (f" ({reasons})" if reasons else ""))
    if flow.excluded_by_reviewer:
        lines.append(f"- Excluded by the reviewer: {flow.excluded_by_reviewer}")
    if flow.included_by_reviewer:
        lines.append(f"- Included by the reviewer: {flow.included_by_reviewer}")
    if flow.retracted:
        lines.append(f"- Excluded as retracted: {flow.retracted}")
    parts = [f"{flow.relevant} relevant", f"{flow.partial} partly relevant"]
    if flow.not_screened:
        parts.append(f"{flow.not_screened} not screened")
    if flow.retracted:
        parts[-1] += f"; less {flow.retracted} excluded as retracted"
    lines.append(f"- Included (on-topic): {flow.included} ({', '.join(parts)})")
    lines.append(f"- Cited in the report: {flow.cited}")
    return lines
