"""An update's search (issue 33, item 2): records the watch knows are skipped before
screening, whichever source returns them; a known trial registration ClinicalTrials.gov
returns for the window counts as changed, not new, and its stored record is refreshed with
its screening kept; new records continue the watch's numbering."""

from __future__ import annotations

import asyncio
from typing import Any

from deepcritical.models import Citation, Evidence, Screening, SearchFilters, utc_now
from deepcritical.orchestrators.watch_search import KnownRecords, find_new, refresh_changed
from deepcritical.testing.embedders import HashingEmbedder


def trial(nct: str, status: str, screening: Screening | None = None, id_: str = "") -> Evidence:
    item = Evidence(
        content=f"Overall status: {status}. Metformin in colorectal adenoma prevention.",
        citation=Citation(source="trials", id=nct, nct_id=nct, title=f"Trial {nct}"),
        relevance=0.5,
    )
    if screening is not None:
        item.screening = screening
    if id_:
        item.id = id_
    return item


class Trials:
    name = "trials"

    def __init__(self, items: list[Evidence]) -> None:
        self.items = items
        self.filters: list[Any] = []

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        self.filters.append(filters)
        return [i.model_copy(deep=True) for i in self.items][:limit]


def test_a_known_trial_returned_again_is_changed_not_new() -> None:
    known = [
        trial("NCT00000001", "RECRUITING", Screening.RELEVANT, "E1"),
        trial("NCT00000002", "RECRUITING", Screening.OFF_TOPIC, "E7"),
    ]
    since = utc_now()
    source = Trials(
        [trial("NCT00000001", "COMPLETED"), trial("NCT00000002", "COMPLETED"),
         trial("NCT00000003", "RECRUITING")]
    )  # fmt: skip
    found = asyncio.run(
        find_new(
            [source],
            KnownRecords(known),
            ["metformin colorectal adenoma"],
            "Does metformin prevent colorectal adenoma?",
            HashingEmbedder(),
            filters=SearchFilters(added_since=since),
        )
    )
    assert source.filters == [SearchFilters(added_since=since)]
    assert [e.citation.nct_id for e in found.items] == ["NCT00000003"]
    assert [e.id for e in found.items] == ["E8"]  # after the watch's last number
    assert (found.flow.already_known, found.flow.new) == (2, 1)
    assert {e.citation.nct_id for e in found.changed} == {"NCT00000001", "NCT00000002"}

    refreshed, updated = refresh_changed(known, found.changed)
    assert [r.evidence_id for r in updated] == ["E1"]  # the off-topic one is not news
    assert updated[0].reason == "registration updated"
    assert refreshed[0].id == "E1"
    assert refreshed[0].screening == Screening.RELEVANT  # not screened again
    assert "COMPLETED" in refreshed[0].content
    assert "RECRUITING" in known[0].content  # the known records are not changed in place
