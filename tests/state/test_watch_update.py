"""Living reviews (issue 33) on SQLite and PostgreSQL, over a finished offline run: a watch
made from the run; an update whose sources hold the run's records plus two new relevant ones
and one off-topic one, while PubMed now marks a cited record retracted, writes version 2 with
a "What's new" section that lists the two, leaves the off-topic one out, drops the retracted
one from support and says so; a second update with nothing new writes no version; a watch
is another owner's "not found"; the update lease admits one holder; pause, resume, remove."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from deepcritical.config import Settings
from deepcritical.evidence.embeddings import Embedder
from deepcritical.formats.pubmed_xml import PubmedArticle
from deepcritical.models import Citation, Evidence, RunResult, Screening, utc_now
from deepcritical.orchestrators.watch_update import UpdateParts, run_watch_update
from deepcritical.sources.base import SourceError
from deepcritical.state import RunStore, StateError
from deepcritical.state.watch_store import WatchNotFoundError, WatchStore
from deepcritical.testing.embedders import HashingEmbedder
from tests.state.revision_run import QUESTION, MetforminSource, finished_run
from tests.state.test_ask_api import store_run

NEW_RECORDS = (
    (
        "9100001",
        "Metformin and colorectal cancer risk in type 2 diabetes: a nationwide cohort",
        "METHODS: 210,000 patients with type 2 diabetes were followed for ten years. RESULTS: "
        "Metformin use was associated with a lower colorectal cancer risk in patients with "
        "diabetes. CONCLUSIONS: Metformin lowers colorectal cancer risk in diabetes.",
    ),
    (
        "9100002",
        "Colorectal cancer risk with metformin in diabetes: a case-control study",
        "RESULTS: Patients with diabetes who took metformin had a lower risk of colorectal "
        "cancer than those who did not. CONCLUSIONS: Metformin may lower colorectal cancer "
        "risk in patients with diabetes.",
    ),
)
OFF_TOPIC = (
    "9100003",
    "Crop rotation and soil nitrogen in winter wheat fields",
    "RESULTS: Rotating legumes with winter wheat raised soil nitrogen and grain yield over "
    "four seasons on clay soils. CONCLUSIONS: Crop rotation improves wheat yields.",
)
RETRACTED_PMID = "9000001"


class GrowingSource(MetforminSource):
    """The run's records, then (once ``grown``) two new relevant ones and one off-topic."""

    def __init__(self) -> None:
        self.grown = False
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    async def search(self, query: str, limit: int, *args: Any, **kwargs: Any) -> list[Evidence]:
        self.calls.append((query, args, kwargs))
        items = await super().search(query, 100)
        if self.grown:
            items += [
                Evidence(
                    content=text,
                    citation=Citation(source="pubmed", id=pmid, pmid=pmid, title=title),
                    query=query,
                    relevance=0.5,
                )
                for pmid, title, text in (*NEW_RECORDS, OFF_TOPIC)
            ]
        return items[:limit]


class RetractingPubMed:
    """PubMed's efetch: every record asked for, ``RETRACTED_PMID`` marked retracted."""

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    async def efetch(self, pmids: Sequence[str]) -> list[PubmedArticle]:
        self.asked.append(list(pmids))
        return [
            PubmedArticle(
                pmid=p,
                title="x",
                publication_types=["Retracted Publication"] if p == RETRACTED_PMID else [],
            )
            for p in pmids
        ]


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    return finished_run(tmp_path_factory.mktemp("watch-run"))


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    from deepcritical.evidence.onnx_embeddings import run_embedder

    return run_embedder(Settings().embedding_model, "auto")


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, database_url=database_url, llm="none")


