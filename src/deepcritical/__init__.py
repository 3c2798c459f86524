"""DeepCritical: a biomedical deep-research agent with validated citations.

The public API, imported lazily so that ``import deepcritical`` stays cheap:

- :func:`research` (``async for event in research(question, settings): ...``) and
  :func:`resume` (continue a stored run) and :func:`ask` (``await ask(run_id, question,
  settings)``: a follow-up question on a finished run, answered from that run's evidence
  only, a :class:`~deepcritical.models.FollowUp`) and :func:`revise` (``await revise(run_id,
  "shorter", settings)``: a new version of a finished run's report, a
  :class:`~deepcritical.models.ReportVersion`), and the researcher's reviews
  (``research(..., review_plan=True, review_evidence=True)`` stops with ``plan_ready`` /
  ``evidence_ready``; :func:`approve_plan`, :func:`approve_evidence` decide and continue the
  run, :func:`cancel_review` cancels it), from :mod:`deepcritical.api`;
- :class:`Settings` (:mod:`deepcritical.config`);
- :class:`ResearchEvent` (:mod:`deepcritical.events`): what a run streams, the last being
  ``done`` (with its :class:`RunResult`) or ``error``;
- :class:`RunResult`, :class:`ResearchReport`, :class:`ReportPreferences`,
  :class:`SearchFilters` (``research(question, settings, filters=SearchFilters(...))``: the
  plan's publication dates, languages, study designs, trial phases and statuses, records
  added since) (:mod:`deepcritical.models`);
- :func:`export_references` (``export_references(result, "ris" | "bibtex" | "csljson",
  scope="references" | "evidence") -> str``): a run's references for reference managers
  (:mod:`deepcritical.formats.references`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = [
    "EvidenceDecision",
    "FollowUp",
    "ReportPreferences",
    "ReportVersion",
    "ResearchEvent",
    "ResearchPlan",
    "ResearchReport",
    "RunResult",
    "SearchFilters",
    "Settings",
    "__version__",
    "approve_evidence",
    "approve_plan",
    "ask",
    "cancel_review",
    "export_references",
    "research",
    "resume",
    "revise",
]

if TYPE_CHECKING:
    from deepcritical.api import (
        approve_evidence,
        approve_plan,
        ask,
        cancel_review,
        research,
        resume,
        revise,
    )
    from deepcritical.config import Settings
    from deepcritical.events import ResearchEvent
    from deepcritical.formats.references import export_references
    from deepcritical.models import (
        EvidenceDecision,
        FollowUp,
        ReportPreferences,
        ReportVersion,
        ResearchPlan,
        ResearchReport,
        RunResult,
        SearchFilters,
    )

_PUBLIC = {
    "research": "deepcritical.api",
    "resume": "deepcritical.api",
    "ask": "deepcritical.api",
    "revise": "deepcritical.api",
    "approve_plan": "deepcritical.api",
    "approve_evidence": "deepcritical.api",
    "cancel_review": "deepcritical.api",
    "EvidenceDecision": "deepcritical.models",
    "ResearchPlan": "deepcritical.models",
    "ReportVersion": "deepcritical.models",
    "FollowUp": "deepcritical.models",
    "Settings": "deepcritical.config",
    "ResearchEvent": "deepcritical.events",
    "RunResult": "deepcritical.models",
    "ResearchReport": "deepcritical.models",
    "ReportPreferences": "deepcritical.models",
    "SearchFilters": "deepcritical.models",
    "export_references": "deepcritical.formats.references",
}


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'deepcritical' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
