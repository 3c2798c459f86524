"""Search-round benchmark: the real source clients against the local API stub with latency.

Run: ``.venv/bin/python -m benchmarks.bench_sources [--latency-ms 50] [--queries 4]
[--limit 10] [--repeat 3] [--web]``.

Starts :class:`deepcritical.testing.api_stub.StubAPI` on 127.0.0.1 (recorded responses from
``../shared/fixtures/api``; exits 0 with a message when they are absent) with a fixed delay
before every answer, then runs one search round the way the SearchAgent does: every
(query, source) pair at once under :func:`asyncio.gather`, each source with its default rate
limit and one shared HTTP client. Sources: PubMed (esearch then efetch per query, 3 requests/s
without an API key), ClinicalTrials.gov (5/s; the stub pages 5 studies at a time, so a
10-result query takes two dependent requests), Europe PMC (10/s) and OpenAlex (10/s); with
``--web`` also the web source (ddgs API search at 2/s, then page fetches at 2 pages/s over all
hosts; the page fetches are not part of the default run).

The lower bound of a source is what its rate limit and the latency allow: ``n`` requests through
a leaky bucket of ``r`` requests/s take ``(n - 1) / r`` seconds to start, and the last one
answers ``latency`` later; a query whose requests depend on each other (esearch -> efetch,
page 1 -> page 2) needs ``depth x latency`` at least. The round's bound is the largest source
bound. Printed per source and for the round: requests, bound, measured time and their ratio
(target <= 1.3), and the smallest and mean gap between request arrivals at the stub (a leaky
bucket of ``r``/s should give gaps of ``1/r``). Timings depend on the machine and its load;
nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from deepcritical.sources.base import SearchSource, SourceError
from deepcritical.sources.http import new_http_client
from deepcritical.testing.api_stub import StubAPI, build_stub_sources

DEFAULT_FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "api"
QUERIES = (
    "MEK inhibition BRAF melanoma survival",
    "trametinib dabrafenib overall survival",
    "BRAF V600E melanoma targeted therapy",
    "MEK inhibitor adverse events",
    "melanoma immunotherapy combination",
    "BRAF inhibitor resistance mechanisms",
)
LIMITERS: dict[str, dict[tuple[str, ...], float]] = {
    "pubmed": {("esearch", "efetch"): 3.0},
    "trials": {("trials",): 5.0},
    "europepmc": {("europepmc",): 10.0},
    "openalex": {("openalex",): 10.0},
    "web": {("websearch",): 2.0, ("webpage",): 2.0},
}
"""Per source: the stub routes sharing one rate limiter -> that limiter's default requests/s
(the sources' own defaults). The web source has two: the ddgs API server and page fetches."""
TARGET_RATIO = 1.3


@dataclass
class SourceTiming:
    """One source's part of a round."""

    name: str
    finished: float = 0.0  # seconds from the round's start to its last call's end
    items: int = 0
    errors: list[str] = field(default_factory=list)
    depth: int = 1  # most dependent requests of one query
    arrivals: dict[tuple[str, ...], list[float]] = field(default_factory=dict)

    @property
    def requests(self) -> int:
        """Requests the stub received from this source."""
        return sum(len(a) for a in self.arrivals.values())

    def bound(self, latency: float) -> float:
        """Lower bound set by the rate limits and the latency (seconds)."""
        by_rate = [
            (max(len(self.arrivals.get(routes, [])), 1) - 1) / rate + latency
            for routes, rate in LIMITERS[self.name].items()
        ]
        return max([*by_rate, self.depth * latency])

    def gaps(self, routes: tuple[str, ...]) -> list[float]:
        """Gaps between consecutive request arrivals of one limiter (seconds)."""
        ordered = sorted(self.arrivals.get(routes, []))
        return [b - a for a, b in itertools.pairwise(ordered)]


@dataclass
class RoundResult:
    """A whole round: wall time and per-source timings."""

    wall: float
    sources: dict[str, SourceTiming]

    def bound(self, latency: float) -> float:
        """The round's lower bound: the slowest source's bound."""
        return max(t.bound(latency) for t in self.sources.values())


async def _timed(
    source: SearchSource, query: str, limit: int, start: float, timing: SourceTiming
) -> None:
    try:
        items = await source.search(query, limit)
        timing.items += len(items)
    except SourceError as exc:
        timing.errors.append(exc.reason)
    timing.finished = max(timing.finished, time.monotonic() - start)


async def run_round(
    stub: StubAPI, names: Sequence[str], queries: Sequence[str], limit: int
) -> RoundResult:
    """One round of ``queries`` x ``names`` against ``stub``, all calls in parallel."""
    stub.reset_log()
    async with new_http_client(20.0) as client:
        sources = build_stub_sources(stub, client, timeout_seconds=20.0, tries=3, names=names)
        timings = {s.name: SourceTiming(s.name) for s in sources}
        start = time.monotonic()
        await asyncio.gather(
            *(_timed(s, q, limit, start, timings[s.name]) for q in queries for s in sources)
        )
        wall = time.monotonic() - start
    log = stub.requests
    for name, timing in timings.items():
        for routes in LIMITERS[name]:
            timing.arrivals[routes] = [r.arrived for r in log if r.route in routes]
        # A query's requests to one API are sequential (esearch -> efetch, page -> next page);
        # the web source's page fetches run in parallel after its search.
        first = next(iter(LIMITERS[name]))
        per_query = len(timing.arrivals[first]) / max(len(queries), 1)
        timing.depth = max(1, round(per_query)) + (1 if name == "web" else 0)
    return RoundResult(wall=wall, sources=timings)


def _print_round(result: RoundResult, latency: float, label: str) -> float:
    print(f"\n{label}")
    header = (
        f"{'source':<10} {'req':>4} {'rate/s':>7} {'bound s':>8} {'measured s':>11} "
        f"{'ratio':>6} {'min gap':>8} {'mean gap':>9} {'1/rate':>7} {'items':>6}"
    )
    print(header)
    print("-" * len(header))
    for t in result.sources.values():
        bound = t.bound(latency)
        for n, (routes, rate) in enumerate(LIMITERS[t.name].items()):
            gaps = t.gaps(routes)
            name = t.name if n == 0 else f"  +{'/'.join(routes)}"
            head = f"{name:<10} {len(t.arrivals.get(routes, [])):>4} {rate:>7g} " + (
                f"{bound:>8.3f} {t.finished:>11.3f} {t.finished / bound:>6.2f} "
                if n == 0
                else f"{'':>8} {'':>11} {'':>6} "
            )
            print(
                head + f"{(min(gaps) if gaps else 0.0):>8.3f} "
                f"{(statistics.fmean(gaps) if gaps else 0.0):>9.3f} {1 / rate:>7.3f} "
                + (f"{t.items:>6}" if n == 0 else "")
                + (f"  errors: {t.errors[0]} (x{len(t.errors)})" if t.errors and n == 0 else "")
            )
    bound = result.bound(latency)
    ratio = result.wall / bound
    verdict = "ok" if ratio <= TARGET_RATIO else f"ABOVE the {TARGET_RATIO} target"
    print(
        f"round: wall {result.wall:.3f} s, lower bound {bound:.3f} s, ratio {ratio:.2f} ({verdict})"
    )
    return ratio


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, run the rounds, print the figures; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--fixtures", type=Path, default=DEFAULT_FIXTURES)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--queries", type=int, default=4, choices=range(1, len(QUERIES) + 1))
    parser.add_argument("--limit", type=int, default=10, help="results per query and source")
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds (after a warm-up)")
    parser.add_argument("--web", action="store_true", help="add the web source (ddgs API stub)")
    args = parser.parse_args(argv)

    if not args.fixtures.is_dir():
        print(f"{args.fixtures} is absent: nothing to benchmark.")
        return 0
    latency = args.latency_ms / 1000.0
    names = ["pubmed", "trials", "europepmc", "openalex"] + (["web"] if args.web else [])
    queries = list(QUERIES[: args.queries])
    print(
        f"Stub latency {args.latency_ms:g} ms per request; {len(queries)} queries x "
        f"{len(names)} sources ({', '.join(names)}), limit {args.limit}; "
        f"target ratio <= {TARGET_RATIO}."
    )
    ratios: list[float] = []
    with StubAPI(args.fixtures, latency_seconds=latency) as stub:
        asyncio.run(run_round(stub, names, queries[:1], args.limit))  # warm-up, untimed
        for n in range(1, args.repeat + 1):
            result = asyncio.run(run_round(stub, names, queries, args.limit))
            ratios.append(_print_round(result, latency, f"round {n}"))
        if stub.errors:
            print(f"stub errors: {stub.errors}", file=sys.stderr)
    print(
        f"\nratio over {len(ratios)} rounds: best {min(ratios):.2f}, median "
        f"{statistics.median(ratios):.2f}, worst {max(ratios):.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