async def test_an_update_writes_whats_new_then_nothing_new_writes_no_version(
    runs: RunStore, settings: Settings, result: RunResult, embedder: Embedder
) -> None:
    run_id = store_run(runs, result)
    watches = WatchStore(runs)
    hook = "https://hooks.example.org/services/T000/B000/s3cr3t-token"
    watch = watches.create(run_id[:8], every_seconds=7 * 86400, webhook_url=hook)
    assert watch.run_id == run_id
    assert watch.version == 1
    assert watch.queries
    assert watch.next_due_at is not None
    assert watch.next_due_at > utc_now() + timedelta(days=6)
    cited = {r.evidence_id for r in result.report.references}
    retracted_id = next(e.id for e in result.evidence if e.citation.pmid == RETRACTED_PMID)
    assert retracted_id in cited  # the record the update finds retracted supported version 1

    source, pubmed = GrowingSource(), RetractingPubMed()
    source.grown = True
    posted: list[httpx.Request] = []

    def receive(request: httpx.Request) -> httpx.Response:
        posted.append(request)
        return httpx.Response(204)

    async def allow(url: str) -> None:  # example.org does not resolve here
        assert url == hook

    parts = UpdateParts(
        sources=[source],
        pubmed=pubmed,
        embedder=embedder,
        guard=allow,
        webhook_transport=httpx.MockTransport(receive),
    )
    first = await run_watch_update(watch, settings, holder="h1", parts=parts)

    assert (first.outcome, first.version) == ("new_version", 2), first.summary
    change = first.change
    assert change is not None
    assert sorted(r.identifier for r in change.new_included) == ["PMID 9100001", "PMID 9100002"]
    assert [r.evidence_id for r in change.removed] == [retracted_id]
    assert "retracted" in change.removed[0].reason
    assert change.flow.already_known == len(watch.queries) * len(result.evidence)
    assert (change.flow.new, change.flow.excluded, change.flow.included) == (3, 1, 2)
    assert pubmed.asked
    windows = {call[2]["filters"].added_since for call in source.calls}
    assert windows == {watch.checked_until}  # every search asked only for the window
    assert RETRACTED_PMID in pubmed.asked[0]

    assert len(posted) == 1  # the webhook heard of the new version
    payload = json.loads(posted[0].content)
    assert payload["summary"] == first.summary
    assert payload["version"] == 2
    assert {r["identifier"] for r in payload["new_included"]} == {"PMID 9100001", "PMID 9100002"}
    assert [r["evidence_id"] for r in payload["removed"]] == [retracted_id]
    body = posted[0].content.decode()
    assert "s3cr3t" not in body
    assert "database_url" not in body
    assert "settings" not in payload

    version = runs.report_version(run_id)
    assert version is not None
    assert version.version == 2
    whats_new = version.report.findings[0]
    assert whats_new.heading == change.heading()
    assert whats_new.heading.startswith("What's new since ")
    assert "Metformin and colorectal cancer risk in type 2 diabetes" in whats_new.content
    assert "Crop rotation" not in whats_new.content
    assert f"PMID {RETRACTED_PMID}" in whats_new.content
    assert "retracted" in whats_new.content
    assert retracted_id not in {r.evidence_id for r in version.report.references}
    assert retracted_id not in version.report.cited_ids()
    stored = runs.result(run_id)
    assert stored is not None
    assert len(stored.evidence) == len(result.evidence) + 3
    off = next(e for e in stored.evidence if e.citation.pmid == OFF_TOPIC[0])
    assert off.screening == Screening.OFF_TOPIC
    assert next(e for e in stored.evidence if e.id == retracted_id).citation.retracted

    shown = watches.require(watch.id)
    assert shown.version == 2
    assert shown.unseen == 1
    assert shown.checked_until == change.until
    assert shown.last_summary == first.summary
    assert shown.next_due_at is not None
    assert shown.next_due_at > change.until

    second = await run_watch_update(shown, settings, holder="h2", parts=parts)
    assert second.outcome == "nothing_new"
    assert second.version is None
    assert second.summary.startswith("Nothing relevant is new since ")
    assert second.change is not None
    assert second.change.flow.already_known > 0
    assert second.change.flow.new == 0
    assert source.calls[-1][2]["filters"].added_since == change.until  # the next window
    assert runs.report_version(run_id).version == 2  # type: ignore[union-attr]
    assert [u.number for u in watches.updates(watch.id)] == [1, 2]
    assert len(posted) == 1  # nothing new: no webhook call
    assert watches.mark_seen(watch.id) == 2
    assert watches.require(watch.id).unseen == 0


