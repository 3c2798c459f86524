"""The tiny corpus the browser tests import: metformin/cancer abstracts (what the scripted
model's queries look for), statin/dementia abstracts (what a second session asks about) and
hostile text: every metformin title, and one abstract, carry ``<script>`` and ``<img
onerror>`` payloads that set ``window.__xss`` if they ever run."""

from __future__ import annotations

import json
from pathlib import Path

XSS_SCRIPT = "<script>window.__xss = 'script';</script>"
XSS_IMG = "<img src=x onerror=\"window.__xss = 'img'\">"
XSS_TITLE = f"Metformin and cancer incidence in diabetes {XSS_SCRIPT}{XSS_IMG}"
XSS_PMID = "90000001"

METFORMIN = [
    (
        "90000002",
        "Metformin use and cancer incidence in type 2 diabetes: a cohort study",
        "Metformin users with type 2 diabetes had a lower cancer incidence than users of "
        "sulfonylureas (hazard ratio 0.63). Cancer incidence fell with longer metformin use.",
    ),
    (
        "90000003",
        "Metformin activates AMPK and inhibits mTOR signalling in cancer cells",
        "Metformin activated AMPK in breast cancer cells, which inhibited mTOR signalling and "
        "reduced tumour cell proliferation. AMPK activation by metformin lowered cancer growth.",
    ),
    (
        "90000004",
        "Randomised trial of metformin for cancer outcomes",
        "In a randomised trial, metformin did not change cancer recurrence compared with "
        "placebo. Metformin was well tolerated in patients with cancer.",
    ),
    (
        "90000005",
        "Metformin and cancer mortality in diabetic patients: a meta-analysis",
        "Metformin was associated with lower cancer mortality in diabetic patients across "
        "cohort studies. Metformin users had fewer cancer deaths.",
    ),
]
STATINS = [
    (
        "90000011",
        "Statin use and dementia incidence in older adults",
        "Statin users had a lower incidence of dementia than non-users in a cohort of older "
        "adults. Statins were associated with reduced Alzheimer disease risk.",
    ),
    (
        "90000012",
        "Statins and cognitive decline: a randomised trial",
        "Simvastatin did not slow cognitive decline in patients with mild to moderate "
        "Alzheimer disease. Statins were safe over 18 months.",
    ),
    (
        "90000013",
        "Statin therapy and vascular dementia risk",
        "Long-term statin therapy reduced the risk of vascular dementia. Statins lowered "
        "cholesterol and cerebral small vessel disease.",
    ),
]


def records() -> list[dict[str, object]]:
    """The corpus records (PubMedQA-style JSON objects with a title)."""
    out: list[dict[str, object]] = [
        {
            "pmid": XSS_PMID,
            "year": 2021,
            "title": XSS_TITLE,
            "abstract_sections": [
                {
                    "label": "RESULTS",
                    "text": "Metformin users had a lower cancer incidence in type 2 diabetes "
                    f"{XSS_SCRIPT} and metformin activated AMPK {XSS_IMG} in cancer cells.",
                }
            ],
        }
    ]
    hostile = {pmid for pmid, _, _ in METFORMIN}
    for pmid, title, text in [*METFORMIN, *STATINS]:
        out.append(
            {
                "pmid": pmid,
                "year": 2020,
                # every metformin title is hostile, so whichever the report cites shows it
                "title": f"{title} {XSS_SCRIPT}{XSS_IMG}" if pmid in hostile else title,
                "abstract_sections": [{"label": "RESULTS", "text": text}],
            }
        )
    return out


def write_corpus(path: Path) -> Path:
    """Write :func:`records` to ``path`` as JSONL; return ``path``."""
    path.write_text("".join(json.dumps(r) + "\n" for r in records()), encoding="utf-8")
    return path
