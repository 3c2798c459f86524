"""A finished offline run for the revision tests: ``research`` with ``llm none``, the hashing
embedder and a fixed source of eight metformin records (two randomised trials, a
meta-analysis, cohorts, a mouse study), stored once and copied into each test's database."""

from __future__ import annotations

import asyncio
from pathlib import Path

from deepcritical.api import research
from deepcritical.config import Settings
from deepcritical.models import Citation, Evidence, RunResult, SearchFilters
from deepcritical.testing.embedders import HashingEmbedder

QUESTION = "Does metformin lower colorectal cancer risk in patients with diabetes?"

RCT_PMIDS = frozenset({"9000001", "9000002"})
"""The randomised trials among the records."""

_RECORDS: tuple[tuple[str, str, list[str], str], ...] = (
    (
        "9000001",
        "Metformin and colorectal adenoma recurrence: a randomised trial",
        ["Randomized Controlled Trial"],
        "BACKGROUND: Metformin may prevent colorectal cancer. METHODS: 151 patients with "
        "diabetes were randomised to metformin or placebo. RESULTS: Metformin lowered the "
        "recurrence of colorectal adenoma in patients with diabetes. CONCLUSIONS: Metformin "
        "lowers colorectal cancer risk markers in patients with diabetes.",
    ),
    (
        "9000002",
        "Metformin versus placebo for colorectal cancer prevention: randomised trial",
        ["Randomized Controlled Trial"],
        "RESULTS: Metformin did not change colorectal cancer risk in patients with diabetes "
        "over five years. Gastrointestinal harms such as diarrhoea were more common with "
        "metformin. CONCLUSIONS: Metformin did not lower colorectal cancer risk in diabetes.",
    ),
    (
        "9000003",
        "Metformin and colorectal cancer: a meta-analysis",
        ["Meta-Analysis"],
        "RESULTS: Metformin use was associated with a lower risk of colorectal cancer in "
        "patients with diabetes across 12 studies. CONCLUSIONS: Metformin lowers colorectal "
        "cancer risk in patients with diabetes.",
    ),
    (
        "9000004",
        "Metformin use and colorectal cancer in a diabetes cohort",
        [],
        "METHODS: A cohort of 40,000 patients with diabetes was followed. RESULTS: Metformin "
        "use was associated with a lower colorectal cancer risk in patients with diabetes. "
        "Lactic acidosis, a rare harm of metformin, occurred in two patients.",
    ),
    (
        "9000005",
        "Colorectal cancer incidence with metformin: a cohort study",
        [],
        "RESULTS: Colorectal cancer incidence was lower with metformin in patients with "
        "diabetes. CONCLUSIONS: Metformin use is associated with lower colorectal cancer risk.",
    ),
    (
        "9000006",
        "Metformin in mice with colorectal tumours",
        [],
        "RESULTS: Metformin reduced colorectal tumour growth in diabetic mice. CONCLUSIONS: "
        "Metformin may lower colorectal cancer risk in diabetes by AMPK activation.",
    ),
)


class MetforminSource:
    """The same records for every query (a pubmed-named test double)."""

    name = "pubmed"

    async def search(
        self, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[Evidence]:
        """The records (at most ``limit``), best first."""
        items = [
            Evidence(
                content=text,
                citation=Citation(
                    source="pubmed", id=pmid, pmid=pmid, title=title, publication_types=types
                ),
                query=query,
                relevance=1.0 - n / 10,
            )
            for n, (pmid, title, types, text) in enumerate(_RECORDS)
        ]
        return items[:limit]


def finished_run(data_dir: Path) -> RunResult:
    """The result of one offline run over :class:`MetforminSource` (not recorded)."""

    async def run() -> RunResult:
        settings = Settings(
            llm="none", sources=["pubmed"], data_dir=data_dir, persist_runs=False, max_rounds=1
        )
        result = None
        async for event in research(
            QUESTION, settings, sources=[MetforminSource()], embedder=HashingEmbedder()
        ):
            if event.type == "done":
                result = event.result
        assert result is not None, "the offline run wrote no report"
        return result

    return asyncio.run(run())
