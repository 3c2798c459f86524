"""The search filters the local API stub honours, read back from each API's own request form
(the forms :mod:`deepcritical.sources.filter_syntax` writes).

:class:`DateRange` is an inclusive range of days; each ``*_ranges`` function reads the
publication-date and "added since" ranges of one API's request:

- PubMed esearch: ``("2015/01/01"[dp] : "2020/12/31"[dp])`` in ``term``, and
  ``datetype=edat&mindate=...&maxdate=...`` (the Entrez date);
- Europe PMC: ``FIRST_PDATE:[a TO b]`` and ``CREATION_DATE:[a TO b]`` in ``query``;
- ClinicalTrials.gov: ``AREA[StartDate]RANGE[a,b]`` and ``AREA[LastUpdatePostDate]RANGE[a,b]``
  in ``filter.advanced`` (``MIN``/``MAX`` for open ends), and ``filter.overallStatus``;
- OpenAlex: ``from_publication_date:``, ``to_publication_date:`` and ``from_created_date:``
  in ``filter``.

A record is kept when its date is inside the range; a record without the date a range is on is
left out, as a real API's range query leaves it out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date

__all__ = [
    "OPENALEX_SEARCH_FILTERS",
    "DateRange",
    "europepmc_ranges",
    "openalex_ranges",
    "pubmed_ranges",
    "trials_ranges",
    "trials_statuses",
]

_PUBMED_DP = re.compile(r'"(\d{4}(?:/\d{1,2}){0,2})"\[dp\]\s*:\s*"(\d{4}(?:/\d{1,2}){0,2})"\[dp\]')
_EPMC_RANGE = r"{field}:\[\s*(\S+)\s+TO\s+(\S+)\s*\]"
_CT_RANGE = r"AREA\[{field}\]RANGE\[\s*([^,\]]+)\s*,\s*([^\]]+)\s*\]"

OPENALEX_SEARCH_FILTERS = frozenset(
    {"from_publication_date", "to_publication_date", "from_created_date", "language", "type"}
)
"""The OpenAlex ``filter`` keys a search may carry (the others are the citation graph's)."""


def _day(text: str, *, end: bool) -> date | None:
    """``2015``, ``2015/06``, ``2015-06-01`` as the first (or, ``end``, last) day it names;
    ``None`` for ``MIN``/``MAX``/``*`` or text that is no date."""
    parts = [p for p in re.split(r"[-/]", text.strip()) if p]
    if not parts or not all(p.isdigit() for p in parts):
        return None
    year = int(parts[0])
    month = int(parts[1]) if len(parts) > 1 else (12 if end else 1)
    if len(parts) > 2:
        return date(year, month, int(parts[2]))
    if not end:
        return date(year, month, 1)
    nxt = date(year + 1, 1, 1) if month == 12 else date(year, month + 1, 1)
    return date.fromordinal(nxt.toordinal() - 1)


@dataclass(frozen=True)
class DateRange:
    """Days from ``low`` to ``high``, both inclusive (``None``: open at that end)."""

    low: date | None = None
    high: date | None = None

    @classmethod
    def of(cls, low: str, high: str) -> DateRange:
        """The range between two bounds as an API writes them (``MIN``/``MAX`` open)."""
        return cls(_day(low, end=False), _day(high, end=True))

    def contains(self, value: str | None) -> bool:
        """Whether the date ``value`` (ISO ``2019``, ``2019-03`` or ``2019-03-14``, or
        PubMed's ``2019/03/14``) lies inside; ``False`` when it is missing or no date."""
        if not value:
            return False
        first, last = _day(value, end=False), _day(value, end=True)
        if first is None or last is None:
            return False
        return (self.low is None or last >= self.low) and (self.high is None or first <= self.high)


Ranges = tuple[DateRange | None, DateRange | None]
"""The publication-date range and the "added" range of one request (``None``: not bounded)."""


def pubmed_ranges(term: str, params: Mapping[str, str]) -> Ranges:
    """The publication-date range of an esearch ``term`` (``[dp]``) and the Entrez-date range
    of its ``datetype=edat`` parameters (``None`` each when absent)."""
    found = _PUBMED_DP.search(term)
    published = DateRange.of(found.group(1), found.group(2)) if found else None
    added = None
    if params.get("datetype") == "edat" and params.get("mindate"):
        added = DateRange.of(params["mindate"], params.get("maxdate") or "MAX")
    return published, added


def europepmc_ranges(query: str) -> Ranges:
    """The ``FIRST_PDATE`` and ``CREATION_DATE`` ranges of a Europe PMC ``query``."""
    out: list[DateRange | None] = []
    for name in ("FIRST_PDATE", "CREATION_DATE"):
        found = re.search(_EPMC_RANGE.format(field=name), query)
        out.append(DateRange.of(found.group(1), found.group(2)) if found else None)
    return out[0], out[1]


def trials_ranges(advanced: str) -> Ranges:
    """The ``StartDate`` and ``LastUpdatePostDate`` ranges of a ``filter.advanced``."""
    out: list[DateRange | None] = []
    for name in ("StartDate", "LastUpdatePostDate"):
        found = re.search(_CT_RANGE.format(field=name), advanced)
        out.append(DateRange.of(found.group(1), found.group(2)) if found else None)
    return out[0], out[1]


def trials_statuses(value: str) -> set[str]:
    """The statuses of ``filter.overallStatus`` (comma or pipe list; empty: all)."""
    return {s.strip().upper() for s in re.split(r"[,|]", value) if s.strip()}


def openalex_ranges(filter_: str) -> Ranges:
    """The publication-date and created-date ranges of an OpenAlex ``filter``."""
    parts = dict(p.split(":", 1) for p in filter_.split(",") if ":" in p)
    low, high = parts.get("from_publication_date"), parts.get("to_publication_date")
    published = DateRange.of(low or "MIN", high or "MAX") if low or high else None
    created = parts.get("from_created_date")
    return published, DateRange.of(created, "MAX") if created else None