def test_watches_belong_to_their_owner_and_one_update_holds_the_lease(
    runs: RunStore, result: RunResult
) -> None:
    run_id = store_run(runs, result, owner="user:alice")
    watches = WatchStore(runs)
    watch = watches.create(run_id, owner="user:alice", every_seconds=2.0)
    with pytest.raises(StateError, match="watched already"):
        watches.create(run_id, owner="user:alice")  # one watch per run
    with pytest.raises(WatchNotFoundError):
        watches.require(watch.id, owner="user:bob")
    assert watches.list_watches(owner="user:bob") == []
    assert watches.list_watches() == []
    assert [w.id for w in watches.list_watches(owner="user:alice")] == [watch.id]

    window = watches.claim(watch.id, "worker-a")
    assert window is not None
    # a recovered workflow takes its lease back, with the same window end
    assert watches.claim(watch.id, "worker-a") == window
    assert watches.claim(watch.id, "worker-b") is None
    watches.release(watch.id, "worker-a")
    later = watches.claim(watch.id, "worker-b")
    assert later is not None
    assert later > window
    watches.release(watch.id, "worker-b")

    assert watches.due(utc_now() + timedelta(seconds=3)) == [(watch.id, watch.next_due_at)]
    watches.set_paused(watch.id, True, owner="user:alice")
    assert watches.due(utc_now() + timedelta(seconds=3)) == []
    resumed = watches.set_paused(watch.id, False, owner="user:alice")
    assert not resumed.paused
    assert resumed.next_due_at is not None
    assert watches.remove(watch.id[:8], owner="user:alice") == watch.id
    with pytest.raises(WatchNotFoundError):
        watches.require(watch.id, owner="user:alice")
    assert runs.get_run(run_id, owner="user:alice") is not None  # the run stays


class DownSource:
    name = "pubmed"

    async def search(self, query: str, limit: int, *args: Any, **kwargs: Any) -> list[Evidence]:
        raise SourceError("pubmed", "HTTP 503 after 3 tries")


async def test_an_update_whose_sources_all_failed_keeps_its_window(
    runs: RunStore, settings: Settings, result: RunResult
) -> None:
    run_id = store_run(runs, result)
    watches = WatchStore(runs)
    watch = watches.create(run_id, every_seconds=60.0)
    parts = UpdateParts(
        sources=[DownSource()], pubmed=RetractingPubMed(), embedder=HashingEmbedder()
    )
    with pytest.raises(StateError, match="every source failed"):
        await run_watch_update(watch, settings, holder="h", parts=parts)
    (failed,) = watches.updates(watch.id)
    assert failed.outcome == "failed"
    assert "HTTP 503" in failed.summary
    after = watches.require(watch.id)
    assert after.checked_until == watch.checked_until  # the next update searches it again
    assert after.version == 1
    assert watches.claim(watch.id, "another") is not None  # the lease was freed


async def test_watch_researches_then_watches_and_refuses_a_bad_schedule_first(
    runs: RunStore, settings: Settings
) -> None:
    from deepcritical.api import watch as watch_question

    with pytest.raises(ValueError, match="schedule"):
        await watch_question(QUESTION, settings, every="weekly")
    assert runs.list_runs() == []  # refused before the research started
    made = await watch_question(
        QUESTION,
        settings.model_copy(update={"sources": ["pubmed"], "max_rounds": 1}),
        every="30d",
        sources=[MetforminSource()],
        embedder=HashingEmbedder(),
    )
    assert made.every_seconds == 30 * 86400
    assert made.question == QUESTION
    record = runs.require_run(made.run_id)
    assert record.status in {"completed", "max_iterations"}
    assert [w.id for w in WatchStore(runs).list_watches()] == [made.id]
