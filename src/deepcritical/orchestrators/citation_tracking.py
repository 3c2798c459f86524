"""Citation tracking ("snowballing"): the references and the citing papers of a run's best
studies, once per run, within the run's budget.

After the first search round that leaves on-topic records with a PMID or DOI (and after that
round's full texts are read, so their JATS reference lists can be followed), the
``Settings.citation_seeds`` most relevant of them are the seeds (:func:`citation_seeds`). For
each seed both directions are followed (:func:`follow_citations`, through a
:class:`~deepcritical.sources.citation_graph.CitationLinker`: OpenAlex and PubMed elink,
cached by the run database so a resumed run asks nothing again), at most
``ceil(citation_candidates / seeds)`` records per seed, direction and service. The records
found are fused across seeds (a paper linked to several seeds ranks higher), those already
in the store are folded into their stored record, and at most ``citation_candidates`` of the
others (and no more than the room left under ``max_sources``) are kept, the most relevant to
the question first (:func:`choose_candidates`). The caller adds them to the store and screens
them like a search round's new items; the methodology and the flow of records count them.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from deepcritical.agents.search import fuse_ranked, rerank
from deepcritical.evidence.embeddings import Embedder
from deepcritical.evidence.store import EvidenceStore
from deepcritical.models import Evidence
from deepcritical.sources.citation_graph import (
    CitationLinker,
    CitationLinks,
    CitationSeed,
    Direction,
)

__all__ = [
    "CitationLog",
    "choose_candidates",
    "citation_seeds",
    "follow_citations",
    "per_seed_limit",
]

DIRECTIONS: tuple[Direction, ...] = ("references", "citing")


@dataclass
class CitationLog:
    """What citation tracking did in a run (one step, at most once).

    Attributes:
        done: the step ran (it does not run again).
        seeds: the seeds' labels (``"PMID 22663011"``), most relevant first.
        identified: records the services returned, before de-duplication.
        already_found: those folded into a record the store held (same identifier).
        duplicates: those folded into another candidate or a near duplicate.
        beyond_limit: those left out by the ``citation_candidates`` cap (or ``max_sources``).
        added: ids of the records added to the store.
        off_topic: added records that screening found off-topic.
        failures: ``"<seed>: <service>: <reason>"`` for each lookup that failed.
        skipped: why the step did nothing, or has not run yet (``""`` when it ran).
    """

    done: bool = False
    seeds: list[str] = field(default_factory=list)
    identified: int = 0
    already_found: int = 0
    duplicates: int = 0
    beyond_limit: int = 0
    added: list[str] = field(default_factory=list)
    off_topic: int = 0
    failures: list[str] = field(default_factory=list)
    skipped: str = ""


def citation_seeds(
    items: Sequence[Evidence], references: Mapping[str, list[str]], count: int
) -> list[CitationSeed]:
    """The seeds: the ``count`` most relevant of ``items`` (the run's on-topic records; ties
    in store order) that have a PMID or DOI, each with the identifiers of its JATS reference
    list from ``references`` (evidence id -> ids, :attr:`~deepcritical.orchestrators.
    full_texts.FullTextLog.references`)."""
    usable = [e for e in items if e.citation.pmid or e.citation.doi]
    ranked = sorted(usable, key=lambda e: -e.relevance)[: max(count, 0)]
    return [
        CitationSeed(
            evidence_id=e.id,
            pmid=e.citation.pmid,
            doi=e.citation.doi,
            references=list(references.get(e.id, [])),
        )
        for e in ranked
    ]


def per_seed_limit(candidates: int, seeds: int) -> int:
    """Records asked per seed, direction and service: ``ceil(candidates / seeds)`` (at least
    1), so the seeds together can fill the ``candidates`` budget from either direction."""
    return max(1, math.ceil(candidates / max(seeds, 1)))


async def follow_citations(
    linker: CitationLinker, seeds: Sequence[CitationSeed], limit: int
) -> tuple[list[list[Evidence]], list[str]]:
    """Follow both directions of every seed in parallel (the services' rate limiters space
    the requests): the ranked lists found (one per seed and direction, in seed order) and
    ``"<seed>: <failure>"`` for each service that failed."""
    asks = [(seed, direction) for seed in seeds for direction in DIRECTIONS]
    answers: list[CitationLinks] = await asyncio.gather(
        *(linker.links(seed, direction, limit) for seed, direction in asks)
    )
    lists = [a.items for a in answers if a.items]
    failures = [
        f"{seed.label}: {reason}"
        for (seed, _), answer in zip(asks, answers, strict=True)
        for reason in answer.failures
    ]
    return lists, failures


def choose_candidates(
    lists: Sequence[Sequence[Evidence]],
    store: EvidenceStore,
    targets: Sequence[str],
    embedder: Embedder,
    keep: int,
) -> tuple[list[Evidence], list[Evidence], int]:
    """``(already found, chosen, left out)``: the records of ``lists`` fused by
    reciprocal-rank fusion (:func:`~deepcritical.agents.search.fuse_ranked`), those matching
    a stored record by identifier (to be folded into it), and at most ``keep`` documents of
    the others, the most relevant to ``targets`` first
    (:func:`~deepcritical.agents.search.rerank`); ``left out`` counts the records beyond
    ``keep``. CPU-bound (one embedding batch): call it in a worker thread."""
    fused = fuse_ranked(lists)
    known = [e for e in fused if store.find_by_identifier(e.citation) is not None]
    fresh = [e for e in fused if store.find_by_identifier(e.citation) is None]
    chosen = rerank(fresh, targets, embedder, keep) if fresh else []
    return known, chosen, len(fresh) - len(chosen)
