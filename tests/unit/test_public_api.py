"""The public API of ``deepcritical`` (its ``__init__``): the names it lists resolve to the
real objects, lazily, and an unknown name is an AttributeError."""

from __future__ import annotations

import subprocess
import sys

import pytest

import deepcritical


def test_every_public_name_resolves_to_its_home() -> None:
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

    homes = {
        "approve_plan": approve_plan,
        "approve_evidence": approve_evidence,
        "cancel_review": cancel_review,
        "EvidenceDecision": EvidenceDecision,
        "ResearchPlan": ResearchPlan,
        "research": research,
        "resume": resume,
        "ask": ask,
        "revise": revise,
        "ReportVersion": ReportVersion,
        "FollowUp": FollowUp,
        "Settings": Settings,
        "ResearchEvent": ResearchEvent,
        "RunResult": RunResult,
        "ResearchReport": ResearchReport,
        "ReportPreferences": ReportPreferences,
        "SearchFilters": SearchFilters,
        "export_references": export_references,
    }
    assert set(homes) | {"__version__"} == set(deepcritical.__all__)
    for name, obj in homes.items():
        assert getattr(deepcritical, name) is obj


def test_importing_the_package_loads_no_run_machinery() -> None:
    code = (
        "import sys, deepcritical; "
        "print(sorted(m for m in sys.modules if m.startswith('deepcritical')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "['deepcritical']"


def test_unknown_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = deepcritical.nope
